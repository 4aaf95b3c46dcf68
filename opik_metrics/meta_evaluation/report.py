"""The agreement report: ``agreement.json``, a plot of each metric's correlations with their
intervals, and ``index.html`` (the table, each metric against the best, undefined values with
their reasons), in the comparison report's style. Figures use matplotlib's Figure and Agg canvas,
never pyplot."""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from opik_metrics.compare.report.formatting import DASH, fmt_interval, fmt_num, fmt_p
from opik_metrics.compare.report.html import PAGE_CSS, esc
from opik_metrics.meta_evaluation.metric_agreement import KENDALL_NOTE, Agreement
from opik_metrics.compare.report.plot_files import plots_unavailable
from opik_metrics.core.report_files import remove_file, save_figure, write_in_place

if TYPE_CHECKING:
    from matplotlib.figure import Figure

JSON_NAME = "agreement.json"
HTML_NAME = "index.html"
PLOT_NAME = "agreement.png"
_MARKERS = "osD^"


@dataclass(frozen=True)
class AgreementFiles:
    """The files of one agreement report."""

    html: Path
    json: Path
    plot: Path | None
    note: str | None = None          # why there is no plot (the report extra is not installed)


def agreement_figure(result: Agreement) -> Figure | None:
    """Each metric (a row) with each correlation and its interval; None when nothing is defined."""
    methods = list(result.settings.methods)
    rows = [m for m in result.metrics if any(m.correlations[k].estimate is not None for k in methods)]
    if not rows:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 0.9 + 0.45 * len(rows) * max(1, len(methods)) ** 0.5), dpi=100,
                    layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    step = 0.7 / max(1, len(methods))
    for k, method in enumerate(methods):
        for y, m in enumerate(rows):
            c = m.correlations[method]
            if c.estimate is None:
                continue
            offset = y + (k - (len(methods) - 1) / 2) * step
            low = c.estimate - c.low if c.low is not None else 0.0
            high = c.high - c.estimate if c.high is not None else 0.0
            ax.errorbar([c.estimate], [offset], xerr=[[low], [high]], fmt=_MARKERS[k % len(_MARKERS)],
                        color=f"C{k}", capsize=3, label=method if y == 0 else None)
    ax.set_yticks(range(len(rows)), [m.metric for m in rows])
    ax.invert_yaxis()
    ax.axvline(0.0, color="0.6", linewidth=0.8)
    ax.set_xlabel(f"correlation with {result.human} ({result.settings.confidence * 100:g}% bootstrap interval)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    return figure


def _row(cells: list[str], classes: list[str]) -> str:
    return "<tr>" + "".join(f'<td class="{c}">{v}</td>' if c else f"<td>{v}</td>"
                            for v, c in zip(cells, classes)) + "</tr>"


def _table(headers: list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def render_agreement_html(result: Agreement, plot: str | None, note: str | None = None) -> str:
    """The report page; ``plot`` is the figure's path relative to the page, or None (``note``: why)."""
    s = result.settings
    methods = list(s.methods)
    rows = []
    for m in result.metrics:
        cells = [esc(m.metric) + (' <span class="kind">(negated: lower is better)</span>' if m.oriented else ""),
                 str(m.n_items), str(m.human_only)]
        for method in methods:
            c = m.correlations[method]
            if c.estimate is None:
                cells.append(f'<span class="missing" title="{esc(c.reason)}">n/a</span>')
                continue
            tag = ""
            if result.best.get(method) == m.metric:
                tag = ' <span class="badge better">best</span>'
            elif m.versus_best.get(method) is not None and m.versus_best[method].significant:
                tag = ' <span class="badge worse">below best</span>'
            cells.append(f"{fmt_num(c.estimate)} {fmt_interval(c.low, c.high)}{tag}")
        rows.append(_row(cells, ["", "num", "num"] + ["num"] * len(methods)))
    table = _table(["score", "items", "rated, unscored", *methods], rows)
    versus = []
    for method in methods:
        for m in result.metrics:
            v = m.versus_best.get(method)
            if v is None:
                continue
            versus.append(_row([esc(method), esc(m.metric), esc(v.best), fmt_num(v.delta, signed=True),
                                fmt_interval(v.low, v.high, signed=True), fmt_p(v.p_value),
                                "yes" if v.significant else "no", str(v.n_items), esc(v.reason or "")],
                               ["", "", "", "num", "num", "num", "", "num", "note"]))
    reasons = [f"<li>{esc(m.metric)}, {esc(k)}: {esc(c.reason)}</li>" for m in result.metrics
               for k, c in m.correlations.items() if c.reason]
    figure = (f'<figure class="plot"><img src="{esc(plot)}" alt="correlations with intervals"><figcaption>'
              f"<b>Correlation of each score with {esc(result.human)}.</b> Points: the correlation on all items "
              "both have; bars: percentile bootstrap intervals.</figcaption></figure>") if plot else (
                  f"<p>{esc(note)}</p>" if note else "")
    body = "".join([
        f"<h1>Agreement with {esc(result.human)}</h1>",
        f'<p class="subtitle">{esc(result.experiment)} · {esc(result.source)} · {result.human_items} rated items'
        f" · raters={esc(s.raters)} · {s.confidence * 100:g}% intervals, {s.resamples} item resamples, seed "
        f"{s.seed}</p>",
        f"<p>{esc(KENDALL_NOTE)}. <i>below best</i>: the paired bootstrap of the difference to the best score's "
        f"correlation has p &lt; {1 - s.confidence:.2g}.</p>",
        '<section id="agreement"><h2>Correlations</h2>', table, figure, "</section>",
        '<section id="versus-best"><h2>Against the best score</h2>',
        _table(["method", "score", "best", "difference", "interval", "p", "significant", "items", "note"], versus)
        if versus else f"<p>{DASH} no other score to compare with the best.</p>", "</section>",
        ('<section id="undefined"><h2>No value</h2><ul>' + "".join(reasons) + "</ul></section>") if reasons else "",
        ('<section id="notes"><h2>Notes</h2><ul>' + "".join(f"<li>{esc(n)}</li>" for n in result.notes)
         + "</ul></section>") if result.notes else ""])
    title = f"Agreement with {result.human}: {result.experiment}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{PAGE_CSS}</style></head>\n<body><main>\n{body}\n"
            "</main></body></html>\n")


def write_agreement_report(result: Agreement, out_dir: str | Path) -> AgreementFiles:
    """Write ``agreement.json``, ``agreement.png`` and ``index.html`` into ``out_dir`` (created); without
    the report extra, no plot, and the page says why."""
    text = result.to_json()          # before anything is written
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"report folder {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / JSON_NAME
    write_in_place(json_path, text)
    note = plots_unavailable()       # without matplotlib: the page and the JSON, saying why there is no plot
    figure = agreement_figure(result) if note is None else None
    plot_path = None
    if figure is not None:
        plot_path = out / PLOT_NAME
        save_figure(figure, plot_path, dpi=100, metadata={"Software": None})
        figure.clear()
    else:
        remove_file(out / PLOT_NAME)             # an earlier report's plot must not linger
    html_path = out / HTML_NAME
    write_in_place(html_path, render_agreement_html(result, PLOT_NAME if plot_path else None, note),
                   errors="backslashreplace")
    return AgreementFiles(html=html_path, json=json_path, plot=plot_path, note=note)

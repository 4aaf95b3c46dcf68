"""The meta-evaluation report: ``meta_evaluation.json``, a plot of each metric's correlation (and
each rater's against the rest) at each level with its interval, and ``index.html`` with the
tables, the metric-vs-metric tests and their groups, alpha and the label agreement, in the
comparison report's style. Figures use matplotlib's Figure and Agg canvas, never pyplot."""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from opik_metrics.compare.report.formatting import fmt_interval, fmt_num, fmt_p
from opik_metrics.compare.report.html import PAGE_CSS, esc
from opik_metrics.compare.report.plot_files import plots_unavailable
from opik_metrics.core.report_files import remove_file, save_figure, write_in_place
from opik_metrics.compare.statistics.corrections import correction_label
from opik_metrics.meta_evaluation.evaluation import MetaEvaluation
from opik_metrics.meta_evaluation.labels import LABEL_STATISTICS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

JSON_NAME = "meta_evaluation.json"
HTML_NAME = "index.html"
PLOT_NAME = "meta_evaluation.png"

__all__ = ["MetaFiles", "meta_figure", "render_meta_html", "write_meta_report"]


@dataclass(frozen=True)
class MetaFiles:
    """The files of one meta-evaluation report."""

    html: Path
    json: Path
    plot: Path | None
    note: str | None = None          # why there is no plot (the report extra is not installed)


def _rows(result: MetaEvaluation, level: str) -> list[tuple[str, dict]]:
    named = [(m, v[level]) for m, v in result.correlations.items()]
    return named + [(f"rater {r} vs rest", v[level]) for r, v in result.rater_vs_rest.items()]


def meta_figure(result: MetaEvaluation) -> Figure | None:
    """One panel per level: each metric (and rater) with the lead correlation and its interval."""
    lead = result.settings.methods[0]
    levels = [lv for lv in result.settings.levels
              if any(values[lead].estimate is not None for _, values in _rows(result, lv))]
    if not levels:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(_rows(result, levels[0]))
    figure = Figure(figsize=(6.4, 0.8 + 0.35 * n * len(levels)), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(levels), 1, squeeze=False, sharex=True)[:, 0]
    for ax, level in zip(axes, levels):
        rows = _rows(result, level)
        for y, (name, values) in enumerate(rows):
            v = values[lead]
            if v.estimate is None:
                continue
            low = v.estimate - v.low if v.low is not None else 0.0
            high = v.high - v.estimate if v.high is not None else 0.0
            ax.errorbar([v.estimate], [y], xerr=[[max(low, 0.0)], [max(high, 0.0)]], fmt="o",
                        color="C1" if name.startswith("rater ") else "C0", capsize=3)
        ax.set_yticks(range(len(rows)), [name for name, _ in rows])
        ax.invert_yaxis()
        ax.axvline(0.0, color="0.6", linewidth=0.8)
        ax.set_title(f"{level} level", fontsize="small", loc="left")
    axes[-1].set_xlabel(f"{lead} with {result.human} ({result.settings.confidence * 100:g}% bootstrap interval)")
    return figure


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _cell(v) -> str:
    if v.estimate is None:
        return f'<span class="missing" title="{esc(v.reason)}">n/a</span>'
    return f"{fmt_num(v.estimate)} {fmt_interval(v.low, v.high)}"


def render_meta_html(result: MetaEvaluation, plot: str | None, note: str | None = None) -> str:
    """The report page; ``plot`` is the figure's path relative to the page, or None (``note``: why)."""
    s = result.settings
    parts = [f"<h1>Which metric to trust: agreement with {esc(result.human)}</h1>",
             f'<p class="subtitle">{esc(result.source)} · {result.n_items} items · {len(result.systems)} system(s) · '
             f"{len(result.raters)} rater(s) · {s.confidence * 100:g}% intervals, {s.resamples} resamples, seed "
             f"{s.seed}</p>"]
    for level in s.levels:
        stats = [*s.methods, *(["pairwise_accuracy"] if level == "system" else [])]
        rows = [[esc(name) + (" (negated)" if name in result.oriented else ""),
                 f"{values[stats[0]].n_items}x{values[stats[0]].n_systems}",
                 *(_cell(values[st]) for st in stats)] for name, values in _rows(result, level)]
        parts.append(f'<section id="{level}"><h2>{level.capitalize()} level</h2>'
                     + _table(["score", "items x systems", *stats], rows) + "</section>")
    if plot:
        parts.append(f'<figure><img src="{esc(plot)}" alt="correlations by level with intervals"></figure>')
    elif note:
        parts.append(f"<p>{esc(note)}</p>")
    if result.tests:
        rows = [[esc(f"{t.level}/{t.method}"), esc(t.a), esc(t.b), fmt_num(t.delta, signed=True),
                 fmt_p(t.p_value), fmt_p(t.p_adjusted), "yes" if t.significant else "no", esc(t.reason or "")]
                for t in result.tests]
        groups = "".join(f"<li>{esc(key)}: " + " &gt; ".join("{" + ", ".join(esc(m) for m in g) + "}" for g in gs)
                         + "</li>" for key, gs in result.groups.items())
        parts.append('<section id="tests"><h2>Metric against metric</h2>'
                     f"<p>PERM-BOTH, {s.permutations} permutations; {correction_label(s.correction)} over the pairs "
                     f"of each level; significant at p &lt; {1 - s.confidence:.2g}. Groups, best first: metrics the "
                     "test cannot tell apart.</p>"
                     + _table(["level/method", "a", "b", "a - b", "p", "adjusted p", "significant", "note"], rows)
                     + f"<ul>{groups}</ul></section>")
    if result.alpha:
        parts.append('<section id="raters"><h2>The raters</h2><p>Krippendorff\'s alpha: '
                     + ", ".join(f"{esc(k)} {fmt_num(v)}" for k, v in result.alpha.items()) + "</p></section>")
    if result.labels:
        rows = [[esc(m), esc(a.cut), *(_cell(a.values[st]) for st in LABEL_STATISTICS)]
                for m, a in result.labels.items()]
        parts.append('<section id="labels"><h2>Labels</h2>'
                     + _table(["score", "labels from", *LABEL_STATISTICS], rows) + "</section>")
    if result.notes:
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in result.notes) + "</ul>")
    title = f"Which metric to trust: {result.human}"
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{PAGE_CSS}</style></head>\n<body><main>\n"
            + "".join(parts) + "\n</main></body></html>\n")


def write_meta_report(result: MetaEvaluation, out_dir: str | Path) -> MetaFiles:
    """Write ``meta_evaluation.json``, ``meta_evaluation.png`` and ``index.html`` into ``out_dir``."""
    text = result.to_json()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"report folder {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / JSON_NAME
    write_in_place(json_path, text)
    note = plots_unavailable()
    figure = meta_figure(result) if note is None else None
    plot_path = None
    if figure is not None:
        plot_path = out / PLOT_NAME
        save_figure(figure, plot_path, dpi=100, metadata={"Software": None})
        figure.clear()
    else:
        remove_file(out / PLOT_NAME)
    html_path = out / HTML_NAME
    write_in_place(html_path, render_meta_html(result, PLOT_NAME if plot_path else None, note),
                   errors="backslashreplace")
    return MetaFiles(html=html_path, json=json_path, plot=plot_path, note=note)

"""The comparison report as one static HTML page: inline CSS, no script, no external URL, readable offline.

Every piece of user-provided text (names, item texts, reasons, configs) goes through ``html.escape``.
"""
from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable, Sequence

from opik_metrics.compare.report.formatting import DASH as _DASH, fmt_interval, fmt_num, fmt_p
from opik_metrics.compare.model import Comparison, ItemDifference, Pair, PairResult, ScoreSummary, ScoreValue, Verdict
from opik_metrics.compare.report.plot_files import PlotFile
from opik_metrics.core.numbers import is_number

TEXT_LIMIT = 140  # characters of an item text shown in a table cell; the full text is in its title

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg-alt: #f6f8fa; --accent: #0b5cad;
        --good: #1a7f37; --good-bg: #dafbe1; --bad: #b42318; --bad-bg: #ffebe9; --neutral-bg: #eaeef2; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; line-height: 1.45;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 1.7rem; margin: 0 0 4px; }
h2 { font-size: 1.3rem; margin: 36px 0 12px; padding-bottom: 6px; border-bottom: 2px solid var(--line); }
h3 { font-size: 1.08rem; margin: 22px 0 8px; }
h4 { font-size: 0.98rem; margin: 16px 0 6px; }
.subtitle { color: var(--muted); margin: 0 0 16px; }
.warning { border: 2px solid var(--bad); background: var(--bad-bg); padding: 4px 16px; border-radius: 6px; }
.warning h2 { margin-top: 12px; border-bottom: none; color: var(--bad); }
.chip { display: inline-block; padding: 1px 9px; margin: 0 4px 4px 0; border-radius: 12px;
        background: var(--bg-alt); border: 1px solid var(--line); font-weight: 600; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
nav.toc { margin: 18px 0 0; padding: 8px 12px; background: var(--bg-alt); border-radius: 6px; }
nav.toc a { margin-right: 16px; color: var(--accent); text-decoration: none; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 0.9rem; }
th, td { border: 1px solid var(--line); padding: 4px 8px; vertical-align: top; text-align: left; }
th { background: var(--bg-alt); font-weight: 600; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.text { max-width: 300px; white-space: pre-wrap; overflow-wrap: anywhere; }
td.note { color: var(--muted); max-width: 260px; }
td.pair { white-space: nowrap; }
table.wide { width: 100%; }
.table-wrap { overflow-x: auto; }
.metric { margin: 0 0 18px; padding: 4px 16px 8px; border: 1px solid var(--line); border-radius: 8px; }
details.metric > summary { font-size: 1.02rem; padding: 6px 0; }
.direction { font-size: 0.85rem; font-weight: 600; padding: 1px 8px; border-radius: 10px; margin-left: 8px;
             background: var(--neutral-bg); }
.direction.lower { background: #fff1c2; }
.kind { font-size: 0.85rem; color: var(--muted); margin-left: 8px; font-weight: normal; }
.signature { font: 0.8rem/1.3 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; color: var(--muted);
             overflow-wrap: anywhere; margin: 0 0 6px; }
.key { font: 0.8rem/1.3 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; color: var(--muted);
       white-space: nowrap; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-weight: 700; font-size: 0.82rem;
         white-space: nowrap; }
.badge.better { background: var(--good-bg); color: var(--good); border: 1px solid var(--good); }
.badge.worse { background: var(--bad-bg); color: var(--bad); border: 1px solid var(--bad); }
.badge.not { background: var(--neutral-bg); color: var(--muted); border: 1px solid var(--line); font-weight: 600; }
.badge.na { background: #fff; color: var(--muted); border: 1px dashed var(--line); font-weight: 600; }
.delta.better { color: var(--good); font-weight: 600; }
.delta.worse { color: var(--bad); font-weight: 600; }
.missing { color: var(--muted); font-style: italic; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
figure.plot { margin: 0; padding: 8px; border: 1px solid var(--line); border-radius: 8px; background: #fff; }
figure.plot img { display: block; width: 100%; height: auto; }
figcaption { font-size: 0.85rem; color: var(--muted); margin-top: 6px; }
figcaption b { color: var(--fg); }
details { margin: 8px 0; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; }
summary { cursor: pointer; font-weight: 600; }
pre { background: var(--bg-alt); padding: 10px; border-radius: 6px; overflow-x: auto; font-size: 0.82rem;
      white-space: pre-wrap; overflow-wrap: anywhere; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.8rem; }
@media print { .plots { display: block; } figure.plot { break-inside: avoid; margin-bottom: 12px; } }
"""


#: The report's style sheet, shared with the agreement page (``agreement_report``).
PAGE_CSS = _CSS


# ----------------------------------------------------------------------------- formatting

def esc(value: Any) -> str:
    """HTML-escaped text of any value (quotes too, so that it is safe in attributes)."""
    return html.escape(_text(value), quote=True)


def _text(value: Any) -> str:
    """Plain text of a user value: strings as they are, other JSON values as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _plain(value: Any) -> str:
    """A setting as written (0.05, 1e-09, 1000), "—" when missing."""
    if is_number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return esc(value) if value is not None else _DASH


def _confidence(comparison: Comparison) -> str:
    value = comparison.settings.confidence
    return f"{value * 100:g}%" if is_number(value) else ""


def _clip(value: Any, limit: int = TEXT_LIMIT) -> str:
    """Escaped text, shortened to ``limit`` characters with the full text in a ``title`` attribute."""
    text = _text(value)
    if len(text) <= limit:
        return html.escape(text, quote=True)
    return f'<span title="{html.escape(text, quote=True)}">{html.escape(text[:limit - 1])}…</span>'


def _anchor(prefix: str, name: Any, used: set[str]) -> str:
    """A unique, ASCII-only id for an internal link."""
    base = f"{prefix}-" + (re.sub(r"[^a-z0-9]+", "-", _text(name).lower()).strip("-") or "x")
    anchor, number = base, 2
    while anchor in used:
        anchor, number = f"{base}-{number}", number + 1
    used.add(anchor)
    return anchor


def _cells(values: Iterable[str], classes: Sequence[str] = (), tag: str = "td") -> str:
    """A table row from already-escaped cell contents; ``classes`` gives each column's CSS class."""
    out = []
    for index, value in enumerate(values):
        cls = classes[index] if index < len(classes) else ""
        out.append(f'<{tag} class="{cls}">{value}</{tag}>' if cls else f"<{tag}>{value}</{tag}>")
    return "<tr>" + "".join(out) + "</tr>"


def _table(headers: Sequence[str], rows: Sequence[str], classes: Sequence[str] = (), wide: bool = False) -> str:
    """A table from escaped header texts and rows built by ``_cells`` (``wide``: the full width)."""
    head = _cells(headers, [c if c == "num" else "" for c in classes], tag="th")
    table = '<table class="wide">' if wide else "<table>"
    return (f'<div class="table-wrap">{table}<thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
            f"</div>")


# ----------------------------------------------------------------------------- direction and verdict

def _direction_label(metric: ScoreSummary) -> str:
    if metric.higher_is_better:
        return '<span class="direction">higher is better ↑</span>'
    return '<span class="direction lower">lower is better ↓</span>'


_BADGES = {Verdict.BETTER: '<span class="badge better">▲ significant: better</span>',
           Verdict.WORSE: '<span class="badge worse">▼ significant: worse</span>',
           Verdict.NO_DIFFERENCE: '<span class="badge not">not significant</span>'}


def verdict_badge(entry: PairResult) -> str:
    """The analysis's verdict as a clearly marked badge: significant (better / worse, in the
    score's direction), not significant, or n/a (too few paired items for a verdict, or nothing to
    compare; its note, in the title, says which)."""
    if entry.verdict is Verdict.NONE:
        return f'<span class="badge na" title="{esc(entry.note)}">n/a</span>'
    return _BADGES[entry.verdict]


def _delta_html(entry: PairResult) -> str:
    """The difference, coloured by the verdict when the test found it significant."""
    text = fmt_num(entry.delta, signed=True)
    colour = {Verdict.BETTER: "better", Verdict.WORSE: "worse"}.get(entry.verdict)
    return f'<span class="delta {colour}">{text}</span>' if colour else text


def _wtl(entry: PairResult) -> str:
    if entry.wins is None and entry.ties is None and entry.losses is None:
        return _DASH
    return " / ".join(fmt_num(v) if v is not None else _DASH for v in (entry.wins, entry.ties, entry.losses))


# ----------------------------------------------------------------------------- sections

def _settings_line(comparison: Comparison) -> str:
    """The test's settings in one line: resamples, seed, confidence, alpha, tie tolerance, top k."""
    settings = comparison.settings
    parts = [f"{_plain(settings.resamples)} resamples", f"seed {_plain(settings.seed)}",
             f"{esc(_confidence(comparison)) or _DASH} confidence", f"alpha {_plain(settings.alpha)}",
             f"ties within {_plain(settings.tie_tolerance)}",
             f"top {_plain(settings.top_k)} differences shown"]
    if settings.min_items is not None:
        parts.append(f"a verdict needs {_plain(settings.min_items)} paired items")
    return " · ".join(parts)


def pairing_title(names: Sequence[Any]) -> str:
    """The experiments in the direction every pair is read ("system vs baseline", as the summary
    and the terminal say it): ``b vs a (baseline)`` for two; for more, each against those before it."""
    names = [_text(n) for n in names]
    if len(names) == 2:
        return f"{names[1]} vs {names[0]} (baseline)"
    if len(names) > 2:
        return f"{', '.join(names)}: each vs the ones before it (the first is the baseline)"
    return " ".join(names)


def _header(comparison: Comparison) -> str:
    names = comparison.names
    chips = " ".join(f'<span class="chip">{esc(n)}</span>' for n in names)
    rows = [("Experiments", chips or _DASH),
            ("Source", esc(comparison.source) or _DASH),
            ("Created", esc(comparison.created_at) or _DASH),
            ("Test", esc(comparison.settings.test) or _DASH),
            ("Settings", _settings_line(comparison))]
    meta = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in rows)
    subtitle = esc(pairing_title(names))
    return (f'<header><h1>Experiment comparison</h1><p class="subtitle">{subtitle}</p>'
            f'<dl class="meta">{meta}</dl>'
            '<nav class="toc"><a href="#summary">Summary</a><a href="#experiments">Experiments</a>'
            '<a href="#plots">Plots</a><a href="#largest">Largest differences</a>'
            '<a href="#failed">Failed items</a><a href="#notes">Notes</a>'
            '<a href="#config">Configuration</a></nav></header>')


def _experiments_section(comparison: Comparison) -> str:
    classes = ["", "", "", "num", "num", "num", ""]
    rows = [_cells([f"<b>{esc(e.name)}</b>", esc(e.dataset), esc(e.status), fmt_num(e.items),
                    fmt_num(e.scored_items), fmt_num(e.failed_items), esc(e.model)], classes)
            for e in comparison.experiments]
    table = _table(["Experiment", "Dataset", "Status", "Items", "Scored", "Failed", "Model"], rows, classes)
    return f'<section id="experiments"><h2>Experiments</h2>{table}</section>'


def _non_finite_cell(count: int, kinds: dict[str, int]) -> str:
    """How many scores were not finite (left out), with their kinds: "15 (15 inf)"."""
    if not count or not kinds:
        return fmt_num(count)
    detail = ", ".join(f"{fmt_num(v)} {'NaN' if k == 'nan' else esc(k)}" for k, v in kinds.items())
    return f"{fmt_num(count)} ({detail})"


def _scores_table(comparison: Comparison, metric: ScoreSummary) -> str:
    """Value and interval of each experiment for one metric ("not computed" where it is missing),
    with the items whose score failed or was not finite (inf, NaN), which the value leaves out."""
    per_experiment = comparison.scores.get(metric.name) or {}
    classes = ["", "num", "num", "num", "num", "num"]
    rows = []
    for name in comparison.names:
        entry = per_experiment.get(name)
        if entry is None:
            cells = [f"<b>{esc(name)}</b>", '<span class="missing">not computed</span>', _DASH, _DASH, _DASH, _DASH]
        else:
            cells = [f"<b>{esc(name)}</b>", fmt_num(entry.value), fmt_interval(entry.low, entry.high),
                     fmt_num(entry.n), fmt_num(entry.failed), _non_finite_cell(entry.non_finite,
                                                                                entry.non_finite_kinds)]
        rows.append(_cells(cells, classes))
    headers = ["Experiment", "Value", f"{_confidence(comparison)} CI [low, high]".strip(), "n", "Failed",
               "Not finite (left out)"]
    return _table(headers, rows, classes)


def _pair_cells(pair: Pair, entry: PairResult | None) -> list[str]:
    """One pair's cells for one metric: values, delta with its interval, p-value, verdict, W/T/L, note."""
    label = f"{esc(pair.system)} <span class=\"missing\">vs</span> {esc(pair.baseline)}"
    if entry is None:
        return [label] + [_DASH] * 6 + ["not compared"]
    return [label, _delta_html(entry), fmt_interval(entry.delta_low, entry.delta_high, signed=True),
            html.escape(fmt_p(entry.p_value)), verdict_badge(entry), fmt_num(entry.n), _wtl(entry), esc(entry.note)]


def _pairs_table(comparison: Comparison, metric: ScoreSummary) -> str:
    """Delta, interval, p-value, significance and wins/ties/losses of each pair for one metric."""
    classes = ["pair", "num", "num", "num", "", "num", "num", "note"]
    rows = [_cells(_pair_cells(pair, pair.metrics.get(metric.name)), classes) for pair in comparison.pairs]
    headers = ["System vs baseline", "Delta", f"{_confidence(comparison)} CI of delta".strip(), "p-value",
               "Significance", "Paired items", "Wins / ties / losses", "Note"]
    return _table(headers, rows, classes, wide=True)


def _metric_block(comparison: Comparison, metric: ScoreSummary, anchor: str) -> str:
    kind = "corpus-level score" if metric.kind == "corpus" else "mean over items"
    scale = ", log scale" if metric.scale == "log" else ""
    signature = metric.signature
    signature_html = f'<p class="signature">{esc(signature)}</p>' if signature else ""
    pairs = ""
    if comparison.pairs:
        pairs = "<h4>Paired comparison</h4>" + _pairs_table(comparison, metric)
    return (f'<details class="metric" id="{anchor}"><summary>{esc(metric.name)}{_direction_label(metric)}'
            f'<span class="kind">{kind}{scale}</span></summary>{signature_html}'
            f"{_scores_table(comparison, metric)}{pairs}</details>")


def _value_with_interval(entry: ScoreValue | None) -> str:
    if entry is None:
        return '<span class="missing">not computed</span>'
    return f"{fmt_num(entry.value)} {fmt_interval(entry.low, entry.high)}"


def _glance_table(comparison: Comparison, pair: Pair) -> str:
    """One row per score: both experiments' values with intervals, the difference with its interval,
    p and the verdict in the score's direction."""
    baseline, system = pair.baseline, pair.system
    scores = comparison.scores
    classes = ["", "num", "num", "num", "num", ""]
    rows = []
    for metric in comparison.metrics:
        name = metric.name
        entry = pair.metrics.get(name)
        higher = metric.higher_is_better
        cells = [f'{esc(name)} <span class="missing" title="{"higher" if higher else "lower"} is better">'
                 f'{"↑" if higher else "↓"}</span>',
                 _value_with_interval((scores.get(name) or {}).get(baseline)),
                 _value_with_interval((scores.get(name) or {}).get(system))]
        if entry is None:
            cells += [_DASH, _DASH, "not compared"]
        else:
            cells += [f"{_delta_html(entry)} {fmt_interval(entry.delta_low, entry.delta_high, signed=True)}",
                      html.escape(fmt_p(entry.p_value)), verdict_badge(entry)]
        rows.append(_cells(cells, classes))
    confidence = _confidence(comparison)
    headers = [esc("Score"), f"{esc(baseline)} (baseline)", esc(system),
               esc(f"Difference [{confidence} CI]" if confidence else "Difference [CI]"), "p", "Verdict"]
    return (f'<h3>{esc(system)} <span class="missing">vs</span> {esc(baseline)}'
            f' <span class="kind">{fmt_num(pair.shared_items)} shared items</span></h3>'
            + _table(headers, rows, classes, wide=True))


def _summary_section(comparison: Comparison, anchors: dict[str, str]) -> str:
    """The comparison at a glance (a table per pair), then each score's detail, folded."""
    tables = "".join(_glance_table(comparison, pair) for pair in comparison.pairs)
    blocks = "".join(_metric_block(comparison, m, anchors[m.name]) for m in comparison.metrics)
    intro = ("<p>Each value with its interval; the difference is system minus baseline on the items both "
             "scored with a finite value; the verdict follows each score's direction (↑ higher is better, "
             "↓ lower). n/a: too few items pair up for a verdict, or none do.</p>")
    detail = ("<h3>Each score in detail</h3><p>Items, failures, wins / ties / losses (items where the system is "
              "better / equal / worse in the score's direction) and notes: open a score to see them.</p>")
    return (f'<section id="summary"><h2>Summary</h2>{intro}{tables or "<p>Nothing to compare.</p>"}'
            f'{detail}{blocks or "<p>No metrics.</p>"}</section>')


def _figure(plot: PlotFile) -> str:
    return (f'<figure class="plot"><img src="{esc(plot.path)}" alt="{esc(plot.title)}" width="640" '
            f'height="360"><figcaption><b>{esc(plot.title)}.</b> {esc(plot.caption)}</figcaption></figure>')


def _plots_section(plots: Sequence[PlotFile], note: str | None = None) -> str:
    """Plots grouped by section, and by pair inside a section (page order is the plots' order);
    ``note`` says why there are none."""
    parts = []
    sections = list(dict.fromkeys(p.section for p in plots))
    for section in sections:
        members = [p for p in plots if p.section == section]
        parts.append(f"<h3>{esc(section)}</h3>")
        for pair in dict.fromkeys(p.pair for p in members):
            group = [p for p in members if p.pair == pair]
            if pair is not None:
                parts.append(f"<h4>{esc(pair[1])} vs {esc(pair[0])}</h4>")
            parts.append('<div class="plots">' + "".join(_figure(p) for p in group) + "</div>")
    body = "".join(parts) or f"<p>{esc(note) if note else 'No plots.'}</p>"
    return f'<section id="plots"><h2>Plots</h2>{body}</section>'


def _largest_table(pair: Pair, metric: ScoreSummary, rows_data: Sequence[ItemDifference]) -> str:
    """The items of one pair and metric with the largest differences: texts, both scores, delta
    (coloured by the item's own direction: better or worse for the system on that item)."""
    baseline, system = esc(pair.baseline), esc(pair.system)
    classes = ["num", "", "text", "text", "text", "num", "num", "num"]
    rows = []
    for row in rows_data:
        improves = metric.improves(row.delta)
        delta = fmt_num(row.delta, signed=True)
        delta = f'<span class="delta {"better" if improves else "worse"}">{delta}</span>' if improves is not None \
            else delta
        rows.append(_cells([fmt_num(row.position), f'<span class="key">{esc(row.key)}</span>', _clip(row.input),
                            _clip(row.baseline_output), _clip(row.system_output), fmt_num(row.baseline_score),
                            fmt_num(row.system_score), delta], classes))
    headers = ["Position", "Key", "Input", f"Output of {baseline}", f"Output of {system}", baseline, system,
               "Delta"]
    return _table(headers, rows, classes)


def _largest_section(comparison: Comparison) -> str:
    parts = []
    for pair in comparison.pairs:
        parts.append(f"<h3>{esc(pair.system)} vs {esc(pair.baseline)}</h3>")
        tables = []
        for metric in comparison.metrics:
            entry = pair.metrics.get(metric.name)
            rows = entry.largest_differences if entry is not None else ()
            if rows:
                tables.append(f"<h4>{esc(metric.name)}{_direction_label(metric)}</h4>"
                              + _largest_table(pair, metric, rows))
        parts.append("".join(tables) or '<p class="missing">No per-item differences for this pair.</p>')
    body = "".join(parts) or "<p>No pairs.</p>"
    intro = "<p>Items with the largest per-item differences (system minus baseline), per pair and metric.</p>"
    return f'<section id="largest"><h2>Largest differences</h2>{intro}{body}</section>'


def _failed_section(comparison: Comparison) -> str:
    failed = comparison.failed_items
    counts = {e.name: e.failed_items for e in comparison.experiments}
    names = list(dict.fromkeys(list(counts) + list(failed)))
    classes = ["num", "", "", "text", "text"]
    parts = []
    for name in names:
        items = failed.get(name) or ()
        count = counts.get(name, len(items))
        parts.append(f"<h3>{esc(name)}: {fmt_num(count)} failed item{'s' if count != 1 else ''}</h3>")
        if not items:
            parts.append('<p class="missing">No failed items listed.</p>')
            continue
        rows = [_cells([fmt_num(i.position), f'<span class="key">{esc(i.key)}</span>', esc(i.stage),
                        _clip(i.reason, 300), _clip(i.input)], classes)
                for i in items]
        parts.append(_table(["Position", "Key", "Stage", "Reason", "Input"], rows, classes))
    return f'<section id="failed"><h2>Failed items</h2>{"".join(parts)}</section>'


def _warnings(comparison: Comparison) -> str:
    """What the reader must see before any number: scores made with different options."""
    lines = comparison.measurement_warnings()
    if not lines:
        return ""
    return ('<section id="warnings" class="warning"><h2>Different measurements</h2><ul>'
            + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul></section>")


def _notes_section(comparison: Comparison) -> str:
    notes = comparison.notes
    body = "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>" if notes else "<p>No notes.</p>"
    return f'<section id="notes"><h2>Notes</h2>{body}</section>'


def _config_section(comparison: Comparison) -> str:
    parts = []
    for experiment in comparison.experiments:
        config = json.dumps(experiment.config, indent=2, ensure_ascii=False, sort_keys=True, default=str)
        meta = "".join(f"<dt>{label}</dt><dd>{esc(value) or _DASH}</dd>"
                       for label, value in (("Model", experiment.model), ("Dataset", experiment.dataset),
                                            ("Status", experiment.status), ("Source", experiment.source))
                       if label != "Source" or value)
        parts.append(f"<details><summary>{esc(experiment.name)} — {esc(experiment.model)}</summary>"
                     f'<dl class="meta">{meta}</dl><pre>{html.escape(config)}</pre></details>')
    parts.append(_config_differences(comparison))
    signatures = [_cells([esc(m.name), f'<span class="signature">{esc(m.signature)}</span>'
                          if m.signature else _DASH]) for m in comparison.metrics]
    versions = [_cells([esc(k), esc(v)]) for k, v in comparison.versions.items()]
    parts.append("<details><summary>Metric signatures and package versions</summary>"
                 + _table(["Metric", "Signature"], signatures)
                 + _table(["Package", "Version"], versions) + "</details>")
    return f'<section id="config"><h2>Configuration</h2>{"".join(parts)}</section>'


def _config_differences(comparison: Comparison) -> str:
    """Per pair, the configuration entries that differ (when the comparison lists them)."""
    parts = []
    for pair in comparison.pairs:
        if not pair.config_differences:
            continue
        baseline, system = esc(pair.baseline), esc(pair.system)
        rows = [_cells([esc(key), _clip(a), _clip(b)], ["", "text", "text"])
                for key, (a, b) in pair.config_differences.items()]
        parts.append(f"<h3>Configuration differences: {system} vs {baseline}</h3>"
                     + _table(["Setting", baseline, system], rows, ["", "text", "text"]))
    return "".join(parts)


# ----------------------------------------------------------------------------- page

def render_html(comparison: Comparison, plots: Sequence[PlotFile], plots_note: str | None = None) -> str:
    """The whole report page for ``comparison``, showing ``plots`` (images by relative path), or
    ``plots_note`` where there are none (why)."""
    used: set[str] = {"experiments", "summary", "plots", "largest", "failed", "notes", "config", "warnings"}
    anchors = {m.name: _anchor("metric", m.name, used) for m in comparison.metrics}
    title = "Comparison: " + _text(pairing_title(comparison.names))
    version = comparison.versions.get("opik-metrics")
    footer = (f"<footer>Generated by opik-metrics {esc(version) if version else ''} · schema "
              f"{esc(comparison.schema)}</footer>")
    body = "".join([_header(comparison), _warnings(comparison), _summary_section(comparison, anchors), _experiments_section(comparison),
                    _plots_section(plots, plots_note), _largest_section(comparison), _failed_section(comparison),
                    _notes_section(comparison), _config_section(comparison), footer])
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body><main>\n{body}\n"
            "</main></body></html>\n")

"""The comparison as a terminal summary: a table per pair, in the report's number formats, with the
items each test used, "n/a" where there is no verdict, and the notes (items left out, and why)."""
from __future__ import annotations

from opik_metrics.compare.report.formatting import DASH, fmt_interval, fmt_num, fmt_p
from opik_metrics.compare.model import Comparison, Pair, ScoreValue, Verdict
from opik_metrics.core.table import format_table, one_line


def _interval(entry: ScoreValue | None) -> str:
    """A score with its interval, written as on the report page."""
    if entry is None:
        return DASH
    return f"{fmt_num(entry.value)} {fmt_interval(entry.low, entry.high)}"


def verdict_text(pair: Pair, score: str) -> str:
    """"<name> better" (the experiment the test found better), "not significant" or "n/a" (too few
    paired items, or nothing to compare)."""
    verdict = pair.metrics[score].verdict
    if verdict is Verdict.NONE:
        return "n/a"
    better = pair.better(score)
    return f"{better} better" if better is not None else "not significant"


def format_comparison(comparison: Comparison) -> str:
    """A table per pair: each metric's values with intervals, difference, p-value, verdict, the
    number of paired items compared; then the notes of the rows and of the comparison."""
    settings = comparison.settings
    minimum = settings.min_items
    lines = [f"{len(comparison.experiments)} experiments from {one_line(comparison.source)}; "
             f"{settings.resamples} bootstrap resamples, seed {settings.seed}, "
             f"{settings.confidence:.0%} intervals"
             + (f"; a verdict needs at least {minimum} paired items" if minimum else "")]
    lines.extend(one_line(f"WARNING: {line}") for line in comparison.measurement_warnings())
    for pair in comparison.pairs:
        a, b = pair.baseline, pair.system
        lines.append("\n" + one_line(f"{b} vs {a} (baseline), {pair.shared_items} shared items"))
        rows, row_notes = [], []
        for metric in comparison.metrics:
            name = metric.name
            entry = pair.metrics[name]
            wtl = DASH if entry.wins is None else f"{entry.wins}/{entry.ties}/{entry.losses}"
            arrow = "" if metric.higher_is_better else " (lower better)"
            rows.append([name + arrow, _interval(comparison.scores[name].get(a)),
                         _interval(comparison.scores[name].get(b)),
                         fmt_num(entry.delta, signed=True), fmt_p(entry.p_value), verdict_text(pair, name),
                         fmt_num(entry.n), wtl])
            if entry.note:
                row_notes.append(one_line(f"  {name}: {entry.note}"))
        lines.append(format_table(["score", a, b, "delta", "p", "verdict", "n", "wins/ties/losses"], rows))
        lines.extend(row_notes)
    failed = {name: len(items) for name, items in comparison.failed_items.items() if items}
    if failed:
        lines.append("\n" + one_line("failed items: " + ", ".join(f"{name} {count}" for name, count in failed.items())))
    if comparison.notes:
        lines.append("\nnotes:")
        lines.extend(one_line(f"- {note}") for note in comparison.notes)
    return "\n".join(lines)

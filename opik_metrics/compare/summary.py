"""The comparison as a terminal summary: a table per pair, in the report's number formats, with the
items each test used, "n/a" where there is no verdict, and the notes (items left out, and why)."""
from __future__ import annotations

from typing import Any

from opik_metrics.compare.formatting import DASH, fmt_interval, fmt_num, fmt_p
from opik_metrics.core.table import format_table, one_line


def _interval(entry: dict | None) -> str:
    """A score with its interval, written as on the report page."""
    if not entry:
        return DASH
    return f"{fmt_num(entry['value'])} {fmt_interval(entry['low'], entry['high'])}"


def verdict_text(entry: dict) -> str:
    """"<name> better", "not significant" or "n/a" (too few paired items, or nothing to compare);
    comparisons made before verdicts were recorded are read from their p-value and flag."""
    verdict = entry.get("verdict")
    if verdict is None:
        if entry.get("p_value") is None or entry.get("significant") is None:
            verdict = "n/a"
        else:
            verdict = "significant" if entry.get("significant") else "not significant"
    if verdict == "significant":
        return f"{entry['better']} better" if entry.get("better") else "significant"
    return verdict


def format_comparison(comparison: dict[str, Any]) -> str:
    """A table per pair: each metric's values with intervals, difference, p-value, verdict, the
    number of paired items compared; then the notes of the rows and of the comparison."""
    settings = comparison["settings"]
    minimum = settings.get("min_items")
    lines = [f"{len(comparison['experiments'])} experiments from {one_line(comparison['source'])}; "
             f"{settings['resamples']} bootstrap resamples, seed {settings['seed']}, "
             f"{settings['confidence']:.0%} intervals"
             + (f"; a verdict needs at least {minimum} paired items" if minimum else "")]
    for pair in comparison["pairs"]:
        a, b = pair["baseline"], pair["system"]
        lines.append(f"\n{b} vs {a} (baseline), {pair['shared_items']} shared items")
        rows, row_notes = [], []
        for metric in comparison["metrics"]:
            name = metric["name"]
            entry = pair["metrics"][name]
            wtl = DASH if entry["wins"] is None else f"{entry['wins']}/{entry['ties']}/{entry['losses']}"
            arrow = "" if metric["higher_is_better"] else " (lower better)"
            rows.append([name + arrow, _interval(comparison["scores"][name].get(a)),
                         _interval(comparison["scores"][name].get(b)),
                         fmt_num(entry["delta"], signed=True), fmt_p(entry["p_value"]), verdict_text(entry),
                         fmt_num(entry.get("n")), wtl])
            if entry.get("note"):
                row_notes.append(f"  {name}: {entry['note']}")
        lines.append(format_table(["score", a, b, "delta", "p", "verdict", "n", "wins/ties/losses"], rows))
        lines.extend(row_notes)
    failed = {name: len(items) for name, items in comparison["failed_items"].items() if items}
    if failed:
        lines.append("\nfailed items: " + ", ".join(f"{name} {count}" for name, count in failed.items()))
    notes = comparison.get("notes") or []
    if notes:
        lines.append("\nnotes:")
        lines.extend(f"- {note}" for note in notes)
    return "\n".join(lines)

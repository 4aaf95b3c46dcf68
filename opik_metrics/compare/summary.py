"""The comparison as a terminal summary: a table per pair, in the report's number formats."""
from __future__ import annotations

from typing import Any

from opik_metrics.compare.formatting import DASH, fmt_interval, fmt_num, fmt_p
from opik_metrics.core.table import format_table


def _interval(entry: dict | None) -> str:
    """A score with its interval, written as on the report page."""
    if not entry:
        return DASH
    return f"{fmt_num(entry['value'])} {fmt_interval(entry['low'], entry['high'])}"


def format_comparison(comparison: dict[str, Any]) -> str:
    """A table per pair: each metric's values with intervals, difference, p-value and verdict."""
    settings = comparison["settings"]
    lines = [f"{len(comparison['experiments'])} experiments from {comparison['source']}; "
          f"{settings['resamples']} bootstrap resamples, seed {settings['seed']}, "
          f"{settings['confidence']:.0%} intervals"]
    for pair in comparison["pairs"]:
        a, b = pair["baseline"], pair["system"]
        lines.append(f"\n{b} vs {a} (baseline), {pair['shared_items']} shared items")
        rows = []
        for metric in comparison["metrics"]:
            name = metric["name"]
            entry = pair["metrics"][name]
            verdict = f"{entry['better']} better" if entry["significant"] else "not significant"
            wtl = DASH if entry["wins"] is None else f"{entry['wins']}/{entry['ties']}/{entry['losses']}"
            arrow = "" if metric["higher_is_better"] else " (lower better)"
            rows.append([name + arrow, _interval(comparison["scores"][name].get(a)),
                         _interval(comparison["scores"][name].get(b)),
                         fmt_num(entry["delta"], signed=True), fmt_p(entry["p_value"]), verdict, wtl])
        lines.append(format_table(["score", a, b, "delta", "p", "verdict", "wins/ties/losses"], rows))
    failed = {name: len(items) for name, items in comparison["failed_items"].items() if items}
    if failed:
        lines.append("\nfailed items: " + ", ".join(f"{name} {count}" for name, count in failed.items()))
    return "\n".join(lines)

"""The gate's result where CI shows it: a GitHub-flavoured Markdown table (for
``$GITHUB_STEP_SUMMARY``) and a JUnit XML report (one test case per gated score)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Optional, Sequence

from opik_metrics.compare.statistics.corrections import correction_label
from opik_metrics.compare.report.formatting import DASH, fmt_interval, fmt_num, fmt_p
from opik_metrics.compare.gate.decision import GateOutcome, GateResult, GateRow

__all__ = ["junit_xml", "markdown_table"]

#: Characters XML 1.0 cannot carry at all (C0 controls but tab/newline/return, lone surrogates, U+FFFE/F).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: Markdown punctuation that could format a name or open a link/code span; "|" would end a cell.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")


def _paired(rows: Sequence[GateRow], result: GateResult) -> list[tuple[GateRow, GateOutcome]]:
    """Rows and outcomes, matched by name (the outcomes are in the rows' order when ``decide`` made them)."""
    by_name = {o.name: o for o in result.outcomes}
    missing = [row.name for row in rows if row.name not in by_name]
    if missing:
        raise ValueError(f"the gate result has no outcome for {', '.join(map(repr, missing))}")
    return [(row, by_name[row.name]) for row in rows]


def _md_cell(text: str) -> str:
    """``text`` safe in one table cell: one line, ``|`` and Markdown punctuation escaped, no raw HTML."""
    text = " ".join(_NOT_XML.sub("\ufffd", text).split())   # newlines, tabs and runs of spaces -> one space
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def _plain_cell(text: str) -> str:
    """``text`` on one line, as it is otherwise."""
    return " ".join(_NOT_XML.sub("\ufffd", text).split())


def _verdict(row: GateRow, outcome: GateOutcome, alpha: float) -> str:
    """What the numbers say, apart from the gate: better / worse (significant), not significant, margin, n/a."""
    if not outcome.tested:
        return "n/a"
    if outcome.rule == "margin":
        return f"within margin {outcome.margin:g}" if outcome.passed else f"beyond margin {outcome.margin:g}"
    if outcome.p_adjusted is None or row.delta is None or row.delta == 0 or outcome.p_adjusted >= alpha:
        return "not significant"
    worse = row.delta < 0 if row.higher_is_better else row.delta > 0
    return "worse" if worse else "better"


def _gate_cell(outcome: GateOutcome) -> str:
    if not outcome.passed:
        return "**FAIL**"
    return "pass" if outcome.tested else "pass (untested)"


def _p_cell(outcome: GateOutcome) -> str:
    if outcome.correction == "none" or outcome.rule == "margin":
        return fmt_p(outcome.p_raw)
    return f"{fmt_p(outcome.p_raw)} / {fmt_p(outcome.p_adjusted)}"


def markdown_table(rows: Sequence[GateRow], result: GateResult, plain: bool = False) -> str:
    """A compact GitHub-flavoured table of the gated scores, then the gate's exit line.

    Columns: score, base, new, difference [interval], one-sided p raw / adjusted, verdict, gate. ``plain``:
    the same table as text to read (an assertion message): one line a cell, no Markdown escapes.
    """
    cell = _plain_cell if plain else _md_cell
    label = correction_label(result.correction)
    p_head = "one-sided p" if result.correction == "none" else f"one-sided p raw / {label}"
    lines = [f"| score | base | new | difference [interval] | {p_head} | verdict | gate |",
             "|---|---:|---:|---|---:|---|---|"]
    for row, outcome in _paired(rows, result):
        name = row.name if row.higher_is_better else f"{row.name} (lower is better)"
        interval = fmt_interval(row.low, row.high, signed=True)
        difference = fmt_num(row.delta, signed=True) + ("" if interval == DASH else f" {interval}")
        cells = [cell(name), fmt_num(row.base), fmt_num(row.new), difference, _p_cell(outcome),
                 _verdict(row, outcome, result.alpha), _gate_cell(outcome)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"alpha={result.alpha:g}, --fail-on {result.mode}. {cell(result.exit_line)}")
    return "\n".join(lines) + "\n"


def _xml_text(text: Optional[str]) -> str:
    """``text`` with the characters XML 1.0 cannot hold replaced by U+FFFD (ElementTree escapes the rest)."""
    return _NOT_XML.sub("\ufffd", text or "")


def _statistics(row: GateRow, outcome: GateOutcome) -> str:
    """The numbers behind an outcome, one per line, for a failure's body or a test case's output."""
    lines = [outcome.reason,
             f"direction: {'higher' if row.higher_is_better else 'lower'} is better",
             f"base: {fmt_num(row.base)}; new: {fmt_num(row.new)}; difference: {fmt_num(row.delta, signed=True)} "
             f"{fmt_interval(row.low, row.high, signed=True)}",
             f"one-sided p: {fmt_p(outcome.p_raw)}; adjusted ({correction_label(outcome.correction)}): {fmt_p(outcome.p_adjusted)}"]
    if outcome.margin is not None:
        lines.append(f"margin: {outcome.margin:g}")
    if row.n is not None:
        lines.append(f"paired items: {row.n}")
    return "\n".join(lines)


def junit_xml(rows: Sequence[GateRow], result: GateResult, suite: str = "opik-metrics compare gate") -> str:
    """A JUnit XML report: one ``<testsuite>``, one ``<testcase>`` per gated score; a failed score
    carries a ``<failure>`` whose message is its reason and whose text holds its statistics; an
    untested score that passed is ``<skipped>``. Built with ElementTree, so names are escaped."""
    pairs = _paired(rows, result)
    failures = sum(1 for _, o in pairs if not o.passed)
    skipped = sum(1 for _, o in pairs if o.passed and not o.tested)
    root = ET.Element("testsuite", {"name": _xml_text(suite), "tests": str(len(pairs)), "failures": str(failures),
                                    "errors": "0", "skipped": str(skipped), "time": "0"})
    props = ET.SubElement(root, "properties")
    for key, value in (("fail-on", result.mode), ("correction", result.correction), ("alpha", f"{result.alpha:g}"),
                       ("result", result.exit_line)):
        ET.SubElement(props, "property", {"name": key, "value": _xml_text(value)})
    for row, outcome in pairs:
        case = ET.SubElement(root, "testcase", {"classname": "opik_metrics.compare.gate",
                                                "name": _xml_text(row.name), "time": "0"})
        if not outcome.passed:
            failure = ET.SubElement(case, "failure", {"message": _xml_text(outcome.reason), "type": outcome.rule})
            failure.text = _xml_text(_statistics(row, outcome))
        elif not outcome.tested:
            ET.SubElement(case, "skipped", {"message": _xml_text(outcome.reason)})
        else:
            ET.SubElement(case, "system-out").text = _xml_text(_statistics(row, outcome))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

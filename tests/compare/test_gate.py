"""The gate's rules on hand-made rows: directions, modes, margins, untested scores, the exit line,
and its renderers (Markdown table, JUnit XML) with hostile score names."""
import math
import xml.etree.ElementTree as ET

import pytest

from opik_metrics.compare.gate.decision import GateDataError, GateRow, decide, decide_score
from opik_metrics.compare.gate.output import junit_xml, markdown_table


def _row(name="rouge1_f1", delta=-0.012, low=-0.020, high=-0.004, p=0.002, higher=True, **kw):
    return GateRow(name, higher, 0.45, 0.45 + delta, delta, low, high, p, **kw)


def _one(mode, row, **kw):
    return decide([row], mode, **kw).outcomes[0]


# -- one score ----------------------------------------------------------------------------------------


def test_worse_fails_only_significant_loss_in_the_declared_direction():
    assert not _one("worse", _row()).passed                                               # loss, p < alpha
    assert _one("worse", _row(p=0.2)).passed                                              # loss, not significant
    assert _one("worse", _row(delta=0.012, low=0.004, high=0.02)).passed                  # significant gain
    # lower is better (TER, latency): a significant rise is the loss, a significant fall is not
    assert not _one("worse", _row("ter", delta=0.03, low=0.01, high=0.05, higher=False)).passed
    assert _one("worse", _row("ter", delta=-0.03, low=-0.05, high=-0.01, higher=False)).passed


def test_not_better_needs_a_significant_gain_in_the_declared_direction():
    assert _one("not-better", _row(delta=0.012, low=0.004, high=0.02)).passed
    assert not _one("not-better", _row(delta=0.012, low=-0.004, high=0.02, p=0.3)).passed
    assert not _one("not-better", _row()).passed
    assert _one("not-better", _row("ter", delta=-0.03, low=-0.05, high=-0.01, higher=False)).passed
    assert not _one("not-better", _row("ter", delta=0.03, low=0.01, high=0.05, higher=False)).passed
    unchanged = _one("not-better", _row(delta=0.0, low=-0.01, high=0.01, p=1.0))
    assert not unchanged.passed and "unchanged" in unchanged.reason


def test_alpha_is_strict_and_the_adjusted_p_decides():
    assert _one("worse", _row(p=0.05)).passed                       # p == alpha is not significant
    assert not _one("worse", _row(p=0.0499)).passed
    out = decide_score("s", True, -0.01, -0.02, -0.001, 0.01, 0.06, alpha=0.05, mode="worse")
    assert out.passed and out.p_raw == 0.01 and out.p_adjusted == 0.06   # raw significant, adjusted not


def test_margin_is_non_inferiority_in_the_scores_direction():
    row = _row(delta=-0.004, low=-0.008, high=-0.001, p=0.001)
    assert _one("worse", row).passed is False                                   # significant loss ...
    kept = _one("worse", row, margins={"rouge1_f1": 0.01})                      # ... within a 0.01 margin
    assert kept.passed and kept.rule == "margin" and kept.margin == 0.01 and kept.p_adjusted is None
    assert "stays above -0.01" in kept.reason
    assert not _one("worse", row, margins={"rouge1_f1": 0.005}).passed          # low -0.008 reaches past -0.005
    assert not _one("worse", row, margins={"rouge1_f1": 0.008}).passed          # the bound is strict: low > -X
    # lower is better: the interval's high end must stay below +X
    ter = _row("ter", delta=0.004, low=0.001, high=0.008, higher=False)
    assert _one("worse", ter, margins={"ter": 0.01}).passed
    assert not _one("worse", ter, margins={"ter": 0.005}).passed
    # the margin replaces the mode's test: not-better passes a non-improvement within the margin
    assert _one("not-better", _row(delta=0.0, low=-0.002, high=0.002, p=1.0), margins={"rouge1_f1": 0.005}).passed


def test_untested_scores_pass_worse_but_fail_not_better_and_margins():
    few = _row("bleu", p=0.01, n=3, no_verdict="only 3 paired items: a verdict needs at least 5")
    tested = _row("rouge1_f1", delta=0.001, low=-0.002, high=0.004, p=0.5)
    worse = decide([tested, few], "worse")
    assert worse.passed and not worse.outcomes[1].tested and worse.outcomes[1].passed
    assert "only 3 paired items" in worse.outcomes[1].reason
    assert worse.exit_line.endswith("untested, so not held against the change: bleu")
    assert worse.outcomes[1].p_adjusted is None        # not in the family: Holm over the one tested score
    assert worse.outcomes[0].p_adjusted == 0.5
    not_better = decide([tested, few], "not-better")
    assert not not_better.passed and "add paired items" in not_better.outcomes[1].reason
    margin = decide([tested, few], "worse", margins={"bleu": 0.01})
    assert not margin.passed and "untested" in margin.outcomes[1].reason
    no_p = decide([tested, _row(p=None, name="bleu")], "worse").outcomes[1]
    assert no_p.passed and not no_p.tested and "no paired test" in no_p.reason
    assert not decide([tested, _row(p=math.nan, name="bleu")], "worse").outcomes[1].tested


def test_a_gate_that_tested_nothing_is_a_data_error_not_a_failure():
    """Issue 48: nothing testable is a broken set-up (exit 2), never taken for a regression (exit 1)."""
    few = _row("bleu", p=0.01, n=3, no_verdict="only 3 paired items: a verdict needs at least 5")
    for mode in ("worse", "not-better"):
        with pytest.raises(GateDataError) as caught:
            decide([few, _row("rouge1_f1", p=None)], mode)
        assert str(caught.value) == ("no gated score could be tested (bleu, rouge1_f1): the gate has no evidence "
                                     "either way; add paired items")
    assert isinstance(caught.value, ValueError)


# -- the family and the exit line ---------------------------------------------------------------------


def test_holm_over_the_tested_scores_and_the_exit_lines():
    rows = [_row("rouge1_f1", p=0.002), _row("rouge2_f1", delta=0.01, low=-0.01, high=0.03, p=0.04),
            _row("bleu", delta=0.001, low=-0.001, high=0.003, p=0.03), _row("ter", delta=-0.01, low=-0.02,
                                                                             high=0.0, p=0.2, higher=False)]
    result = decide(rows, "worse", "holm")
    # Holm, m = 4: 0.002 x4 = 0.008; 0.03 x3 = 0.09; 0.04 x2 = 0.08 -> 0.09; 0.2 x1 -> 0.2
    assert [o.p_adjusted for o in result.outcomes] == pytest.approx([0.008, 0.09, 0.09, 0.2], abs=1e-15)
    assert [o.passed for o in result.outcomes] == [False, True, True, True]
    assert result.exit_line == ("gate failed: rouge1_f1 is significantly worse by 0.01200 [-0.02000, -0.00400], "
                                "one-sided p=0.002 (Holm-adjusted 0.008)")
    assert result.failures == (result.outcomes[0],)
    none = decide(rows, "worse", "none")
    assert none.exit_line == "gate failed: rouge1_f1 is significantly worse by 0.01200 [-0.02000, -0.00400], one-sided p=0.002"
    passing = decide(rows[1:], "worse", "bonferroni")
    assert passing.passed
    assert passing.exit_line == "gate passed: no gated score is significantly worse (3 tested scores, Bonferroni)"
    gains = [_row("a", delta=0.02, low=0.01, high=0.03, p=0.001), _row("b", delta=0.0, low=-0.01, high=0.01, p=1.0)]
    assert decide(gains, "not-better", margins={"b": 0.02}).exit_line == (
        "gate passed: every gated score is significantly better (1 tested score, Holm; 1 within its margin)")
    assert decide(gains[1:], "worse", margins={"b": 0.02}).exit_line == (
        "gate passed: every gated score stays within its margin (1 within its margin)")
    two = decide([_row("a"), _row("b", p=0.001)], "worse")
    assert two.exit_line.endswith("(and 1 more: b)")


def test_lower_is_better_loss_reads_in_its_direction():
    out = _one("worse", _row("latency_s", delta=0.3, low=0.1, high=0.5, p=0.004, higher=False))
    assert out.reason == ("latency_s is significantly worse by 0.3000 [+0.1000, +0.5000] (lower is better), "
                          "one-sided p=0.004 (Holm-adjusted 0.004)")


@pytest.mark.parametrize("call, message", [
    (lambda: decide([], "worse"), "no score to gate"),
    (lambda: decide([_row()], "better"), "mode .--fail-on. must be one of worse, not-better"),
    (lambda: decide([_row()], "worse", "fdr"), "correction must be one of"),
    (lambda: decide([_row()], "worse", alpha=0), r"alpha must be a number in \(0, 1\)"),
    (lambda: decide([_row(), _row()], "worse"), "gated twice"),
    (lambda: decide([_row()], "worse", margins={"bleu": 0.01}), "--margin names 'bleu', which is not a gated score"),
    (lambda: decide([_row()], "worse", margins={"rouge1_f1": -0.01}), "margin of rouge1_f1 must be a finite number"),
    (lambda: decide([_row(p=2.0)], "worse"), r"rouge1_f1: p_raw is 2.0; a p-value lies in \[0, 1\]"),
    (lambda: decide([_row(delta=math.inf)], "worse"), "rouge1_f1: delta is inf"),
    (lambda: decide(["rouge1_f1"], "worse"), r"rows\[0\] must be a GateRow"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# -- renderers ----------------------------------------------------------------------------------------

HOSTILE = ["a|b", "line\nbreak", "<script>alert(1)</script>", "x & y \"q\" 'q'", "]]>", "ctl\x00\x1b\x7f",
           "[link](http://x)", "`code`", "lone\ud800surrogate", "émoji 🚀"]


def test_markdown_table_one_row_per_score_with_names_escaped():
    rows = [_row(name, p=0.001 * (k + 1)) for k, name in enumerate(HOSTILE)]
    result = decide(rows, "worse")
    text = markdown_table(rows, result)
    lines = text.splitlines()
    assert lines[0] == "| score | base | new | difference [interval] | one-sided p raw / Holm | verdict | gate |"
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + len(HOSTILE)
    for line in table:          # every row has exactly 7 cells: no name's "|" opened another one
        assert len(line.replace("\\|", "").split("|")) == 9
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "\\[link\\](http://x)" in text and "\\`code\\`" in text
    assert "line break" in text
    first = table[2].split(" | ")
    assert first[3:] == ["-0.01200 [-0.02000, -0.00400]", "0.001 / 0.010", "worse", "**FAIL** |"]
    assert lines[-1].startswith("alpha=0.05, --fail-on worse. gate failed: ")


def test_markdown_table_directions_untested_and_margin():
    rows = [_row("ter", delta=0.01, low=-0.01, high=0.03, p=0.4, higher=False),
            _row("bleu", p=0.01, no_verdict="only 3 paired items"),
            _row("chrf", delta=-0.001, low=-0.002, high=0.0, p=0.04)]
    table = markdown_table(rows, decide(rows, "worse", "none", margins={"chrf": 0.005})).splitlines()
    assert table[0].split(" | ")[4] == "one-sided p"
    assert table[2] == "| ter (lower is better) | 0.4500 | 0.4600 | +0.01000 [-0.01000, +0.03000] | 0.400 | not significant | pass |"
    assert table[3].endswith("| 0.010 | n/a | pass (untested) |")
    assert table[4].endswith("| 0.040 | within margin 0.005 | pass |")


def test_junit_xml_parses_with_hostile_names_and_carries_the_statistics():
    rows = [_row(name, p=0.001 if k % 2 else 0.5) for k, name in enumerate(HOSTILE)]
    rows.append(_row("few", p=None))
    result = decide(rows, "worse")
    xml = junit_xml(rows, result)
    root = ET.fromstring(xml.encode("utf-8"))
    assert root.tag == "testsuite"
    cases = root.findall("testcase")
    assert len(cases) == len(rows)
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == int(root.get("failures")) == sum(not o.passed for o in result.outcomes) == 5
    assert root.get("tests") == str(len(rows)) and root.get("skipped") == "1"
    assert cases[-1].find("skipped") is not None
    # names survive, but for the characters XML cannot hold, which become U+FFFD
    assert [c.get("name") for c in cases[:4]] == HOSTILE[:4]
    assert cases[5].get("name") == "ctl\ufffd\ufffd\x7f"
    assert cases[8].get("name") == "lone\ufffdsurrogate"
    failure = cases[1].find("failure")
    assert failure.get("type") == "worse"
    assert failure.get("message") == result.outcomes[1].reason
    assert "p: 0.001; adjusted (Holm): 0.010" in failure.text and "direction: higher is better" in failure.text
    props = {p.get("name"): p.get("value") for p in root.find("properties")}
    assert props == {"fail-on": "worse", "correction": "holm", "alpha": "0.05", "result": result.exit_line.replace(
        "\x00", "\ufffd").replace("\x1b", "\ufffd").replace("\ud800", "\ufffd")}


def test_renderers_refuse_rows_the_result_does_not_cover():
    result = decide([_row("a")], "worse")
    with pytest.raises(ValueError, match="no outcome for 'b'"):
        markdown_table([_row("b")], result)

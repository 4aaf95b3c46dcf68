"""`compare` claims no more than its items allow (issue "Hardening"): one shared item gives no verdict,
infinite and NaN scores are counted and said to be left out, a row with nothing to compare says
n/a; the same in comparison.json, the text summary and the HTML report."""
from __future__ import annotations

import math

import pytest
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.report.html import verdict_badge
from opik_metrics.compare.model import Comparison, Verdict
from opik_metrics.compare.report.folder import write_report
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.compare.report.summary import format_comparison
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.records_fixture import experiment

SETTINGS = CompareSettings(resamples=1000, seed=7)


class Surprise(base_metric.BaseMetric):
    """A perplexity-like score, better when lower, that overflows to inf ("inf" in the output) or
    gives NaN ("nan" in the output), as a model's perplexity does on a token of zero probability."""

    higher_is_better = False

    def __init__(self) -> None:
        super().__init__(name="surprise", track=False)

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        if "inf" in output:
            return score_result.ScoreResult(name="surprise", value=math.inf)
        if "nan" in output:
            return score_result.ScoreResult(name="surprise", value=math.nan)
        return score_result.ScoreResult(name="surprise", value=float(output.split()[-1]))


def _rows(text: str, name: str) -> list[str]:
    """The summary table rows of score ``name`` (not the header, not the notes)."""
    return [line for line in text.splitlines() if line.startswith(name) and ("[" in line or "—" in line)]


def test_one_shared_item_gives_no_verdict_and_no_p_value(tmp_path):
    a = experiment("a", {"score": [0.1, 0.2, 0.3]}, failed=[1, 2])
    b = experiment("b", {"score": [0.9, 0.2, 0.3]}, failed=[2])
    comparison = compare_experiments([a, b], SETTINGS, created_at="t")
    entry = comparison.pairs[0].metrics["score"]
    assert entry.n == 1 and entry.p_value is None      # every resample is the one pair: nothing to test
    assert entry.significant is None and comparison.pairs[0].better("score") is None and entry.verdict is Verdict.NONE
    assert "only 1 paired item: no test is possible and a verdict needs at least 5" in entry.note
    assert comparison.settings.min_items == 5
    assert any("a verdict (significant or not) needs at least 5 paired items" in n and "score (b vs a: 1)" in n
               for n in comparison.notes)
    assert not any("not corrected for multiple comparisons" in n for n in comparison.notes)

    text = format_comparison(comparison)
    assert "a verdict needs at least 5 paired items" in text
    (row,) = _rows(text, "score")
    assert "n/a" in row and "better" not in row and "<0.001" not in row
    files = write_report(comparison, tmp_path / "report")
    page = files.html.read_text(encoding="utf-8")
    assert '<span class="badge na"' in page and "significant: better" not in page
    assert "a verdict needs 5 paired items" in page
    assert Comparison.from_json(files.json.read_text(encoding="utf-8")) == comparison

    six = compare_experiments([experiment("a", {"s": [0.1 * k for k in range(6)]}),
                               experiment("b", {"s": [0.1 * k + 0.5 for k in range(6)]})], SETTINGS)
    assert six.pairs[0].metrics["s"].verdict is Verdict.BETTER           # six items: a verdict
    # five items better everywhere: a verdict is given, but the permutation test's smallest p is 2/2^5
    five = compare_experiments([experiment("a", {"s": [0.1 * k for k in range(5)]}),
                                experiment("b", {"s": [0.1 * k + 0.5 for k in range(5)]})], SETTINGS)
    entry = five.pairs[0].metrics["s"]
    assert entry.verdict is Verdict.NO_DIFFERENCE and entry.p_value > 0.05
    assert "smallest two-sided p is 1/2^4 = 0.0625: no difference can be significant" in entry.note
    with pytest.raises(ValueError, match="min_items: expected a positive integer"):
        compare_experiments([a, b], CompareSettings(min_items=0))


def test_nothing_to_compare_is_n_a_not_not_significant(tmp_path):
    a = experiment("a", {"score": [0.1, 0.2], "only_a": [0.5, 0.6]})
    b = experiment("b", {"score": [0.3, 0.4], "only_a": [None, None]})
    comparison = compare_experiments([a, b], SETTINGS, created_at="t")
    entry = comparison.pairs[0].metrics["only_a"]
    assert entry.n == 0 and entry.p_value is None and entry.significant is None
    assert entry.verdict is Verdict.NONE and "nothing to compare" in entry.note
    assert any("nothing to compare" in n and "only_a (b vs a)" in n for n in comparison.notes)
    text = format_comparison(comparison)
    (row,) = _rows(text, "only_a ")
    assert "n/a" in row and "not significant" not in row
    assert "n/a" in verdict_badge(entry)


def test_infinite_and_nan_scores_are_counted_and_left_out_with_a_note(tmp_path):
    """60 items; the system's perplexity is infinite on 15 and lower on the other 45, the baseline's
    is NaN on 3 of those 45: the report says so everywhere instead of "better 45/0/0" on 60 items."""
    path = tmp_path / "store.sqlite"
    items = [{"line": k, "reference": f"reference {k}"} for k in range(60)]
    baseline = [f"a {'nan' if k in (20, 21, 22) else 20 + k % 7}" for k in range(60)]
    system = [f"b {'inf' if k < 15 else 10 + k % 7}" for k in range(60)]
    for name, outputs in (("base", baseline), ("sys", system)):
        run_experiment(name, items, lambda item, o=outputs: {"output": o[item["line"]]}, [Surprise()],
                       dataset_name="d", config={"model": name}, store=path, progress=False)
    with ExperimentStore(path, create=False) as store:
        stored = store.items(store.info("sys").id)
        inf = stored[0].scores["surprise"]       # failed, so that no Opik server is sent it; still inf here
        assert inf.failed and inf.metadata["unsent_value"] == "inf" and "not a score an Opik server" in inf.reason
        assert store.info("sys").scores["surprise"] == pytest.approx(sum(10 + k % 7 for k in range(15, 60)) / 45)
        runs = load_experiments(["base", "sys"], store=store)
    comparison = compare_experiments(runs, SETTINGS, created_at="t")

    scores = comparison.scores["surprise"]
    assert (scores["sys"].n, scores["sys"].non_finite, scores["sys"].non_finite_kinds) == (45, 15, {"inf": 15})
    assert (scores["base"].n, scores["base"].non_finite, scores["base"].non_finite_kinds) == (57, 3, {"nan": 3})
    assert scores["sys"].failed == 0 and scores["base"].failed == 0
    pair = comparison.pairs[0]
    entry = pair.metrics["surprise"]
    assert pair.shared_items == 60 and entry.n == 42
    assert entry.non_finite == {"baseline": 3, "system": 15}
    assert entry.wins + entry.ties + entry.losses == 42
    assert "18 of 60 shared items left out: surprise is not finite there (base: 3 NaN; sys: 15 inf)" in entry.note
    assert entry.verdict is Verdict.BETTER and pair.better("surprise") == "sys"     # on the 42 it can compare
    notes = comparison.notes
    assert "sys: surprise is not finite for 15 of 60 items with an output (15 inf); they are left out of its " \
           "value, interval and paired tests" in notes
    assert any(n.startswith("base: surprise is not finite for 3 of 60 items") for n in notes)

    text = format_comparison(comparison)
    assert "sys vs base (baseline), 60 shared items" in text
    (row,) = _rows(text, "surprise (lower better)")
    assert " 42 " in row and "42/0/0" in row
    assert "18 of 60 shared items left out" in text and "15 of 60 items with an output (15 inf)" in text

    files = write_report(comparison, tmp_path / "report")
    assert Comparison.from_json(files.json.read_text(encoding="utf-8")) == comparison
    page = files.html.read_text(encoding="utf-8")
    assert "Not finite (left out)" in page and "15 (15 inf)" in page and "3 (3 NaN)" in page
    assert "18 of 60 shared items left out" in page and "Paired items" in page


def test_an_output_cut_mid_emoji_still_gives_a_report(tmp_path):
    a = experiment("a", {"score": [0.1 * k for k in range(6)]})
    b = experiment("b", {"score": [0.1 * k + 0.2 for k in range(6)]}, failed=[5])
    b.items[0].output = {"output": "a smiling cat \ud83d"}
    b.items[5].input = {"reference": "cut \ud83d"}
    comparison = compare_experiments([a, b], SETTINGS, created_at="t")
    files = write_report(comparison, tmp_path / "report")
    assert Comparison.from_json(files.json.read_text(encoding="utf-8")) == comparison
    page = files.html.read_text(encoding="utf-8")
    assert "a smiling cat \\ud83d" in page and "cut \\ud83d" in page


def test_names_holding_a_newline_stay_on_their_line():
    """Experiment and score names holding a newline, a carriage return or an escape character are
    shown escaped in the summary, so that each header and row stays one line."""
    comparison = compare_experiments([experiment("base\nline", {"s\x1b": [0.1 * k for k in range(8)]}),
                                      experiment("new\r", {"s\x1b": [0.1 * k + 0.5 for k in range(8)]})], SETTINGS)
    text = format_comparison(comparison)
    assert "\r" not in text and "\x1b" not in text
    assert "\nnew\\r vs base\\nline (baseline), 8 shared items\n" in text
    header, rule = (line for line in text.splitlines() if line.startswith(("score ", "-----")))
    assert header.split() == ["score", "base\\nline", "new\\r", "delta", "p", "verdict", "n", "wins/ties/losses"]
    assert len(rule) >= len(header.rstrip())
    (row,) = _rows(text, "s\\x1b")
    assert "new\\r better" in row

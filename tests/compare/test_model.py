"""The typed comparison: verdicts in each score's direction, decided once and read the same by the
page, the summary and the publication; comparison.json round-trips through the model exactly; a
/1 file (written by the analysis of commit ed2102b) reads as today's analysis of the same runs."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from opik_metrics import BLEU, ROUGE
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.report.html import verdict_badge
from opik_metrics.compare.model import SCHEMA, Comparison, GateOutcome, Verdict, load_comparison
from opik_metrics.compare.publishing.publication import build_publication
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.compare.report.summary import verdict_text
from opik_metrics.core import MetricFacts, ScoreFacts
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.records_fixture import experiment
from tests.compare.systems import FAIL, store_with

V1_FILE = Path(__file__).parent / "data" / "comparison_v1.json"


def _v1_runs():
    """The experiments tests/compare/data/comparison_v1.json compares (CompareSettings(resamples=200,
    seed=5, top_k=2), source "hand-made", created at 2026-11-25T00:00:00+00:00): quality worse in new,
    latency (lower is better) better in new, same not significantly different, rare on 3 items only."""
    latency = MetricFacts("latency", "hand-made", (ScoreFacts("latency", False),), higher_is_better=False)
    config = {"metrics": {"latency": latency.as_dict()}}
    n = 12
    quality_a = [0.5 + 0.02 * (k % 4) for k in range(n)]
    quality_b = [q - 0.1 + 0.01 * (k % 3) for k, q in enumerate(quality_a)]
    same_a = [0.3, 0.5, 0.2, 0.6, 0.4, 0.7, 0.1, 0.5, 0.3, 0.6, 0.2, 0.4]
    same_b = [0.35, 0.45, 0.2, 0.65, 0.35, 0.7, 0.15, 0.45, 0.3, 0.6, 0.25, 0.4]
    rare_a = [0.4, 0.6, 0.8] + [None] * (n - 3)
    rare_b = [0.5, 0.7, 0.9] + [None] * (n - 3)
    a = experiment("base", {"quality": quality_a, "latency": [2.0 + 0.1 * k for k in range(n)], "same": same_a,
                            "rare": rare_a}, failed=[11], config={**config, "model": "m1"})
    b = experiment("new", {"quality": quality_b, "latency": [1.5 + 0.1 * k for k in range(n)], "same": same_b,
                           "rare": rare_b}, config={**config, "model": "m2"})
    return [a, b]


def _v1_settings():
    return CompareSettings(resamples=200, seed=5, top_k=2)


@pytest.fixture(scope="module")
def hand_made():
    return compare_experiments(_v1_runs(), _v1_settings(), source="hand-made",
                               created_at="2026-11-25T00:00:00+00:00")


@pytest.fixture(scope="module")
def from_store(tmp_path_factory):
    """Three systems scored by ROUGE and BLEU in a local store: means, corpus BLEU, failed items."""
    references = [f"the cat number {k} sat on the mat by door {k % 7}" for k in range(24)]
    systems = {"good": references,
               "fair": [r.replace("cat", "dog") if k % 2 else r for k, r in enumerate(references)],
               "poor": [" ".join(r.split()[:4]) if k % 5 else FAIL for k, r in enumerate(references)]}
    path = store_with(tmp_path_factory.mktemp("store") / "runs.sqlite", references, systems, [ROUGE(), BLEU()])
    with ExperimentStore(path, create=False) as store:
        runs = load_experiments(list(systems), store=store)
    return compare_experiments(runs, CompareSettings(resamples=200, seed=1), created_at="t")


# ---- the verdict ------------------------------------------------------------------------------

@pytest.mark.parametrize("significant, delta, higher, verdict", [
    (True, 0.2, True, Verdict.BETTER), (True, -0.2, True, Verdict.WORSE),
    (True, -3.0, False, Verdict.BETTER), (True, 3.0, False, Verdict.WORSE),     # perplexity, TER, latency
    (False, 0.2, True, Verdict.NO_DIFFERENCE), (False, -3.0, False, Verdict.NO_DIFFERENCE),
    (None, 0.2, True, Verdict.NONE), (None, None, False, Verdict.NONE),
    (True, 0.0, True, Verdict.NO_DIFFERENCE),                                   # no direction to be better in
])
def test_the_verdict_follows_the_scores_direction(significant, delta, higher, verdict):
    assert Verdict.of(significant, delta, higher) is verdict
    assert verdict.significant is (None if verdict is Verdict.NONE else verdict is not Verdict.NO_DIFFERENCE)


def test_every_consumer_reads_the_one_verdict(hand_made, from_store):
    """The page's badge, the summary's words and the published +1/0/-1 say what the analysis decided."""
    words = {Verdict.BETTER: "significant: better", Verdict.WORSE: "significant: worse",
             Verdict.NO_DIFFERENCE: "not significant", Verdict.NONE: "n/a"}
    published = {Verdict.BETTER: 1, Verdict.WORSE: -1, Verdict.NO_DIFFERENCE: 0, Verdict.NONE: None}
    seen = set()
    for comparison in (hand_made, from_store):
        record = build_publication(comparison)["experiments"][comparison.names[0]]["metadata"]
        for pair, summary in zip(comparison.pairs, record["pairs"]):
            for score, entry in pair.metrics.items():
                seen.add(entry.verdict)
                assert words[entry.verdict] in verdict_badge(entry)
                assert summary["scores"][score]["direction_verdict"] == published[entry.verdict]
                expected = {Verdict.BETTER: f"{pair.system} better", Verdict.WORSE: f"{pair.baseline} better",
                            Verdict.NO_DIFFERENCE: "not significant", Verdict.NONE: "n/a"}[entry.verdict]
                assert verdict_text(pair, score) == expected
    assert seen == set(Verdict)       # every verdict was met on real comparisons


def test_hand_made_verdicts(hand_made):
    verdicts = {score: entry.verdict for score, entry in hand_made.pairs[0].metrics.items()}
    assert verdicts == {"quality": Verdict.WORSE, "latency": Verdict.BETTER, "same": Verdict.NO_DIFFERENCE,
                        "rare": Verdict.NONE}
    assert hand_made.pairs[0].metrics["latency"].delta == pytest.approx(-0.5)
    assert hand_made.pairs[0].better("quality") == "base" and hand_made.pairs[0].better("rare") is None


# ---- comparison.json --------------------------------------------------------------------------

def test_json_round_trips_exactly(hand_made, from_store, tmp_path):
    for comparison in (hand_made, from_store):
        text = comparison.to_json()
        again = Comparison.from_json(text)
        assert again == comparison and again.to_json() == text
        assert Comparison.from_dict(json.loads(text)).to_dict() == json.loads(text)
        assert json.loads(text)["schema"] == SCHEMA == "opik-metrics/compare/2"
        path = tmp_path / "comparison.json"
        path.write_text(text, encoding="utf-8")
        assert load_comparison(path) == comparison
    assert {m.kind for m in from_store.metrics} == {"mean", "corpus"} and from_store.failed_items["poor"]


def test_the_gates_outcome_round_trips_and_gives_the_adjusted_p(hand_made):
    entry = hand_made.pairs[0].metrics["quality"]
    assert entry.gate is None and entry.p_adjusted is None
    outcome = GateOutcome(correction="holm", p_adjusted=0.0199, margin=0.005, passed=False,
                          reason="quality is significantly worse (p 0.005, holm-adjusted 0.0199)")
    gated_pair = dataclasses.replace(hand_made.pairs[0], metrics={**hand_made.pairs[0].metrics,
                                                                  "quality": dataclasses.replace(entry, gate=outcome)})
    gated = dataclasses.replace(hand_made, pairs=(gated_pair,))
    again = Comparison.from_json(gated.to_json())
    assert again == gated and again.pairs[0].metrics["quality"].p_adjusted == 0.0199
    assert json.loads(gated.to_json())["pairs"][0]["metrics"]["quality"]["gate"] == {
        "correction": "holm", "p_adjusted": 0.0199, "margin": 0.005, "passed": False,
        "reason": "quality is significantly worse (p 0.005, holm-adjusted 0.0199)"}


def _differences(a, b, where="comparison"):
    """Where ``a`` and ``b`` differ, walking dataclasses, dicts and sequences; floats are equal within
    rounding (relative 1e-12), everything else exactly."""
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) else [f"{where}: {a!r} != {b!r}"]
    if type(a) is not type(b):
        return [f"{where}: {type(a).__name__} != {type(b).__name__}"]
    if dataclasses.is_dataclass(a):
        return [d for f in dataclasses.fields(a)
                for d in _differences(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")]
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _differences(a[k], b[k], f"{where}[{k!r}]")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [d for k, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{k}]")]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_differences_sees_a_changed_float_a_changed_word_and_not_rounding(hand_made):
    score = hand_made.scores["quality"]["base"]
    assert _differences(hand_made, hand_made) == []
    rounded = dataclasses.replace(score, value=score.value * (1 + 1e-15))
    assert _differences(score, rounded) == []
    assert _differences(score, dataclasses.replace(score, value=score.value + 1e-9)) != []
    assert _differences(hand_made, dataclasses.replace(hand_made, source="other")) == [
        "comparison.source: 'hand-made' != 'other'"]


def test_a_v1_file_reads_as_todays_analysis_of_the_same_runs(hand_made):
    data = json.loads(V1_FILE.read_text(encoding="utf-8"))
    assert data["schema"] == "opik-metrics/compare/1"
    entries = data["pairs"][0]["metrics"]                     # what /1 said: a flag and the winner's name
    assert (entries["quality"]["verdict"], entries["quality"]["better"]) == ("significant", "base")
    assert (entries["latency"]["verdict"], entries["latency"]["better"]) == ("significant", "new")
    old = load_comparison(V1_FILE)
    # A file from before says its p-values are sacrebleu's (the rule then): today's analysis under that
    # rule gives the same comparison, less the one-sided p and the settings' words that came later.
    assert old.settings.p_value == "sacrebleu"
    assert {e.test for e in old.pairs[0].metrics.values() if e.p_value is not None} == {"paired-bs-sacrebleu"}
    today = compare_experiments(_v1_runs(), dataclasses.replace(_v1_settings(), p_value="sacrebleu"),
                                source="hand-made", created_at="2026-11-25T00:00:00+00:00")
    today = dataclasses.replace(today, settings=old.settings, pairs=tuple(
        dataclasses.replace(pair, metrics={k: dataclasses.replace(e, p_one_sided=None) for k, e in pair.metrics.items()})
        for pair in today.pairs))
    # Equal within rounding: today's resampled means come from the draw's counts (counts @ values / n),
    # the /1 file's from gathering the values, the same sums in another order.
    assert _differences(dataclasses.replace(old, versions=today.versions), today) == []
    assert old.pairs[0].metrics["quality"].verdict is Verdict.WORSE
    assert old.pairs[0].metrics["latency"].verdict is Verdict.BETTER
    assert json.loads(old.to_json())["schema"] == SCHEMA


def test_a_v1_entry_without_a_recorded_verdict_gets_one_from_its_flag():
    data = json.loads(V1_FILE.read_text(encoding="utf-8"))
    for entry in data["pairs"][0]["metrics"].values():
        del entry["verdict"], entry["better"]
    verdicts = {k: e.verdict for k, e in Comparison.from_dict(data).pairs[0].metrics.items()}
    # rare: 3 paired items had p but no flag (None) in /1: n/a
    assert verdicts == {"quality": Verdict.WORSE, "latency": Verdict.BETTER, "same": Verdict.NO_DIFFERENCE,
                        "rare": Verdict.NONE}


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("notes"), "comparison: missing field 'notes'"),
    (lambda d: d.update(extra=1), "comparison: unknown field 'extra'"),
    (lambda d: d.update(schema="opik-metrics/compare/9"), "schema 'opik-metrics/compare/9' is not one this version"),
    (lambda d: d["settings"].update(resamples="many"), "comparison.settings.resamples: expected an integer, got a "
                                                       "string 'many'"),
    (lambda d: d["pairs"][0]["metrics"]["quality"].update(verdict="significant"),
     "comparison.pairs[0].metrics.quality.verdict: expected one of 'better', 'worse', 'no significant difference', "
     "'n/a', got 'significant'"),
    (lambda d: d["pairs"][0]["metrics"]["same"].pop("p_value"),
     "comparison.pairs[0].metrics.same: missing field 'p_value'"),
    (lambda d: d["metrics"][0].update(kind="median"), "comparison.metrics[0].kind: expected 'mean' or 'corpus'"),
    (lambda d: d["scores"]["quality"]["base"].update(values=[0.1, "x"]),
     "scores['quality']['base'].values: expected a list of numbers"),
])
def test_a_damaged_file_is_named_where_it_is_wrong(hand_made, change, message):
    data = json.loads(hand_made.to_json())
    change(data)
    with pytest.raises(ValueError) as error:
        Comparison.from_dict(data)
    assert message in str(error.value)


def test_not_json_and_nan_are_refused(tmp_path):
    path = tmp_path / "comparison.json"
    path.write_text('{"schema": "opik-metrics/compare/2", "x": NaN}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"comparison.json: comparison: NaN is not a JSON number"):
        load_comparison(path)
    with pytest.raises(ValueError, match="comparison: not JSON"):
        Comparison.from_json("{")
    with pytest.raises(ValueError, match="cannot read comparison"):
        load_comparison(tmp_path / "missing.json")


def test_the_model_is_frozen(hand_made):
    with pytest.raises(dataclasses.FrozenInstanceError):
        hand_made.pairs[0].metrics["quality"].verdict = Verdict.BETTER  # type: ignore[misc]

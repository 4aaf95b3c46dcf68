"""The comparison worked out by hand: means and their bootstrap intervals, paired tests on shared
items only, wins/ties/losses, the largest differences, failures, metric choice and direction."""
import math

import numpy as np
import pytest

from opik_metrics.compare.analysis import CompareSettings, compare_experiments, input_text, unpaired
from opik_metrics.compare.statistics.bootstrap import CorpusStatistic
from opik_metrics.compare.model import FailedItem, Verdict
from opik_metrics.core import MetricFacts, ScoreFacts
from opik_metrics.neural.lm.formulas import perplexity_from_statistics
from tests.compare.records_fixture import experiment

SETTINGS = CompareSettings(resamples=1000, seed=7)


def _percentile_interval(values, n_resamples, seed):
    """The interval computed directly: the mean on each resample, ranks 25 and 974 of 1000."""
    idx = np.random.default_rng(seed).choice(len(values), size=(n_resamples, len(values)), replace=True)
    means = np.sort(np.asarray(values)[idx].mean(axis=1))
    return means[25], means[974]


def test_means_and_intervals_match_a_direct_computation():
    a = experiment("a", {"score": [0.1, 0.2, 0.3, 0.4, 0.9, 0.0]})
    b = experiment("b", {"score": [0.2, 0.2, 0.5, 0.1, 0.9, 0.3]})
    result = compare_experiments([a, b], SETTINGS)
    entry = result.scores["score"]["a"]
    assert entry.value == pytest.approx(1.9 / 6, abs=1e-15)
    low, high = _percentile_interval([0.1, 0.2, 0.3, 0.4, 0.9, 0.0], 1000, 7)
    assert (entry.low, entry.high) == (pytest.approx(low, abs=1e-15), pytest.approx(high, abs=1e-15))
    assert entry.n == 6 and entry.failed == 0 and entry.values == (0.1, 0.2, 0.3, 0.4, 0.9, 0.0)


def test_wins_ties_losses_and_largest_differences_by_hand():
    a = experiment("a", {"score": [0.1, 0.2, 0.3, 0.4]})
    b = experiment("b", {"score": [0.2, 0.2, 0.5, 0.1]})
    pair = compare_experiments([a, b], SETTINGS).pairs[0]
    entry = pair.metrics["score"]
    assert (entry.wins, entry.ties, entry.losses) == (2, 1, 1)       # +0.1, 0, +0.2, -0.3
    assert entry.differences == pytest.approx([0.1, 0.0, 0.2, -0.3])
    assert [d.position for d in entry.largest_differences] == [3, 2, 0]   # by |delta|, ties left out
    first = entry.largest_differences[0]
    assert first.baseline_output == "a output 3" and first.system_output == "b output 3"
    assert first.input == "reference: reference 3" and first.delta == pytest.approx(-0.3)
    # equal means: no observed difference, never significant (sacrebleu would say p = 1/1001)
    assert entry.delta == pytest.approx(0.0, abs=1e-15)


def test_a_clear_winner_is_significant_and_named():
    a = experiment("a", {"score": [0.1 * (k % 5) for k in range(30)]})
    b = experiment("b", {"score": [0.1 * (k % 5) + 0.3 for k in range(30)]})
    pair = compare_experiments([a, b], SETTINGS).pairs[0]
    entry = pair.metrics["score"]
    assert entry.p_value == pytest.approx(1 / 1001) and entry.verdict is Verdict.BETTER and pair.better("score") == "b"
    assert entry.delta_low == pytest.approx(0.3) and entry.delta_high == pytest.approx(0.3)


def test_identical_systems_are_not_significant():
    # five items: a verdict needs at least min_items (5) paired items (three gave "not significant" before)
    a = experiment("a", {"score": [0.3, 0.5, 0.9, 0.1, 0.7]})
    b = experiment("b", {"score": [0.3, 0.5, 0.9, 0.1, 0.7]})
    pair = compare_experiments([a, b], SETTINGS).pairs[0]
    entry = pair.metrics["score"]
    assert entry.p_value == 1.0 and entry.significant is False and pair.better("score") is None
    assert entry.verdict is Verdict.NO_DIFFERENCE
    assert entry.note == "no observed difference" and (entry.wins, entry.ties, entry.losses) == (0, 5, 0)


def test_lower_is_better_scores_flip_the_verdict():
    facts = MetricFacts("perplexity", "hand-made", (ScoreFacts("perplexity", False, "log"),), higher_is_better=False)
    config = {"metrics": {"perplexity": facts.as_dict()}}
    a = experiment("a", {"perplexity": [20.0 + k for k in range(20)]}, config=config)
    b = experiment("b", {"perplexity": [10.0 + k for k in range(20)]}, config=config)
    result = compare_experiments([a, b], SETTINGS)
    (metric,) = result.metrics
    assert metric.higher_is_better is False and metric.scale == "log"
    entry = result.pairs[0].metrics["perplexity"]
    assert entry.delta == pytest.approx(-10.0) and entry.verdict is Verdict.BETTER      # lower: b is better
    assert result.pairs[0].better("perplexity") == "b" and (entry.wins, entry.losses) == (20, 0)
    worse = compare_experiments([b, a], SETTINGS).pairs[0]                              # the other way round
    assert worse.metrics["perplexity"].verdict is Verdict.WORSE and worse.better("perplexity") == "b"


def test_only_items_both_scored_are_paired_and_failures_are_listed():
    a = experiment("a", {"score": [0.1, 0.2, 0.3, 0.4, 0.5]}, failed=[0])
    b = experiment("b", {"score": [0.5, None, 0.3, 0.8, 0.5]}, failed=[4])
    result = compare_experiments([a, b], SETTINGS)
    pair = result.pairs[0]
    assert pair.shared_items == 3                        # items 1, 2, 3 have outputs in both
    assert pair.metrics["score"].n == 2                  # item 1's score failed in b
    assert pair.metrics["score"].differences == pytest.approx([0.0, 0.4])
    assert result.scores["score"]["a"].failed == 1 and result.scores["score"]["b"].failed == 2
    assert result.failed_items["a"] == (FailedItem(key="k0", position=0, stage="task",
                                                   reason="RuntimeError: a failed on 0",
                                                   input="reference: reference 0"),)
    assert [f.position for f in result.failed_items["b"]] == [4]
    assert result.experiments[1].failed_items == 1 and result.experiments[1].scored_items == 4


def test_no_shared_item_gives_a_reason_instead_of_a_p_value():
    a = experiment("a", {"score": [0.1, 0.2]}, failed=[0])
    b = experiment("b", {"score": [0.3, 0.4]}, failed=[1])
    entry = compare_experiments([a, b], SETTINGS).pairs[0].metrics["score"]
    assert entry.p_value is None and entry.verdict is Verdict.NONE and "no shared item" in entry.note
    assert unpaired([a, b]) == ("nothing to compare: a and b share 2 item(s), but none has an output in both "
                                "(each failed in one of them; see their failed items)")
    assert unpaired([a, experiment("c", {"score": [0.5, 0.6]})]) is None


def test_three_experiments_make_three_pairs_and_a_multiple_testing_note():
    runs = [experiment(n, {"score": [0.1 * k + d for k in range(10)]}) for n, d in (("a", 0), ("b", 0.2), ("c", 0.5))]
    result = compare_experiments(runs, SETTINGS)
    assert [(p.baseline, p.system) for p in result.pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert any("not corrected for multiple comparisons: this report makes 3 tests" in n for n in result.notes)


def test_metric_choice():
    """Parts (precision, recall) are left out by default because the metrics' facts say so."""
    from opik_metrics import BLEU, ROUGE
    bertscore = MetricFacts("bertscore", "hand-made", (ScoreFacts("BERTF1"), ScoreFacts("BERTRecall", part=True)))
    config = {"metrics": {"rouge": ROUGE(rouge_types=["rouge1"], track=False).facts.as_dict(),
                          "bleu": BLEU(track=False).facts.as_dict(), "bertscore": bertscore.as_dict()}}
    scores = {"rouge1_f1": [0.5, 0.6], "rouge1_precision": [0.4, 0.4], "BERTRecall": [0.9, 0.8], "bleu": [0.2, 0.1]}
    a, b = experiment("a", scores, config=config), experiment("b", scores, config=config)
    default = [m.name for m in compare_experiments([a, b], SETTINGS).metrics]
    assert default == ["rouge1_f1", "bleu"]
    every = [m.name for m in compare_experiments([a, b], CompareSettings(all_scores=True)).metrics]
    assert every == ["rouge1_f1", "rouge1_precision", "BERTRecall", "bleu"]
    chosen = compare_experiments([a, b], CompareSettings(metrics=("bleu",)))
    assert [m.name for m in chosen.metrics] == ["bleu"] and set(chosen.scores) == {"bleu"}
    with pytest.raises(ValueError, match="metric rouge9_f1 is in none of the experiments; they have: rouge1_f1"):
        compare_experiments([a, b], CompareSettings(metrics=("rouge9_f1",)))


@pytest.mark.parametrize("runs, settings, message", [
    (1, SETTINGS, "at least two experiments, got 1"),
    (2, CompareSettings(resamples=0), "resamples: expected a positive integer"),
    (2, CompareSettings(confidence=1.5), "confidence: expected a number between 0 and 1"),
    (2, CompareSettings(top_k=-1), "top_k: expected a non-negative integer"),
])
def test_bad_settings_are_named(runs, settings, message):
    with pytest.raises(ValueError, match=message):
        compare_experiments([experiment("a", {"s": [0.1]}), experiment("b", {"s": [0.2]})][:runs], settings)


def test_repeated_names_are_refused():
    with pytest.raises(ValueError, match="repeated: a"):
        compare_experiments([experiment("a", {"s": [0.1]}), experiment("a", {"s": [0.2]})], SETTINGS)


def test_same_inputs_same_comparison():
    a = experiment("a", {"score": list(np.random.default_rng(1).random(25))})
    b = experiment("b", {"score": list(np.random.default_rng(2).random(25))})
    first = compare_experiments([a, b], SETTINGS, created_at="t")
    assert first == compare_experiments([a, b], SETTINGS, created_at="t")
    other = compare_experiments([a, b], CompareSettings(seed=8), created_at="t")
    assert other.scores["score"]["a"].low != first.scores["score"]["a"].low


def test_config_differences_are_listed_per_pair():
    a = experiment("a", {"s": [0.1]}, config={"model": "m1", "num_beams": 3, "runtime": {"x": 1}})
    b = experiment("b", {"s": [0.2]}, config={"model": "m1", "num_beams": 1, "runtime": {"x": 2}})
    assert compare_experiments([a, b], SETTINGS).pairs[0].config_differences == {"num_beams": (3, 1)}


def test_pooled_perplexity_by_hand():
    stat = CorpusStatistic([(2.0, 2), (6.0, 2)], perplexity_from_statistics)   # mean NLL 8 / 4 = 2
    assert stat.value == pytest.approx(math.exp(2.0))
    idx = np.array([[0, 0], [1, 1], [0, 1]])
    assert stat.resampled(idx) == pytest.approx([math.exp(1.0), math.exp(3.0), math.exp(2.0)])
    with pytest.raises(ValueError, match="at least one item"):
        CorpusStatistic([], perplexity_from_statistics)


def test_input_text_is_one_readable_line():
    assert input_text({"reference": ["r1", "r2"], "image_url": "http://x/1.jpg", "n": 3}) == \
        "reference: r1 / r2 | image_url: http://x/1.jpg | n: 3"

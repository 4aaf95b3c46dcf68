"""The bootstrap engine against oracles (sacrebleu's paired bootstrap, scipy) and hand-worked cases."""
from __future__ import annotations

import functools
import math
import random

import numpy as np
import pytest
import scipy.stats
from sacrebleu import corpus_bleu
from sacrebleu.metrics import BLEU
from sacrebleu.significance import (
    PairedTest,
    Result,
    _bootstrap_resample,
    _compute_p_value,
    _paired_bs_test,
    estimate_ci,
)

from tests.corpus import realistic_pairs
from opik_metrics.compare.statistics import bootstrap
from opik_metrics.compare.statistics.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    CorpusStatistic,
    Interval,
    MeanStatistic,
    PairedResult,
    bootstrap_interval,
    paired_bootstrap,
    resample_indices,
    wins_ties_losses,
)
from opik_metrics.text.bleu.scorer import BLEUScorer, bleu_from_statistics

SCORER = BLEUScorer(tokenize="13a", smooth_method="exp", effective_order=False)  # = sacrebleu BLEU()
CORPUS_BLEU = functools.partial(bleu_from_statistics, smooth_method="exp", effective_order=False)


def CorpusBLEUStatistic(stats, scorer=SCORER) -> CorpusStatistic:
    """Corpus BLEU as the comparison builds it: the items' statistics rows and BLEU's corpus formula."""
    return CorpusStatistic([s.as_list() for s in stats], CORPUS_BLEU)
ORACLE_SEEDS = range(20)
# sacrebleu keeps bootstrap statistics as float32 and, under NumPy 2 (NEP 50), 100. * float32 stays
# float32, so its resampled precisions are float32-rounded: resampled scores (<= 1) are off by up to
# ~6e-8 on our 0..1 scale. Means and CI half widths of its real output are compared at this bound.
FLOAT32_ABS = 2e-7


def _drop_words(sentences: list[str], seed: int, rate: float) -> list[str]:
    """A noisy system: each word of each sentence dropped with probability ``rate``."""
    rng = random.Random(seed)
    return [" ".join(w for w in s.split() if rng.random() >= rate) for s in sentences]


def _bleu(hyps: list[str], refs: list[str]) -> CorpusBLEUStatistic:
    return CorpusBLEUStatistic([SCORER.stats(h, r) for h, r in zip(hyps, refs)], SCORER)


class FixedStatistic:
    """A stub statistic whose resamples are given values (to test the interval arithmetic)."""

    def __init__(self, resampled_values, value: float = 0.0, n_items: int = 1) -> None:
        self._values = np.asarray(resampled_values, dtype=float)
        self.value = value
        self.n_items = n_items

    def resampled(self, idx):
        assert idx.shape[0] == self._values.size
        return self._values


# -- oracle: sacrebleu's paired bootstrap -------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _oracle_case(seed: int):
    """One random system pair scored by sacrebleu's paired-bs and by us, same seed and resamples."""
    n_items = 20 + 5 * seed
    n_resamples = 101 + 37 * seed  # not always a multiple of 40: exercises the rank arithmetic
    rng_seed = DEFAULT_SEED + seed
    _, refs = realistic_pairs(n_items, seed)
    baseline_hyps = _drop_words(refs, 1000 + seed, 0.3)
    system_hyps = _drop_words(refs, 2000 + seed, 0.3 - 0.01 * (seed % 4))

    metric = BLEU()
    bl_stats = metric._extract_corpus_statistics(baseline_hyps, [refs])
    bl_result = Result(metric._aggregate_and_compute(bl_stats).score)
    _, results = _paired_bs_test({"BLEU": (bl_stats, bl_result)}, "system", system_hyps, [refs],
                                 {"BLEU": metric}, n_samples=n_resamples, seed=rng_seed)
    sacre = results["BLEU"]

    # sacrebleu's own scoring, statistic and p-value, on exact integer sums (float64 arithmetic)
    sys_stats = np.array(metric._extract_corpus_statistics(system_hyps, [refs]), dtype=np.int64)
    bl_int = np.array(bl_stats, dtype=np.int64)
    idx_sacre = np.random.default_rng(rng_seed).choice(n_items, size=(n_resamples, n_items))
    bl_r = np.array([metric._compute_score_from_stats(bl_int[row].sum(0)).score for row in idx_sacre])
    sys_r = np.array([metric._compute_score_from_stats(sys_stats[row].sum(0)).score for row in idx_sacre])
    spread = np.abs(sys_r - bl_r)
    exact_p = _compute_p_value(spread - spread.mean(), abs(bl_result.score - sacre.score))
    exact_mean, exact_ci = estimate_ci(sys_r)
    k = n_resamples // 40  # estimate_ci's fixed 95% ranks
    deltas = np.sort(sys_r - bl_r) / 100

    idx = resample_indices(n_items, n_resamples, rng_seed)
    baseline, system = _bleu(baseline_hyps, refs), _bleu(system_hyps, refs)
    ours = paired_bootstrap(baseline, system, idx, p_value="sacrebleu")
    interval = bootstrap_interval(system, idx)
    return dict(
        idx=idx, idx_sacre=idx_sacre, sacre=sacre, bl_result=bl_result, ours=ours, interval=interval,
        baseline=baseline, system=system, exact_p=exact_p, exact_mean=exact_mean, exact_ci=exact_ci,
        delta_bounds=(deltas[k], deltas[n_resamples - 1 - k]),
        sacre_system_score=corpus_bleu(system_hyps, [refs]).score,
        sacre_baseline_score=corpus_bleu(baseline_hyps, [refs]).score,
    )


@pytest.mark.parametrize("seed", ORACLE_SEEDS)
def test_paired_bootstrap_matches_sacrebleu(seed):
    case = _oracle_case(seed)
    ours, sacre, interval = case["ours"], case["sacre"], case["interval"]
    assert np.array_equal(case["idx"], case["idx_sacre"])  # the very same draw

    # full-sample corpus BLEU: bit-identical to sacrebleu's corpus_bleu / 100
    assert case["system"].value == case["sacre_system_score"] / 100
    assert case["baseline"].value == case["sacre_baseline_score"] / 100
    assert ours.system == sacre.score / 100 and ours.baseline == case["bl_result"].score / 100

    # sacrebleu's real output: identical p-value, mean and CI half width up to its float32 rounding
    assert ours.p_value == pytest.approx(sacre.p_value, abs=1e-12)
    assert interval.resampled_mean == pytest.approx(sacre.mean / 100, abs=FLOAT32_ABS)
    assert (interval.high - interval.low) / 2 == pytest.approx(sacre.ci / 100, abs=FLOAT32_ABS)

    # sacrebleu's scoring, estimate_ci and _compute_p_value on exact sums: agreement to 1e-12
    assert ours.p_value == pytest.approx(case["exact_p"], abs=1e-12)
    assert interval.resampled_mean == pytest.approx(case["exact_mean"] / 100, rel=1e-12)
    assert (interval.high - interval.low) / 2 == pytest.approx(case["exact_ci"] / 100, rel=1e-12)
    assert (ours.delta_low, ours.delta_high) == pytest.approx(case["delta_bounds"], abs=1e-12)
    assert ours.delta == ours.system - ours.baseline
    assert ours.delta_low <= ours.delta_high
    assert ours.resamples == case["idx"].shape[0] and ours.confidence == DEFAULT_CONFIDENCE
    assert ours.note is None


def test_oracle_cases_span_significant_and_not():
    """The random pairs are close enough to give a spread of p-values, not only 1/(R+1)."""
    p_values = [_oracle_case(seed)["ours"].p_value for seed in ORACLE_SEEDS]
    assert min(p_values) < 0.05 < max(p_values)
    assert sum(p > 0.05 for p in p_values) >= 5


def test_single_system_interval_matches_sacrebleu_bootstrap_resample(monkeypatch):
    """sacrebleu's one-system bootstrap (seeded from SACREBLEU_SEED) vs bootstrap_interval."""
    seed, n_items, n_resamples = 777, 60, 400
    preds, refs = realistic_pairs(n_items, 3)
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    metric = BLEU()
    stats = metric._extract_corpus_statistics(preds, [refs])
    seed_used, scores = _bootstrap_resample(stats, metric, n_resamples)
    assert seed_used == str(seed)
    sacre_mean, sacre_ci = estimate_ci(np.array([s.score for s in scores]))

    interval = bootstrap_interval(_bleu(preds, refs), resample_indices(n_items, n_resamples, seed))
    assert interval.resampled_mean == pytest.approx(sacre_mean / 100, abs=FLOAT32_ABS)
    assert (interval.high - interval.low) / 2 == pytest.approx(sacre_ci / 100, abs=FLOAT32_ABS)
    assert interval.estimate == corpus_bleu(preds, [refs]).score / 100
    assert interval.low <= interval.resampled_mean <= interval.high


def test_end_to_end_paired_test_matches(monkeypatch):
    """sacrebleu's PairedTest (seed from the environment): baseline CI and the system's p-value."""
    seed, n_items, n_resamples = 4242, 50, 300
    _, refs = realistic_pairs(n_items, 11)
    bl_hyps, sys_hyps = _drop_words(refs, 1, 0.3), _drop_words(refs, 2, 0.28)
    monkeypatch.setenv("SACREBLEU_SEED", str(seed))
    _, scores = PairedTest([("base", bl_hyps), ("sys", sys_hyps)], {"BLEU": BLEU()}, [refs],
                           test_type="bs", n_samples=n_resamples)()
    bl_sacre, sys_sacre = scores["BLEU"]

    idx = resample_indices(n_items, n_resamples, seed)
    baseline, system = _bleu(bl_hyps, refs), _bleu(sys_hyps, refs)
    bl_interval = bootstrap_interval(baseline, idx)
    assert bl_interval.resampled_mean == pytest.approx(bl_sacre.mean / 100, abs=FLOAT32_ABS)
    assert (bl_interval.high - bl_interval.low) / 2 == pytest.approx(bl_sacre.ci / 100, abs=FLOAT32_ABS)
    assert paired_bootstrap(baseline, system, idx, p_value="sacrebleu").p_value == pytest.approx(sys_sacre.p_value,
                                                                                                abs=1e-12)


# -- corpus BLEU statistic ------------------------------------------------------------------------


def test_corpus_bleu_resampled_equals_direct_sums(monkeypatch):
    """Each resample's score is compute(sum of the drawn items' stats), whatever the chunking."""
    preds, refs = realistic_pairs(30, 5)
    stats = [SCORER.stats(p, r) for p, r in zip(preds, refs)]
    statistic = CorpusBLEUStatistic(stats, SCORER)
    idx = resample_indices(30, 50, 9)
    direct = [SCORER.compute(sum(stats[i] for i in row), sentence=False).score for row in idx]
    assert statistic.resampled(idx).tolist() == direct
    monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", 70)  # 2 resamples per chunk
    assert statistic.resampled(idx).tolist() == direct
    assert statistic.value == SCORER.compute(sum(stats), sentence=False).score
    assert statistic.n_items == 30


# -- oracle for means: scipy.stats.bootstrap ------------------------------------------------------


def test_mean_interval_agrees_with_scipy_percentile_bootstrap():
    """Monte-Carlo agreement: both are 20000-resample percentile intervals of the same data.

    The sd of a 2.5% quantile estimate here is about 0.003, so endpoints within 0.02 (~5 sd of
    the difference) is a safe, still meaningful bound: the interval is about 0.55 wide.
    """
    values = np.random.default_rng(1).normal(0.0, 1.0, size=50)
    n_resamples = 20000
    scipy_result = scipy.stats.bootstrap((values,), np.mean, method="percentile", confidence_level=0.95,
                                         n_resamples=n_resamples, rng=np.random.default_rng(2))
    ours = bootstrap_interval(MeanStatistic(values), resample_indices(50, n_resamples, 3))
    assert ours.low == pytest.approx(scipy_result.confidence_interval.low, abs=0.02)
    assert ours.high == pytest.approx(scipy_result.confidence_interval.high, abs=0.02)
    assert ours.resampled_mean == pytest.approx(scipy_result.bootstrap_distribution.mean(), abs=0.01)
    assert ours.estimate == values.mean()
    assert ours.high - ours.low == pytest.approx(0.55, abs=0.1)


def test_mean_resampled_equals_direct_indexing(monkeypatch):
    values = np.random.default_rng(4).uniform(size=37)
    idx = resample_indices(37, 300, 5)
    expected = values[idx].mean(axis=1)
    statistic = MeanStatistic(values.tolist())
    assert np.array_equal(statistic.resampled(idx), expected)
    monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", 100)  # 2 resamples per chunk
    assert np.array_equal(statistic.resampled(idx), expected)


def _shared(idx):
    """``idx`` as a comparison keeps its draw: a read-only array that owns its data."""
    idx = idx.copy()
    idx.flags.writeable = False
    return idx


def test_mean_resampled_over_a_shared_draw_is_the_gathered_mean_within_rounding(monkeypatch):
    values = np.random.default_rng(8).normal(size=53) * 10
    idx = resample_indices(53, 400, 6)
    expected = values[idx].mean(axis=1)
    shared = _shared(idx)
    statistic = MeanStatistic(values.tolist())
    np.testing.assert_allclose(statistic.resampled(shared), expected, rtol=0, atol=1e-13)
    monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", 100)
    np.testing.assert_allclose(statistic.resampled(shared), expected, rtol=0, atol=1e-13)
    # pass/fail scores sum exactly either way: the same bits
    passed = MeanStatistic((values > 0).astype(float).tolist())
    assert np.array_equal(passed.resampled(shared), (values > 0)[idx].mean(axis=1))


@pytest.mark.parametrize("bad, message", [
    (lambda idx: idx + 1, "outside"),
    (lambda idx: idx - 1, "outside"),
    (lambda idx: idx[:, :-1], "items"),
])
def test_a_shared_draw_out_of_range_is_refused_the_first_time_and_every_time(bad, message):
    statistic = MeanStatistic([0.5] * 20)
    idx = resample_indices(20, 30, 1)
    idx[0, 0], idx[1, 1] = 0, 19                       # both ends drawn, so +1 and -1 leave the range
    shared = _shared(bad(idx))
    for _ in range(2):
        with pytest.raises(ValueError, match=message):
            statistic.resampled(shared)


def test_a_shared_draw_checked_for_one_size_is_checked_again_for_another():
    shared = _shared(resample_indices(20, 30, 1))
    assert MeanStatistic([1.0] * 20).resampled(shared).tolist() == [1.0] * 30
    with pytest.raises(ValueError):
        MeanStatistic([1.0] * 10).resampled(shared)


# -- hand-worked cases ----------------------------------------------------------------------------


def test_two_values_hand_worked_distribution():
    """Mean of a resample of [0, 1]: 0 (1/4), 0.5 (1/2), 1 (1/4); 95% interval [0, 1], mean 0.5."""
    statistic = MeanStatistic([0, 1])
    idx = resample_indices(2, 20000, 8)
    resampled = statistic.resampled(idx)
    assert set(resampled.tolist()) == {0.0, 0.5, 1.0}
    for value, share in [(0.0, 0.25), (0.5, 0.5), (1.0, 0.25)]:
        assert np.mean(resampled == value) == pytest.approx(share, abs=0.015)
    interval = bootstrap_interval(statistic, idx)
    assert (interval.low, interval.high, interval.estimate) == (0.0, 1.0, 0.5)
    assert interval.resampled_mean == pytest.approx(0.5, abs=0.01)
    assert interval.confidence == 0.95


@pytest.mark.parametrize("c", [0.25, 0.7, -3.0])
def test_constant_values_give_a_point_interval(c):
    interval = bootstrap_interval(MeanStatistic([c] * 9), resample_indices(9, 200))
    assert interval.low == pytest.approx(c, abs=1e-15) and interval.high == pytest.approx(c, abs=1e-15)
    assert interval.estimate == pytest.approx(c, abs=1e-15)
    assert interval.high - interval.low <= 1e-15
    if c == 0.25:  # exact in binary
        assert interval == Interval(0.25, 0.25, 0.25, 0.95, 0.25)


@pytest.mark.parametrize(
    ("n_resamples", "confidence", "k"),
    [(1000, 0.95, 25), (1000, 0.9, 50), (1000, 0.99, 5), (40, 0.95, 1), (39, 0.95, 0), (101, 0.95, 2),
     (1, 0.95, 0), (3, 0.01, 1), (2, 1e-12, 0)],
)
def test_interval_ranks_are_order_statistics(n_resamples, confidence, k):
    """low = sorted[k], high = sorted[R-1-k], k = floor(R (1 - confidence) / 2), float noise aside."""
    values = np.random.default_rng(0).permutation(n_resamples).astype(float)  # sorted[j] == j
    interval = bootstrap_interval(FixedStatistic(values), np.zeros((n_resamples, 1), dtype=int),
                                  confidence)
    assert (interval.low, interval.high) == (k, n_resamples - 1 - k)
    if confidence == 0.95:
        assert k == n_resamples // 40  # sacrebleu's estimate_ci ranks


def test_paired_hand_worked_p_value_and_delta_interval():
    """Three items, five hand-picked resamples (see the comments); p = (1 + 1) / (5 + 1)."""
    baseline, system = MeanStatistic([0, 0, 0]), MeanStatistic([0, 0, 3])
    idx = np.array([
        [2, 2, 2],  # system mean 3, baseline 0: |d| = 3
        [0, 1, 2],  # 1
        [0, 0, 0],  # 0
        [0, 0, 1],  # 0
        [2, 2, 0],  # 2
    ])
    # observed |difference| = 1; |d| = [3, 1, 0, 0, 2], mean 1.2, centred [1.8, -.2, -1.2, -1.2, .8]:
    # one resample exceeds 1. Deltas sorted [0, 0, 1, 2, 3]; at 50%, k = floor(5 * .5 / 2) = 1.
    result = paired_bootstrap(baseline, system, idx, confidence=0.5, p_value="sacrebleu")
    assert result == PairedResult(baseline=0.0, system=1.0, delta=1.0, delta_low=0.0, delta_high=2.0,
                                  p_value=2 / 6, confidence=0.5, resamples=5, note=None, p_one_sided=2 / 6,
                                  p_rule="sacrebleu")
    # Calibrated: the differences d* = [3, 1, 0, 0, 2] shifted to mean 0 are [1.8, -.2, -1.2, -1.2, .8];
    # |.| >= 1 for three of them (two-sided p = 4/6), >= +1 for one (one-sided p = 2/6).
    calibrated = paired_bootstrap(baseline, system, idx, confidence=0.5)
    assert (calibrated.p_value, calibrated.p_one_sided, calibrated.p_rule) == (4 / 6, 2 / 6, "calibrated")
    assert (calibrated.delta_low, calibrated.delta_high) == (0.0, 2.0)


def test_identical_systems_are_not_significant():
    """sacrebleu's formula says 1/(R+1) here; we say p = 1 with a note."""
    preds, refs = realistic_pairs(25, 2)
    for baseline, system in [(MeanStatistic([0.1, 0.5, 0.9] * 5), MeanStatistic([0.1, 0.5, 0.9] * 5)),
                             (_bleu(preds, refs), _bleu(preds, refs))]:
        result = paired_bootstrap(baseline, system, resample_indices(baseline.n_items, 200))
        assert result.p_value == 1.0 and result.note == "no observed difference"
        assert result.delta == result.delta_low == result.delta_high == 0.0
    # what sacrebleu's own p-value formula gives for identical systems (all differences 0)
    assert _compute_p_value(np.zeros(200), 0.0) == 1 / 201


def test_different_items_same_score_is_not_significant():
    """Observed difference exactly 0 with differing items: still p = 1 and the note."""
    result = paired_bootstrap(MeanStatistic([0.0, 1.0]), MeanStatistic([1.0, 0.0]), resample_indices(2, 100))
    assert result.p_value == 1.0 and result.note == "no observed difference"
    assert result.delta_low == -1.0 and result.delta_high == 1.0


def test_system_better_everywhere_gets_the_smallest_p_value():
    n_resamples = 500
    base = np.random.default_rng(3).uniform(size=40)
    idx = resample_indices(40, n_resamples)
    result = paired_bootstrap(MeanStatistic(base), MeanStatistic(base + 10), idx)
    assert result.p_value == 1 / (n_resamples + 1)
    assert result.delta == pytest.approx(10) and result.delta_low == pytest.approx(10)
    assert result.delta_high == pytest.approx(10)

    _, refs = realistic_pairs(40, 6)  # perfect system vs one missing most of its words
    result = paired_bootstrap(_bleu(_drop_words(refs, 0, 0.7), refs), _bleu(refs, refs),
                              resample_indices(40, n_resamples))
    assert result.system == 1.0 and result.baseline < 0.2
    assert result.p_value == 1 / (n_resamples + 1)
    assert 0 < result.delta_low <= result.delta <= result.delta_high


def test_wins_ties_losses_by_hand():
    baseline = [0.5, 0.5, 0.5, 0.5, 0.5]
    system = [0.6, 0.7, 0.4, 0.5 + 5e-10, 0.5]
    assert wins_ties_losses(baseline, system) == (2, 2, 1)  # 5e-10 is within the 1e-9 tolerance
    assert wins_ties_losses(baseline, system, higher_is_better=False) == (1, 2, 2)
    assert wins_ties_losses(baseline, system, tolerance=0.15) == (1, 4, 0)  # only +0.2 is beyond 0.15
    assert wins_ties_losses(baseline, system, tolerance=0.0) == (3, 1, 1)  # only the exact 0.5 ties
    assert wins_ties_losses(np.array([2.0]), np.array([1.0]), higher_is_better=False) == (1, 0, 0)
    assert all(type(x) is int for x in wins_ties_losses(baseline, system))


# -- determinism ----------------------------------------------------------------------------------


def test_seeded_draws_are_deterministic():
    idx = resample_indices(17, 30, 5)
    assert idx.shape == (30, 17) and idx.dtype.kind == "i"
    assert np.array_equal(idx, resample_indices(17, 30, 5))
    assert not np.array_equal(idx, resample_indices(17, 30, 6))
    default = resample_indices(17)
    assert default.shape == (DEFAULT_RESAMPLES, 17)
    assert np.array_equal(default, np.random.default_rng(12345).choice(17, size=(1000, 17), replace=True))

    values = np.random.default_rng(0).uniform(size=17)
    first = paired_bootstrap(MeanStatistic(values), MeanStatistic(values ** 2), resample_indices(17, 300))
    again = paired_bootstrap(MeanStatistic(values), MeanStatistic(values ** 2), resample_indices(17, 300))
    other = paired_bootstrap(MeanStatistic(values), MeanStatistic(values ** 2), resample_indices(17, 300, 1))
    assert first == again and first != other


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: resample_indices(0), r"n_items must be >= 1, got 0"),
        (lambda: resample_indices(True), r"n_items must be an integer"),
        (lambda: resample_indices(5, 0), r"n_resamples must be >= 1, got 0"),
        (lambda: resample_indices(5, 2.5), r"n_resamples must be an integer"),
        (lambda: resample_indices(5, 10, -1), r"seed must be >= 0"),
        (lambda: MeanStatistic([]), r"values is empty"),
        (lambda: MeanStatistic([1.0, float("nan")]), r"values\[1\] is nan"),
        (lambda: MeanStatistic([1.0, 2.0, float("-inf")]), r"values\[2\] is -inf"),
        (lambda: MeanStatistic([[1.0, 2.0]]), r"values must be 1-D"),
        (lambda: MeanStatistic(["a"]), r"values must be a 1-D sequence of numbers"),
        (lambda: CorpusStatistic([], CORPUS_BLEU), r"rows is empty"),
        (lambda: CorpusStatistic([[1, 2], [1]], CORPUS_BLEU), r"rows\[1\] has 1 statistics, rows\[0\] has 2"),
        (lambda: CorpusStatistic([[1, float("nan")]], CORPUS_BLEU), r"rows\[0\] holds nan"),
        (lambda: CorpusStatistic([SCORER.stats("a b", "a b").as_list()], "bleu"), r"formula must be callable"),
        (lambda: CorpusStatistic([SCORER.stats("a b", "a b").as_list()],
                                 functools.partial(bleu_from_statistics, max_ngram_order=2)),
         r"BLEU statistics of order 2 have 6 numbers, got 10"),
        (lambda: bootstrap_interval(MeanStatistic([1, 2]), resample_indices(3, 5)),
         r"idx has 3 columns but the statistic has 2 items"),
        (lambda: bootstrap_interval(MeanStatistic([1, 2]), np.array([0, 1])), r"idx must be a 2-D"),
        (lambda: bootstrap_interval(MeanStatistic([1, 2]), np.zeros((0, 2), dtype=int)), r"idx has no rows"),
        (lambda: bootstrap_interval(MeanStatistic([1, 2]), np.zeros((3, 2))), r"idx must hold integer"),
        (lambda: bootstrap_interval(MeanStatistic([1, 2]), np.array([[0, 2]])),
         r"idx holds item indices outside \[0, 1\]"),
        (lambda: MeanStatistic([1, 2]).resampled(np.array([[0, 1, 1]])), r"idx has 3 columns"),
        (lambda: _bleu(["a"], ["a"]).resampled(np.array([[0, 0]])),
         r"idx has 2 columns but the statistic has 1"),
        (lambda: paired_bootstrap(MeanStatistic([1, 2, 3]), MeanStatistic([1, 2, 3, 4]),
                                  resample_indices(3, 5)),
         r"baseline has 3 items but system has 4"),
        (lambda: paired_bootstrap(MeanStatistic([1, 2]), MeanStatistic([2, 1]), resample_indices(3, 5)),
         r"idx has 3 columns but the statistic has 2 items"),
        (lambda: wins_ties_losses([1, 2], [1, 2, 3]), r"baseline_values has 2 items but system_values has 3"),
        (lambda: wins_ties_losses([], []), r"baseline_values is empty"),
        (lambda: wins_ties_losses([1, 2, 3], [1, 2, float("inf")]), r"system_values\[2\] is inf"),
        (lambda: wins_ties_losses([float("nan")], [1]), r"baseline_values\[0\] is nan"),
        (lambda: wins_ties_losses([1], [1], tolerance=-1e-9), r"tolerance must be a finite number >= 0"),
        (lambda: wins_ties_losses([1], [1], higher_is_better="yes"), r"higher_is_better must be a bool"),
    ],
)
def test_validation_errors_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("confidence", [0, 1, 1.5, -0.1, float("nan"), True, "0.95"])
def test_confidence_outside_open_unit_interval_is_rejected(confidence):
    idx = resample_indices(2, 5)
    with pytest.raises(ValueError, match="confidence must be"):
        bootstrap_interval(MeanStatistic([1, 2]), idx, confidence)
    with pytest.raises(ValueError, match="confidence must be"):
        paired_bootstrap(MeanStatistic([1, 2]), MeanStatistic([2, 2]), idx, confidence)


def test_results_are_plain_floats():
    interval = bootstrap_interval(MeanStatistic([1, 2, 3]), resample_indices(3, 10))
    result = paired_bootstrap(MeanStatistic([1, 2, 3]), MeanStatistic([2, 2, 4]), resample_indices(3, 10))
    for value in (*vars(interval).values(), result.baseline, result.delta_low, result.p_value):
        assert type(value) is float and math.isfinite(value)


@pytest.mark.parametrize("n_items, n_resamples, chunk", [(7, 50, 3), (7, 50, 21), (10, 41, 20), (1, 5, 1), (13, 100, 1 << 22)])
def test_indices_drawn_block_by_block_equal_one_draw(monkeypatch, n_items, n_resamples, chunk):
    """Blocks of rows (odd and even sizes, a last short block) from one generator continue its
    stream: the int32 matrix holds exactly sacrebleu's single int64 draw."""
    monkeypatch.setattr(bootstrap, "_CHUNK_ELEMENTS", chunk)
    for seed in (0, 12345):
        idx = resample_indices(n_items, n_resamples, seed)
        one_draw = np.random.default_rng(seed).choice(n_items, size=(n_resamples, n_items), replace=True)
        assert idx.dtype == np.int32 and idx.shape == one_draw.shape
        assert np.array_equal(idx, one_draw)


@pytest.mark.parametrize("alpha, fewest", [(0.05, 20), (0.01, 100), (0.1, 10), (0.5, 2), (0.9, 1), (0.025, 40)])
def test_resamples_for_is_the_fewest_whose_smallest_p_is_below_alpha(alpha, fewest):
    from opik_metrics.compare.statistics.bootstrap import resamples_for

    assert resamples_for(alpha) == fewest
    assert 1 / (fewest + 1) < alpha and (fewest == 1 or 1 / fewest >= alpha)

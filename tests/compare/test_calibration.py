"""Calibration shown, not claimed: seeded null experiments (no true difference) compared the way
``compare`` compares them, counting how often the two-sided verdict says "significant" and how often
the one-sided gate fails; each count must lie within the binomial bounds of alpha (99.9%), and where
the test cannot reach alpha exactly (few items, pass/fail scores) below the upper bound. Power
against a known difference is shown beside sacrebleu's p-value, whose extra "power" is its size.
docs/compare.md prints the table these designs give (bench/calibration.py writes it)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.gate.gating import gate_comparison
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.compare.statistics.bootstrap import CorpusStatistic, paired_bootstrap, resample_indices
from opik_metrics.compare.statistics.permutation import paired_permutation
from opik_metrics.text.bleu import bleu_from_statistics
from tests.compare.test_gate_statistics import VARIANTS, bank, binomial_lower, binomial_upper

ALPHA = 0.05
NULLS = 300
SETTINGS = CompareSettings(resamples=200, permutations=200, seed=3)


def _records(name: str, values: np.ndarray, clusters: np.ndarray | None = None) -> ExperimentRecords:
    """One record per (item, trial): ``values`` has shape (items, trials)."""
    items = []
    for i, row in enumerate(values):
        for t, value in enumerate(row):
            item = ItemRecord(key=f"k{i}", position=i * values.shape[1] + t,
                              input={"doc": int(clusters[i])} if clusters is not None else {},
                              output={"output": f"{name} {i} {t}"})
            item.scores["score"] = float(value)
            items.append(item)
    return ExperimentRecords(name=name, source="simulated", dataset="d", status="finished",
                             config={"model": name}, items=items)


def _null(design: str, seed: int, shift: float = 0.0):
    """Two experiments with no difference (``shift`` 0) under one design, and the settings to compare them."""
    rng = np.random.default_rng(seed)
    settings, clusters = SETTINGS, None
    if design == "simple":                      # 100 items, one trial
        mu = rng.normal(0, 1, 100)
        a, b = mu + rng.normal(0, 1, 100), mu + rng.normal(0, 1, 100) + shift
        a, b = a[:, None], b[:, None]
    elif design == "trials":                    # 40 items x 3 trials, an item-by-system interaction
        mu = rng.normal(0, 1, (40, 1))
        a = mu + rng.normal(0, 0.7, (40, 1)) + rng.normal(0, 0.5, (40, 3))
        b = mu + rng.normal(0, 0.7, (40, 1)) + rng.normal(0, 0.5, (40, 3)) + shift
    elif design == "clusters":                  # 30 documents x 4 items, effects shared within a document
        doc = np.repeat(np.arange(30), 4)
        mu = rng.normal(0, 1, 30)[doc]
        a = (mu + rng.normal(0, 0.5, 30)[doc] + rng.normal(0, 1, 120))[:, None]
        b = (mu + rng.normal(0, 0.5, 30)[doc] + rng.normal(0, 1, 120) + shift)[:, None]
        clusters, settings = doc, CompareSettings(**{**SETTINGS.__dict__, "cluster_by": "doc"})
    elif design == "small":                     # 8 items, near min_items
        mu = rng.normal(0, 1, 8)
        a, b = (mu + rng.normal(0, 1, 8))[:, None], (mu + rng.normal(0, 1, 8) + shift)[:, None]
    elif design == "pass/fail":                 # 80 items judged pass/fail, each item its own pass rate
        p = rng.beta(2, 2, 80)
        a = (rng.random(80) < p)[:, None].astype(float)
        b = (rng.random(80) < np.clip(p + shift, 0, 1))[:, None].astype(float)
    else:
        raise AssertionError(design)
    return _records("base", a, clusters), _records("new", b, clusters), settings


def _verdicts(design: str, shift: float = 0.0, nulls: int = NULLS):
    """Per seed: (two-sided significant, gate failed, interval holds 0)."""
    out = []
    for seed in range(nulls):
        base, new, settings = _null(design, seed, shift)
        comparison = compare_experiments([base, new], settings, created_at="t")
        entry = comparison.pairs[0].metrics["score"]
        gated = gate_comparison(comparison, mode="worse")
        out.append((bool(entry.significant), not gated.result.passed,
                    entry.delta_low <= 0.0 <= entry.delta_high))
    return out


@pytest.mark.parametrize("design", ["simple", "trials", "clusters"])
def test_the_verdict_and_the_gate_keep_alpha_on_nulls(design):
    results = _verdicts(design)
    significant = sum(s for s, _, _ in results)
    failed = sum(f for _, f, _ in results)
    low, high = binomial_lower(NULLS, ALPHA), binomial_upper(NULLS, ALPHA)
    assert low <= significant <= high, (design, significant, (low, high))
    assert low <= failed <= high, (design, failed, (low, high))
    # a significant verdict beside an interval that holds 0: at most 1% of the nulls (docs/compare.md)
    assert sum(s and holds for s, _, holds in results) <= math.ceil(0.01 * NULLS)


@pytest.mark.parametrize("design", ["small", "pass/fail"])
def test_exact_tests_stay_below_alpha_where_they_cannot_reach_it(design):
    results = _verdicts(design)
    assert sum(s for s, _, _ in results) <= binomial_upper(NULLS, ALPHA), design
    assert sum(f for _, f, _ in results) <= binomial_upper(NULLS, ALPHA), design


def test_corpus_bleu_keeps_alpha_with_the_permutation_test_and_sacrebleus_p_does_not():
    """A corpus ratio statistic: corpus BLEU of two systems drawing their outputs from one bank."""
    b = bank(200, 0.01)
    ours = sacre = gate = 0
    for seed in range(NULLS):
        rng = np.random.default_rng(seed)
        sides = [CorpusStatistic(b.pick("base", "bleu", rng.integers(0, VARIANTS, b.n)).tolist(),
                                 bleu_from_statistics) for _ in range(2)]
        result = paired_permutation(*sides, permutations=200, seed=seed)
        ours += result.p_value < ALPHA
        gate += result.p_one_sided < ALPHA and sides[1].value < sides[0].value
        bootstrap = paired_bootstrap(*sides, resample_indices(b.n, 200, seed), p_value="sacrebleu")
        sacre += bootstrap.p_value < ALPHA
    low, high = binomial_lower(NULLS, ALPHA), binomial_upper(NULLS, ALPHA)
    assert low <= ours <= high and low <= gate <= high, (ours, gate)
    assert sacre > ours and sacre > 0.075 * NULLS, (sacre, ours)   # sacrebleu's p behaves as one-sided


def test_power_against_a_known_difference():
    """A shift of 0.45 (simple design: 100 items, the SD of an item's difference about 1.4, so 3.2
    standard errors): the calibrated test finds it in nearly every seed; sacrebleu's p finds it at
    least as often, but only by also rejecting about twice as many nulls."""
    ours = sum(s for s, _, _ in _verdicts("simple", shift=0.45, nulls=100))
    sacre = 0
    for seed in range(100):
        base, new, _ = _null("simple", seed, 0.45)
        settings = CompareSettings(resamples=200, seed=3, test="bootstrap", p_value="sacrebleu")
        sacre += bool(compare_experiments([base, new], settings, created_at="t").pairs[0].metrics["score"].significant)
    assert ours >= 80 and sacre >= ours, (ours, sacre)

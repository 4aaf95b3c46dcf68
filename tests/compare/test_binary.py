"""Pass/fail scores: the exact McNemar test and Wilson intervals against statsmodels, Newcombe's
paired interval worked from its formula, and a comparison of 0/1 scores end to end (the test it
records, its p-value, its intervals, the gate)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from opik_metrics.core.facts import MetricFacts, ScoreFacts
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.gate.gating import gate_comparison
from opik_metrics.compare.statistics.binary import (is_binary, mcnemar_exact, newcombe_paired_interval,
                                                    wilson_interval)
from tests.compare.test_compare_honesty import experiment


def _pairs(both: int, system_only: int, baseline_only: int, neither: int, seed: int = 0):
    """Paired 0/1 outcomes with the given 2x2 table, shuffled."""
    base = [1] * both + [0] * system_only + [1] * baseline_only + [0] * neither
    system = [1] * both + [1] * system_only + [0] * baseline_only + [0] * neither
    order = np.random.default_rng(seed).permutation(len(base))
    return [float(base[k]) for k in order], [float(system[k]) for k in order]


TABLES = [(5, 0, 0, 5), (10, 7, 1, 2), (3, 1, 6, 0), (40, 12, 12, 30), (0, 25, 3, 0), (7, 0, 9, 1),
          (500, 130, 171, 199), (3000, 1480, 1555, 3965), (1, 1, 0, 0)]


@pytest.mark.parametrize("table", TABLES)
def test_mcnemar_exact_equals_statsmodels(table):
    base, system = _pairs(*table)
    ours = mcnemar_exact(base, system)
    assert (ours.both, ours.system_only, ours.baseline_only, ours.neither) == table
    theirs = mcnemar([[table[0], table[2]], [table[1], table[3]]], exact=True)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-300)
    # one-sided in the observed direction: half the two-sided p while that is below 1
    if theirs.pvalue < 1:
        assert ours.p_one_sided == pytest.approx(theirs.pvalue / 2, rel=1e-9)


def test_mcnemar_without_discordant_items_is_one_and_bad_values_are_refused():
    assert mcnemar_exact([1.0, 0.0, 1.0], [1.0, 0.0, 1.0]).p_value == 1.0
    with pytest.raises(ValueError, match="every value 0 or 1"):
        mcnemar_exact([1.0, 0.5], [1.0, 0.0])
    assert is_binary([0, 1, 1.0]) and not is_binary([0, 2]) and not is_binary([])


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_equals_statsmodels(confidence):
    for n in (1, 2, 5, 17, 100, 1234):
        for successes in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            if not 0 <= successes <= n:
                continue
            low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
            assert wilson_interval(successes, n, confidence) == pytest.approx((low, high), abs=1e-12)


def test_newcombe_paired_interval_worked_from_its_formula():
    """Newcombe (1998) method 10 on the table a=both 40, b=system only 12, c=baseline only 5, d=neither 43,
    n=100: p1=0.52 (system), p2=0.45 (baseline); Wilson limits from statsmodels; ad-bc=1660 > n/2, so
    phi = (1660 - 50) / sqrt(52 * 48 * 45 * 55)."""
    base, system = _pairs(40, 12, 5, 43)
    table = mcnemar_exact(base, system)
    l1, u1 = proportion_confint(52, 100, alpha=0.05, method="wilson")
    l2, u2 = proportion_confint(45, 100, alpha=0.05, method="wilson")
    phi = (40 * 43 - 12 * 5 - 50) / math.sqrt(52 * 48 * 45 * 55)
    low = 0.07 - math.sqrt((0.52 - l1) ** 2 - 2 * phi * (0.52 - l1) * (u2 - 0.45) + (u2 - 0.45) ** 2)
    high = 0.07 + math.sqrt((u1 - 0.52) ** 2 - 2 * phi * (u1 - 0.52) * (0.45 - l2) + (0.45 - l2) ** 2)
    assert newcombe_paired_interval(table, 0.95) == pytest.approx((low, high), abs=1e-12)
    assert low < 0.07 < high and -1 <= low and high <= 1


def test_newcombe_phi_rules_and_the_bounds():
    # 0 <= ad - bc <= n/2: phi is 0, the interval is the square-and-add of the two Wilson intervals
    base, system = _pairs(1, 3, 2, 4)          # ad - bc = 4 - 6 < 0: phi negative, kept
    table = mcnemar_exact(base, system)
    low, high = newcombe_paired_interval(table)
    assert low < table.system_only / 10 - table.baseline_only / 10 < high
    everything = mcnemar_exact(*_pairs(0, 20, 0, 0))     # the system passes every item, the baseline none
    low, high = newcombe_paired_interval(everything)
    # p1 = 1, p2 = 0, the margins' product is 0 (phi 0): delta - sqrt((1 - l1)^2 + u2^2), capped at 1
    l1, _ = proportion_confint(20, 20, alpha=0.05, method="wilson")
    _, u2 = proportion_confint(0, 20, alpha=0.05, method="wilson")
    assert (low, high) == pytest.approx((1 - math.sqrt((1 - l1) ** 2 + u2 ** 2), 1.0), abs=1e-12)


def test_a_comparison_of_pass_fail_scores_uses_mcnemar_wilson_and_newcombe():
    base, system = _pairs(30, 4, 14, 12, seed=3)          # 60 items: the system loses 10 passes
    a = experiment("a", {"passed": base})
    b = experiment("b", {"passed": system})
    settings = CompareSettings(resamples=200, seed=1)
    comparison = compare_experiments([a, b], settings, created_at="t")
    entry = comparison.pairs[0].metrics["passed"]
    expected = mcnemar([[30, 14], [4, 12]], exact=True).pvalue
    assert entry.test == "mcnemar-exact" and entry.p_value == pytest.approx(expected, rel=1e-9)
    assert entry.delta == pytest.approx((34 - 44) / 60)
    table = mcnemar_exact(base, system)
    assert (entry.delta_low, entry.delta_high) == pytest.approx(newcombe_paired_interval(table, 0.95))
    for name, passes in (("a", 44), ("b", 34)):
        value = comparison.scores["passed"][name]
        assert value.interval == "wilson"
        assert (value.low, value.high) == pytest.approx(proportion_confint(passes, 60, alpha=0.05, method="wilson"))
    assert "exact McNemar test on the 18 items where the two differ" in entry.note
    assert expected < 0.05 and entry.significant
    gated = gate_comparison(comparison, mode="worse")
    assert not gated.result.passed
    assert gated.rows[0].p_raw == pytest.approx(expected / 2, rel=1e-9)     # the gate: one-sided

    # trials (an item's mean over its trials is a rate) and the bootstrap asked for: not tested as pass/fail
    forced = compare_experiments([a, b], CompareSettings(resamples=200, seed=1, test="bootstrap"), created_at="t")
    assert forced.pairs[0].metrics["passed"].test == "paired-bs"
    assert forced.scores["passed"]["a"].interval is None


def test_a_declared_pass_fail_score_with_another_value_is_a_data_error():
    facts = MetricFacts(metric="judge", kind="mean", scores=(ScoreFacts("passed", scale="binary"),))
    config = {"model": "m", "metrics": {"judge": facts.as_dict()}}
    a = experiment("a", {"passed": [1.0, 0.0, 0.5, 1.0, 1.0, 0.0]}, config=config)
    b = experiment("b", {"passed": [1.0, 1.0, 0.0, 1.0, 0.0, 0.0]}, config=config)
    with pytest.raises(ValueError, match=r"a: item 'k2' has passed = 0.5, but its metric declares passed a pass/fail"):
        compare_experiments([a, b], CompareSettings(resamples=50), created_at="t")

"""PERM-BOTH, metric against metric: on the same swaps its observed difference and permuted
differences equal nlpstats' (Deutsch's code) at every level; on simulated equal metrics its
rejection rate lies within the binomial bound; Holm adjusts over all pairs; groups read right."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from opik_metrics.meta_evaluation.metric_tests import (PairTest, compare_pairs, perm_both, permuted_differences,
                                                       significance_groups)

stats = pytest.importorskip("scipy.stats")


def kendall_b(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return stats.kendalltau(a, b).statistic


@pytest.mark.parametrize("level, nlp_level", [("pooled", "global"), ("item", "input"), ("system", "system")])
def test_same_swaps_as_nlpstats_give_the_same_differences(level, nlp_level):
    permutation = pytest.importorskip("nlpstats.correlations.permutation")
    rng = np.random.default_rng(4)
    n_items, n_systems = 12, 5
    quality = rng.normal(size=(n_items, n_systems))
    h = np.round(quality + rng.normal(size=quality.shape), 1)
    a = quality + 0.5 * rng.normal(size=quality.shape)
    b = quality + 1.5 * rng.normal(size=quality.shape)
    np.random.seed(21)
    expected = permutation.permutation_test(a.T, b.T, h.T, nlp_level, kendall_b, "both", n_resamples=30)
    # nlpstats' "both": swap whole systems, then whole inputs, each with probability 1/2 -- per cell,
    # the XOR of the two draws; replay its draws from the same seed
    np.random.seed(21)
    masks = []
    for _ in range(30):
        systems = (np.random.rand(n_systems, 1) > 0.5).reshape(n_systems)
        inputs = (np.random.rand(1, n_items) > 0.5).reshape(n_items)
        masks.append(systems[None, :] ^ inputs[:, None])
    observed, samples = permuted_differences(a, b, h, level, "kendall_b", masks)
    assert samples == pytest.approx(np.array(expected.samples), abs=1e-12)
    count = int(np.count_nonzero(np.abs(samples) >= abs(observed)))
    assert count / 30 == pytest.approx(expected.pvalue, abs=1e-12)


@pytest.mark.parametrize("level, method, shape", [("pooled", "pearson", (15, 1)), ("item", "kendall_b", (8, 4))])
def test_null_rejection_rate_is_within_the_binomial_bound(level, method, shape):
    """a and b are equally good (the same noise around the truth): PERM-BOTH at 0.05 with 49
    permutations rejects with probability 2/50 = 0.04 (p = (count + 1) / 50 < 0.05 needs count <= 1);
    over 200 simulated sets the count of rejections must lie in the binomial's 99.9% range. Pooled
    on one system, and per item across four systems with ratings on a 1-5 scale."""
    rng = np.random.default_rng(0)
    sets, permutations = 200, 49
    rejected = 0
    for k in range(sets):
        truth = rng.normal(size=shape)
        h = truth if level == "pooled" else np.clip(np.round(3 + truth), 1, 5)
        a, b = truth + rng.normal(size=shape), truth + rng.normal(size=shape)
        _, p, _ = perm_both(a, b, h, level, method, permutations, k)
        rejected += p < 0.05
    size = 2 / 50
    low, high = stats.binom.ppf(0.0005, sets, size), stats.binom.ppf(0.9995, sets, size)
    assert low <= rejected <= high, (rejected, low, high)
    assert high <= stats.binom.ppf(0.9995, sets, 0.05)


def test_a_clearly_better_metric_is_found_and_holm_adjusts_over_all_pairs():
    rng = np.random.default_rng(1)
    h = rng.normal(size=(60, 2))
    oriented = {"good": h + 0.3 * rng.normal(size=h.shape), "weak": h + 2 * rng.normal(size=h.shape),
                "weak2": h + 2 * rng.normal(size=h.shape)}
    tests = compare_pairs(oriented, h, "pooled", "spearman", 99, 3, 0.05)
    assert [(t.a, t.b) for t in tests] == [("good", "weak"), ("good", "weak2"), ("weak", "weak2")]
    by = {(t.a, t.b): t for t in tests}
    assert by[("good", "weak")].significant and by[("good", "weak")].delta > 0
    assert not by[("weak", "weak2")].significant
    ps = sorted(t.p_value for t in tests)
    # Holm by hand: 3 p, 2 p, 1 p over the sorted raw p-values, running maximum
    holm = [min(1, 3 * ps[0])]
    holm.append(max(holm[0], min(1, 2 * ps[1])))
    holm.append(max(holm[1], min(1, ps[2])))
    assert sorted(t.p_adjusted for t in tests) == pytest.approx(holm)
    estimates = {"good": 0.8, "weak": 0.3, "weak2": 0.31}
    assert significance_groups(estimates, tests) == [["good"], ["weak2", "weak"]]


def test_groups_hand_worked():
    t = [PairTest("a", "b", "pooled", "pearson", 0.1, 0.01, 0.01, True),
         PairTest("a", "c", "pooled", "pearson", 0.2, 0.01, 0.01, True),
         PairTest("b", "c", "pooled", "pearson", 0.1, 0.5, 0.5, False)]
    assert significance_groups({"a": 0.9, "b": 0.5, "c": 0.4}, t) == [["a"], ["b", "c"]]
    t[0] = PairTest("a", "b", "pooled", "pearson", 0.1, 0.5, 0.5, False)
    assert significance_groups({"a": 0.9, "b": 0.5, "c": 0.4}, t) == [["a", "b"], ["c"]]


def test_an_undefined_difference_has_no_p():
    h = np.array([[1.0], [2.0], [3.0]])
    delta, p, cells = perm_both(np.ones((3, 1)), h, h, "pooled", "pearson", 20, 0)
    assert math.isnan(delta) and p is None and cells == 3


def test_perm_both_swaps_whole_systems_and_items_as_nlpstats_does():
    """Each mask perm_both draws is a system draw XOR an item draw (nlpstats' "both"): a cell's swap
    is decided by its row and column alone, so every item's row is the first one or its complement."""
    from opik_metrics.meta_evaluation.metric_tests import both_mask

    rng = np.random.default_rng(5)
    masks = [both_mask((7, 4), rng) for _ in range(400)]
    for m in masks:
        assert not np.any(m ^ m[:, :1] ^ m[:1, :] ^ m[0, 0])          # rank one over XOR
    assert 0.4 < np.mean([m[0, 0] for m in masks]) < 0.6
    assert all(all((row == m[0]).all() or (row != m[0]).all() for row in m) for m in masks)  # items move whole
    one_column = both_mask((9,), rng)
    assert one_column.shape == (9,)


@pytest.mark.parametrize("level, nlp_level", [("pooled", "global"), ("item", "input"), ("system", "system")])
def test_perm_both_p_values_agree_with_nlpstats_within_monte_carlo_error(level, nlp_level):
    """The same data, each test with its own 2,000 permutations: the p-values agree within four
    Monte Carlo standard errors (a per-cell coin instead of whole systems and items fails this on
    data whose errors are shared within a system)."""
    permutation = pytest.importorskip("nlpstats.correlations.permutation")
    rng = np.random.default_rng(8)
    n_items, n_systems = 10, 6
    quality = rng.normal(size=(n_items, n_systems))
    h = quality + 0.5 * rng.normal(size=quality.shape)
    shared_a, shared_b = rng.normal(size=(1, n_systems)), rng.normal(size=(1, n_systems))
    a = quality + 0.8 * rng.normal(size=quality.shape) + 0.9 * shared_a
    b = quality + 0.8 * rng.normal(size=quality.shape) + 0.9 * shared_b
    pearson = lambda x, y: float(np.corrcoef(x, y)[0, 1])     # noqa: E731
    np.random.seed(3)
    theirs = permutation.permutation_test(a.T, b.T, h.T, nlp_level, pearson, "both", n_resamples=2000).pvalue
    _, ours, _ = perm_both(a, b, h, level, "pearson", 2000, 3)
    error = 4 * math.sqrt(max(theirs * (1 - theirs), 0.01) / 2000) * math.sqrt(2)
    assert abs(ours - theirs) <= error, (ours, theirs)


def test_ratings_without_authors_beside_authored_ones_are_refused_in_one_line():
    from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
    from opik_metrics.meta_evaluation.table import rated_table

    items = [ItemRecord(key=f"k{k}", position=k, input={}, output={"output": "x"},
                        scores={"bleu": 0.1 * k, "quality": 3.0}) for k in range(4)]
    for item in items[:3]:
        item.authored["quality"] = {"ann": 3.0, "bob": 4.0}
    records = ExperimentRecords(name="e", source="test", dataset="d", status="completed", config={}, items=items)
    with pytest.raises(ValueError, match=r"item 'k3' .*carries no per-author values while other items' do"):
        rated_table([records], ["quality"])
    items[3].authored["quality"] = {"ann": 2.0}
    table = rated_table([records], ["quality"])
    assert table.raters == ["ann", "bob"] and np.isnan(table.ratings[3, 0, 1])

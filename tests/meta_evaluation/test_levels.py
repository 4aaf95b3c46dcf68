"""Correlations by level on real-shaped data (several systems, missing cells): each level's value
equals nlpstats' and scipy's, each interval is the percentile of scipy on the same resampled items
(and systems), pairwise accuracy is hand-counted, and the pooled level of one system is today's
agreement."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from opik_metrics.compare.statistics.bootstrap import resample_indices
from opik_metrics.meta_evaluation.levels.by_level import level_values
from opik_metrics.meta_evaluation.levels.row_correlations import row_correlations
from opik_metrics.meta_evaluation.metric_agreement import AgreementSettings, agreement_from_scores

stats = pytest.importorskip("scipy.stats")

METHODS = ("kendall_c", "kendall_b", "spearman", "pearson")


def scipy_corr(method, x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 2 or np.unique(x).size < 2 or np.unique(y).size < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.startswith("kendall"):
            return float(stats.kendalltau(x, y, variant=method[-1]).statistic)
        if method == "spearman":
            return float(stats.spearmanr(x, y).statistic)
        return float(stats.pearsonr(x, y).statistic)


class Off:
    def update(self, n):
        pass


def rated(n_items=30, n_systems=6, seed=0, holes=0.1):
    """(items, systems) metric and mean-rating matrices: systems differ in quality, ratings on a
    1-5 scale averaged over 3 raters, the same cells missing in both."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(n_items, n_systems)) + np.linspace(0, 1.5, n_systems)
    human = np.clip(np.round(3 + quality[:, :, None] + 0.8 * rng.normal(size=(n_items, n_systems, 3))), 1, 5).mean(2)
    metric = np.round(quality + rng.normal(size=quality.shape), 2)
    gone = rng.random(quality.shape) < holes
    metric[gone], human[gone] = np.nan, np.nan
    return metric, human


def percentile(values, confidence):
    values = np.sort(np.asarray(values)[np.isfinite(values)])
    k = math.floor(values.size * (1 - confidence) / 2 + 1e-9)
    return values[k], values[values.size - 1 - k]


@pytest.mark.parametrize("seed", range(4))
def test_levels_equal_nlpstats_and_scipy(seed):
    nlpstats = pytest.importorskip("nlpstats.correlations.correlations")
    x, h = rated(seed=seed)
    for method in METHODS:
        got = {level: level_values(level, x, h, [method], 20, seed, 0.9, Off())[method].estimate
               for level in ("pooled", "item", "system")}
        coefficient = (lambda a, b, m=method: scipy_corr(m, a, b))
        # nlpstats holds systems in rows, inputs in columns
        assert got["pooled"] == pytest.approx(nlpstats.global_level(x.T, h.T, coefficient), abs=1e-12)
        assert got["item"] == pytest.approx(nlpstats.input_level(x.T, h.T, coefficient), abs=1e-12)
        assert got["system"] == pytest.approx(nlpstats.system_level(x.T, h.T, coefficient), abs=1e-12)


def test_row_correlations_equal_scipy_row_by_row():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, (200, 5)).astype(float)
    y = rng.integers(1, 5, (200, 5)).astype(float)
    x[rng.random(x.shape) < 0.2] = np.nan
    for method in METHODS:
        ours = row_correlations(method, x, y)
        for i in range(x.shape[0]):
            keep = np.isfinite(x[i]) & np.isfinite(y[i])
            expected = scipy_corr(method, x[i][keep], y[i][keep])
            assert (math.isnan(expected) and math.isnan(ours[i])) or ours[i] == pytest.approx(expected, abs=1e-12)


def test_intervals_are_percentiles_of_scipy_on_the_same_resampled_items_and_systems():
    x, h = rated(n_items=25, n_systems=5, seed=3)
    resamples, seed, confidence = 40, 9, 0.9
    idx = resample_indices(x.shape[0], resamples, seed)
    sys_idx = resample_indices(x.shape[1], resamples, seed + 1)
    for method in ("kendall_b", "spearman"):
        pooled, item, system = [], [], []
        per_item = [scipy_corr(method, x[i][np.isfinite(x[i])], h[i][np.isfinite(h[i])]) for i in range(x.shape[0])]
        for r in range(resamples):
            cells = x[idx[r]], h[idx[r]]
            keep = np.isfinite(cells[0])
            pooled.append(scipy_corr(method, cells[0][keep], cells[1][keep]))
            drawn = [per_item[i] for i in idx[r] if not math.isnan(per_item[i])]
            item.append(np.mean(drawn))
            mx, mh = np.nanmean(x[idx[r]], axis=0), np.nanmean(h[idx[r]], axis=0)
            system.append(scipy_corr(method, mx[sys_idx[r]], mh[sys_idx[r]]))
        for level, values in (("pooled", pooled), ("item", item), ("system", system)):
            got = level_values(level, x, h, [method], resamples, seed, confidence, Off())[method]
            assert (got.low, got.high) == pytest.approx(percentile(values, confidence), abs=1e-12), level
            assert got.resamples == int(np.isfinite(values).sum())


def test_pairwise_accuracy_hand_counted():
    # three systems, one item each side: metric orders them 1 < 2 < 3, people 1 < 3 < 2
    x = np.array([[1.0, 2.0, 3.0]])
    h = np.array([[1.0, 3.0, 2.0]])
    got = level_values("system", x, h, ["kendall_b"], 20, 0, 0.95, Off())
    assert got["pairwise_accuracy"].estimate == pytest.approx(2 / 3)
    assert got["pairwise_accuracy"].n_pairs == 3
    assert got["kendall_b"].estimate == pytest.approx(1 / 3)
    tie = level_values("system", np.array([[1.0, 1.0, 3.0]]), h, ["kendall_b"], 20, 0, 0.95, Off())
    # metric 1 = 1 < 3, people 1 < 3 > 2: only the pair (first, third) orders alike; a tie is no agreement
    assert tie["pairwise_accuracy"].estimate == pytest.approx(1 / 3)


def test_one_system_pooled_is_todays_agreement():
    x, h = rated(n_items=50, n_systems=1, seed=5, holes=0.0)
    keys = [f"k{i}" for i in range(50)]
    old = agreement_from_scores({k: [float(v)] for k, v in zip(keys, h[:, 0])},
                                {"m": {k: float(v) for k, v in zip(keys, x[:, 0])}},
                                AgreementSettings(resamples=60, seed=2))
    new = level_values("pooled", x, h, list(METHODS), 60, 2, 0.95, Off())
    for method in METHODS:
        c = old.metrics[0].correlations[method]
        assert (new[method].estimate, new[method].low, new[method].high) == (c.estimate, c.low, c.high)


def test_undefined_levels_say_why():
    x = np.array([[1.0], [2.0]])
    got = level_values("system", x, np.array([[1.0], [3.0]]), ["pearson"], 20, 0, 0.95, Off())
    assert got["pearson"].estimate is None and "two systems" in got["pearson"].reason
    flat = level_values("pooled", x, np.array([[2.0], [2.0]]), ["pearson"], 20, 0, 0.95, Off())
    assert flat["pearson"].estimate is None and flat["pearson"].reason
    with pytest.raises(ValueError, match="level: choose from pooled, item, system"):
        level_values("segment", x, x, ["pearson"], 20, 0, 0.95, Off())

"""The raters' own agreement: Krippendorff's alpha equals the krippendorff package on many rating
sets and Krippendorff's (2011) published worked example; rater-vs-rest is scipy's correlation of
one rater with the mean of the others."""
from __future__ import annotations

import math

import numpy as np
import pytest

from opik_metrics.meta_evaluation.evaluation import MetaSettings, meta_evaluate
from opik_metrics.meta_evaluation.raters import krippendorff_alpha, rest_mean
from opik_metrics.meta_evaluation.table import RatedTable

krippendorff = pytest.importorskip("krippendorff")
stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("metric", ["interval", "ordinal"])
def test_alpha_equals_the_krippendorff_package(metric):
    rng = np.random.default_rng(2)
    for _ in range(100):
        units, raters = int(rng.integers(3, 50)), int(rng.integers(2, 6))
        truth = rng.integers(1, 6, units)
        data = np.clip(truth[:, None] + rng.integers(-1, 2, (units, raters)), 1, 5).astype(float)
        data[rng.random(data.shape) < 0.3] = np.nan
        if (np.isfinite(data).sum(axis=1) >= 2).sum() < 1 or np.unique(data[np.isfinite(data)]).size < 2:
            continue
        ours = krippendorff_alpha(data, metric)
        theirs = krippendorff.alpha(reliability_data=data.T, level_of_measurement=metric)
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_alpha_of_krippendorffs_worked_example():
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
    12 units; published alpha interval 0.849, ordinal 0.815."""
    nan = math.nan
    data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                     [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]).T
    assert round(krippendorff_alpha(data, "interval"), 3) == 0.849
    assert round(krippendorff_alpha(data, "ordinal"), 3) == 0.815
    assert math.isnan(krippendorff_alpha(np.array([[2.0, 2.0], [2.0, 2.0]])))
    with pytest.raises(ValueError, match="alpha metric: choose from interval, ordinal"):
        krippendorff_alpha(data, "nominal")


def test_rater_vs_rest_is_scipy_on_the_others_mean():
    rng = np.random.default_rng(5)
    n = 40
    truth = rng.normal(size=(n, 1))
    ratings = np.clip(np.round(3 + truth[:, :, None] + rng.normal(size=(n, 1, 3))), 1, 5)
    ratings[3, 0, 1] = np.nan
    table = RatedTable(items=[f"i{k}" for k in range(n)], systems=["s"], human="h", raters=["ann", "bob", "cy"],
                       ratings=ratings, scores={"m": truth + rng.normal(size=(n, 1))})
    result = meta_evaluate(table, MetaSettings(methods=("spearman",), resamples=20))
    for r, name in enumerate(table.raters):
        mine, rest = ratings[:, 0, r], rest_mean(ratings, r)[:, 0]
        keep = np.isfinite(mine) & np.isfinite(rest)
        expected = stats.spearmanr(mine[keep], rest[keep]).statistic
        assert result.rater_vs_rest[name]["pooled"]["spearman"].estimate == pytest.approx(expected, abs=1e-12)
    assert result.alpha["interval"] == pytest.approx(
        krippendorff.alpha(reliability_data=ratings[:, 0, :].T, level_of_measurement="interval"), abs=1e-12)
    assert "rater ann vs rest" in result.format_table()

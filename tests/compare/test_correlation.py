"""The correlations equal scipy.stats' on the full sample and on each resample (a resample given
as draw counts must equal scipy on the gathered values), with ties, constant and tiny columns."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from opik_metrics.compare.statistics.correlation import METHODS, correlation, distinct_counts, resampled_correlations

stats = pytest.importorskip("scipy.stats")


def scipy_value(method: str, x, y) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if method == "kendall_b":
                return float(stats.kendalltau(x, y, variant="b").statistic)
            if method == "kendall_c":
                return float(stats.kendalltau(x, y, variant="c").statistic)
            if method == "spearman":
                return float(stats.spearmanr(x, y).statistic)
            return float(stats.pearsonr(x, y).statistic)
        except ValueError:          # pearsonr refuses fewer than two values
            return float("nan")


def columns(kind: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    if kind == "ties":                 # a metric with few values against 1-5 ratings
        x, y = np.round(x * 2), rng.integers(1, 6, size=n).astype(float)
    elif kind == "ties-one-side":
        y = rng.integers(1, 4, size=n).astype(float)
    elif kind == "skewed":
        x = np.exp(3 * x) + 1e6
    return x, y


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["continuous", "ties", "ties-one-side", "skewed"])
@pytest.mark.parametrize("n", [2, 3, 11, 80])
def test_full_sample_equals_scipy(method, kind, n):
    x, y = columns(kind, n, seed=n)
    expected = scipy_value(method, x, y)
    got = correlation(method, x, y)
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", ["continuous", "ties"])
def test_each_resample_equals_scipy_on_the_drawn_values(method, kind):
    n = 25
    x, y = columns(kind, n, seed=7)
    idx = np.random.default_rng(3).integers(0, n, size=(40, n))
    weights = np.stack([np.bincount(row, minlength=n) for row in idx])
    got = resampled_correlations(method, x, y, weights)
    expected = np.array([scipy_value(method, x[row], y[row]) for row in idx])
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], rtol=0, atol=1e-12)


def test_hand_worked_kendall_variants_differ_on_an_unbalanced_table():
    x = [1, 1, 2, 2, 3, 3]
    y = [1, 2, 1, 2, 2, 2]
    # points A(1,1) B(1,2) C(2,1) D(2,2) E(3,2) F(3,2): concordant A-D A-E A-F C-E C-F, discordant B-C,
    # every other pair tied in x or y: S = 5 - 1 = 4. Of 15 pairs, 3 tie in x; in y two 1s and four 2s
    # tie 1 + 6 = 7. tau-b = 4 / sqrt(12 * 8); tau-c = 2 * 4 / (6^2 * (2 - 1) / 2) = 4 / 9 (y has 2 values).
    assert correlation("kendall_b", x, y) == pytest.approx(4 / np.sqrt(96), abs=1e-15)
    assert correlation("kendall_c", x, y) == pytest.approx(4 / 9, abs=1e-15)


def test_constant_column_is_nan_here():
    for method in METHODS:
        assert np.isnan(correlation(method, [1, 2, 3], [5, 5, 5]))
        assert np.isnan(correlation(method, [4, 4], [1, 2]))
    assert distinct_counts([1, 2, 2], np.array([[1, 0, 2], [0, 3, 0]])).tolist() == [2, 1]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="x\\[1\\] is nan"):
        correlation("pearson", [1, float("nan")], [1, 2])
    with pytest.raises(ValueError, match="unknown correlation"):
        correlation("tau", [1, 2], [1, 2])
    with pytest.raises(ValueError, match="one of each per pair"):
        correlation("spearman", [1, 2, 3], [1, 2])


def brute_concordance(x, y, w) -> np.ndarray:
    """The definition, pair by pair: sum over i < j of w_i w_j sign(x_i - x_j) sign(y_i - y_j)."""
    signs = np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])
    return np.einsum("ri,ij,rj->r", w, np.triu(signs, 1), w)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("path", ["levels", "merge"])
def test_concordance_equals_the_pairwise_definition(seed, path):
    """Both counts are exact (whole numbers) on tie-heavy and continuous columns, odd sizes, zero
    weights and repeated draws alike: by levels when a column has at most 32 distinct values, by
    merge sort's levels (O(P log P)) when both have more."""
    from opik_metrics.compare.statistics.correlation import _concordance

    rng = np.random.default_rng(seed)
    for _ in range(25):
        if path == "levels":
            n = int(rng.integers(1, 70))
            x = rng.integers(0, int(rng.integers(1, 9)), n).astype(float) if rng.random() < 0.6 else rng.normal(size=n)
            y = rng.integers(0, int(rng.integers(1, 33)), n).astype(float)
        else:
            n = int(rng.integers(70, 130))
            x = np.round(3 * rng.normal(size=n), 1)      # ties, but more than 32 distinct values
            y = np.round(x + rng.normal(size=n), 1)
            assert min(np.unique(x).size, np.unique(y).size) > 32
        w = rng.integers(0, 4, (7, n)).astype(float)
        assert np.array_equal(_concordance(x, y, w), brute_concordance(x, y, w))


def test_kendall_on_ten_thousand_pairs_equals_scipy_on_the_gathered_resamples():
    rng = np.random.default_rng(11)
    n = 10_000
    x = np.round(rng.normal(size=n), 2)
    y = rng.integers(1, 5, size=n).astype(float)
    idx = rng.integers(0, n, size=(3, n))
    w = np.stack([np.bincount(row, minlength=n) for row in idx])
    for method in ("kendall_b", "kendall_c"):
        ours = resampled_correlations(method, x, y, w)
        for r in range(3):
            assert ours[r] == pytest.approx(scipy_value(method, x[idx[r]], y[idx[r]]), abs=1e-12)

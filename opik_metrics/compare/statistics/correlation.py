"""Kendall's tau (variants b and c), Spearman's rho and Pearson's r between two columns, on the
full sample and on many bootstrap resamples at once.

A resample is given as how often each pair is drawn (a row of integer weights), so one formula
serves the full sample (every weight 1) and every resample; the values equal scipy.stats'
``kendalltau(variant="b"|"c")``, ``spearmanr`` and ``pearsonr``. Kendall compares every pair of
pairs: O(P^2) memory-bounded work per resample, so P (pairs) up to a few thousand is practical
(1,000 resamples of 2,000 pairs: about 4e9 multiply-adds). numpy only; nothing here knows of
experiments or metrics. A column with one distinct value (in the sample or in a resample) has no
correlation: NaN here, a reason where it is reported.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["METHODS", "correlation", "distinct_counts", "resampled_correlations"]

#: Correlation methods by name; Kendall's variant b adjusts for ties in each column, variant c
#: (Stuart's) for tables whose two columns have different numbers of distinct values.
METHODS = ("kendall_c", "kendall_b", "spearman", "pearson")

#: Bound on the elements of one temporary block (rows x pairs, or pairs x pairs).
_BLOCK = 1 << 22


def _column(values: object, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name}[{int(bad[0])}] is {float(array[bad[0]])!r}; every value must be finite")
    return array


def _weights(weights: object, n_pairs: int) -> np.ndarray:
    array = np.asarray(weights)
    if array.ndim != 2 or array.shape[1] != n_pairs:
        raise ValueError(f"weights must have shape (resamples, {n_pairs}), got {array.shape}")
    if array.size and (array.dtype.kind not in "iu" or array.min() < 0):
        raise ValueError("weights must be counts: integers >= 0")
    return array.astype(np.float64)


def _value_counts(codes: np.ndarray, n_values: int, weights: np.ndarray) -> np.ndarray:
    """counts[r, v]: the weight resample r gives to pairs whose value is the v-th smallest."""
    rows = weights.shape[0]
    offsets = (np.arange(rows, dtype=np.int64) * n_values)[:, None]
    flat = np.bincount((codes[None, :] + offsets).ravel(), weights=weights.ravel(), minlength=rows * n_values)
    return flat.reshape(rows, n_values)


def distinct_counts(values: object, weights: object) -> np.ndarray:
    """How many distinct values each resample (row of ``weights``) holds: below 2, no correlation."""
    column = _column(values, "values")
    w = _weights(weights, column.size)
    _, codes = np.unique(column, return_inverse=True)
    return np.count_nonzero(_value_counts(codes.ravel(), int(codes.max(initial=-1)) + 1, w) > 0, axis=1)


def _tie_pairs(counts: np.ndarray) -> np.ndarray:
    return (counts * (counts - 1.0)).sum(axis=1) / 2.0


def _concordance(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Sum over pairs of pairs i < j of w_i w_j sign(x_i - x_j) sign(y_i - y_j): concordant minus
    discordant pairs of each resample (a pair drawn twice ties with itself and adds nothing)."""
    n = x.size
    out = np.zeros(w.shape[0])
    step = max(1, _BLOCK // max(n, 1))
    for start in range(0, n, step):
        block = slice(start, start + step)
        signs = np.sign(x[:, None] - x[None, block]) * np.sign(y[:, None] - y[None, block])
        out += ((w @ signs) * w[:, block]).sum(axis=1)
    return out / 2.0


def _kendall(x: np.ndarray, y: np.ndarray, w: np.ndarray, variant: str) -> np.ndarray:
    _, cx = np.unique(x, return_inverse=True)
    _, cy = np.unique(y, return_inverse=True)
    cx, cy = cx.ravel(), cy.ravel()
    counts_x = _value_counts(cx, int(cx.max()) + 1, w)
    counts_y = _value_counts(cy, int(cy.max()) + 1, w)
    distinct = np.minimum(np.count_nonzero(counts_x > 0, axis=1), np.count_nonzero(counts_y > 0, axis=1))
    s = _concordance(x, y, w)
    size = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant == "b":
            total = size * (size - 1.0) / 2.0
            tau = s / np.sqrt(total - _tie_pairs(counts_x)) / np.sqrt(total - _tie_pairs(counts_y))
        else:   # Stuart's tau-c: 2 S / (n^2 (m - 1) / m), m the smaller number of distinct values
            m = distinct.astype(np.float64)
            tau = 2.0 * s / (size ** 2 * (m - 1.0) / m)
    tau = np.clip(tau, -1.0, 1.0)
    return np.where(distinct >= 2, tau, np.nan)


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson's r of each resample: x and y are (rows, P) or (P,), w is (rows, P)."""
    size = w.sum(axis=1)
    xb = np.broadcast_to(x, w.shape)
    yb = np.broadcast_to(y, w.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        dx = xb - ((w * xb).sum(axis=1) / size)[:, None]
        dy = yb - ((w * yb).sum(axis=1) / size)[:, None]
        sxx = (w * dx * dx).sum(axis=1)
        syy = (w * dy * dy).sum(axis=1)
        r = (w * dx * dy).sum(axis=1) / np.sqrt(sxx) / np.sqrt(syy)
    return np.clip(r, -1.0, 1.0)


def _average_ranks(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each pair's 1-based rank within each resample, ties sharing the average rank (as
    ``scipy.stats.rankdata``): values below it, plus half of its own value's count, plus 1/2."""
    _, codes = np.unique(values, return_inverse=True)
    codes = codes.ravel()
    counts = _value_counts(codes, int(codes.max()) + 1, w)
    below = np.cumsum(counts, axis=1) - counts
    ranks = below + (counts + 1.0) / 2.0
    return np.take_along_axis(ranks, np.broadcast_to(codes, w.shape), axis=1)


def _by_rows(method: Callable[[np.ndarray], np.ndarray], w: np.ndarray, n: int) -> np.ndarray:
    out = np.empty(w.shape[0])
    step = max(1, _BLOCK // max(n, 1))
    for start in range(0, w.shape[0], step):
        out[start:start + step] = method(w[start:start + step])
    return out


def resampled_correlations(method: str, x: object, y: object, weights: object) -> np.ndarray:
    """The correlation ``method`` (one of METHODS) of columns ``x`` and ``y`` (one value per pair)
    on each resample, a row of ``weights`` counting how often it draws each pair: an array with one
    value per row, NaN where a column has a single distinct value (or fewer than two pairs)."""
    if method not in METHODS:
        raise ValueError(f"unknown correlation {method!r}; choose from {', '.join(METHODS)}")
    xs, ys = _column(x, "x"), _column(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x has {xs.size} values but y has {ys.size}; give one of each per pair")
    w = _weights(weights, xs.size)
    if xs.size == 0:
        return np.full(w.shape[0], np.nan)
    defined = (distinct_counts(xs, weights) >= 2) & (distinct_counts(ys, weights) >= 2)
    if method.startswith("kendall"):
        values = _kendall(xs, ys, w, method[-1])
    elif method == "spearman":
        values = _by_rows(lambda rows: _weighted_pearson(_average_ranks(xs, rows), _average_ranks(ys, rows), rows),
                          w, xs.size)
    else:
        # centred on the full sample first: the resampled sums then lose no precision to a large mean
        xc, yc = xs - xs.mean(), ys - ys.mean()
        values = _by_rows(lambda rows: _weighted_pearson(xc, yc, rows), w, xs.size)
    return np.where(defined, values, np.nan)


def correlation(method: str, x: object, y: object) -> float:
    """The correlation ``method`` of ``x`` and ``y`` on the full sample (NaN when undefined)."""
    n = np.asarray(x).size
    return float(resampled_correlations(method, x, y, np.ones((1, n), dtype=np.int64))[0])

"""Kendall's tau (variants b and c), Spearman's rho and Pearson's r between two columns, on the
full sample and on many bootstrap resamples at once.

A resample is given as how often each pair is drawn (a row of integer weights), so one formula
serves the full sample (every weight 1) and every resample; the values equal scipy.stats'
``kendalltau(variant="b"|"c")``, ``spearmanr`` and ``pearsonr``. Kendall counts concordance by
merge sort's levels, O(P log P) per resample as scipy does, or level by level when one column holds
few distinct values (ratings, votes); Spearman and Pearson are O(P). numpy only; nothing here knows of experiments or metrics. A column with one distinct value (in the sample or in a resample) has no
correlation: NaN here, a reason where it is reported.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

__all__ = ["METHODS", "correlation", "distinct_counts", "resampled_correlations", "resampled_correlations_together"]

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
    discordant pairs of each resample (a pair drawn twice ties with itself and adds nothing).

    O(P log P) per resample, as scipy's merge-sort count: with the pairs sorted by (x, y), merge
    sort's levels fix which pairs meet (a left block against a right block) whatever the weights,
    so each level is a sort computed once and one cumulative sum of weights per resample. Pairs
    tied in x, counted there by place, are taken back out from per-group weight sums. When one
    column holds few distinct values (ratings on a scale, votes), ``_concordance_by_levels`` counts
    in O(P * levels) instead."""
    few = min(np.unique(x).size, np.unique(y).size)
    if few <= _FEW_LEVELS:
        return _concordance_by_levels(x, y, w) if np.unique(y).size == few else _concordance_by_levels(y, x, w)
    order = np.lexsort((y, x))
    _, gx = np.unique(x[order], return_inverse=True)
    _, gy = np.unique(y[order], return_inverse=True)
    gx, gy = gx.ravel(), gy.ravel()
    _, gxy = np.unique(gx * (int(gy.max()) + 1) + gy, return_inverse=True)
    gxy = gxy.ravel()
    n_x, n_xy = int(gx.max()) + 1, int(gxy.max()) + 1
    levels = [_MergeLevel(gy, half) for half in _halves(x.size)]
    out = np.empty(w.shape[0])
    step = max(1, _BLOCK // max(x.size, 1))
    for start in range(0, w.shape[0], step):
        ws = w[start:start + step][:, order]
        # places x resamples, with a row of zeros at the end: a level's gather of left places only
        wt = np.zeros((x.size + 1, ws.shape[0]))
        wt[:-1] = ws.T
        total = np.zeros(ws.shape[0])
        for level in levels:
            total += level.signed_sum(wt)
        tied_x = (_value_counts(gx, n_x, ws) ** 2).sum(axis=1) - (_value_counts(gxy, n_xy, ws) ** 2).sum(axis=1)
        out[start:start + step] = total - tied_x / 2.0
    return out


#: Up to this many distinct values in one column, concordance is counted level by level.
_FEW_LEVELS = 32


def _concordance_by_levels(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``_concordance`` when ``y`` takes few values. With the pairs sorted by x once, for each y
    level b every pair j of level b meets the lower levels' pairs: concordant with those whose x is
    below x_j (before x_j's run of equal values), discordant with those above it (after the run).
    Each resample needs one cumulative sum of the lower levels' weights per level: O(P x levels)."""
    _, codes = np.unique(y, return_inverse=True)
    codes = codes.ravel()
    order = np.argsort(x, kind="stable")
    xs, cs = x[order], codes[order]
    n = x.size
    new_run = np.r_[True, xs[1:] != xs[:-1]]
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))           # first place of x's run
    run_end = np.r_[np.flatnonzero(new_run)[1:], n][np.cumsum(new_run) - 1]        # one past its last place
    plans = []
    for b in range(1, int(codes.max()) + 1):
        is_lower = cs < b
        before = np.r_[0, np.cumsum(is_lower)]         # lower places before each place
        at = np.flatnonzero(cs == b)
        plans.append((np.flatnonzero(is_lower), at, before[run_start[at]], before[run_end[at]]))
    out = np.empty(w.shape[0])
    step = max(1, _BLOCK // max(n, 1))
    for start in range(0, w.shape[0], step):
        wt = np.ascontiguousarray(w[start:start + step][:, order].T)    # places (sorted by x) x resamples
        total = np.zeros(wt.shape[1])
        for lower, at, first, stop in plans:
            c = np.zeros((lower.size + 1, wt.shape[1]))
            np.cumsum(wt[lower], axis=0, out=c[1:])
            # lower weight before x_j's run minus lower weight after it
            signed = c[first] - (c[-1] - c[stop])
            total += np.einsum("ij,ij->j", wt[at], signed)
        out[start:start + step] = total
    return out


def _halves(n: int) -> list[int]:
    out, half = [], 1
    while half < n:
        out.append(half)
        half *= 2
    return out


class _MergeLevel:
    """One level of merge sort over places 0..P-1 (the pairs sorted by x): blocks of ``half``
    places, each right block against the left block before it. For each right place q (y code
    ``codes[q]``): w_q times (left weight below y_q minus left weight above it), summed."""

    def __init__(self, codes: np.ndarray, half: int) -> None:
        n = codes.size
        place = np.arange(n)
        pair = place // (2 * half)
        is_right = (place // half) % 2 == 1
        # sorted by (block pair, y), right places before left ones on equal y; a block pair keeps
        # its own span of places
        order = np.lexsort((~is_right, codes, pair))
        self.gather = np.where(is_right[order], n, order)     # right places read the zero row
        self.right = place[is_right]
        where = np.argsort(order)
        self.at = where[self.right]
        first = 2 * half * (self.right // (2 * half))
        self.first = first
        self.last = np.minimum(first + 2 * half, n) - 1
        # the last sorted place of each right place's (block pair, y) run
        key = pair[order] * (int(codes.max()) + 1) + codes[order]
        run_end = np.r_[np.flatnonzero(key[1:] != key[:-1]), n - 1]
        self.run_end = run_end[np.searchsorted(run_end, self.at)]

    def signed_sum(self, wt: np.ndarray) -> np.ndarray:
        """``wt``: places x resamples plus a zero row; one value per resample."""
        lw = wt[self.gather]
        c = np.cumsum(lw, axis=0)
        # with base the left weight before the block pair: below = c[at] - base, equal = c[run_end]
        # - c[at], total = c[last] - base; below - above = 2 below + equal - total
        base = c[self.first] - lw[self.first]
        signed = c[self.at] + c[self.run_end] - c[self.last] - base
        return np.einsum("ij,ij->j", wt[self.right], signed)


def _kendall(x: np.ndarray, y: np.ndarray, w: np.ndarray, variant: str, s: np.ndarray) -> np.ndarray:
    _, cx = np.unique(x, return_inverse=True)
    _, cy = np.unique(y, return_inverse=True)
    cx, cy = cx.ravel(), cy.ravel()
    counts_x = _value_counts(cx, int(cx.max()) + 1, w)
    counts_y = _value_counts(cy, int(cy.max()) + 1, w)
    distinct = np.minimum(np.count_nonzero(counts_x > 0, axis=1), np.count_nonzero(counts_y > 0, axis=1))
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
    return resampled_correlations_together([method], x, y, weights)[method]


def resampled_correlations_together(methods: Sequence[str], x: object, y: object,
                                    weights: object) -> dict[str, np.ndarray]:
    """``resampled_correlations`` for several methods on the same resamples, each computed only if
    asked for; Kendall's b and c share their one concordance count."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown correlation {unknown[0]!r}; choose from {', '.join(METHODS)}")
    xs, ys = _column(x, "x"), _column(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x has {xs.size} values but y has {ys.size}; give one of each per pair")
    w = _weights(weights, xs.size)
    if xs.size == 0:
        return {m: np.full(w.shape[0], np.nan) for m in methods}
    defined = (distinct_counts(xs, weights) >= 2) & (distinct_counts(ys, weights) >= 2)
    out: dict[str, np.ndarray] = {}
    kendall = [m for m in methods if m.startswith("kendall")]
    if kendall:
        s = _concordance(xs, ys, w)
        for m in kendall:
            out[m] = _kendall(xs, ys, w, m[-1], s)
    if "spearman" in methods:
        out["spearman"] = _by_rows(
            lambda rows: _weighted_pearson(_average_ranks(xs, rows), _average_ranks(ys, rows), rows), w, xs.size)
    if "pearson" in methods:
        # centred on the full sample first: the resampled sums then lose no precision to a large mean
        xc, yc = xs - xs.mean(), ys - ys.mean()
        out["pearson"] = _by_rows(lambda rows: _weighted_pearson(xc, yc, rows), w, xs.size)
    return {m: np.where(defined, out[m], np.nan) for m in methods}


def correlation(method: str, x: object, y: object) -> float:
    """The correlation ``method`` of ``x`` and ``y`` on the full sample (NaN when undefined)."""
    n = np.asarray(x).size
    return float(resampled_correlations(method, x, y, np.ones((1, n), dtype=np.int64))[0])

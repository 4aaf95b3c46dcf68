"""A metric's correlation with people at the levels meta-evaluations report (SummEval, the WMT
metrics task, Deutsch et al. 2021), on an (items x systems) matrix of each:

- ``pooled``: every (item, system) cell as one pair (Opik's own experiments: one system);
- ``item``: per item, the correlation across its systems' outputs, averaged over the items where
  it is defined (nlpstats' "input level", the summary level of summarisation papers);
- ``system``: each system's mean over its cells, correlated across systems; with the pairwise
  accuracy of the systems' ranking (Kocmi et al. 2021): the share of system pairs both order alike.

Intervals: percentile bootstrap over items (an item's cells move together; the same draws as
``resample_indices(items, resamples, seed)``), and at system level over systems too (drawn with
seed + 1), each resample's statistic computed on the drawn cells.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from opik_metrics.compare.statistics.bootstrap import percentile_interval, resample_indices
from opik_metrics.compare.statistics.correlation import distinct_counts, resampled_correlations_together
from opik_metrics.meta_evaluation.levels.row_correlations import row_correlations

__all__ = ["LEVELS", "LevelValue", "level_values"]

LEVELS = ("pooled", "item", "system")

_BLOCK = 1 << 22


@dataclass(frozen=True)
class LevelValue:
    """One statistic at one level with its percentile interval; ``estimate`` None with ``reason``
    when undefined. ``n_items`` / ``n_systems``: what it was computed on; ``n_pairs``: the system
    pairs a pairwise accuracy counts."""

    level: str
    method: str
    estimate: float | None
    low: float | None = None
    high: float | None = None
    resamples: int = 0
    n_items: int = 0
    n_systems: int = 0
    n_pairs: int = 0
    reason: str | None = None


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    rows = idx.shape[0]
    offsets = (np.arange(rows, dtype=np.int64) * n)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=rows * n).reshape(rows, n)


def _interval(level: str, method: str, estimate: float, values: np.ndarray, confidence: float,
              n_items: int, n_systems: int, n_pairs: int = 0) -> LevelValue:
    values = values[np.isfinite(values)]
    if not np.isfinite(estimate):
        return LevelValue(level, method, None, n_items=n_items, n_systems=n_systems, n_pairs=n_pairs,
                          reason="undefined on the full sample (a constant column, or too few cells)")
    if values.size == 0:
        return LevelValue(level, method, float(estimate), n_items=n_items, n_systems=n_systems, n_pairs=n_pairs,
                          reason="undefined on every resample: no interval")
    interval = percentile_interval(float(estimate), values, confidence)
    return LevelValue(level, method, float(estimate), interval.low, interval.high, int(values.size), n_items,
                      n_systems, n_pairs)


def _pooled(x: np.ndarray, h: np.ndarray, methods: Sequence[str], resamples: int, seed: int,
            confidence: float, bar: Any) -> dict[str, LevelValue]:
    present = np.isfinite(x) & np.isfinite(h)
    rows = np.flatnonzero(present.any(axis=1))
    item, col = np.nonzero(present[rows])
    xs, hs = x[rows][item, col], h[rows][item, col]
    sizes = {"n_items": int(rows.size), "n_systems": int(present.any(axis=0).sum())}
    if rows.size < 2 or np.unique(xs).size < 2 or np.unique(hs).size < 2:
        return {m: LevelValue("pooled", m, None, reason="fewer than two items, or a constant column", **sizes)
                for m in methods}
    full = resampled_correlations_together(methods, xs, hs, np.ones((1, xs.size), dtype=np.int64))
    idx = resample_indices(int(rows.size), resamples, seed)
    values = {m: np.empty(resamples) for m in methods}
    step = max(1, _BLOCK // max(xs.size, 1))
    for start in range(0, resamples, step):
        w = _counts(idx[start:start + step], int(rows.size))[:, item]
        stop = start + w.shape[0]
        for m, v in resampled_correlations_together(methods, xs, hs, w).items():
            values[m][start:stop] = v
        bar.update(w.shape[0])
    return {m: _interval("pooled", m, full[m][0], values[m], confidence, sizes["n_items"], sizes["n_systems"])
            for m in methods}


def _item(x: np.ndarray, h: np.ndarray, methods: Sequence[str], resamples: int, seed: int,
          confidence: float, bar: Any) -> dict[str, LevelValue]:
    present = np.isfinite(x) & np.isfinite(h)
    rows = np.flatnonzero(present.any(axis=1))
    sizes = {"n_items": int(rows.size), "n_systems": int(present.any(axis=0).sum())}
    if rows.size == 0:
        return {m: LevelValue("item", m, None, reason="no item has both scores", **sizes) for m in methods}
    idx = resample_indices(int(rows.size), resamples, seed)
    out = {}
    for m in methods:
        per_item = row_correlations(m, x[rows], h[rows])
        defined = np.isfinite(per_item)
        if not defined.any():
            out[m] = LevelValue("item", m, None, reason="no item has two systems with different scores and ratings",
                                **sizes)
            continue
        value = np.where(defined, per_item, 0.0)
        values = np.empty(resamples)
        step = max(1, _BLOCK // max(rows.size, 1))
        for start in range(0, resamples, step):
            c = _counts(idx[start:start + step], int(rows.size)).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                values[start:start + c.shape[0]] = (c @ value) / (c @ defined.astype(np.float64))
        out[m] = _interval("item", m, float(per_item[defined].mean()), values, confidence,
                           n_items=int(defined.sum()), n_systems=sizes["n_systems"])
    bar.update(resamples)
    return out


def _agreeing_pairs(mx: np.ndarray, mh: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted count of system pairs (s < t) whose two means order alike (a tie agrees only with a
    tie), and the weighted count of pairs."""
    agree = np.sign(mx[:, None] - mx[None, :]) == np.sign(mh[:, None] - mh[None, :])
    pair_w = np.triu(w[:, None] * w[None, :], 1)
    return float((pair_w * agree).sum()), float(pair_w.sum())


def _system(x: np.ndarray, h: np.ndarray, methods: Sequence[str], resamples: int, seed: int,
            confidence: float, bar: Any, units: np.ndarray | None = None) -> dict[str, LevelValue]:
    """System level; ``units`` (one per row) names the item each row belongs to, when an item has
    several rows (``rater_pairs``): rows of one item are resampled together."""
    present = np.isfinite(x) & np.isfinite(h)
    rows = np.flatnonzero(present.any(axis=1))
    cols = np.flatnonzero(present[rows].any(axis=0))
    unit = np.arange(rows.size) if units is None else np.unique(np.asarray(units)[rows], return_inverse=True)[1]
    n_items, n_sys = int(unit.max(initial=-1)) + 1, int(cols.size)
    asked = [*methods, "pairwise_accuracy"]
    if n_sys < 2:
        return {m: LevelValue("system", m, None, n_items=n_items, n_systems=n_sys,
                              reason="system level needs two systems or more (several experiments)") for m in asked}
    p = present[np.ix_(rows, cols)].astype(np.float64)
    xv = np.where(p > 0, x[np.ix_(rows, cols)], 0.0)
    hv = np.where(p > 0, h[np.ix_(rows, cols)], 0.0)
    mx, mh = xv.sum(axis=0) / p.sum(axis=0), hv.sum(axis=0) / p.sum(axis=0)
    ones = np.ones((1, n_sys), dtype=np.int64)
    full = {m: float(v[0]) for m, v in resampled_correlations_together(methods, mx, mh, ones).items()}
    agree, pairs = _agreeing_pairs(mx, mh, np.ones(n_sys))
    full["pairwise_accuracy"] = agree / pairs
    idx = resample_indices(n_items, resamples, seed)
    sys_idx = resample_indices(n_sys, resamples, seed + 1)
    values = {m: np.full(resamples, np.nan) for m in asked}
    step = max(1, _BLOCK // max(rows.size, 1))
    for start in range(0, resamples, step):
        c = _counts(idx[start:start + step], n_items)[:, unit].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            rx, rh = (c @ xv) / (c @ p), (c @ hv) / (c @ p)
        ws = _counts(sys_idx[start:start + c.shape[0]], n_sys)
        for r in range(c.shape[0]):
            keep = np.isfinite(rx[r]) & np.isfinite(rh[r])
            w = np.where(keep, ws[r], 0)
            if (distinct_counts(rx[r][keep], w[keep][None, :]) < 2).any() or \
                    (distinct_counts(rh[r][keep], w[keep][None, :]) < 2).any():
                continue
            for m, v in resampled_correlations_together(methods, rx[r][keep], rh[r][keep], w[keep][None, :]).items():
                values[m][start + r] = v[0]
            a, n = _agreeing_pairs(rx[r][keep], rh[r][keep], w[keep].astype(np.float64))
            if n > 0:
                values["pairwise_accuracy"][start + r] = a / n
        bar.update(c.shape[0])
    return {m: _interval("system", m, full[m], values[m], confidence, n_items=n_items, n_systems=n_sys,
                         n_pairs=n_sys * (n_sys - 1) // 2 if m == "pairwise_accuracy" else 0) for m in asked}


_BY_LEVEL = {"pooled": _pooled, "item": _item, "system": _system}


def level_values(level: str, x: object, h: object, methods: Sequence[str], resamples: int, seed: int,
                 confidence: float, bar: Any, units: np.ndarray | None = None) -> dict[str, LevelValue]:
    """The correlations ``methods`` of metric ``x`` with human ``h`` (both (items, systems), NaN where
    missing) at ``level``, with intervals; at system level also ``pairwise_accuracy``. ``bar``: a
    tqdm-like object told how many resamples are done. ``units`` (system level only): the item of
    each row, when rows are (item, rater) pairs resampled by item."""
    if level not in LEVELS:
        raise ValueError(f"level: choose from {', '.join(LEVELS)}, got {level!r}")
    xs, hs = np.asarray(x, dtype=np.float64), np.asarray(h, dtype=np.float64)
    if xs.ndim != 2 or xs.shape != hs.shape:
        raise ValueError(f"x and h must be 2-D of one shape (items, systems), got {xs.shape} and {hs.shape}")
    if units is not None:
        if level != "system":
            raise ValueError(f"units: rows resampled by item are for the system level, not {level!r}")
        return _system(xs, hs, methods, resamples, seed, confidence, bar, units)
    return _BY_LEVEL[level](xs, hs, methods, resamples, seed, confidence, bar)

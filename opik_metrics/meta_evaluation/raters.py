"""How well the raters agree with one another, the ceiling a metric's agreement with them can
reach: Krippendorff's alpha (interval and ordinal metrics) over the rated cells, and each rater
against the mean of the other raters.

Alpha follows Krippendorff (2011, "Computing Krippendorff's Alpha-Reliability"): coincidences of
the values within each unit (cell) rated twice or more, alpha = 1 - (n - 1) * sum o_ck d_ck /
sum n_c n_k d_ck. Work and memory grow with the square of the number of distinct rating values:
meant for rating scales, not continuous scores.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ALPHA_METRICS", "krippendorff_alpha", "rest_mean"]

ALPHA_METRICS = ("interval", "ordinal")


def krippendorff_alpha(ratings: object, metric: str = "interval") -> float:
    """Alpha of ``ratings`` (units x raters, NaN where a rater did not rate a unit); NaN when fewer
    than two units have two ratings or every pairable value is the same."""
    if metric not in ALPHA_METRICS:
        raise ValueError(f"alpha metric: choose from {', '.join(ALPHA_METRICS)}, got {metric!r}")
    data = np.asarray(ratings, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"ratings must be 2-D (units, raters), got shape {data.shape}")
    present = np.isfinite(data)
    pairable = present.sum(axis=1) >= 2
    values = np.unique(data[pairable][present[pairable]])
    if values.size < 2:
        return float("nan")
    codes = np.searchsorted(values, np.where(present, data, values[0]))
    units = np.flatnonzero(pairable)
    counts = np.zeros((units.size, values.size))
    for rater in range(data.shape[1]):
        rated = present[units, rater]
        np.add.at(counts, (np.flatnonzero(rated), codes[units[rated], rater]), 1.0)
    m = counts.sum(axis=1)
    scaled = counts / (m - 1.0)[:, None]
    coincidences = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    n_c = coincidences.sum(axis=1)
    n = n_c.sum()
    if metric == "interval":
        delta = (values[:, None] - values[None, :]) ** 2
    else:
        cumulative = np.cumsum(n_c)
        between = cumulative[None, :] - cumulative[:, None] + n_c[:, None]      # sum of n_g for g in c..k (c <= k)
        span = np.where(np.arange(values.size)[:, None] <= np.arange(values.size)[None, :], between, between.T)
        delta = (span - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    expected = (n_c[:, None] * n_c[None, :] * delta).sum()
    if expected == 0:
        return float("nan")
    return float(1.0 - (n - 1.0) * (coincidences * delta).sum() / expected)


def rest_mean(ratings: np.ndarray, rater: int) -> np.ndarray:
    """The mean of the other raters' ratings of each cell (``ratings``: (..., raters)); NaN where
    no other rater rated it."""
    others = np.delete(ratings, rater, axis=-1)
    counts = np.isfinite(others).sum(axis=-1)
    sums = np.where(np.isfinite(others), others, 0.0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)

"""``--raters pairs`` at every level: each rating of a cell (one rater, one item, one system) is a
pair of its own with the cell's metric score, as ``agreement --raters pairs`` takes them for one
experiment, instead of the cell's mean rating; the pairs of one item are resampled together.

The levels read (items, systems) matrices, so the pairs are laid out as one: pooled and item level
take a column per (system, rater), so that an item's row holds all its pairs (the item level
correlates them); system level a row per (item, rater), each row resampled with its item, so that a
system's mean is over its pairs.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from opik_metrics.meta_evaluation.levels.by_level import LevelValue, level_values

__all__ = ["pair_level_values"]


def _pairs(x: np.ndarray, ratings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The metric's score and the rating of every (item, system, rater), NaN where either is missing."""
    present = np.isfinite(ratings) & np.isfinite(x)[:, :, None]
    return np.where(present, x[:, :, None], np.nan), np.where(present, ratings, np.nan)


def pair_level_values(level: str, x: np.ndarray, ratings: np.ndarray, methods: Sequence[str], resamples: int,
                      seed: int, confidence: float, bar: Any) -> dict[str, LevelValue]:
    """``level_values`` of metric ``x`` (items, systems) against every rating in ``ratings`` (items,
    systems, raters; NaN where a rater did not rate a cell), each rating a pair (see the module)."""
    items, systems, raters = ratings.shape
    xs, hs = _pairs(np.asarray(x, dtype=np.float64), np.asarray(ratings, dtype=np.float64))
    if level == "system":
        rows = (items * raters, systems)
        return level_values(level, xs.transpose(0, 2, 1).reshape(rows), hs.transpose(0, 2, 1).reshape(rows),
                            methods, resamples, seed, confidence, bar, units=np.repeat(np.arange(items), raters))
    found = level_values(level, xs.reshape(items, systems * raters), hs.reshape(items, systems * raters), methods,
                         resamples, seed, confidence, bar)
    n_systems = int(np.isfinite(hs).any(axis=(0, 2)).sum())    # the columns are (system, rater): count systems
    return {m: replace(v, n_systems=n_systems) for m, v in found.items()}

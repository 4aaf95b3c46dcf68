"""Whether metric A agrees with people significantly better than metric B: the paired permutation
test PERM-BOTH of Deutsch et al. (2021), every pair of metrics, Holm-corrected, and the groups of
metrics the test cannot tell apart.

Both metrics are standardised (mean 0, SD 1 over their cells, as nlpstats does, so that swapping
makes sense), then on each permutation each system's cells swap their two scores with probability
1/2, then each item's (``both_mask``: a cell swaps when exactly one of the two did); the statistic is corr(A, human) - corr(B, human) at the chosen level. Two-sided
p = (permutations at least as extreme as observed + 1) / (permutations + 1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from opik_metrics.compare.statistics.corrections import adjust
from opik_metrics.compare.statistics.correlation import correlation
from opik_metrics.meta_evaluation.levels.row_correlations import row_correlations

__all__ = ["PairTest", "level_statistic", "perm_both", "permuted_differences", "significance_groups", "compare_pairs"]


@dataclass(frozen=True)
class PairTest:
    """Metric ``a`` against ``b`` at one level and method: the observed difference of their
    correlations, the raw and Holm-adjusted p-values; ``reason`` when the test cannot run."""

    a: str
    b: str
    level: str
    method: str
    delta: float | None
    p_value: float | None = None
    p_adjusted: float | None = None
    significant: bool = False
    cells: int = 0
    permutations: int = 0
    reason: str | None = None


def level_statistic(level: str, method: str, x: np.ndarray, h: np.ndarray) -> float:
    """The correlation of (items, systems) matrices at ``level`` on their present cells (NaN if undefined)."""
    present = np.isfinite(x) & np.isfinite(h)
    if level == "pooled":
        if present.sum() < 2:
            return float("nan")
        return correlation(method, x[present], h[present])
    if level == "item":
        per_item = row_correlations(method, x, h)
        defined = per_item[np.isfinite(per_item)]
        return float(defined.mean()) if defined.size else float("nan")
    count = present.sum(axis=0)
    keep = count > 0
    if keep.sum() < 2:
        return float("nan")
    mx = np.where(present, x, 0.0).sum(axis=0)[keep] / count[keep]
    mh = np.where(present, h, 0.0).sum(axis=0)[keep] / count[keep]
    return correlation(method, mx, mh)


def _standardised(x: np.ndarray) -> np.ndarray:
    sd = np.nanstd(x)
    return (x - np.nanmean(x)) / (sd if sd > 0 else 1.0)


def permuted_differences(a: np.ndarray, b: np.ndarray, h: np.ndarray, level: str, method: str,
                         masks: Any, bar: Any = None) -> tuple[float, np.ndarray]:
    """The observed difference corr(a, h) - corr(b, h) at ``level`` after standardising a and b, and
    the difference on each permutation: ``masks`` yields (items, systems) booleans, True where the
    cell's two scores swap."""
    a, b = _standardised(a), _standardised(b)
    observed = level_statistic(level, method, a, h) - level_statistic(level, method, b, h)
    samples = []
    for mask in masks:
        ap, bp = np.where(mask, b, a), np.where(mask, a, b)
        samples.append(level_statistic(level, method, ap, h) - level_statistic(level, method, bp, h))
        if bar is not None:
            bar.update(1)
    return observed, np.array(samples)


def both_mask(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """One PERM-BOTH swap (Deutsch et al. 2021; nlpstats' ``permute(..., "both")``): each system's
    whole column swaps with probability 1/2, then each item's whole row; a cell swaps when exactly
    one of its two draws did (their XOR). Cells of one system, or of one item, swap together, as
    their errors are linked. For one column (a pooled set of items) it is a coin per item."""
    if len(shape) == 1:
        return rng.random(shape) < 0.5
    items, systems = shape
    return (rng.random(systems) < 0.5)[None, :] ^ (rng.random(items) < 0.5)[:, None]


def perm_both(a: object, b: object, h: object, level: str, method: str, permutations: int, seed: int,
              bar: Any = None) -> tuple[float, float | None, int]:
    """PERM-BOTH on the cells all three have: (observed difference, two-sided p, cells); p None when
    the difference is undefined."""
    xa, xb, xh = (np.asarray(v, dtype=np.float64) for v in (a, b, h))
    common = np.isfinite(xa) & np.isfinite(xb) & np.isfinite(xh)
    xa, xb, xh = (np.where(common, v, np.nan) for v in (xa, xb, xh))
    rng = np.random.default_rng(seed)
    masks = (both_mask(xa.shape, rng) for _ in range(permutations))
    observed, samples = permuted_differences(xa, xb, xh, level, method, masks, bar)
    if not np.isfinite(observed):
        return observed, None, int(common.sum())
    extreme = int(np.count_nonzero(np.abs(samples) >= abs(observed) - 1e-12 * max(1.0, abs(observed))))
    return observed, (extreme + 1) / (permutations + 1), int(common.sum())


def compare_pairs(oriented: dict[str, np.ndarray], h: np.ndarray, level: str, method: str, permutations: int,
               seed: int, alpha: float, correction: str = "holm", bar: Any = None) -> list[PairTest]:
    """Every pair of metrics (in the order given) tested with PERM-BOTH, p-values adjusted over all
    the pairs (``correction``: holm, bonferroni or none)."""
    names = list(oriented)
    raw = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            delta, p, cells = perm_both(oriented[a], oriented[b], h, level, method, permutations, seed, bar)
            raw.append((a, b, delta, p, cells))
    adjusted = adjust([p for *_, p, _ in raw], correction)
    out = []
    for (a, b, delta, p, cells), q in zip(raw, adjusted):
        if p is None:
            out.append(PairTest(a, b, level, method, None, cells=cells, reason="a correlation is undefined"))
            continue
        out.append(PairTest(a, b, level, method, float(delta), p, q, bool(q is not None and q < alpha), cells,
                            permutations))
    return out


def significance_groups(estimates: dict[str, float], tests: Sequence[PairTest]) -> list[list[str]]:
    """Metrics in groups the test cannot tell apart, best first: the first group holds the best
    metric and every metric not significantly below it; the rest, the same way, after them."""
    below = {(t.a, t.b) for t in tests if t.significant} | {(t.b, t.a) for t in tests if t.significant}
    remaining = sorted(estimates, key=lambda m: -estimates[m])
    groups = []
    while remaining:
        top = remaining[0]
        group = [m for m in remaining if m == top or (top, m) not in below]
        groups.append(group)
        remaining = [m for m in remaining if m not in group]
    return groups

"""The correlation of each row of two matrices (one row per item, one column per system), on the
cells where both are present: the item level's per-item correlations, all items at once.

Pairs of cells are compared within a row, O(rows x columns^2), vectorised over rows: meant for the
few systems a meta-evaluation compares (outputs of one item), not for long rows. Each value equals
scipy.stats' ``kendalltau(variant="b"|"c")``, ``spearmanr`` or ``pearsonr`` on the row's present
cells; NaN where a row has fewer than two present cells or a constant column among them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["row_correlations"]

#: Bound on the elements of one (rows x columns x columns) block.
_BLOCK = 1 << 22


def _signs(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """sign(v_i - v_j) for every pair of present cells of each row, 0 elsewhere: (rows, cols, cols)."""
    filled = np.where(present, values, 0.0)
    both = present[:, :, None] & present[:, None, :]
    return np.where(both, np.sign(filled[:, :, None] - filled[:, None, :]), 0.0)


def _ranks(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Each present cell's average rank among its row's present cells (1-based, ties averaged)."""
    s = _signs(values, present)
    below = (s > 0).sum(axis=2)
    ties = ((s == 0) & present[:, :, None] & present[:, None, :]).sum(axis=2)    # itself included
    return below + (ties + 1.0) / 2.0


def _pearson(x: np.ndarray, y: np.ndarray, present: np.ndarray) -> np.ndarray:
    n = present.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mx = np.where(present, x, 0.0).sum(axis=1) / n
        my = np.where(present, y, 0.0).sum(axis=1) / n
        dx = np.where(present, x - mx[:, None], 0.0)
        dy = np.where(present, y - my[:, None], 0.0)
        r = (dx * dy).sum(axis=1) / np.sqrt((dx * dx).sum(axis=1)) / np.sqrt((dy * dy).sum(axis=1))
    return np.clip(r, -1.0, 1.0)


def _block(method: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    present = np.isfinite(x) & np.isfinite(y)
    n = present.sum(axis=1).astype(np.float64)
    if method == "pearson":
        out = _pearson(x, y, present)
    elif method == "spearman":
        out = _pearson(_ranks(x, present), _ranks(y, present), present)
    else:
        sx, sy = _signs(x, present), _signs(y, present)
        s = (sx * sy).sum(axis=(1, 2)) / 2.0
        total = n * (n - 1.0) / 2.0
        untied_x = (sx != 0).sum(axis=(1, 2)) / 2.0        # pairs not tied in x
        untied_y = (sy != 0).sum(axis=(1, 2)) / 2.0
        distinct_x = _distinct(x, present)
        distinct_y = _distinct(y, present)
        with np.errstate(divide="ignore", invalid="ignore"):
            if method == "kendall_b":
                out = s / np.sqrt(untied_x) / np.sqrt(untied_y)
            else:
                m = np.minimum(distinct_x, distinct_y)
                out = 2.0 * s / (n ** 2 * (m - 1.0) / m)
        out = np.clip(np.where(total > 0, out, np.nan), -1.0, 1.0)
    defined = (_distinct(x, present) >= 2) & (_distinct(y, present) >= 2)
    return np.where(defined, out, np.nan)


def _distinct(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    """How many distinct present values each row holds."""
    ordered = np.sort(np.where(present, values, np.inf), axis=1)
    new = np.isfinite(ordered) & np.r_["1", np.ones((ordered.shape[0], 1), bool), ordered[:, 1:] != ordered[:, :-1]]
    return new.sum(axis=1)


def row_correlations(method: str, x: object, y: object) -> np.ndarray:
    """The correlation ``method`` (kendall_c, kendall_b, spearman, pearson) of each row of ``x`` with
    the same row of ``y`` (2-D, same shape, NaN for a missing cell): one value per row."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xs.ndim != 2 or xs.shape != ys.shape:
        raise ValueError(f"x and y must be 2-D of one shape (items, systems), got {xs.shape} and {ys.shape}")
    if method not in ("kendall_c", "kendall_b", "spearman", "pearson"):
        raise ValueError(f"unknown correlation {method!r}; choose from kendall_c, kendall_b, spearman, pearson")
    out = np.empty(xs.shape[0])
    step = max(1, _BLOCK // max(xs.shape[1] ** 2, 1))
    for start in range(0, xs.shape[0], step):
        out[start:start + step] = _block(method, xs[start:start + step], ys[start:start + step])
    return out

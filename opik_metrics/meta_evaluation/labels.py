"""Agreement with human labels (yes/no votes, a few categories) rather than ratings: accuracy,
Cohen's kappa and F1 of a metric's labels against people's, with percentile bootstrap intervals
over items (an item's cells move together).

A metric whose values are all labels people used is taken as it is (a binary or categorical judge);
any other metric is cut into labels: at ``threshold`` when given, else at the quantiles that give
each label the share people gave it (so the metric predicts as many positives as people marked,
and no threshold is tuned on the agreement itself). F1 is the F1 of the highest label for two
labels, the macro average over labels otherwise; kappa is unweighted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opik_metrics.compare.statistics.bootstrap import percentile_interval, resample_indices

__all__ = ["LABEL_STATISTICS", "LabelAgreement", "is_labels", "label_agreement", "majority_labels"]

LABEL_STATISTICS = ("accuracy", "kappa", "f1")

#: The most distinct values human ratings may take and still be read as labels when not told.
MAX_LABELS = 2


@dataclass(frozen=True)
class LabelValue:
    """One statistic with its percentile interval (None with a reason when undefined)."""

    statistic: str
    estimate: float | None
    low: float | None = None
    high: float | None = None
    resamples: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class LabelAgreement:
    """A metric's labels against people's: how its labels were made, and the statistics."""

    metric: str
    labels: list[float]
    cut: str                          # "as given", "threshold T" or "quantiles a, b, ..."
    n_cells: int
    values: dict[str, LabelValue]


def is_labels(values: np.ndarray, max_labels: int = MAX_LABELS) -> bool:
    """Whether the finite ``values`` look like labels: integers taking at most ``max_labels`` values."""
    finite = values[np.isfinite(values)]
    return finite.size > 0 and bool(np.all(finite == np.round(finite))) and np.unique(finite).size <= max_labels


def majority_labels(ratings: np.ndarray) -> np.ndarray:
    """Each cell's most common label over its raters (``ratings``: (..., raters)); NaN where nobody
    labelled it or the most common labels tie."""
    flat = ratings.reshape(-1, ratings.shape[-1])
    out = np.full(flat.shape[0], np.nan)
    for k, row in enumerate(flat):
        row = row[np.isfinite(row)]
        if row.size == 0:
            continue
        values, counts = np.unique(row, return_counts=True)
        if (counts == counts.max()).sum() == 1:
            out[k] = values[np.argmax(counts)]
    return out.reshape(ratings.shape[:-1])


def _cut(x: np.ndarray, labels: np.ndarray, human: np.ndarray, threshold: float | None) -> tuple[np.ndarray, str]:
    if np.isin(np.unique(x), labels).all():
        return x, "as given"
    if threshold is not None:
        if labels.size != 2:
            raise ValueError(f"a threshold cuts a metric into two labels; people used {labels.size}")
        return np.where(x >= threshold, labels[1], labels[0]), f"threshold {threshold:g}"
    shares = np.array([(human == v).mean() for v in labels])
    cuts = np.quantile(x, np.cumsum(shares)[:-1])
    return labels[np.searchsorted(cuts, x, side="right")], "quantiles " + ", ".join(f"{c:.4g}" for c in cuts)


def _statistics(confusion: np.ndarray) -> dict[str, np.ndarray]:
    """accuracy, kappa and F1 of each (resamples, labels, labels) confusion matrix (rows: people)."""
    total = confusion.sum(axis=(1, 2))
    diagonal = np.einsum("rkk->rk", confusion)
    rows, cols = confusion.sum(axis=2), confusion.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        accuracy = diagonal.sum(axis=1) / total
        expected = (rows * cols).sum(axis=1) / total ** 2
        kappa = (accuracy - expected) / (1.0 - expected)
        f1_each = 2 * diagonal / (rows + cols)
    if confusion.shape[1] == 2:
        f1 = np.where(rows[:, 1] + cols[:, 1] > 0, f1_each[:, 1], 0.0)
    else:
        f1 = np.where(rows + cols > 0, f1_each, 0.0).mean(axis=1)
    return {"accuracy": accuracy, "kappa": kappa, "f1": f1}


def label_agreement(metric: str, x: object, human: object, resamples: int, seed: int, confidence: float,
                    threshold: float | None = None, bar: Any = None) -> LabelAgreement:
    """``metric``'s labels (``x``, (items, systems)) against people's (``human``, same shape, NaN
    where missing): accuracy, kappa and F1 with intervals."""
    xs, hs = np.asarray(x, dtype=np.float64), np.asarray(human, dtype=np.float64)
    present = np.isfinite(xs) & np.isfinite(hs)
    rows = np.flatnonzero(present.any(axis=1))
    item, col = np.nonzero(present[rows])
    xv, hv = xs[rows][item, col], hs[rows][item, col]
    labels = np.unique(hv)
    if labels.size < 2:
        none = {s: LabelValue(s, None, reason="people gave one label only") for s in LABEL_STATISTICS}
        return LabelAgreement(metric, labels.tolist(), "", int(hv.size), none)
    predicted, how = _cut(xv, labels, hv, threshold)
    k = labels.size
    codes = np.searchsorted(labels, hv) * k + np.searchsorted(labels, predicted)
    full = _statistics(np.bincount(codes, minlength=k * k).reshape(1, k, k).astype(np.float64))
    idx = resample_indices(int(rows.size), resamples, seed)
    values = {s: np.empty(resamples) for s in LABEL_STATISTICS}
    step = max(1, (1 << 22) // max(int(rows.size), 1))
    for start in range(0, resamples, step):
        block = idx[start:start + step]
        r = block.shape[0]
        offsets = (np.arange(r, dtype=np.int64) * rows.size)[:, None]
        counts = np.bincount((block + offsets).ravel(), minlength=r * rows.size).reshape(r, rows.size)
        w = counts[:, item].astype(np.float64)
        confusion = np.stack([np.bincount(codes, weights=row, minlength=k * k) for row in w]).reshape(r, k, k)
        for s, v in _statistics(confusion).items():
            values[s][start:start + r] = v
        if bar is not None:
            bar.update(r)
    out = {}
    for s in LABEL_STATISTICS:
        estimate = float(full[s][0])
        if not np.isfinite(estimate):
            out[s] = LabelValue(s, None, reason="undefined (one label on both sides)")
            continue
        finite = values[s][np.isfinite(values[s])]
        interval = percentile_interval(estimate, finite, confidence)
        out[s] = LabelValue(s, estimate, interval.low, interval.high, int(finite.size))
    return LabelAgreement(metric, labels.tolist(), how, int(hv.size), out)

"""A window's summary: per score the mean over the selected traces with its bootstrap interval
(compare's statistics, same seed and resamples, so the numbers equal ``compare``'s on the same
values), corpus scores from the summed per-item statistics, and two windows compared unpaired
(different traces: each window resampled on its own)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from opik_metrics.compare.statistics.bootstrap import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, Interval,
                                                       MeanStatistic, bootstrap_interval, resample_indices)


@dataclass(frozen=True)
class ScoreSummary:
    """One score over a window: how many traces hold it, its mean and interval."""

    name: str
    n: int
    mean: float
    low: float
    high: float
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "low": self.low, "high": self.high, "confidence": self.confidence}


def mean_interval(name: str, values: Sequence[float], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  confidence: float = DEFAULT_CONFIDENCE, idx: np.ndarray | None = None) -> ScoreSummary:
    """The mean of ``values`` with its percentile bootstrap interval (``bootstrap_interval`` over
    ``resample_indices``: compare's own functions); ``idx``: those indices, drawn already."""
    statistic = MeanStatistic(values)
    if idx is None:
        idx = resample_indices(statistic.n_items, resamples, seed)
    interval: Interval = bootstrap_interval(statistic, idx, confidence)
    return ScoreSummary(name, statistic.n_items, interval.estimate, interval.low, interval.high, confidence)


@dataclass
class WindowSummary:
    """Scores over one window of traces: item means with intervals and corpus scores."""

    scores: dict[str, ScoreSummary] = field(default_factory=dict)
    corpus: dict[str, float] = field(default_factory=dict)
    corpus_items: dict[str, int] = field(default_factory=dict)    # corpus score -> traces whose statistics it sums

    def as_dict(self) -> dict[str, Any]:
        return {"scores": {n: s.as_dict() for n, s in self.scores.items()},
                "corpus": {n: {"value": v, "n": self.corpus_items.get(n)} for n, v in self.corpus.items()}}


def summarize(values: Mapping[str, Sequence[float]], corpus: Mapping[str, float] | None = None,
              corpus_items: Mapping[str, int] | None = None, resamples: int = DEFAULT_RESAMPLES,
              seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> WindowSummary:
    """Item means with intervals for every score with at least one value, and the corpus scores.
    Scores held by as many traces share one draw of indices (the same draw each would make alone)."""
    draws: dict[int, np.ndarray] = {}
    scores = {}
    for name, v in values.items():
        if len(v):
            if len(v) not in draws:
                draws[len(v)] = resample_indices(len(v), resamples, seed)
            scores[name] = mean_interval(name, v, resamples, seed, confidence, draws[len(v)])
    return WindowSummary(scores, dict(corpus or {}), dict(corpus_items or {}))


class _Difference:
    """mean(window b) - mean(window a) over the concatenated items, a resample drawing each window's
    items from that window alone (a stratified bootstrap: the windows hold different traces)."""

    def __init__(self, a: Sequence[float], b: Sequence[float]) -> None:
        self.a, self.b = MeanStatistic(a), MeanStatistic(b)
        self.n_items = self.a.n_items + self.b.n_items
        self.value = self.b.value - self.a.value

    def resampled(self, idx: np.ndarray) -> np.ndarray:
        n_a = self.a.n_items
        return self.b.resampled(idx[:, n_a:] - n_a) - self.a.resampled(idx[:, :n_a])


@dataclass(frozen=True)
class WindowComparison:
    """Score ``name`` in window a (the earlier) and b (the later): means and b - a with its interval."""

    name: str
    a: ScoreSummary
    b: ScoreSummary
    delta: float
    low: float
    high: float

    @property
    def significant(self) -> bool:
        """Whether the interval of b - a leaves out 0."""
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a.as_dict(), "b": self.b.as_dict(), "delta": self.delta, "low": self.low, "high": self.high,
                "significant": self.significant}


def compare_windows(name: str, a: Sequence[float], b: Sequence[float], resamples: int = DEFAULT_RESAMPLES,
                    seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> WindowComparison:
    """Unpaired: each window's items resampled within the window (the draws of ``resample_indices``
    with the seed for a and the next seed for b), the interval of the difference of means by
    ``bootstrap_interval``; each window's own mean and interval as ``mean_interval`` gives them."""
    difference = _Difference(a, b)
    idx = np.hstack([resample_indices(difference.a.n_items, resamples, seed),
                     resample_indices(difference.b.n_items, resamples, seed + 1) + difference.a.n_items])
    interval = bootstrap_interval(difference, idx, confidence)
    return WindowComparison(name, mean_interval(name, a, resamples, seed, confidence),
                            mean_interval(name, b, resamples, seed, confidence), interval.estimate, interval.low,
                            interval.high)

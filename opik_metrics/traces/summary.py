"""A window's summary: per score the mean over the selected traces with its bootstrap interval
(compare's statistics, same seed and resamples, so the numbers equal ``compare``'s on the same
values), corpus scores from the summed per-item statistics, and two windows compared unpaired
(different traces: each window resampled on its own)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from opik_metrics.compare.statistics.bootstrap import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED,
                                                       MeanStatistic, interval_of, resample_blocks)


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


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The mean of each resample of ``values``, drawn as ``resample_indices`` draws them, a block at a
    time (memory: one block, not resamples x traces)."""
    out = np.empty(resamples, dtype=np.float64)
    start = 0
    for block in resample_blocks(values.size, resamples, seed):
        out[start:start + len(block)] = values[block].mean(axis=1)
        start += len(block)
    return out


def mean_interval(name: str, values: Sequence[float], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  confidence: float = DEFAULT_CONFIDENCE) -> ScoreSummary:
    """The mean of ``values`` with its percentile bootstrap interval: ``bootstrap_interval`` of a
    ``MeanStatistic`` over ``resample_indices`` (compare's functions), the draws reduced block by block."""
    statistic = MeanStatistic(values)
    interval = interval_of(statistic.value, _resampled_means(statistic.values, resamples, seed), confidence)
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
    """
    return WindowSummary({n: mean_interval(n, v, resamples, seed, confidence) for n, v in values.items() if len(v)},
                         dict(corpus or {}), dict(corpus_items or {}))


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
    """Unpaired: each window's traces resampled within the window (``resample_indices``' draws, with
    the seed for a and the next seed for b), the interval of the difference of the resampled means
    by ``bootstrap_interval``'s percentile rule; each window's own mean and interval as
    ``mean_interval`` gives them."""
    mean_a, mean_b = MeanStatistic(a), MeanStatistic(b)
    resampled = _resampled_means(mean_b.values, resamples, seed + 1) - _resampled_means(mean_a.values, resamples, seed)
    interval = interval_of(mean_b.value - mean_a.value, resampled, confidence)
    return WindowComparison(name, mean_interval(name, a, resamples, seed, confidence),
                            mean_interval(name, b, resamples, seed, confidence), interval.estimate, interval.low,
                            interval.high)

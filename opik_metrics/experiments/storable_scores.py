"""A user's own Opik metric, as ``opik_metrics.evaluate`` hands it to ``opik.evaluate``: the same
``score`` (signature included, so Opik maps its arguments as before) whose results an Opik server
cannot store are marked failed (``metric_kit/server_range.py``), so one inf does not lose a batch.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

from opik.evaluation.metrics import base_metric
from opik.evaluation.metrics.score_result import ScoreResult
from opik.evaluation.scorers.scorer_wrapper_metric import ScorerWrapperMetric

from opik_metrics.scoring import as_results
from opik_metrics.metric_kit.base import PackMetric


class StorableScores(base_metric.BaseMetric):
    """``metric`` with its ``score`` results checked against the server's range; its own tracking
    (a span per call when it tracks) is unchanged."""

    def __init__(self, metric: Any) -> None:
        super().__init__(name=metric.name, track=False)
        self.metric = metric

        @functools.wraps(metric.score)
        def score(*args: Any, **kwargs: Any) -> list[ScoreResult]:
            return as_results(metric.score(*args, **kwargs))

        self.score = score  # type: ignore[method-assign]


def storable_metrics(metrics: Sequence[Any]) -> list[Any]:
    """``metrics`` with each plain Opik metric wrapped; the pack's own metrics check themselves, and
    Opik's scorer wrappers (which Opik calls differently) are left as they are."""
    return [metric if isinstance(metric, (PackMetric, ScorerWrapperMetric)) or not callable(getattr(metric, "score", None))
            else StorableScores(metric) for metric in metrics]

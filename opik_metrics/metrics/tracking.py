"""Opik tracking for the pack's metrics, imported only when a metric is built with ``track=True``.

The metrics subclass Opik's lightweight ``BaseMetric`` (``_opik``); this module adds what Opik's
full ``opik.evaluation.metrics.BaseMetric.__init__`` adds: a tracked span around ``score`` and
``ascore``. It also registers the pack's metrics as (virtual) subclasses of that full class, so
``isinstance(metric, opik.evaluation.metrics.BaseMetric)`` holds wherever opik is loaded.
"""
from __future__ import annotations

import sys
from typing import Any


def register_with_opik(metric_class: type) -> None:
    """Make ``metric_class`` (the pack's base class) an ``opik.evaluation.metrics.BaseMetric`` to
    ``isinstance`` (an ABC registration; Opik's class is an ``abc.ABC``). Imports opik."""
    from opik.evaluation.metrics.base_metric import BaseMetric

    if not issubclass(metric_class, BaseMetric):
        BaseMetric.register(metric_class)


def register_if_opik_loaded(metric_class: type) -> None:
    """``register_with_opik`` when something already imported opik's metrics (costs nothing then)."""
    if "opik.evaluation.metrics.base_metric" in sys.modules:
        register_with_opik(metric_class)


def track_scoring(metric: Any, project_name: str | None, metric_class: type) -> None:
    """Wrap ``metric.score`` / ``metric.ascore`` in ``opik.track`` spans, as Opik's BaseMetric
    does when ``track=True`` and its configuration has no known misconfiguration; registers
    ``metric_class`` (the pack's base class) with Opik's."""
    import opik
    import opik.config as opik_config

    register_with_opik(metric_class)
    if opik_config.OpikConfig().check_for_known_misconfigurations() is False:
        decorator = opik.track(name=metric.name, project_name=project_name)
        metric.score = decorator(metric.score)
        metric.ascore = decorator(metric.ascore)

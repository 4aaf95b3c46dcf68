"""Opik tracking for the pack's metrics, imported only when a metric is built with ``track=True``.

The metrics subclass Opik's lightweight ``BaseMetric`` (``_opik``); this module adds what Opik's
full ``opik.evaluation.metrics.BaseMetric.__init__`` adds: a tracked span around ``score`` and
``ascore``. It also registers the pack's metrics as (virtual) subclasses of that full class, so
``isinstance(metric, opik.evaluation.metrics.BaseMetric)`` holds wherever opik is loaded.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from contextvars import ContextVar
from typing import Any, Callable, Iterator

from opik_metrics.metric_kit.opik_settings import nothing_configured, opik_settings


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
    ``metric_class`` (the pack's base class) with Opik's. Decided on the first call, not when the
    metric is built: building a metric never imports opik (6-30 s), so a run that stops before
    scoring (a server that does not answer) stops at once, and a run inside ``scoring_untracked``
    (the local store) never imports it."""
    register_if_opik_loaded(metric_class)
    for method in ("score", "ascore"):
        setattr(metric, method, _tracked_on_first_call(metric, getattr(metric, method), project_name, metric_class))


@contextlib.contextmanager
def scoring_untracked() -> Iterator[None]:
    """Tracked metrics called inside the block run untracked, with no opik import (a local run)."""
    token = _UNTRACKED.set(True)
    try:
        yield
    finally:
        _UNTRACKED.reset(token)


_UNTRACKED: ContextVar[bool] = ContextVar("opik_metrics_scoring_untracked", default=False)


def _tracked_on_first_call(metric: Any, method: Callable, project_name: str | None, metric_class: type) -> Callable:
    chosen: list[Callable] = []

    def choose() -> Callable:
        if _UNTRACKED.get():
            return method
        if not chosen:
            chosen.append(_tracked(metric, method, project_name, metric_class))
        return chosen[0]

    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return await choose()(*args, **kwargs)
        return call_async

    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        return choose()(*args, **kwargs)
    return call


def _tracked(metric: Any, method: Callable, project_name: str | None, metric_class: type) -> Callable:
    """``method`` in an ``opik.track`` span, or itself where opik would not track. With opik not
    loaded and no server configured, opik would find its cloud misconfigured and track nothing:
    known without importing it."""
    if "opik" not in sys.modules and nothing_configured(opik_settings()):
        return method
    import opik
    import opik.config as opik_config

    register_with_opik(metric_class)
    if opik_config.OpikConfig().check_for_known_misconfigurations() is False:
        return opik.track(name=metric.name, project_name=project_name)(method)
    return method

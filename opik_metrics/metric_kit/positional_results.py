"""ScoreResults built positionally (name, value, reason, category_name, metadata) in one ``map``:
half the cost of keywords, and on short pairs ROUGE's nine results a pair are most of what its
metric adds to its engine. The one place that relies on Opik's field order, checked on import."""
from __future__ import annotations

import dataclasses
from itertools import repeat
from typing import Any, Iterable

from opik_metrics.execution.context import speed_helpers_on
from opik_metrics.metric_kit.base import ScoreResult

FIELD_ORDER = ("name", "value", "reason", "category_name", "metadata")
if tuple(f.name for f in dataclasses.fields(ScoreResult))[:len(FIELD_ORDER)] != FIELD_ORDER:
    raise ImportError(f"this opik's ScoreResult fields are not {FIELD_ORDER}: opik-metrics needs an update")


def results(names: Iterable[str], values: Iterable[float], metadata: Iterable[Any]) -> list[ScoreResult]:
    """``ScoreResult(name=n, value=v, metadata=m)`` for each (n, v, m), with no reason; by keywords,
    each with a metadata dict of its own, on the plain reference path (``ScoringContext``)."""
    if not speed_helpers_on():
        return [ScoreResult(name=n, value=v, metadata=dict(m)) for n, v, m in zip(names, values, metadata)]
    return list(map(ScoreResult, names, values, repeat(None), repeat(None), metadata))

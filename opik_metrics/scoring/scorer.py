"""The one scorer: scoring inputs in, per item every (metric, ScoreResult) or rows out. Items are
scored as ``opik.evaluate`` scores them (``score(**item, **output)``) but a chunk at a time
through ``score_batch`` where a metric has one; a failing item becomes a failed result (a row
with its reason) and never fails its neighbours. The experiment runner, the rescore, the file
engine (in this process, in worker processes, on Ray) and ``score`` on two text files all score
through it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from _opik import ScoreResult   # the class opik.evaluation.metrics.score_result exports, without importing opik

from opik_metrics.metric_kit.server_range import mark_unstorable
from opik_metrics.scoring.rows import RowMaker

ItemResults = list[tuple[str, ScoreResult]]       # (metric name, result) of one item, metric by metric


@dataclass(frozen=True)
class Unscorable:
    """An item that cannot be scored (an unreadable record, a missing field): its row says why."""

    reason: str


def as_results(value: Any) -> list[ScoreResult]:
    """A metric's return value as a list of ScoreResults, any value an Opik server cannot store
    marked failed (``metric_kit/server_range.py``): a user's metric may return inf or 1e12 too."""
    return mark_unstorable(value if isinstance(value, (list, tuple)) else [value])


def failed_result(name: str, exc: BaseException) -> ScoreResult:
    """A failed score, as Opik records one: value 0, ``scoring_failed``, the error as reason."""
    return ScoreResult(name=name, value=0.0, reason=f"{type(exc).__name__}: {exc}", scoring_failed=True)


def text_field(metric: Any) -> str:
    """The input a metric scores: ``output``, or its ``text_field`` (e.g. held-out ``text``)."""
    return getattr(metric, "text_field", "output")


def batch_fields(metric: Any) -> dict[str, str]:
    """More ``score_batch`` keyword arguments a metric reads from the scoring inputs, e.g.
    CLIPScore's ``{"images": "image"}``."""
    return dict(getattr(metric, "batch_fields", None) or {})


def check_metrics(metrics: Sequence[Any], argument: str = "metrics") -> None:
    """Refuse, naming the metric, an empty list (``argument``: what the caller calls it), an object
    that is not an Opik metric (a ``name`` and a ``score``) and two metrics of one name (their
    scores would be stored as one)."""
    if not metrics:
        raise ValueError(f"{argument}: give at least one metric to add")
    seen: set[str] = set()
    for k, metric in enumerate(metrics):
        name = getattr(metric, "name", None)
        if not callable(getattr(metric, "score", None)) or not name:
            raise ValueError(f"metric {k}: expected an Opik metric (with .name and .score), got {metric!r}")
        if name in seen:
            raise ValueError(f"metric {k}: two metrics are named {name!r}; give one a name= of its own")
        seen.add(name)


class Scorer:
    """Scores items with ``metrics``, in order."""

    def __init__(self, metrics: Sequence[Any]) -> None:
        self.metrics = list(metrics)
        self._rows: RowMaker | None = None

    def results(self, inputs: Sequence[dict]) -> list[ItemResults]:
        """Per item, every (metric name, ScoreResult)."""
        per_item: list[ItemResults] = [[] for _ in inputs]
        for metric in self.metrics:
            batch = _batch(metric, inputs)
            for k, item in enumerate(inputs):
                results = as_results(batch[k]) if batch is not None else _score_one(metric, item)
                per_item[k].extend((metric.name, r) for r in results)
        return per_item

    def rows(self, first: int, items: Sequence[dict | Unscorable]) -> list[dict[str, Any]]:
        """One row per item (``index`` from ``first``): its scores, reason and statistics; an
        ``Unscorable`` item's row holds its reason alone."""
        if self._rows is None:
            self._rows = RowMaker(self.metrics)
        made: list[dict[str, Any] | None] = [None] * len(items)
        good = [k for k, item in enumerate(items) if not isinstance(item, Unscorable)]
        for k, item in enumerate(items):
            if isinstance(item, Unscorable):
                made[k] = RowMaker.bad_row(first + k, item.reason)
        for k, results in zip(good, self.results([items[k] for k in good])):   # type: ignore[misc]
            made[k] = self._rows.row(first + k, results)
        return made  # type: ignore[return-value]     # every item has its row now


def _score_one(metric: Any, inputs: dict) -> list[ScoreResult]:
    try:
        return as_results(metric.score(**inputs))
    except Exception as exc:
        return [failed_result(metric.name, exc)]


def _batch(metric: Any, inputs: Sequence[dict]) -> list | None:
    """``score_batch`` over every item when the metric has it and every item has its fields; None
    (score item by item, so a failure lands on its own item) when not, or when it raised."""
    fields = [text_field(metric), *batch_fields(metric).values()]
    if not inputs or not hasattr(metric, "score_batch") or not all(f in x for x in inputs for f in fields):
        return None
    references = [x.get("reference") for x in inputs]
    refs = references if all(r is not None for r in references) else None
    try:
        extra = {kw: [x[f] for x in inputs] for kw, f in batch_fields(metric).items()}
        batch = metric.score_batch([x[text_field(metric)] for x in inputs], refs, **extra)
    except Exception:
        return None
    return batch if len(batch) == len(inputs) else None

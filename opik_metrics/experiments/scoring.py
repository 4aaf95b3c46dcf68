"""Score items with Opik metrics as ``opik.evaluate`` does (``score(**item, **output)``), but a
chunk at a time through ``score_batch`` where a metric has one; failures become failed results.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from _opik import ScoreResult   # the class opik.evaluation.metrics.score_result exports, without importing opik

from opik_metrics.core import facts_of
from opik_metrics.metrics.server_range import mark_unstorable

ExperimentScorer = Callable[[list], Any]


def as_results(value: Any) -> list[ScoreResult]:
    """A metric's return value as a list of ScoreResults, any value an Opik server cannot store
    marked failed (``metrics/server_range.py``): a user's metric may return inf or 1e12 too."""
    return mark_unstorable(value if isinstance(value, (list, tuple)) else [value])


def failed_result(name: str, exc: BaseException) -> ScoreResult:
    """A failed score, as Opik records one: value 0, ``scoring_failed``, the error as reason."""
    return ScoreResult(name=name, value=0.0, reason=f"{type(exc).__name__}: {exc}", scoring_failed=True)


def _score_one(metric: Any, inputs: dict) -> list[ScoreResult]:
    try:
        return as_results(metric.score(**inputs))
    except Exception as exc:
        return [failed_result(metric.name, exc)]


def _text_field(metric: Any) -> str:
    """The input a metric scores: ``output``, or its ``text_field`` (e.g. held-out ``text``)."""
    return getattr(metric, "text_field", "output")


def _batch_fields(metric: Any) -> dict[str, str]:
    """More ``score_batch`` keyword arguments a metric reads from the scoring inputs, e.g.
    CLIPScore's ``{"images": "image"}``."""
    return dict(getattr(metric, "batch_fields", None) or {})


def _batchable(metric: Any, inputs: Sequence[dict]) -> bool:
    fields = [_text_field(metric), *_batch_fields(metric).values()]
    return hasattr(metric, "score_batch") and all(f in x for x in inputs for f in fields)


def score_chunk(metrics: Sequence[Any], inputs: Sequence[dict]) -> list[list[tuple[str, ScoreResult]]]:
    """Per item, every (metric name, ScoreResult); one failing item never fails its neighbours."""
    per_item: list[list[tuple[str, ScoreResult]]] = [[] for _ in inputs]
    for metric in metrics:
        batch = None
        if inputs and _batchable(metric, inputs):
            references = [x.get("reference") for x in inputs]
            refs = references if all(r is not None for r in references) else None
            try:
                extra = {kw: [x[f] for x in inputs] for kw, f in _batch_fields(metric).items()}
                batch = metric.score_batch([x[_text_field(metric)] for x in inputs], refs, **extra)
            except Exception:
                batch = None  # score item by item below, so the failure lands on its own item
            if batch is not None and len(batch) != len(inputs):
                batch = None
        for k, item in enumerate(inputs):
            results = as_results(batch[k]) if batch is not None else _score_one(metric, item)
            per_item[k].extend((metric.name, r) for r in results)
    return per_item


def experiment_scorers(metrics: Sequence[Any]) -> list[ExperimentScorer]:
    """Experiment-level scorers the metrics offer: ``experiment_score`` of every metric whose facts
    name a corpus score of its own (corpus BLEU, perplexity; not a mean of the items' scores)."""
    out = []
    for m in metrics:
        facts = facts_of(m)
        if callable(getattr(m, "experiment_score", None)) and (facts.corpus is None or facts.own_corpus is not None):
            out.append(m.experiment_score)
    return out


def run_experiment_scorers(scorers: Sequence[ExperimentScorer], test_results: list) -> list[ScoreResult]:
    """Every experiment-level score; a scorer that raises gives a failed result with its reason."""
    out: list[ScoreResult] = []
    for scorer in scorers:
        try:
            out.extend(as_results(scorer(test_results)))
        except Exception as exc:
            owner = getattr(getattr(scorer, "__self__", None), "name", None) or getattr(scorer, "__name__", "scorer")
            out.append(failed_result(f"{owner}_experiment_score", exc))
    return out


"""Shared shape of our Opik metrics: validate input, call an engine, return ScoreResults."""
from __future__ import annotations

import abc
from typing import Any, Sequence

from opik.evaluation.metrics import base_metric, score_result

from .inputs import MetricInputError, require_batch, require_references, require_text

ScoreResult = score_result.ScoreResult


class ReferenceMetric(base_metric.BaseMetric, abc.ABC):
    """An Opik metric that compares ``output`` with one or more references.

    ``score`` follows Opik's convention (extra dataset fields are ignored); ``score_batch``
    scores many items in one call and returns one ``list[ScoreResult]`` per item.
    """

    def __init__(self, name: str, track: bool = True, project_name: str | None = None) -> None:
        super().__init__(name=name, track=track, project_name=project_name)

    def score(self, output: str, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output against its reference(s)."""
        out = require_text(output, "output")
        refs = require_references(reference, "reference")
        return self._score_items([out], [refs])[0]

    def score_batch(self, outputs: Sequence[str],
                    references: Sequence[str | Sequence[str]] | None = None) -> list[list[ScoreResult]]:
        """Score many items at once; ``references[i]`` is a string or a list of strings."""
        outs, refs = require_batch(outputs, references)
        if refs is None:
            raise MetricInputError(f"{self.name} needs references: pass references=[...]")
        if not outs:
            return []
        return self._score_items(outs, refs)

    @abc.abstractmethod
    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        """Score validated items; one list of ScoreResults per item, in order."""

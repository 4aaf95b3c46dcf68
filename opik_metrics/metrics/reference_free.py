"""Shared shape of metrics that score a text alone (perplexity, distillation KL): no references."""
from __future__ import annotations

import abc
from typing import Any, Sequence

from opik.evaluation.metrics import base_metric

from .base import ScoreResult
from .inputs import MetricInputError, require_batch, require_text
from .opik_results import own_results, scoring_inputs


class ReferenceFreeMetric(base_metric.BaseMetric, abc.ABC):
    """An Opik metric of ``output`` alone; extra dataset fields (``reference``, ...) are ignored.

    ``text_field`` picks another scoring input to score instead of ``output`` (e.g. ``"text"``
    for the perplexity of a dataset's held-out text rather than of the task's generation).
    """

    def __init__(self, name: str, text_field: str = "output", track: bool = True,
                 project_name: str | None = None) -> None:
        if not isinstance(text_field, str) or not text_field:
            raise ValueError(f"text_field must be a non-empty string, got {text_field!r}")
        self.text_field = text_field
        super().__init__(name=name, track=track, project_name=project_name)

    def score(self, output: str | None = None, **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one text: ``output``, or the ``text_field`` input when one was chosen."""
        if self.text_field == "output":
            value = output
        elif self.text_field in ignored_kwargs:
            value = ignored_kwargs[self.text_field]
        else:
            raise MetricInputError(f"field {self.text_field!r}: missing from the scoring inputs "
                                   f"(got {sorted(['output', *ignored_kwargs])})")
        return self._score_items([require_text(value, self.text_field)])[0]

    def score_batch(self, outputs: Sequence[str],
                    references: Sequence[Any] | None = None) -> list[list[ScoreResult]]:
        """Score many texts at once; ``references`` is accepted for a uniform call and ignored."""
        outs, _ = require_batch(outputs, None)
        if not outs:
            return []
        return self._score_items(outs)

    def item_results(self, test_results: Sequence[Any]) -> list[ScoreResult]:
        """This metric's first ScoreResult for each Opik ``TestResult``: reused when Opik already
        logged it (same name and signature), computed now otherwise."""
        found = own_results(test_results, self.name, getattr(self, "signature", ""))
        missing = [k for k, res in enumerate(found) if res is None]
        if missing:
            texts = [require_text(scoring_inputs(test_results[k]).get(self.text_field), self.text_field, k)
                     for k in missing]
            for k, results in zip(missing, self._score_items(texts)):
                found[k] = results[0]
        return found  # type: ignore[return-value]

    @abc.abstractmethod
    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        """Score validated texts; one list of ScoreResults per text, in order."""

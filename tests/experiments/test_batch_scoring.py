"""``score`` on two text files (``experiments.batch.score_texts``): a value an Opik server could not
store (an infinite perplexity) is shown as it is, with its reason, not as a failure or a 0; an item
a metric fails on stops the run with one line naming it."""
from __future__ import annotations

import math

import pytest
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics.core import MetricInputError
from opik_metrics.experiments.batch import score_texts


class Blowup(base_metric.BaseMetric):
    """inf for an output with "x" in it, an error for an empty one, else 1."""

    def __init__(self) -> None:
        super().__init__(name="blowup", track=False)

    def score(self, output, reference=None, **ignored):
        if not output:
            raise ValueError("nothing to score")
        return score_result.ScoreResult(name=self.name, value=math.inf if "x" in output else 1.0)


def test_an_unstorable_value_is_shown_with_its_reason():
    result = score_texts([Blowup()], ["a x", "b"], [["a"], ["b"]], progress=False)
    assert [item["blowup"] for item in result["items"]] == [math.inf, 1.0]
    assert "inf is not a score an Opik server stores" in result["reasons"][0]["blowup"]
    assert result["aggregate"]["blowup"] == math.inf


def test_a_failing_item_is_one_error_naming_it():
    with pytest.raises(MetricInputError, match="^item 1: blowup: ValueError: nothing to score$"):
        score_texts([Blowup()], ["a", ""], [["a"], ["b"]], progress=False)

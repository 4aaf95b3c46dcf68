"""Small stand-ins for runner tests: a text task with a prepare step, metrics that fail on cue."""
from __future__ import annotations

from typing import Sequence

from opik.evaluation.metrics import base_metric, score_result

from opik_metrics.experiments.tasks import ItemFailure

ITEMS = [
    {"question": "q0", "answer": "the cat sat on the mat", "reference": "the cat sat on the mat"},
    {"question": "q1", "answer": "a dog in the park", "reference": "the dog played in the park"},
    {"question": "q2", "answer": "SKIP", "reference": "never produced"},
    {"question": "q3", "answer": "RAISE", "reference": "never produced"},
    {"question": "q4", "answer": "BADSCORE", "reference": "a metric fails on this one"},
    {"question": "q5", "answer": "blue sky over the sea", "reference": "a blue sky above the sea"},
]


class EchoTask:
    """Returns the item's answer as output; prepare() fails 'SKIP' items; 'RAISE' raises in the call.

    ``interrupt_after`` raises KeyboardInterrupt on that call, as Ctrl-C would."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.calls: list[str] = []
        self.prepared: list[str] = []
        self.interrupt_after = interrupt_after

    def prepare(self, items: Sequence[dict]) -> dict[int, ItemFailure]:
        self.prepared.extend(item["question"] for item in items)
        return {k: ItemFailure("fetch", "HTTP 404 Not Found") for k, item in enumerate(items)
                if item["answer"] == "SKIP"}

    def __call__(self, item: dict) -> dict:
        if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append(item["question"])
        if item["answer"] == "RAISE":
            raise RuntimeError("model exploded")
        return {"output": item["answer"]}


class FragileMetric(base_metric.BaseMetric):
    """A metric without score_batch that raises for the output 'BADSCORE'."""

    def __init__(self) -> None:
        super().__init__(name="fragile", track=True)

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        if output == "BADSCORE":
            raise ValueError("cannot score this output")
        return score_result.ScoreResult(name="length", value=float(len(output.split())))

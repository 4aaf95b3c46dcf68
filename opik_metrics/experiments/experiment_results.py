"""The ``TestResult`` records experiment-level scorers receive, as ``opik.evaluate`` hands them over.

Opik's own dataclasses when opik is already imported (a scorer written against them then sees
exactly them); otherwise records with the same fields, so that a local run never pays
``import opik`` (6-30 s) for three plain dataclasses.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any, Optional, Sequence

from _opik import ScoreResult


@dataclasses.dataclass
class LocalTestCase:
    """The fields of ``opik.evaluation.test_case.TestCase``."""

    trace_id: str
    dataset_item_id: str
    task_output: dict[str, Any]
    dataset_item_content: dict[str, Any] = dataclasses.field(default_factory=dict)
    mapped_scoring_inputs: Optional[dict[str, Any]] = None
    dataset_item: Any = None


@dataclasses.dataclass
class LocalTestResult:
    """The fields of ``opik.evaluation.test_result.TestResult``."""

    test_case: LocalTestCase
    score_results: list[ScoreResult]
    trial_id: int
    task_execution_time: Optional[float] = None
    scoring_time: Optional[float] = None


def one_test_result(key: str, item_input: dict, output: dict | None, scores: list[ScoreResult],
                    mapped: dict | None = None, trial: int = 0) -> Any:
    """One item's TestResult: Opik's class when opik is loaded, else ``LocalTestResult``; ``mapped``:
    the metrics' inputs after a scoring key mapping (default: the item and its output merged).
    ``trial``: its run (``trial_count``): the trials of an item share its dataset item id, each has a
    trace of its own, as under ``opik.evaluate``."""
    case_type: Any = LocalTestCase
    result_type: Any = LocalTestResult
    if "opik.evaluation" in sys.modules:
        from opik.evaluation.test_case import TestCase
        from opik.evaluation.test_result import TestResult
        case_type, result_type = TestCase, TestResult
    case = case_type(trace_id=key if not trial else f"{key}#{trial}", dataset_item_id=key, task_output=output or {}, dataset_item_content=item_input,
                     mapped_scoring_inputs=mapped if mapped is not None else {**item_input, **(output or {})})
    return result_type(test_case=case, score_results=scores, trial_id=trial)


def by_dataset_item(test_results: Sequence[Any]) -> list[list[Any]]:
    """The test results grouped by dataset item, in first-seen order: ``opik.evaluate(trial_count=N)``
    gives one per trial, and the item, not the trial, is what a mean or an interval counts. A result
    without a dataset item id is a group of its own."""
    groups: dict[Any, list[Any]] = {}
    for k, tr in enumerate(test_results):
        item_id = getattr(getattr(tr, "test_case", None), "dataset_item_id", None)
        groups.setdefault(("item", item_id) if item_id is not None else ("result", k), []).append(tr)
    return list(groups.values())

"""Reading Opik's ``TestResult`` objects, for experiment-level scores (corpus BLEU, perplexity)."""
from __future__ import annotations

from typing import Any


def scoring_inputs(test_result: Any) -> dict:
    """The inputs Opik passed to the metrics for one ``TestResult`` (after key mapping)."""
    case = test_result.test_case
    if case.mapped_scoring_inputs is not None:
        return case.mapped_scoring_inputs
    return {**(case.dataset_item_content or {}), **(case.task_output or {})}


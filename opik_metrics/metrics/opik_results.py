"""Reading Opik's ``TestResult`` objects, for experiment-level scores (corpus BLEU, perplexity)."""
from __future__ import annotations

from typing import Any, Sequence

from .base import ScoreResult


def scoring_inputs(test_result: Any) -> dict:
    """The inputs Opik passed to the metrics for one ``TestResult`` (after key mapping)."""
    case = test_result.test_case
    if case.mapped_scoring_inputs is not None:
        return case.mapped_scoring_inputs
    return {**(case.dataset_item_content or {}), **(case.task_output or {})}


def own_results(test_results: Sequence[Any], name: str, signature: str) -> list[ScoreResult | None]:
    """Per test result, the ScoreResult this metric logged for it (same name and signature), if any."""
    found: list[ScoreResult | None] = []
    for tr in test_results:
        mine = [s for s in (tr.score_results or [])
                if s.name == name and not s.scoring_failed and (s.metadata or {}).get("signature") == signature]
        found.append(mine[0] if mine else None)
    return found

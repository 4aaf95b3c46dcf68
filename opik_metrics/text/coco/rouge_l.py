"""ROUGE-L as pycocoevalcap's ``Rouge`` computes it: the LCS with each reference, the best
precision and the best recall (taken independently), F with beta 1.2."""
from __future__ import annotations

from typing import Sequence

from opik_metrics.text.rouge.lcs import lcs_length

BETA = 1.2


def coco_rouge_l(candidate: Sequence[str], references: Sequence[Sequence[str]], beta: float = BETA) -> float:
    """One item's ROUGE_L from tokens (pycocoevalcap splits on single spaces: an empty caption is one empty token)."""
    candidate = list(candidate) or [""]
    precision = recall = 0.0
    for ref in references:
        ref = list(ref) or [""]
        lcs = lcs_length(ref, candidate)
        precision = max(precision, lcs / len(candidate))
        recall = max(recall, lcs / len(ref))
    if precision == 0 or recall == 0:
        return 0.0
    return ((1 + beta ** 2) * precision * recall) / (recall + beta ** 2 * precision)

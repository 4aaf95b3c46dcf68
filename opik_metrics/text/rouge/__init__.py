"""ROUGE engine (pure Python): rouge-score's numbers for ROUGE-N/L/Lsum, plus ROUGE-1.5.5's W, S, SU;
with ``rouge155=True``, the ROUGE-1.5.5 perl script's own numbers (``rouge155.py``)."""
from opik_metrics.text.rouge.scorer import MULTI_REFERENCE_MODES, RougeKernel, RougeScorer, RougeType, Score, parse_rouge_type

__all__ = ["MULTI_REFERENCE_MODES", "RougeKernel", "RougeScorer", "RougeType", "Score", "parse_rouge_type"]

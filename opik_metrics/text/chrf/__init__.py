"""chrF / chrF++ engine (Python + numpy): sacrebleu 2.6's numbers, sentence and corpus, from summable statistics."""
from opik_metrics.text.chrf.scorer import CHRFResult, CHRFScorer, chrf_from_statistics, statistics_fields

__all__ = ["CHRFResult", "CHRFScorer", "chrf_from_statistics", "statistics_fields"]

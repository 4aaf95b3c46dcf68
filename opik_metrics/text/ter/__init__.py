"""TER engine (pure Python): sacrebleu 2.6's numbers, sentence and corpus, from summable statistics."""
from opik_metrics.text.ter.edits import translation_edit_rate
from opik_metrics.text.ter.scorer import STATISTICS_FIELDS, TERResult, TERScorer, ter_from_statistics

__all__ = ["STATISTICS_FIELDS", "TERResult", "TERScorer", "ter_from_statistics", "translation_edit_rate"]

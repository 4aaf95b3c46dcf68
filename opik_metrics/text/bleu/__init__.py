"""BLEU engine (pure Python): sacrebleu 2.6's numbers, sentence and corpus, from summable statistics."""
from opik_metrics.text.bleu.scorer import (SMOOTH_DEFAULTS, TOKENIZER_NAMES, BLEUResult, BLEUScorer, BLEUStats,
                                           bleu_from_statistics, statistics_fields)

__all__ = ["BLEUResult", "BLEUScorer", "BLEUStats", "SMOOTH_DEFAULTS", "TOKENIZER_NAMES", "bleu_from_statistics",
           "statistics_fields"]

"""The COCO caption suite (pycocoevalcap's BLEU-1..4, ROUGE_L and CIDEr, no Java)."""
from opik_metrics.text.coco.bleu import bleu_fields, bleu_statistics, bleu_values, coco_bleu_from_statistics
from opik_metrics.text.coco.rouge_l import coco_rouge_l
from opik_metrics.text.coco.suite import FIELDS, KEYS, CocoItem, CocoSuite, coco_from_statistics

__all__ = ["FIELDS", "KEYS", "CocoItem", "CocoSuite", "bleu_fields", "bleu_statistics", "bleu_values",
           "coco_bleu_from_statistics", "coco_from_statistics", "coco_rouge_l"]

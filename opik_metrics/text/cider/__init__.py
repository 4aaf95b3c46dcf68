"""CIDEr-D (pycocoevalcap's numbers, no Java): n-gram tables, document frequencies fitted on the
references of a set, the scorer."""
from opik_metrics.text.cider.arrays import NGramTable
from opik_metrics.text.cider.document_frequency import DocumentFrequency
from opik_metrics.text.cider.scorer import MAX_VALUE, CiderD, CiderItem

__all__ = ["CiderD", "CiderItem", "DocumentFrequency", "MAX_VALUE", "NGramTable"]

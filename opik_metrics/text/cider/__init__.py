"""CIDEr-D (pycocoevalcap's numbers, no Java): n-gram counts, document frequencies fitted on the
references of a set, the scorer."""
from opik_metrics.text.cider.document_frequency import DocumentFrequency
from opik_metrics.text.cider.ngrams import ngram_counts
from opik_metrics.text.cider.scorer import CiderD, CiderItem
from opik_metrics.text.cider.tokenize import TOKENIZERS, caption_tokenizer, tokenize_all

__all__ = ["CiderD", "CiderItem", "DocumentFrequency", "TOKENIZERS", "caption_tokenizer", "ngram_counts",
           "tokenize_all"]

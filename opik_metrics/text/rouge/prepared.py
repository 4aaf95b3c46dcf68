"""One text, tokenised once per scoring call, with its derived units built on first use and reused."""
from __future__ import annotations

from typing import Callable, Optional

from opik_metrics.text.rouge.lcs import position_masks, sentence_masks
from opik_metrics.text.rouge.ngrams import ngram_counts, skip_bigram_counts


class PreparedText:
    """Tokens of a text plus cached n-gram / skip-bigram counts, LCS masks and per-line tokens."""

    __slots__ = ("text", "tokens", "_tokenize", "_sentences", "_cache")

    def __init__(self, text: str, tokenize: Callable[[str], list], tokens: Optional[list] = None):
        self.text = text
        self._tokenize = tokenize
        self.tokens = tokenize(text) if tokens is None else tokens
        self._sentences = None
        self._cache: dict = {}

    def ngrams(self, n: int):
        """Counter of this text's n-grams."""
        key = ("ngram", n)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = ngram_counts(self.tokens, n)
        return found

    def skip_bigrams(self, max_skip: Optional[int]):
        """Counter of this text's skip-bigrams with at most ``max_skip`` words in between."""
        key = ("skip", max_skip)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = skip_bigram_counts(self.tokens, max_skip)
        return found

    def masks(self) -> tuple:
        """Token position bitmasks for bit-parallel LCS against other texts."""
        found = self._cache.get("masks")
        if found is None:
            found = self._cache["masks"] = position_masks(self.tokens)
        return found

    def sentences(self) -> list:
        """Tokens of each non-empty line (rouge-score's rougeLsum sentence split on '\\n')."""
        if self._sentences is None:
            self._sentences = [self._tokenize(line) for line in self.text.split("\n") if line]
        return self._sentences

    def sentence_masks(self):
        """Bitmasks of every line's token positions, for the union LCS against other texts' lines."""
        found = self._cache.get("sentence_masks")
        if found is None:
            found = self._cache["sentence_masks"] = sentence_masks(self.sentences())
        return found

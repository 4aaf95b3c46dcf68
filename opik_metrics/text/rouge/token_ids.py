"""Many texts as integer token ids for the array engine: equal tokens get equal ids within one call.

rouge-score's tokeniser takes the fast path (``DefaultTokenizer.words_of_many``: one split for all
texts, stemming and stopwords through its memo, word by word into ids in C loops); any other
tokenizer tokenises text by text, and its tokens are numbered the same way.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from opik_metrics.text.rouge.arrays import Ragged
from opik_metrics.text.tokenizers.words import TEXT_SEPARATOR


class _Numbers(dict):
    """Token -> dense id, in order of first sight: small ids keep the array keys small (int32)."""

    def __missing__(self, token: str) -> int:
        number = self[token] = len(self)
        return number


class _WordIds(dict):
    """Word -> id: 0 for the text separator, -1 for a word the memo drops, else its token's id
    (words with one stem share it)."""

    def __init__(self, memo) -> None:
        super().__init__()
        self._memo = memo
        self._tokens: dict = {}

    def __missing__(self, word: str) -> int:
        if word == TEXT_SEPARATOR:
            number = 0
        else:
            token = self._memo[word]
            number = self._tokens.setdefault(token, len(self._tokens) + 1) if token else -1
        self[word] = number
        return number


def token_ids(tokenize: Callable[[str], list], texts: list) -> tuple[Ragged, int]:
    """(each text's token ids, a bound above every id)."""
    many = getattr(tokenize, "words_of_many", None)
    words = many(texts) if many is not None and texts else None
    if words is None:
        token_lists = list(map(tokenize, texts))
        numbers = _Numbers()
        ids = np.fromiter(map(numbers.__getitem__, itertools.chain.from_iterable(token_lists)), dtype=np.int64)
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(texts))
        return Ragged.of(ids, lengths), max(len(numbers), 1)
    memo = tokenize.word_memo
    if memo is None:
        numbers = _Numbers({TEXT_SEPARATOR: 0})
        ids = np.fromiter(map(numbers.__getitem__, words), dtype=np.int64, count=len(words))
        bound = len(numbers)
    else:
        numbers = _WordIds(memo)
        ids = np.fromiter(map(numbers.__getitem__, words), dtype=np.int64, count=len(words))
        bound = len(numbers._tokens) + 1
    separators = ids == 0
    text_of = np.cumsum(separators)
    kept = ids > 0
    lengths = np.bincount(text_of[kept], minlength=len(texts)).astype(np.int64)
    return Ragged.of(ids[kept], lengths), bound

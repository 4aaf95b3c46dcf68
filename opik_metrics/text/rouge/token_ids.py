"""Many texts as integer token ids for the array engine: equal tokens get equal ids within one call.

rouge-score's tokeniser takes a fast path: all texts are lowercased and split in one pass
(``DefaultTokenizer.ascii_of_many``); without stemmer or stopwords the words never become Python
strings (a word of up to 8 bytes is its own id, a longer one is numbered through a dict),
otherwise they go through the tokenizer's memo word by word in C loops. Any other tokenizer
tokenises text by text, and its tokens are numbered the same way. Ids are exact: equal ids, equal
tokens, never a hash.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from opik_metrics.text.rouge.arrays import Ragged
from opik_metrics.text.tokenizers.words import TEXT_SEPARATOR


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _buffer_ids(buffer: bytes) -> np.ndarray:
    """Exact int64 ids of the space-separated words of ``buffer`` (bytes below 0x80): a word of at
    most 8 bytes is its bytes read as one little-endian integer (the separator is 0, no other word
    is); a longer word (a few in a hundred) gets a negative id, numbered through a dict."""
    size = len(buffer)
    data = np.frombuffer(buffer + bytes(16), dtype=np.uint8)
    edges = np.diff((data[:size] != 32).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    # every 8 bytes from every offset, as one integer each (a strided view: nothing is copied)
    eights = np.ndarray((size + 9,), dtype="<u8", buffer=data, strides=(1,))
    first = eights[starts] & _LOW_BYTES[np.minimum(lengths, 8)]
    ids = first.view(np.int64).copy()
    long = np.flatnonzero(lengths > 8)
    if long.size:                             # few words: numbered through a dict of their bytes
        at = starts[long]
        words = map(buffer.__getitem__, map(slice, at.tolist(), (at + lengths[long]).tolist()))
        # negative: apart from every short word's bytes
        ids[long] = -1 - np.fromiter(map(_Numbers().__getitem__, words), dtype=np.int64, count=long.size)
    return ids


class _Numbers(dict):
    """Token -> dense id (0, 1, 2, ...), in order of first sight."""

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


def token_ids(tokenize: Callable[[str], list], texts: list) -> Ragged:
    """Each text's token ids (int64, any values: ``arrays`` renumbers them pair by pair)."""
    many = getattr(tokenize, "ascii_of_many", None)
    joined = many(texts) if many is not None and texts else None
    if joined is None:
        token_lists = list(map(tokenize, texts))
        numbers = _Numbers()
        ids = np.fromiter(map(numbers.__getitem__, itertools.chain.from_iterable(token_lists)), dtype=np.int64)
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(texts))
        return Ragged.of(ids, lengths)
    memo = tokenize.word_memo
    if memo is None:
        ids = _buffer_ids(joined)
    else:
        words = joined.decode("ascii").split()
        ids = np.fromiter(map(_WordIds(memo).__getitem__, words), dtype=np.int64, count=len(words))
    separators = ids == 0
    text_of = np.cumsum(separators)
    kept = ids != 0
    if memo is not None:
        kept &= ids > 0                      # -1: a word the memo drops
    lengths = np.bincount(text_of[kept], minlength=len(texts)).astype(np.int64)
    return Ragged.of(ids[kept], lengths)

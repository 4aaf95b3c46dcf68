"""The n-grams of many captions as flat numpy arrays (one entry per caption and distinct n-gram:
its id, order and count), so that CIDEr-D's weights, norms and clipped dot products run as
array operations instead of a Python loop per n-gram (the speed pycocoevalcap lacks)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


def expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices ``starts[j] .. starts[j] + counts[j] - 1`` for every j, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values (by sorting: numpy 2's default hash-based ``np.unique`` is 5x slower here)."""
    if len(values) == 0:
        return values
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


@dataclass
class NGramTable:
    """Every caption's distinct 1..n-grams: entries sorted by (caption, n-gram id)."""

    n: int
    lengths: np.ndarray        # tokens per caption
    text: np.ndarray           # per entry: caption index
    gram: np.ndarray           # per entry: n-gram id (0 .. grams-1)
    count: np.ndarray          # per entry: term frequency
    order: np.ndarray          # per n-gram id: its order - 1
    first: np.ndarray          # per n-gram id: a position in the flat tokens where it starts
    tokens: list[str]          # the flat tokens (to name an n-gram: tokens[first : first + order + 1])
    starts: np.ndarray         # per caption: index of its first entry
    counts: np.ndarray         # per caption: number of its entries

    @property
    def grams(self) -> int:
        return len(self.order)

    @classmethod
    def build(cls, captions: Sequence[Sequence[str]], n: int) -> "NGramTable":
        vocab: dict[str, int] = {}
        flat = [w for caption in captions for w in caption]
        ids = np.fromiter((vocab.setdefault(w, len(vocab)) for w in flat), dtype=np.int64, count=len(flat))
        lengths = np.fromiter((len(c) for c in captions), dtype=np.int64, count=len(captions))
        owner = np.repeat(np.arange(len(captions), dtype=np.int64), lengths)
        room = np.repeat(lengths, lengths) - (np.arange(len(flat), dtype=np.int64)
                                              - np.repeat(np.cumsum(lengths) - lengths, lengths))
        # room[p]: tokens from p to the end of its caption; an order-k n-gram starts where room >= k
        texts, grams, orders, firsts = [], [], [], []
        code = ids
        offset = 0
        for k in range(1, n + 1):
            valid = np.nonzero(room >= k)[0]
            if k > 1:
                following = np.zeros(len(flat), dtype=np.int64)
                following[:max(0, len(flat) - k + 1)] = ids[k - 1:]     # the token k-1 places on
                code = code * len(vocab) + following
            uniques, first, dense = np.unique(code[valid], return_index=True, return_inverse=True)
            code = np.full(len(flat), -1, dtype=np.int64)
            code[valid] = dense                      # dense codes keep the next order's keys small
            texts.append(owner[valid])
            grams.append(dense + offset)
            orders.append(np.full(len(uniques), k - 1, dtype=np.int64))
            firsts.append(valid[first])
            offset += len(uniques)
        order = np.concatenate(orders) if orders else np.zeros(0, dtype=np.int64)
        text, gram = np.concatenate(texts), np.concatenate(grams)
        keys, count = np.unique(text * max(offset, 1) + gram, return_counts=True)
        text, gram = keys // max(offset, 1), keys % max(offset, 1)
        starts = np.searchsorted(text, np.arange(len(captions), dtype=np.int64))
        counts = np.diff(np.append(starts, len(text)))
        return cls(n, lengths, text, gram, count, order, np.concatenate(firsts) if firsts else order,
                   flat, starts, counts)

    def name(self, gram: int) -> tuple[str, ...]:
        """The n-gram as a tuple of tokens."""
        first = int(self.first[gram])
        return tuple(self.tokens[first:first + int(self.order[gram]) + 1])

    def entries_of(self, captions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The entry indices of ``captions`` (in order), and for each entry its position in ``captions``."""
        counts = self.counts[captions]
        return expand(self.starts[captions], counts), np.repeat(np.arange(len(captions), dtype=np.int64), counts)

    def document_frequency(self, images: Sequence[Sequence[int]]) -> np.ndarray:
        """Per n-gram id: in how many images' reference sets (caption indices) it occurs."""
        image_of = np.repeat(np.arange(len(images), dtype=np.int64), [len(refs) for refs in images])
        captions = np.fromiter((c for refs in images for c in refs), dtype=np.int64, count=len(image_of))
        entries, owner = self.entries_of(captions)
        pairs = distinct(image_of[owner] * max(self.grams, 1) + self.gram[entries])
        return np.bincount(pairs % max(self.grams, 1), minlength=self.grams)

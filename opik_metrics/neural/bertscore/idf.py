"""Token weights for BERTScore: idf = log((M+1)/(df+1)) over a reference corpus (bert_score's
formula), or 1 per token; special tokens always weigh 0.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from typing import Iterable, Sequence

import torch


class TokenWeights:
    """Maps token ids to weights; ``uniform`` (no idf) or idf counted over ``documents``."""

    def __init__(self, special_ids: Iterable[int], documents: Iterable[Sequence[int]] | None = None) -> None:
        self.special_ids = frozenset(special_ids)
        self.idf = documents is not None
        self.n_documents = 0
        self._df: Counter[int] = Counter()
        if documents is not None:
            for doc in documents:
                self.n_documents += 1
                self._df.update(set(doc))
            if self.n_documents == 0:
                raise ValueError("idf_references is empty: idf needs at least one reference text")
        self._unseen = math.log(self.n_documents + 1)
        self._table = torch.zeros(0, dtype=torch.float64)

    def weight(self, token_id: int) -> float:
        if token_id in self.special_ids:
            return 0.0
        if not self.idf:
            return 1.0
        return math.log((self.n_documents + 1) / (self._df.get(token_id, 0) + 1))

    def weights(self, ids: Sequence[int]) -> torch.Tensor:
        """Weights of ``ids`` as a float64 tensor (a table lookup, not a Python loop)."""
        index = torch.as_tensor(ids, dtype=torch.long)
        table = self._table
        if index.numel() and int(index.max()) >= len(table):
            table = self._grow(int(index.max()) + 1)
        return table[index]

    def _grow(self, size: int) -> torch.Tensor:
        size = max(size, 2 * len(self._table), 1024)
        table = torch.full((size,), self._unseen if self.idf else 1.0, dtype=torch.float64)
        for token, count in self._df.items():
            if token < size:
                table[token] = math.log((self.n_documents + 1) / (count + 1))
        for token in self.special_ids:
            if token < size:
                table[token] = 0.0
        self._table = table  # swapped in whole: readers in other threads see old or new
        return table

    def fingerprint(self) -> str:
        """Short digest of the document frequencies, so a signature pins the idf corpus."""
        if not self.idf:
            return "none"
        h = hashlib.sha1(str(self.n_documents).encode())
        for token, count in sorted(self._df.items()):
            h.update(f"{token}:{count};".encode())
        return f"M={self.n_documents},sha1:{h.hexdigest()[:10]}"

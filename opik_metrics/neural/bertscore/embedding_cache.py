"""A thread-safe LRU of token embeddings keyed by text, bounded in bytes, so a reference shared by
many items (or scored again) is embedded once.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable


class EmbeddingCache:
    """LRU map from a text to its embedding; evicts the oldest entries past ``max_bytes``."""

    def __init__(self, max_bytes: int, size_of: Callable[[Any], int]) -> None:
        if max_bytes < 0:
            raise ValueError(f"cache size must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = max_bytes
        self._size_of = size_of
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_many(self, keys: list[str]) -> dict[str, Any]:
        """The cached values among ``keys`` (marking them recently used)."""
        found = {}
        with self._lock:
            for key in keys:
                value = self._items.get(key)
                if value is None:
                    self.misses += 1
                    continue
                self._items.move_to_end(key)
                found[key] = value
                self.hits += 1
        return found

    def put_many(self, values: dict[str, Any]) -> None:
        with self._lock:
            for key, value in values.items():
                size = self._size_of(value)
                if size > self.max_bytes:
                    continue
                old = self._items.pop(key, None)
                if old is not None:
                    self._bytes -= self._size_of(old)
                self._items[key] = value
                self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                _, old = self._items.popitem(last=False)
                self._bytes -= self._size_of(old)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

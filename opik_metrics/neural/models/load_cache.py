"""A process-wide cache of loaded models: each key is loaded once, even when threads ask at the
same time (they wait for the one load), while different keys load in parallel."""
from __future__ import annotations

import threading
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")


class LoadCache(Generic[T]):
    """``get(key, load)`` returns the cached value of ``key``, calling ``load()`` once when missing."""

    def __init__(self) -> None:
        self._values: dict[Hashable, T] = {}
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._guard = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        with self._guard:
            if key in self._values:
                return self._values[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one load per key; other keys load in parallel
            with self._guard:
                if key in self._values:
                    return self._values[key]
            value = load()
            with self._guard:
                self._values[key] = value
            return value

    def clear(self) -> None:
        """Forget every cached value (tests, or to free memory)."""
        with self._guard:
            self._values.clear()
            self._key_locks.clear()

    def __len__(self) -> int:
        with self._guard:
            return len(self._values)

"""Counting into a plain dict at C speed: the one place the pack uses ``collections``' internal
counting loop (what ``Counter.update`` runs, without ``Counter``'s Python-level overhead on every
call: BLEU and ROUGE count a few n-gram lists an item). Where it is missing, a plain loop."""
from __future__ import annotations

from typing import Hashable, Iterable

try:
    from collections import _count_elements as count_into
except ImportError:  # pragma: no cover - other Python implementations
    def count_into(counts: dict, items: Iterable[Hashable]) -> None:
        """Add one to ``counts[item]`` for each item."""
        get = counts.get
        for item in items:
            counts[item] = get(item, 0) + 1

__all__ = ["count_into"]

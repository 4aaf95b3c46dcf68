"""Counting units for ROUGE-N and ROUGE-S/SU: n-gram and skip-bigram multisets, and their clipped overlap."""
from __future__ import annotations

from typing import Optional

from opik_metrics.text.counting import count_into as _count_into


def ngram_counts(tokens: list, n: int) -> dict:
    """Multiset (unit -> count) of the n-grams of ``tokens`` (unigrams as plain tokens, longer as tuples)."""
    counts: dict = {}
    if n == 1:
        _count_into(counts, tokens)
    elif n == 2:
        _count_into(counts, zip(tokens, tokens[1:]))
    else:
        _count_into(counts, zip(*(tokens[i:] for i in range(n))))
    return counts


def ngram_total(tokens: list, n: int) -> int:
    """How many n-grams ``tokens`` has (with multiplicity)."""
    return max(len(tokens) - n + 1, 0)


def _largest_gap(length: int, max_skip: Optional[int]) -> int:
    """Largest index distance of a pair: at most ``max_skip`` words in between (None: any)."""
    largest = length - 1
    return largest if max_skip is None else min(max_skip + 1, largest)


def skip_bigram_counts(tokens: list, max_skip: Optional[int]) -> dict:
    """Multiset of in-order word pairs with at most ``max_skip`` words between them (None: unlimited)."""
    counts: dict = {}
    for gap in range(1, _largest_gap(len(tokens), max_skip) + 1):
        _count_into(counts, zip(tokens, tokens[gap:]))
    return counts


def skip_bigram_total(tokens: list, max_skip: Optional[int]) -> int:
    """How many pairs ``skip_bigram_counts`` holds, without building them."""
    largest = _largest_gap(len(tokens), max_skip)
    return largest * len(tokens) - largest * (largest + 1) // 2 if largest > 0 else 0


def clipped_overlap(a: dict, b: dict) -> int:
    """Sum over units of min(count in a, count in b): matches, each unit used at most as often as both have it."""
    if len(a) > len(b):
        a, b = b, a
    hits = 0
    lookup = b.get
    for unit, count in a.items():
        other = lookup(unit)
        if other:
            hits += count if count < other else other
    return hits

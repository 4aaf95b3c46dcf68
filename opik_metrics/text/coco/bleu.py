"""BLEU-1..4 as pycocoevalcap's ``Bleu(4)`` computes them (not sacrebleu's): clipped n-gram
matches against the max count over references, the closest reference length (ties to the
shorter), its 1e-15 / 1e-9 guards instead of smoothing; per item and from summed statistics."""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from opik_metrics.core import corpus_formula
from opik_metrics.core.statistics_checks import above, first_violation, negative

TINY, SMALL = 1e-15, 1e-9   # pycocoevalcap's guards: 0 matches of 0 guesses gives ~1e-6, not 0/0


def bleu_fields(n: int = 4) -> tuple[str, ...]:
    """Statistics fields: test length, closest reference length, guesses and matches per order."""
    return ("testlen", "reflen", *(f"guess_{k}" for k in range(1, n + 1)), *(f"correct_{k}" for k in range(1, n + 1)))


def bleu_statistics(candidate: Sequence[str], references: Sequence[Sequence[str]], n: int = 4) -> list[float]:
    """One item's statistics from its tokens (``bleu_fields`` order)."""
    testlen = len(candidate)
    max_counts: dict = {}
    for ref in references:
        for k in range(1, n + 1):
            counts: dict = {}
            for g in zip(*(ref[i:] for i in range(k))):
                counts[g] = counts.get(g, 0) + 1
            for g, c in counts.items():
                if c > max_counts.get(g, 0):
                    max_counts[g] = c
    reflen = min((abs(len(r) - testlen), len(r)) for r in references)[1]
    guess = [max(0, testlen - k + 1) for k in range(1, n + 1)]
    correct = [0] * n
    for k in range(1, n + 1):
        counts = {}
        for g in zip(*(candidate[i:] for i in range(k))):
            counts[g] = counts.get(g, 0) + 1
        correct[k - 1] = sum(min(c, max_counts.get(g, 0)) for g, c in counts.items())
    return [testlen, reflen, *guess, *correct]


def bleu_values(stats: Sequence[float], n: int = 4) -> list[float]:
    """BLEU-1..n from statistics (one item's, or summed over a corpus), as pycocoevalcap computes them."""
    testlen, reflen = stats[0], stats[1]
    guess, correct = stats[2:2 + n], stats[2 + n:2 + 2 * n]
    values, product = [], 1.0
    for k in range(n):
        product *= (float(correct[k]) + TINY) / (float(guess[k]) + SMALL)
        values.append(product ** (1.0 / (k + 1)))
    ratio = (testlen + TINY) / (reflen + SMALL)
    if ratio < 1:
        penalty = math.exp(1 - 1 / ratio)
        values = [v * penalty for v in values]
    return values


def check_coco_bleu(rows: Any, *, n: int = 4, **_: Any) -> Optional[tuple[int, str]]:
    """pycocoevalcap's BLEU statistics (the first ``bleu_fields(n)`` columns) are counts, and an
    order's matches never exceed its guesses."""
    names = bleu_fields(n)
    return first_violation(negative(rows, list(range(len(names))), names),
                           above(rows, [2 + n + k for k in range(n)], [2 + k for k in range(n)],
                                 "more matching n-grams than n-grams (correct_k above guess_k)"))


@corpus_formula(check=check_coco_bleu)
def coco_bleu_from_statistics(values: Sequence[float], *, order: int = 4, n: int = 4) -> float:
    """Corpus BLEU-``order`` from summed ``bleu_fields(n)`` statistics (more fields may follow)."""
    return bleu_values(values[:2 + 2 * n], n)[order - 1]

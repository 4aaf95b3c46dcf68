"""Summary-level LCS hits for ROUGE-Lsum (Lin 2004, section 3.2), matching rouge-score's union LCS."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from opik_metrics.text.rouge.lcs import lcs_positions


def union_lcs_positions(reference_sentence: list, candidate_sentences: Sequence[list]) -> list:
    """Sorted positions of ``reference_sentence`` in the LCS with any candidate sentence (the union LCS)."""
    union: set = set()
    vocabulary = set(reference_sentence)
    for candidate in candidate_sentences:
        if not vocabulary.isdisjoint(candidate):
            union.update(lcs_positions(reference_sentence, candidate))
    return sorted(union)


def summary_lcs_hits(reference_sentences: Sequence[list], candidate_sentences: Sequence[list]) -> int:
    """Union-LCS tokens of every reference sentence, each token credited at most as often as both summaries have it."""
    left_in_reference = Counter()
    left_in_candidate = Counter()
    for sentence in reference_sentences:
        left_in_reference.update(sentence)
    for sentence in candidate_sentences:
        left_in_candidate.update(sentence)
    hits = 0
    for sentence in reference_sentences:
        for position in union_lcs_positions(sentence, candidate_sentences):
            token = sentence[position]
            if left_in_candidate[token] > 0 and left_in_reference[token] > 0:
                hits += 1
                left_in_candidate[token] -= 1
                left_in_reference[token] -= 1
    return hits

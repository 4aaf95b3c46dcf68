"""Summary-level LCS hits for ROUGE-Lsum (Lin 2004, section 3.2), matching rouge-score's union LCS."""
from __future__ import annotations

from typing import Optional, Sequence

from opik_metrics.text.counting import count_into
from opik_metrics.text.rouge.lcs import SentenceMasks, sentence_masks, union_lcs_positions_with_masks


def union_lcs_positions(reference_sentence: list, candidate_sentences: Sequence[list],
                        candidate_masks: Optional[SentenceMasks] = None) -> list:
    """Sorted positions of ``reference_sentence`` in the LCS with any candidate sentence (the union LCS).

    ``candidate_masks`` (``sentence_masks(candidate_sentences)``) saves rebuilding them when the
    same candidate sentences meet many reference sentences.
    """
    if candidate_masks is None:
        candidate_masks = sentence_masks(candidate_sentences)
    return union_lcs_positions_with_masks(candidate_masks, reference_sentence)


def summary_lcs_hits(reference_sentences: Sequence[list], candidate_sentences: Sequence[list],
                     candidate_masks: Optional[SentenceMasks] = None) -> int:
    """Union-LCS tokens of every reference sentence, each token credited at most as often as both summaries have it.

    rouge-score credits a union-LCS token while both summaries still have an uncredited copy of it.
    The reference side never runs out (a token's credits so far came from other positions of
    it, all earlier), so only the candidate's copies are counted down; a reference sentence with
    no token that the candidate still has a copy of cannot add a hit and is not looked at.
    """
    left: dict = {}                      # token -> the candidate's copies not credited yet (> 0)
    for sentence in candidate_sentences:
        count_into(left, sentence)
    if candidate_masks is None:
        candidate_masks = sentence_masks(candidate_sentences)
    hits = 0
    for sentence in reference_sentences:
        if left.keys().isdisjoint(sentence):
            continue
        for position in union_lcs_positions_with_masks(candidate_masks, sentence):
            token = sentence[position]
            copies = left.get(token)
            if copies:
                hits += 1
                if copies == 1:
                    del left[token]
                    if not left:
                        return hits
                else:
                    left[token] = copies - 1
    return hits

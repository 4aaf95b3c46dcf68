"""Longest-common-subsequence algorithms for ROUGE-L, ROUGE-Lsum (the summary-level union LCS,
Lin 2004 section 3.2, as rouge-score counts it) and ROUGE-W.

``lcs_length`` is bit-parallel (Hyyrö 2004 on Python ints: one big-int step per token instead
of one DP cell per token pair). The LCS *positions* that ROUGE-Lsum's union LCS needs come from
the same bit-parallel rows: ``union_lcs_positions_with_masks`` lays every candidate sentence out
in one int (a zero guard bit after each), computes the rows of all of them at once, and walks
rouge-score's DP traceback back through those rows, one big-int step per reference token, for
all candidate sentences together; no O(n·m) table is built. ``weighted_lcs`` (ROUGE-W) keeps
the DP, as its run lengths are not in the rows.

How the traceback reads the rows. Row ``i`` of the DP (the first ``i`` reference tokens against
every candidate prefix) is the bit-vector ``V_i``: bit ``j - 1`` is 0 where ``t[i][j]`` steps up
(``t[i][j]`` is ``j`` minus the popcount of ``V_i``'s low ``j`` bits). rouge-score walks back
from the corner: at ``(i, j)`` a match goes diagonally, else left when ``t[i][j-1] > t[i-1][j]``,
else up. As ``t[i][j-1] - t[i-1][j] = (t[i][j-1] - t[i-1][j-1]) - (t[i-1][j] - t[i-1][j-1])``,
"left" holds exactly where the vertical difference ``t[i][.] - t[i-1][.]`` is 1 at ``j - 1`` and
row ``i - 1`` does not step up at ``j``. One Hyyrö step (``U = V & M``, ``V' = (V + U) | (V - U)``)
moves the zero that closes each run of ones of ``V`` holding a match down to the run's lowest
match ``p``, so the vertical difference is 1 from ``p`` to the run's end, and "left" holds from
``p + 1`` to the run's end except at the run's other matches: exactly the bits of ``V'`` that
``V + U`` lacks, ``V' ^ (V + U)``. With that mask per reference token, a row of the walk is, for
every candidate sentence at once: slide the sentence's current column down through the mask;
there, a match records the token and steps diagonally, anything else steps up. Rows of reference
tokens that no candidate has are copies of the row above, and the walk passes them going up.
"""
from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import Hashable, NamedTuple, Optional, Sequence


def position_masks(tokens: Sequence[Hashable]) -> tuple:
    """For ``lcs_length_with_masks``: (token -> bitmask of its positions, length) of one sequence."""
    masks: dict = {}
    get = masks.get
    bit = 1
    for token in tokens:
        masks[token] = get(token, 0) | bit
        bit <<= 1
    return masks, len(tokens)


def lcs_length_with_masks(masks_and_length: tuple, other: Sequence[Hashable]) -> int:
    """LCS length between the sequence behind ``position_masks`` and ``other`` (bit-parallel)."""
    masks, length = masks_and_length
    all_ones = (1 << length) - 1
    row = all_ones  # zero bits mark the positions where the LCS row value steps up
    get = masks.get
    for token in other:
        match = get(token)
        if match:
            low = row & match
            row = (row + low) | (row - low)
    return length - (row & all_ones).bit_count()


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b``."""
    return lcs_length_with_masks(position_masks(a), b)


def lcs_length_dp(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Textbook O(len(a)*len(b)) LCS length; the reference the bit-parallel version is tested against."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


class SentenceMasks(NamedTuple):
    """Candidate sentences laid end to end in one int, each followed by a zero guard bit.

    The guard stops a carry of one sentence's LCS row from reaching the next one, so one big-int
    step advances the rows of every sentence at once. Empty sentences take no bits.
    """

    masks: dict      # token -> bits of its positions, over all sentences
    ones: int        # every sentence position (guards excluded): the all-ones row
    lasts: int       # each non-empty sentence's last position: where the traceback starts
    inner: int       # every sentence position but each sentence's first one


def sentence_masks(sentences: Sequence[Sequence[Hashable]]) -> SentenceMasks:
    """``SentenceMasks`` of candidate sentences (token lists), for ``union_lcs_positions_with_masks``."""
    masks: dict = {}
    get = masks.get
    bit = 1
    ones = lasts = firsts = 0
    for sentence in sentences:
        if not sentence:
            continue
        first = bit
        for token in sentence:
            masks[token] = get(token, 0) | bit
            bit <<= 1
        ones |= bit - first            # the sentence's positions
        firsts |= first
        lasts |= bit >> 1
        bit <<= 1                      # the guard bit: left 0 in every row
    return SentenceMasks(masks, ones, lasts, ones & ~firsts)


def union_lcs_positions_with_masks(candidates: SentenceMasks, reference: Sequence[Hashable]) -> list:
    """Sorted positions of ``reference`` in the LCS (rouge-score's choice) with any candidate
    sentence behind ``candidates``: the union LCS of ROUGE-Lsum (Lin 2004, section 3.2).

    Reference tokens that no candidate has are skipped outright: their DP rows copy the row
    above, and rouge-score's walk passes them going straight up.
    """
    get = candidates.masks.get
    ones = candidates.ones
    row = ones
    steps = []                       # (position, match bits, go-left bits) of each matching token
    for position, token in enumerate(reference):
        match = get(token)
        if match:
            low = row & match
            added = row + low
            row = added | (row - low)
            # The go-left columns: after the lowest match p of a run, up to the run's end, but
            # not the other matches; i.e. where the new row has a one that the sum has not.
            steps.append((position, match, row ^ added))
            row &= ones
    if not steps:
        return []
    inner = candidates.inner
    at = candidates.lasts            # one bit per sentence still walking: its current column
    found = []
    for position, match, left in reversed(steps):
        moving = at & left
        while moving:                # slide through the go-left columns; a sentence's first
            at ^= moving             # column is never one, so no bit leaves its sentence
            moving >>= 1
            at |= moving
            moving &= left
        hit = at & match
        if hit:
            found.append(position)
            at ^= hit                # diagonal step; a sentence whose first column matched is done
            at |= (hit & inner) >> 1
            if not at:
                break
    found.reverse()
    return found


def lcs_positions(reference: Sequence[Hashable], candidate: Sequence[Hashable]) -> list:
    """Positions in ``reference`` of one LCS with ``candidate``, chosen as rouge-score chooses it.

    rouge-score's DP table has reference rows and candidate columns; its walk back from the corner
    takes a match diagonally, else moves left only when the left cell is strictly larger than the
    upper one. Computed from bit-parallel rows (see the module docstring), not from the table.
    """
    return union_lcs_positions_with_masks(sentence_masks([candidate]), reference)


def weighted_lcs(reference: Sequence[Hashable], candidate: Sequence[Hashable], weight: float) -> float:
    """Lin (2004) WLCS with f(k) = k**weight: consecutive matches are worth more than scattered ones."""
    cols = len(candidate)
    longest_run = min(len(reference), cols)
    # gain[k] = f(k + 1) - f(k): what extending a run of k consecutive matches adds.
    gain = [(k + 1) ** weight - k ** weight for k in range(longest_run + 1)]
    score_above = [0.0] * (cols + 1)
    run_above = [0] * (cols + 1)
    for x in reference:
        score_row = [0.0] * (cols + 1)
        run_row = [0] * (cols + 1)
        for j, y in enumerate(candidate, 1):
            if x == y:
                run = run_above[j - 1]
                score_row[j] = score_above[j - 1] + gain[run]
                run_row[j] = run + 1
            elif score_above[j] > score_row[j - 1]:
                score_row[j] = score_above[j]
            else:
                score_row[j] = score_row[j - 1]
        score_above, run_above = score_row, run_row
    return score_above[-1]


# -- ROUGE-Lsum: the union LCS over sentences -------------------------------------------------------


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
    left = Counter(chain.from_iterable(candidate_sentences))   # token -> the candidate's copies not credited yet
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

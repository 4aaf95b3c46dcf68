"""Longest-common-subsequence algorithms for ROUGE-L, ROUGE-Lsum and ROUGE-W.

``lcs_length`` is bit-parallel (Hyyrö 2004 on Python ints: one big-int step per token instead
of one DP cell per token pair); the DP versions are kept where positions or weights are needed.
"""
from __future__ import annotations

from typing import Hashable, Sequence


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


def lcs_positions(reference: Sequence[Hashable], candidate: Sequence[Hashable]) -> list:
    """Positions in ``reference`` of one LCS with ``candidate``, chosen as rouge-score chooses it.

    The DP table has reference rows and candidate columns; the walk back from the corner takes a
    match diagonally, else moves left only when the left cell is strictly larger than the upper one.
    """
    cols = len(candidate)
    table = [[0] * (cols + 1)]
    for x in reference:
        above = table[-1]
        row = [0] * (cols + 1)
        left = 0
        for j, y in enumerate(candidate, 1):
            if x == y:
                left = above[j - 1] + 1
            elif above[j] > left:
                left = above[j]
            row[j] = left
        table.append(row)
    positions = []
    i, j = len(reference), cols
    while i > 0 and j > 0:
        if reference[i - 1] == candidate[j - 1]:
            i -= 1
            j -= 1
            positions.append(i)
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    positions.reverse()
    return positions


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

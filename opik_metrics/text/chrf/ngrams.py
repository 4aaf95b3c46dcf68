"""Matched n-grams of many (hypothesis, reference) rows at once, for chrF's character and word
n-grams: per row and order n, the hypothesis' n-grams, the reference's, and the clipped matches
(sum over distinct n-grams of the smaller of the two counts, as sacrebleu's Counter loop).

Rewritten rather than reused for speed: sacrebleu builds a ``Counter`` of substrings per order and
side and walks it in Python. Here every symbol (character or word
id) gets a small code, and every position the code of the window of ``order`` symbols starting
there (past the end of its text, a filler that differs between hypothesis and reference); one
64-bit key per position packs (row, window, side). One sort of the keys puts every n-gram of
every order in a contiguous run (an n-gram is the key's leading n symbols), so each order is a
few linear numpy passes. Keys that cannot fit 64 bits (large alphabets) split the rows; a single
row that still cannot fit is counted with Counters. Small calls use ``small_match_counts``.
"""
from __future__ import annotations

from collections import Counter
from operator import add
from typing import Sequence

import numpy as np

Symbols = np.ndarray      # flat int64 codes (> 0) of every text, concatenated


def match_counts(hyp_codes: Symbols, hyp_lens: np.ndarray, ref_codes: Symbols, ref_lens: np.ndarray,
                 order: int) -> np.ndarray:
    """Statistics of row r = hypothesis r against reference r: an int64 array (rows x order x 3)
    of [hypothesis n-grams, reference n-grams, clipped matches] for n = 1..order.

    ``hyp_codes`` holds the symbols of every hypothesis one after the other (``hyp_lens`` of them
    each), ``ref_codes`` likewise; equal symbols have equal codes.
    """
    rows = len(hyp_lens)
    out = np.zeros((rows, order, 3), dtype=np.int64)
    if rows == 0:
        return out
    hyp_lens = np.asarray(hyp_lens, dtype=np.int64)
    ref_lens = np.asarray(ref_lens, dtype=np.int64)
    ns = np.arange(1, order + 1, dtype=np.int64)
    out[:, :, 0] = np.maximum(hyp_lens[:, None] - ns + 1, 0)
    out[:, :, 1] = np.maximum(ref_lens[:, None] - ns + 1, 0)
    hyp_starts = np.concatenate(([0], np.cumsum(hyp_lens)))
    ref_starts = np.concatenate(([0], np.cumsum(ref_lens)))
    _matches(np.asarray(hyp_codes, dtype=np.int64), hyp_starts, np.asarray(ref_codes, dtype=np.int64),
             ref_starts, 0, rows, order, out)
    return out


def _dense(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes renumbered 1..A (A distinct symbols), so that they take few bits."""
    if len(codes) == 0:
        return codes, 0
    top = int(codes.max())
    if top < 4 * len(codes) + 65536:            # a lookup table is cheaper than a sort
        seen = np.zeros(top + 1, dtype=np.int64)
        seen[codes] = 1
        rank = np.cumsum(seen)
        return rank[codes], int(rank[-1])
    unique, inverse = np.unique(codes, return_inverse=True)
    return inverse.astype(np.int64) + 1, len(unique)


def _matches(hyp_codes, hyp_starts, ref_codes, ref_starts, first: int, last: int, order: int,
             out: np.ndarray) -> None:
    """Fill ``out[first:last, :, 2]`` (the matches of rows first..last-1)."""
    rows = last - first
    h0, h1 = hyp_starts[first], hyp_starts[last]
    r0, r1 = ref_starts[first], ref_starts[last]
    if h1 == h0 or r1 == r0:
        return                                   # no symbol on one side: no match
    codes, alphabet = _dense(np.concatenate((hyp_codes[h0:h1], ref_codes[r0:r1])))
    bits = (alphabet + 1).bit_length()          # symbols 1..A; past a text's end 0 (hypotheses), A + 1 (references)
    row_bits = max(rows - 1, 0).bit_length()
    if order * bits + 1 + row_bits > 64:
        if rows > 1:                             # fewer rows: fewer row bits, maybe fewer symbols
            middle = first + rows // 2
            _matches(hyp_codes, hyp_starts, ref_codes, ref_starts, first, middle, order, out)
            _matches(hyp_codes, hyp_starts, ref_codes, ref_starts, middle, last, order, out)
        else:
            out[first, :, 2] = _counter_matches(hyp_codes[h0:h1], ref_codes[r0:r1], order)
        return

    lens = np.concatenate((np.diff(hyp_starts[first:last + 1]), np.diff(ref_starts[first:last + 1])))
    segment = np.repeat(np.arange(2 * rows, dtype=np.int64), lens)
    n = len(codes)
    starts = np.concatenate(([0], np.cumsum(lens)))
    left = starts[segment + 1] - np.arange(n)    # symbols from each position to its text's end
    padded = np.concatenate((codes, np.zeros(order, dtype=np.int64))).astype(np.uint64)
    side = (segment >= rows).astype(np.uint64)
    beyond = side * np.uint64(alphabet + 1)      # so that a short window never matches the other side's
    window = padded[:n] << np.uint64(bits * (order - 1))
    for k in range(1, order):
        part = np.where(left > k, padded[k:n + k], beyond)
        window |= part << np.uint64(bits * (order - 1 - k))
    row = (segment - rows * side.astype(np.int64)).astype(np.uint64)
    keys = (row << np.uint64(order * bits + 1)) | (window << np.uint64(1)) | side
    keys.sort()

    ones = np.concatenate(([0], np.cumsum(keys & np.uint64(1), dtype=np.int64)))
    total = len(keys)
    # Order `order` first, on every key; each smaller order merges neighbouring groups of the one
    # above (an n-gram's groups nest in its (n-1)-prefix's), so it only looks at their first keys.
    heads = keys >> np.uint64(1)                                   # (row, window)
    begin = np.arange(total)
    for n_ in range(order, 0, -1):
        if n_ < order:
            heads = heads >> np.uint64(bits)
        change = np.empty(len(heads), dtype=bool)
        change[0] = True
        np.not_equal(heads[1:], heads[:-1], out=change[1:])
        keep = np.flatnonzero(change)
        begin = begin[keep]
        heads = heads[keep]
        end = np.append(begin[1:], total)
        ref_count = ones[end] - ones[begin]
        matched = np.minimum((end - begin) - ref_count, ref_count)
        useful = matched > 0           # an n-gram on both sides (windows cut short never match)
        if useful.any():
            owner = (heads[useful] >> np.uint64(bits * n_)).astype(np.int64)
            out[first:last, n_ - 1, 2] = np.bincount(owner, weights=matched[useful],
                                                     minlength=rows).astype(np.int64)


def _counter_matches(hyp: Sequence[int], ref: Sequence[int], order: int) -> list[int]:
    """Clipped matches per order with Counters (sacrebleu's way), for a row no key can hold."""
    hyp = [int(x) for x in hyp]
    ref = [int(x) for x in ref]
    result = []
    for n in range(1, order + 1):
        ref_counts = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
        hyp_counts = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
        result.append(sum(min(c, ref_counts[g]) for g, c in hyp_counts.items() if g in ref_counts))
    return result


def small_match_counts(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]],
                       order: int) -> list[list[list[int]]]:
    """``match_counts`` for a few short rows, in plain Python (numpy's per-call cost would dominate):
    ``hyps[r]`` / ``refs[r]`` are strings (character n-grams) or lists of words (word n-grams,
    joined by spaces as sacrebleu does). Returns, per row and order, [hypothesis n-grams,
    reference n-grams, matches]."""
    rows = []
    for hyp, ref in zip(hyps, refs):
        stats = []
        len_h, len_r = len(hyp), len(ref)
        # n-grams of order n: those of order n - 1 with the next symbol appended (C-level map)
        tail_h, tail_r = (hyp, ref) if isinstance(hyp, str) else ([" " + w for w in hyp], [" " + w for w in ref])
        grams_h, grams_r = hyp, ref
        found = True
        for n in range(1, order + 1):
            count_h = len_h - n + 1 if len_h >= n else 0
            count_r = len_r - n + 1 if len_r >= n else 0
            matched = 0
            if found and count_h and count_r:   # no match of order n-1: none of order n either
                if n > 1:
                    grams_h = list(map(add, grams_h, tail_h[n - 1:]))
                    grams_r = list(map(add, grams_r, tail_r[n - 1:]))
                counts_h, counts_r = Counter(grams_h), Counter(grams_r)
                common = counts_h.keys() & counts_r.keys()
                if len(counts_h) == count_h or len(counts_r) == count_r:
                    matched = len(common)        # every n-gram once on one side: min(count) is 1
                else:
                    for gram in common:
                        a, b = counts_h[gram], counts_r[gram]
                        matched += a if a < b else b
                found = matched > 0
            stats.append([count_h, count_r, matched])
        rows.append(stats)
    return rows

"""ROUGE-N and ROUGE-L counts of many (prediction, reference) pairs at once, in numpy.

Tokens arrive as integer ids (equal ids, equal tokens), renumbered pair by pair to small ones. N-gram matches come from one sort per
order: each n-gram occurrence becomes the key (n-gram, side), and a run of equal keys but for the
side holds both sides' counts of one n-gram in one pair, whose minimum is its clipped
matches. Each pair's keys are sorted in a row of their own (numpy sorts many short rows far
faster than one long array). LCS lengths come from Hyyrö's bit-parallel rows (as ``lcs.py``, on 64-bit words instead
of Python ints), one step per reference position for every pair of a chunk together. The counts
are the per-pair engine's integers, so the scores made from them are the same floats.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

_KEY_LIMIT = 1 << 62           # keys stay below it: int64 arithmetic never overflows


class Ragged(NamedTuple):
    """One token-id sequence per pair, laid end to end: ``ids[starts[k]:starts[k] + lengths[k]]``."""

    ids: np.ndarray        # int64, every id >= 0
    starts: np.ndarray     # int64
    lengths: np.ndarray    # int64

    @classmethod
    def of(cls, ids: np.ndarray, lengths: np.ndarray) -> "Ragged":
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return cls(ids, starts, lengths)

    def take(self, which: np.ndarray) -> "Ragged":
        """The sequences ``which`` (indices, repeats allowed), in that order."""
        lengths = self.lengths[which]
        total = int(lengths.sum())
        new_starts = np.zeros(len(which), dtype=np.int64)
        np.cumsum(lengths[:-1], out=new_starts[1:])
        # position t of the result reads old index starts[which[k]] + (t - new_starts[k])
        index = np.arange(total, dtype=np.int64) + np.repeat(self.starts[which] - new_starts, lengths)
        return Ragged(self.ids[index], new_starts, lengths)

    def owners(self) -> np.ndarray:
        """For every position of ``ids``, the index of its sequence."""
        return np.repeat(np.arange(len(self.lengths), dtype=np.int64), self.lengths)

    def offsets(self) -> np.ndarray:
        """For every position of ``ids``, its position within its sequence."""
        return np.arange(len(self.ids), dtype=np.int64) - np.repeat(self.starts, self.lengths)


POSITION_BITS = 9                      # a token's position in its text fits in 9 bits
LONGEST = (1 << POSITION_BITS) // 2    # tokens: a pair with a longer text is not for these arrays
BLOCK_PAIRS = 512                     # pairs of similar length sorted and stepped together


def _gram_codes(tokens: Ragged, n: int, bound: int) -> tuple:
    """(codes, owners, offsets, code bound) of every n-gram of every sequence: equal codes, equal
    n-grams; codes are renumbered densely when the next factor could overflow a key."""
    owners, offsets = tokens.owners(), tokens.offsets()
    if n == 1:
        return tokens.ids, owners, offsets, bound
    first = np.flatnonzero(offsets + n <= tokens.lengths[owners])     # n-grams that end in their sequence
    codes, code_bound = tokens.ids[first], bound
    for k in range(1, n):
        if code_bound * bound * 2 >= _KEY_LIMIT:
            _, codes = np.unique(codes, return_inverse=True)
            codes = codes.reshape(-1).astype(np.int64)
            code_bound = int(codes.max()) + 1 if codes.size else 1
        codes = codes * bound + tokens.ids[first + k]
        code_bound *= bound
    return codes, owners[first], offsets[first], code_bound


class _SortedRows(NamedTuple):
    """Every pair's n-gram keys, prediction's and reference's, in one row each, sorted; flat."""

    keys: np.ndarray      # (pairs * width,), rows padded with the all-ones key
    width: int
    shift: int            # key >> shift is the n-gram code; bit shift - 1 the side (1: reference)
    new: np.ndarray       # bool: first entry of a run of one n-gram in one row
    starts: np.ndarray    # index of every run's first entry
    predicted: np.ndarray  # per run: entries from the prediction
    referenced: np.ndarray  # per run: entries from the reference


def _rows(values: np.ndarray, owners: np.ndarray, offsets: np.ndarray, counts: np.ndarray, pairs: int,
          dtype) -> tuple:
    """(rows, pair, columns): the values of sequence k (prediction k, then reference k as sequence
    ``pairs + k``), ``counts[k]`` of them, laid out in row k mod ``pairs`` (the prediction's first),
    padded with the dtype's largest value, which sorts last."""
    side = owners >= pairs
    pair = owners - side * pairs
    columns = offsets + side * counts[pair]
    width = max(int((counts[:pairs] + counts[pairs:]).max()), 1)
    rows = np.full((pairs, width), np.iinfo(dtype).max, dtype=dtype)
    rows[pair, columns] = values
    return rows, pair, columns


def _sorted_rows(both: Ragged, pairs: int, n: int, bound: int, with_positions: bool) -> _SortedRows:
    """Keys ``code << shift | side << (shift - 1) [| position]``, one row per pair, each row sorted:
    many short sorts, far faster in numpy than one long one."""
    codes, owners, offsets, code_bound = _gram_codes(both, n, bound)
    shift = POSITION_BITS + 1 if with_positions else 1
    keys = (codes << shift) | ((owners >= pairs).astype(np.int64) << (shift - 1))
    if with_positions:
        keys |= offsets
    dtype = np.int32 if (code_bound << shift) < (1 << 31) else np.int64
    rows, _, _ = _rows(keys, owners, offsets, np.maximum(both.lengths - (n - 1), 0), pairs, dtype)
    width = rows.shape[1]
    rows.sort(axis=1)
    flat = rows.reshape(-1)
    grams_of = flat >> shift
    new = np.empty(len(flat), dtype=bool)
    new[:1] = True
    np.not_equal(grams_of[1:], grams_of[:-1], out=new[1:])
    new[::width] = True
    starts = np.flatnonzero(new)
    referenced = np.add.reduceat((flat >> (shift - 1)) & 1, starts).astype(np.int64)
    predicted = np.diff(starts, append=len(flat)) - referenced     # padding counts as reference: no match
    return _SortedRows(flat, width, shift, new, starts, predicted, referenced)


def _clipped(rows: _SortedRows, pairs: int) -> np.ndarray:
    """Per pair, the sum over n-grams of min(count in prediction, count in reference)."""
    matched = np.minimum(rows.predicted, rows.referenced)
    return np.bincount(rows.starts // rows.width, weights=matched, minlength=pairs).astype(np.int64)


def _popcount(words: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):                  # numpy >= 2.0
        return np.bitwise_count(words).astype(np.int64)
    table = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)
    return table[words.view(np.uint8).reshape(*words.shape, 8)].sum(axis=-1)


def _lcs(rows: _SortedRows, both: Ragged, pairs: int) -> np.ndarray:
    """LCS length of each pair from its sorted unigram row (keys with positions): Hyyrö's rows over
    the prediction's positions, one 64-bit word per 64 of them, stepped by every reference token of
    every pair at once."""
    lengths = both.lengths[:pairs]
    flat, shift = rows.keys, rows.shift
    positions = (flat & ((1 << POSITION_BITS) - 1)).astype(np.int64)
    is_reference = ((flat >> (shift - 1)) & 1).astype(bool)
    run = np.cumsum(rows.new) - 1
    readers = np.flatnonzero(is_reference & (rows.predicted > 0)[run])   # padding runs have none
    writers = np.flatnonzero(~is_reference)
    words = max((int(lengths.max()) + 63) // 64, 1)
    steps = int(both.lengths[pairs:].max())
    matches = np.zeros((steps, words, pairs), dtype=np.uint64)
    reader_pair, reader_step, reader_run = readers // rows.width, positions[readers], run[readers]
    writer_word = positions[writers] >> 6
    writer_bit = np.left_shift(np.uint64(1), (positions[writers] & 63).astype(np.uint64))
    for word in range(words):
        bits = np.zeros(len(flat), dtype=np.uint64)
        mine = writer_word == word
        bits[writers[mine]] = writer_bit[mine]
        run_bits = np.bitwise_or.reduceat(bits, rows.starts)
        matches[reader_step, word, reader_pair] = run_bits[reader_run]
    ones = np.zeros((words, pairs), dtype=np.uint64)
    for word in range(words):
        filled = np.clip(lengths - 64 * word, 0, 64).astype(np.uint64)
        ones[word] = np.where(filled == 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                              np.left_shift(np.uint64(1), np.minimum(filled, np.uint64(63))) - np.uint64(1))
    row = ones.copy()
    low = np.empty(pairs, dtype=np.uint64)
    total = np.empty(pairs, dtype=np.uint64)
    if words == 1:
        current = row[0]
        for step in range(steps):
            np.bitwise_and(current, matches[step, 0], out=low)
            np.add(current, low, out=total)
            np.subtract(current, low, out=current)
            np.bitwise_or(current, total, out=current)
    else:                                     # several words: the sum's carry runs word to word
        carry = np.empty(pairs, dtype=np.uint64)
        wrapped = np.empty(pairs, dtype=bool)
        carried = np.empty(pairs, dtype=bool)
        for step in range(steps):
            carry.fill(0)
            for word in range(words):
                current = row[word]
                np.bitwise_and(current, matches[step, word], out=low)
                np.add(current, low, out=total)
                np.less(total, current, out=wrapped)
                np.add(total, carry, out=total)
                np.less(total, carry, out=carried)
                np.subtract(current, low, out=current)
                np.bitwise_or(current, total, out=current)
                np.logical_or(wrapped, carried, out=wrapped)
                np.copyto(carry, wrapped, casting="unsafe")
    return lengths - _popcount(row & ones).sum(axis=0)


def _renumbered(prediction: Ragged, reference: Ragged) -> tuple:
    """(both sides as one Ragged, predictions first, a bound above every id): each id replaced by
    its rank among the pair's distinct ids (one sorted row a pair), small whatever the tokens' ids
    were, so that every key below fits in 32 bits."""
    pairs = len(prediction.lengths)
    both = Ragged.of(np.concatenate([prediction.ids, reference.ids]),
                     np.concatenate([prediction.lengths, reference.lengths]))
    rows, pair, columns = _rows(both.ids, both.owners(), both.offsets(), both.lengths, pairs, np.int64)
    order = np.argsort(rows, axis=1)
    ordered = np.take_along_axis(rows, order, axis=1)
    new = np.ones(rows.shape, dtype=np.int32)
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=new[:, 1:], casting="unsafe")
    ranks = np.empty_like(new)
    np.put_along_axis(ranks, order, np.cumsum(new, axis=1, dtype=np.int32), axis=1)
    return both._replace(ids=ranks[pair, columns].astype(np.int64)), rows.shape[1] + 1


def pair_counts(prediction: Ragged, reference: Ragged, orders: tuple, lcs: bool) -> dict:
    """Per pair: clipped n-gram matches for each of ``orders`` (key n) and the LCS length (key
    "lcs"); equal ids are equal tokens, every text at most ``LONGEST`` tokens. Pairs are taken in
    blocks of similar lengths, so that little of a block's work is padding."""
    pairs = len(prediction.lengths)
    out = {key: np.zeros(pairs, dtype=np.int64) for key in (*orders, *(("lcs",) if lcs else ()))}
    # blocks of pairs alike in what the LCS steps cost (64-bit words of the prediction, then
    # reference tokens), which also keeps each block's rows of n-grams about equally long
    order = np.argsort((prediction.lengths + 63) // 64 * (LONGEST + 1) + reference.lengths, kind="stable")
    for start in range(0, pairs, BLOCK_PAIRS):
        block = order[start:start + BLOCK_PAIRS]
        p, r = prediction.take(block), reference.take(block)
        if not p.ids.size or not r.ids.size:
            continue                                   # no token on a side: every count is 0
        both, bound = _renumbered(p, r)
        for n in orders:
            if n == 1 and lcs:
                continue
            out[n][block] = _clipped(_sorted_rows(both, len(block), n, bound, False), len(block))
        if lcs:
            rows = _sorted_rows(both, len(block), 1, bound, True)
            out["lcs"][block] = _lcs(rows, both, len(block))
            if 1 in out:
                out[1][block] = _clipped(rows, len(block))
    return out

"""The number of edits of TER (Snover et al., 2006) as sacrebleu 2.6's tercom port computes it
(``sacrebleu.metrics.lib_ter.translation_edit_rate``): greedy block shifts, then a beam
("banded") word edit distance. Same shifts, same candidates, same limits, same numbers.

Rewritten rather than reused for speed (sacrebleu spends most of its time in a cell-by-cell edit
distance run for every shift candidate). What is computed differently, and why
the numbers cannot differ:

* Candidate distances use Myers' bit-parallel edit distance (Hyyrö's global form, one Python
  big-int step per hypothesis word), resumed from the current hypothesis' column states at the
  first word a shift changes. It is the *unbanded* distance D; sacrebleu's is banded. The band
  only depends on the two lengths, which shifts keep, so ``_BandBound`` gives once per pair the
  least cost of any path through a cell outside the band (``|i - j| + |(n_r - j) - (n_h - i)|``
  insertions/deletions at least). When D is below it every optimal path lies inside the band,
  so the banded distance is D; otherwise the exact banded programme runs (``_banded_rows``).
* The alignment of the current hypothesis comes from backtracking through the same column states
  with tercom's preference (match/substitution, then deletion, then insertion). Under the same
  bound the two programmes agree on every cell of every optimal path and on which of a cell's
  neighbours reach its minimum, so the backtrack takes the very same steps.
* Shift candidates are enumerated in sacrebleu's order (hypothesis start, then reference start,
  then length) from a word -> reference positions index instead of an all-pairs scan, so the
  1000-candidate limit cuts at the same candidate.
"""
from __future__ import annotations

import math
from typing import Sequence

# sacrebleu.metrics.lib_ter's limits (tercom's, plus its own candidate limit).
MAX_SHIFT_SIZE = 10
MAX_SHIFT_DIST = 50
BEAM_WIDTH = 25
MAX_SHIFT_CANDIDATES = 1000
_INF = int(1e16)

_NOP, _SUB, _INS, _DEL = 0, 1, 2, 3   # tercom's ' ', 's', 'i', 'd' (rewriting the hypothesis into the reference)


def translation_edit_rate(words_hyp: Sequence[str], words_ref: Sequence[str]) -> tuple[int, int]:
    """(number of edits, reference length) of a tokenised hypothesis against one reference,
    exactly as ``sacrebleu.metrics.lib_ter.translation_edit_rate``."""
    n_ref = len(words_ref)
    n_hyp = len(words_hyp)
    if n_ref == 0:
        return n_hyp, 0                      # sacrebleu: every hypothesis word is an edit
    words_h = list(words_hyp)
    words_r = list(words_ref)
    if words_h == words_r:
        return 0, n_ref                      # distance 0: no word is wrong, so no shift is tried
    search = _ShiftSearch(words_r, n_hyp)
    shifts = 0
    checked = 0
    while True:
        delta, shifted, checked = search.best_shift(words_h, checked)
        if checked >= MAX_SHIFT_CANDIDATES:
            break                            # as sacrebleu: the shift found in this round is dropped
        if delta <= 0:
            break
        shifts += 1
        words_h = shifted
    return shifts + search.last_distance, n_ref


class _BandBound:
    """The band of sacrebleu's beam edit distance for hypotheses of ``n_h`` words against ``n_r``
    reference words, and the least cost of a path through any cell outside it."""

    def __init__(self, n_h: int, n_r: int) -> None:
        ratio = n_r / n_h if n_h else 1
        beam = math.ceil(ratio / 2 + BEAM_WIDTH) if BEAM_WIDTH < ratio / 2 else BEAM_WIDTH
        self.rows: list[tuple[int, int]] = [(0, n_r + 1)]     # row 0 is the full initial row
        least = _INF
        delta = n_r - n_h
        for i in range(1, n_h + 1):
            diag = math.floor(i * ratio)
            lo = max(0, diag - beam)
            hi = n_r + 1 if i == n_h else min(n_r + 1, diag + beam)
            self.rows.append((lo, hi))
            # cells j in [0, lo) and [hi, n_r] are outside; a path through (i, j) needs at least
            # |j - i| + |delta - (j - i)| insertions and deletions, least at j - i nearest 0 .. delta
            for a, b in ((0, lo - 1), (hi, n_r)):
                if a <= b:
                    j = min(max(i + min(0, delta), a), b)
                    cost = abs(j - i) + abs(delta - (j - i))
                    if cost < least:
                        least = cost
        #: A distance below this is the banded distance too.
        self.least_outside = least


class _ShiftSearch:
    """One hypothesis-reference pair: the reference's bit masks, its band, and the column states
    of the current hypothesis (kept between the candidates of one shift round)."""

    def __init__(self, words_r: list[str], n_h: int) -> None:
        self.words_r = words_r
        self.n_r = n_r = len(words_r)
        self.n_h = n_h
        self.mask = (1 << n_r) - 1
        peq: dict[str, int] = {}
        positions: dict[str, list[int]] = {}
        for j, word in enumerate(words_r):
            peq[word] = peq.get(word, 0) | (1 << j)
            positions.setdefault(word, []).append(j)
        self.peq = peq
        self.positions = positions
        self.band = _BandBound(n_h, n_r)
        self.last_distance = 0
        self.columns: list[tuple[int, int]] = []

    # -- distances ------------------------------------------------------------------------

    def _columns(self, words_h: list[str]) -> list[tuple[int, int]]:
        """Myers' vertical delta masks (Vp, Vn) after each prefix of ``words_h`` (0..n_h words)."""
        get = self.peq.get
        mask = self.mask
        vp, vn = mask, 0
        columns = [(vp, vn)]
        append = columns.append
        for word in words_h:
            eq = get(word, 0)
            xv = eq | vn
            xh = ((((eq & vp) + vp) ^ vp) | eq) & mask
            ph = vn | (mask ^ (xh | vp))
            mh = vp & xh
            ph = ((ph << 1) | 1) & mask
            mh = (mh << 1) & mask
            vp = mh | (mask ^ (xv | ph))
            vn = ph & xv
            append((vp, vn))
        return columns

    def _distance_from(self, words: list[str], start: int, vp: int, vn: int) -> int:
        """Unbanded distance of ``words`` whose first ``start`` words gave states ``vp``, ``vn``."""
        get = self.peq.get
        mask = self.mask
        for k in range(start, len(words)):
            eq = get(words[k], 0)
            xv = eq | vn
            xh = ((((eq & vp) + vp) ^ vp) | eq) & mask
            ph = vn | (mask ^ (xh | vp))
            mh = vp & xh
            ph = ((ph << 1) | 1) & mask
            mh = (mh << 1) & mask
            vp = mh | (mask ^ (xv | ph))
            vn = ph & xv
        return len(words) + vp.bit_count() - vn.bit_count()

    def _alignment(self, words_h: list[str]) -> tuple[int, list[int], list[int], list[int]]:
        """Banded distance of ``words_h`` and tercom's alignment: ``align[j]`` (hypothesis position
        of reference word j, -1 before the first), and error flags of reference and hypothesis."""
        self.columns = columns = self._columns(words_h)
        n_h, n_r = len(words_h), self.n_r
        vp, vn = columns[n_h]
        distance = n_h + vp.bit_count() - vn.bit_count()
        if distance >= self.band.least_outside:
            return _banded_alignment(words_h, self.words_r, self.band)
        words_r = self.words_r
        ops = []
        i, j = n_h, n_r
        here = distance
        while i > 0 or j > 0:
            if i == 0:
                ops.append(_INS)
                j -= 1
                continue
            if j == 0:
                ops.append(_DEL)
                i -= 1
                continue
            low = (1 << (j - 1)) - 1
            pvp, pvn = columns[i - 1]
            diag = (i - 1) + (pvp & low).bit_count() - (pvn & low).bit_count()      # D[i-1][j-1]
            if words_h[i - 1] == words_r[j - 1]:
                if diag == here:
                    ops.append(_NOP)
                    i -= 1
                    j -= 1
                    continue
            elif diag + 1 == here:
                ops.append(_SUB)
                here -= 1
                i -= 1
                j -= 1
                continue
            up = diag + ((pvp >> (j - 1)) & 1) - ((pvn >> (j - 1)) & 1)             # D[i-1][j]
            if up + 1 == here:
                ops.append(_DEL)
                here -= 1
                i -= 1
            else:
                ops.append(_INS)
                here -= 1
                j -= 1
        ops.reverse()
        return (distance, *_align(ops))

    # -- one round of shifts -----------------------------------------------------------------

    def best_shift(self, words_h: list[str], checked: int) -> tuple[int, list[str], int]:
        """sacrebleu's ``_shift``: (gain of the best shift, shifted words, candidates checked)."""
        pre_score, align, ref_err, hyp_err = self._alignment(words_h)
        self.last_distance = pre_score
        if pre_score == 0:
            return 0, words_h, checked
        hyp_cum = [0]
        for e in hyp_err:
            hyp_cum.append(hyp_cum[-1] + e)
        ref_cum = [0]
        for e in ref_err:
            ref_cum.append(ref_cum[-1] + e)
        n_h, n_r = len(words_h), self.n_r
        words_r = self.words_r
        positions = self.positions
        columns = self.columns
        least_outside = self.band.least_outside
        best_key = None
        best_words = words_h
        for start_h in range(n_h):
            starts_r = positions.get(words_h[start_h])
            if starts_r is None:
                continue
            for start_r in starts_r:
                if abs(start_r - start_h) > MAX_SHIFT_DIST:
                    continue
                length = 0
                while length < MAX_SHIFT_SIZE and words_h[start_h + length] == words_r[start_r + length]:
                    length += 1
                    # sacrebleu's filters: some hypothesis word of the block is wrong, some
                    # reference word of the block is unmatched, and it is not a shift into itself
                    if (hyp_cum[start_h + length] == hyp_cum[start_h]
                            or ref_cum[start_r + length] == ref_cum[start_r]
                            or start_h <= align[start_r] < start_h + length):
                        pass
                    else:
                        prev_idx = -1
                        for offset in range(-1, length):      # targets: after the words aligned to
                            at = start_r + offset             # the block's reference words
                            idx = 0 if at == -1 else align[at] + 1   # (at < n_r: every one is aligned)
                            if idx == prev_idx:
                                continue
                            prev_idx = idx
                            shifted = _perform_shift(words_h, start_h, length, idx)
                            same = min(start_h, idx)          # the shift keeps this many words in place
                            vp, vn = columns[same]
                            distance = self._distance_from(shifted, same, vp, vn)
                            if distance >= least_outside:
                                distance = _banded_distance(shifted, words_r, self.band)
                            checked += 1
                            # sacrebleu's (tercom's) ranking: gain, then longer, earlier, earlier target
                            key = (pre_score - distance, length, -start_h, -idx)
                            if best_key is None or key > best_key:
                                best_key = key
                                best_words = shifted
                        if checked >= MAX_SHIFT_CANDIDATES:
                            return _result(best_key, best_words, words_h, checked)
                    if n_h == start_h + length or n_r == start_r + length:
                        break
        return _result(best_key, best_words, words_h, checked)


def _result(best_key, best_words, words_h, checked):
    if best_key is None:
        return 0, words_h, checked
    return best_key[0], best_words, checked


def _perform_shift(words: list[str], start: int, length: int, target: int) -> list[str]:
    """sacrebleu's ``_perform_shift``, its three cases as they are."""
    if target < start:
        return words[:target] + words[start: start + length] + words[target: start] + words[start + length:]
    if target > start + length:
        return words[:start] + words[start + length: target] + words[start: start + length] + words[target:]
    return words[:start] + words[start + length: length + target] + words[start: start + length] \
        + words[length + target:]


def _align(ops: list[int]) -> tuple[list[int], list[int], list[int]]:
    """sacrebleu's ``trace_to_alignment`` of the flipped trace, from ops in forward order."""
    pos_hyp = -1
    align: list[int] = []
    ref_err: list[int] = []
    hyp_err: list[int] = []
    for op in ops:
        if op == _NOP or op == _SUB:
            pos_hyp += 1
            align.append(pos_hyp)
            err = 1 if op == _SUB else 0
            hyp_err.append(err)
            ref_err.append(err)
        elif op == _DEL:          # a hypothesis word with no reference word ('i' once flipped)
            pos_hyp += 1
            hyp_err.append(1)
        else:                     # a reference word with no hypothesis word ('d' once flipped)
            align.append(pos_hyp)
            ref_err.append(1)
    return align, ref_err, hyp_err


# -- sacrebleu's beam edit distance, cell by cell (used when the bound cannot vouch for D) ----

def _banded_rows(words_h: list[str], words_r: list[str], band: _BandBound, trace: bool):
    n_r = len(words_r)
    prev = list(range(n_r + 1))
    ops_rows = [[_INS] * (n_r + 1)] if trace else None
    for i in range(1, len(words_h) + 1):
        lo, hi = band.rows[i]
        cur = [_INF] * (n_r + 1)
        ops = [-1] * (n_r + 1) if trace else None
        word = words_h[i - 1]
        for j in range(lo, hi):
            if j == 0:
                cur[0] = prev[0] + 1
                if ops is not None:
                    ops[0] = _DEL
                continue
            best = _INF
            op = -1
            cost = prev[j - 1] + (0 if word == words_r[j - 1] else 1)
            if cost < best:
                best = cost
                op = _NOP if word == words_r[j - 1] else _SUB
            cost = prev[j] + 1
            if cost < best:
                best = cost
                op = _DEL
            cost = cur[j - 1] + 1
            if cost < best:
                best = cost
                op = _INS
            cur[j] = best
            if ops is not None:
                ops[j] = op
        prev = cur
        if ops_rows is not None and ops is not None:
            ops_rows.append(ops)
    return prev[n_r], ops_rows


def _banded_distance(words_h: list[str], words_r: list[str], band: _BandBound) -> int:
    return _banded_rows(words_h, words_r, band, False)[0]


def _banded_alignment(words_h: list[str], words_r: list[str], band: _BandBound):
    distance, ops_rows = _banded_rows(words_h, words_r, band, True)
    i, j = len(words_h), len(words_r)
    ops = []
    while i > 0 or j > 0:
        op = ops_rows[i][j]
        ops.append(op)
        if op == _NOP or op == _SUB:
            i -= 1
            j -= 1
        elif op == _INS:
            j -= 1
        elif op == _DEL:
            i -= 1
        else:
            raise RuntimeError(f"TER: unreachable cell ({i}, {j}) in the beam edit distance")
    ops.reverse()
    return (distance, *_align(ops))

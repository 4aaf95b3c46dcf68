"""Value types of the BLEU engine: summable sufficient statistics and a finished result."""
from __future__ import annotations

from dataclasses import dataclass
from operator import add
from typing import Any, Sequence

from opik_metrics.core.statistics import whole_or_fraction


@dataclass(frozen=True, slots=True)
class BLEUStats:
    """Sufficient statistics of one segment or a corpus; ``a + b`` sums them (corpus BLEU, bootstrap).

    ``sum(list_of_stats)`` works too (``0 + stats`` is ``stats``).
    """

    correct: tuple[int, ...]  # matched (clipped) n-grams per order
    total: tuple[int, ...]  # hypothesis n-grams per order
    sys_len: int  # hypothesis length in tokens
    ref_len: int  # closest reference length (ties -> shorter), as sacrebleu

    # Counts are whole numbers, except under ``multi_reference="mean"``, where an item's statistics
    # are the mean of its single-reference ones (``BLEUScorer.mean_statistics``): fractions then.

    def __add__(self, other: BLEUStats) -> BLEUStats:
        if not isinstance(other, BLEUStats):
            return NotImplemented
        if len(self.correct) != len(other.correct):
            raise ValueError(
                f"cannot add BLEU statistics of max n-gram order {len(self.correct)} "
                f"and {len(other.correct)}"
            )
        return BLEUStats(
            tuple(map(add, self.correct, other.correct)),
            tuple(map(add, self.total, other.total)),
            self.sys_len + other.sys_len,
            self.ref_len + other.ref_len,
        )

    def as_list(self) -> list[int]:
        """The statistics as one flat list: correct per order, total per order, sys_len, ref_len."""
        return [*self.correct, *self.total, self.sys_len, self.ref_len]

    @classmethod
    def from_list(cls, values: Sequence[float], max_ngram_order: int) -> BLEUStats:
        """The inverse of ``as_list``: numbers that are whole (e.g. summed floats) become ints, a
        fraction (reference-averaged statistics, ``multi_reference="mean"``) stays as it is."""
        o = max_ngram_order
        if len(values) != 2 * o + 2:
            raise ValueError(f"BLEU statistics of order {o} have {2 * o + 2} numbers, got {len(values)}")
        v: list[Any] = [whole_or_fraction(x) for x in values]
        return cls(tuple(v[:o]), tuple(v[o:2 * o]), v[2 * o], v[2 * o + 1])

    def __radd__(self, other: object) -> BLEUStats:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented


@dataclass(frozen=True, slots=True)
class BLEUResult:
    """A BLEU score with its parts, on a 0..1 scale (sacrebleu's values divided by 100)."""

    score: float  # in [0, 1]
    precisions: tuple[float, ...]  # (smoothed) n-gram precisions, in [0, 1]
    bp: float  # brevity penalty
    sys_len: int
    ref_len: int
    counts: tuple[int, ...]  # matched n-grams per order (never smoothed)
    totals: tuple[int, ...]  # hypothesis n-grams per order (never smoothed)
    effective_order: int  # n-gram orders actually used in the geometric mean

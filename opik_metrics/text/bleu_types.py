"""Value types of the BLEU engine: summable sufficient statistics and a finished result."""
from __future__ import annotations

from dataclasses import dataclass
from operator import add


@dataclass(frozen=True, slots=True)
class BLEUStats:
    """Sufficient statistics of one segment or a corpus; ``a + b`` sums them (corpus BLEU, bootstrap).

    ``sum(list_of_stats)`` works too (``0 + stats`` is ``stats``).
    """

    correct: tuple[int, ...]  # matched (clipped) n-grams per order
    total: tuple[int, ...]  # hypothesis n-grams per order
    sys_len: int  # hypothesis length in tokens
    ref_len: int  # closest reference length (ties -> shorter), as sacrebleu

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

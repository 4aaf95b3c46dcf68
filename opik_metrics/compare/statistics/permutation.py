"""The paired permutation test (approximate randomization, Noreen 1989; sacrebleu's ``paired-ar``):
under the null that the two systems are exchangeable, each unit (an item, or a cluster) swaps its two
systems' values or statistics with probability 1/2, and the statistic's difference is recomputed on
each such shuffle. The swaps are drawn exactly as sacrebleu draws them (``default_rng(seed).integers(2,
size=(permutations, units), dtype=bool)``), so that with its p-value rule the p equals sacrebleu's.

Knows nothing of Opik or files: a statistic's per-unit values (``MeanStatistic``) or rows and formula
(``CorpusStatistic``), numpy and formulas only."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from opik_metrics.compare.statistics.bootstrap import (DEFAULT_SEED, CorpusStatistic, MeanStatistic, ResampledOnce,
                                                       Statistic, p_values_from_null)

__all__ = ["DEFAULT_PERMUTATIONS", "PermutationResult", "paired_permutation", "swap_blocks"]

#: Shuffles by default: as many as the bootstrap's resamples (the smallest p 1/1001; 100,000 items take
#: 0.25 s a score). sacrebleu's paired-ar draws 10,000: ask for them to reproduce its p-values.
DEFAULT_PERMUTATIONS = 1_000

#: Elements of one block of swaps (a multiple of 32 rows: numpy draws booleans 32 to a word, so blocks
#: of whole words continue the one stream exactly as a single draw would).
_BLOCK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class PermutationResult:
    """The permutation test's two-sided p, the one-sided p in the observed direction, and its size."""

    p_value: float
    p_one_sided: float
    permutations: int


def swap_blocks(n_units: int, permutations: int, seed: int) -> Iterator[np.ndarray]:
    """The (permutations, n_units) boolean swaps, True where a unit's two systems trade places, a block
    of rows at a time; together exactly sacrebleu's one draw for the same seed."""
    rng = np.random.default_rng(seed)
    step = max(32, (_BLOCK_ELEMENTS // max(1, n_units)) // 32 * 32)
    for start in range(0, permutations, step):
        yield rng.integers(2, size=(min(step, permutations - start), n_units), dtype=bool)


def _inner(statistic: Statistic) -> Statistic:
    return statistic.statistic if isinstance(statistic, ResampledOnce) else statistic


def shuffled_differences(baseline: Statistic, system: Statistic, permutations: int, seed: int) -> np.ndarray:
    """System minus baseline on each shuffle: (permutations,) values."""
    base, other = _inner(baseline), _inner(system)
    if base.n_items != other.n_items:
        raise ValueError(f"baseline has {base.n_items} units but system has {other.n_items}; "
                         "a paired test needs both on the same items")
    out = np.empty(permutations, dtype=np.float64)
    start = 0
    if isinstance(base, MeanStatistic) and isinstance(other, MeanStatistic):
        gain = other.values - base.values
        total = gain.sum()
        for block in swap_blocks(base.n_items, permutations, seed):
            out[start:start + len(block)] = (total - 2.0 * (block.astype(np.float64) @ gain)) / base.n_items
            start += len(block)
        return out
    if isinstance(base, CorpusStatistic) and isinstance(other, CorpusStatistic):
        rows_a, rows_b = base.matrix, other.matrix
        if rows_a.shape != rows_b.shape:
            raise ValueError(f"the two sides' statistics differ in shape ({rows_a.shape} and {rows_b.shape}); "
                             "a permutation test swaps rows of one kind")
        sum_a, sum_b, moved = rows_a.sum(axis=0), rows_b.sum(axis=0), rows_b - rows_a
        for block in swap_blocks(base.n_items, permutations, seed):
            swapped = block.astype(np.float64) @ moved         # what the swapped units move from one side to the other
            pseudo_base, pseudo_system = sum_a + swapped, sum_b - swapped
            out[start:start + len(block)] = [other.formula(s) - base.formula(b) for s, b in
                                             zip(pseudo_system.tolist(), pseudo_base.tolist())]
            start += len(block)
        return out
    raise ValueError(f"a permutation test needs two statistics of one kind, got {type(base).__name__} and "
                     f"{type(other).__name__}")


def paired_permutation(baseline: Statistic, system: Statistic, permutations: int = DEFAULT_PERMUTATIONS,
                       seed: int = DEFAULT_SEED, p_value: str = "calibrated") -> PermutationResult:
    """The permutation test of ``system`` against ``baseline`` over the same units. ``p_value``:
    "calibrated" counts shuffles at least as far from 0 as observed (|d*| >= |d|); "sacrebleu" counts
    those strictly beyond it, as sacrebleu does (with ties, as discrete scores have, that undercounts)."""
    if isinstance(permutations, bool) or not isinstance(permutations, int) or permutations < 1:
        raise ValueError(f"permutations must be an integer >= 1, got {permutations!r}")
    observed = float(system.value) - float(baseline.value)
    shuffled = shuffled_differences(baseline, system, permutations, seed)
    two, one = p_values_from_null(observed, shuffled, p_value, centred=False)
    return PermutationResult(two, one, permutations)

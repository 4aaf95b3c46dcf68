"""Pass/fail scores (an LLM judge's yes/no, an exact match): the field's own tests instead of a mean
bootstrap. Two systems judged on the same items are compared by the exact McNemar test on the items
where they disagree; each pass rate gets a Wilson score interval and their difference Newcombe's
interval for paired proportions (his method 10: Wilson limits combined with the items' phi).
Numbers and formulas only: this module knows nothing of records, files or Opik."""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

import numpy as np

__all__ = ["McNemar", "is_binary", "mcnemar_exact", "newcombe_paired_interval", "wilson_interval"]


def is_binary(values: Sequence[float] | np.ndarray) -> bool:
    """Whether every value is exactly 0 or 1 (a pass/fail score), and there is at least one."""
    array = np.asarray(values, dtype=np.float64)
    return array.size > 0 and bool(np.all((array == 0.0) | (array == 1.0)))


@dataclass(frozen=True)
class McNemar:
    """The paired 2x2 table of two pass/fail systems and the exact McNemar test on it.

    ``both``: items both pass; ``system_only`` / ``baseline_only``: the discordant items; ``neither``.
    ``p_value`` is two-sided, ``p_one_sided`` the one-sided p in the direction observed (the side with
    more discordant items), both exact binomial probabilities with p = 1/2 (statsmodels'
    ``mcnemar(exact=True)``; not the mid-p)."""

    both: int
    system_only: int
    baseline_only: int
    neither: int
    p_value: float
    p_one_sided: float

    @property
    def n(self) -> int:
        return self.both + self.system_only + self.baseline_only + self.neither


def _binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), summed in log space (exact to float rounding for any n)."""
    if k >= n:
        return 1.0
    ks = np.arange(k + 1, dtype=np.float64)
    log_pmf = (math.lgamma(n + 1) - np.array([math.lgamma(x + 1) + math.lgamma(n - x + 1) for x in ks])
               - n * math.log(2.0))
    top = float(log_pmf.max())
    return min(1.0, math.exp(top) * float(np.exp(log_pmf - top).sum()))


def mcnemar_exact(baseline: Sequence[float], system: Sequence[float]) -> McNemar:
    """The exact McNemar test of ``system`` against ``baseline``, two 0/1 sequences over the same items."""
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(system, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"baseline and system must be paired 1-D sequences, got shapes {a.shape} and {b.shape}")
    if not (is_binary(a) and is_binary(b)):
        raise ValueError("McNemar's test needs pass/fail values: every value 0 or 1")
    both = int(np.count_nonzero((a == 1) & (b == 1)))
    system_only = int(np.count_nonzero((a == 0) & (b == 1)))
    baseline_only = int(np.count_nonzero((a == 1) & (b == 0)))
    neither = a.size - both - system_only - baseline_only
    discordant = system_only + baseline_only
    if discordant == 0:
        one = two = 1.0
    else:
        one = _binomial_half_cdf(min(system_only, baseline_only), discordant)
        two = min(1.0, 2.0 * one)
    return McNemar(both, system_only, baseline_only, neither, two, one)


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval for a pass rate ``successes / n`` (statsmodels' ``proportion_confint``
    with ``method="wilson"``): inside [0, 1] and never of zero width at 0 or n passes."""
    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"a pass rate needs 0 <= successes <= n and n >= 1, got {successes} of {n}")
    z = _z(confidence)
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_paired_interval(table: McNemar, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's (1998, Statistics in Medicine 17:2635, method 10) interval for the difference of
    two paired pass rates, system minus baseline: each rate's Wilson limits, combined through the
    phi coefficient of the 2x2 table (phi taken as 0 for 0 <= ad - bc <= n/2, reduced by n/2 above)."""
    n = table.n
    a, b, c, d = table.both, table.system_only, table.baseline_only, table.neither
    p1, p2 = (a + b) / n, (a + c) / n                     # system's and baseline's pass rates
    l1, u1 = wilson_interval(a + b, n, confidence)
    l2, u2 = wilson_interval(a + c, n, confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    corrected = cross - n / 2 if cross > n / 2 else (cross if cross < 0 else 0.0)
    phi = corrected / math.sqrt(margins) if margins > 0 else 0.0
    delta = p1 - p2
    low = delta - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = delta + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, low), min(1.0, high)

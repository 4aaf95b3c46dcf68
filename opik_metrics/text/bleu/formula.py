"""BLEU from its sufficient statistics: brevity penalty, smoothing, effective order, weights.

Follows sacrebleu 2.6.0 step by step (percent-scale precisions, the same float operations in
the same order) so that uniform-weight scores are bit-identical to sacrebleu's divided by 100
(clamped to 1.0 where sacrebleu's rounding goes an ulp above 100).
"""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence

from opik_metrics.text.bleu.types import BLEUResult

#: Smoothing methods (Chen & Cherry, 2014) and the default value of those that take one.
SMOOTH_DEFAULTS: dict[str, Optional[float]] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}


def brevity_penalty(sys_len: int, ref_len: int) -> float:
    """exp(1 - r/c) when the hypothesis (c tokens) is shorter than the reference (r), else 1."""
    if sys_len >= ref_len:
        return 1.0
    return math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0


class BLEUFormula:
    """BLEU = BP * exp(sum_n w_n log p_n) for one smoothing/weights configuration.

    ``weights=None`` means uniform weights (sacrebleu's geometric mean, computed exactly as it
    does). With effective order only the leading orders that have hypothesis n-grams are used,
    their weights renormalised.
    """

    __slots__ = ("_method", "_k", "_weights", "_add_k")

    def __init__(self, smooth_method: str, smooth_value: Optional[float],
                 weights: Optional[Sequence[float]] = None) -> None:
        if smooth_method not in SMOOTH_DEFAULTS:
            raise ValueError(
                f"unknown smooth_method {smooth_method!r}; choose one of: {', '.join(SMOOTH_DEFAULTS)}"
            )
        if smooth_value is not None:
            _check_smooth_value(smooth_method, smooth_value)
        self._method = smooth_method
        self._k = SMOOTH_DEFAULTS[smooth_method] if smooth_value is None else smooth_value
        self._weights = None if weights is None else tuple(weights)
        self._add_k = smooth_method == "add-k"

    def __call__(self, correct: Sequence[int], total: Sequence[int], sys_len: int, ref_len: int,
                 effective_order: bool) -> BLEUResult:
        """The score and its parts from matched/total n-gram counts per order and the lengths."""
        max_order = len(correct)
        add_k = self._add_k
        k = self._k
        bp = brevity_penalty(sys_len, ref_len)

        # Orders used: all of them, or (effective order) those before the first empty order;
        # add-k (k > 0) makes every order after the first non-empty.
        used = max_order
        if effective_order:
            if add_k and k:
                used = max_order if total[0] else 0
            elif 0 in total:
                used = list(total).index(0)

        percents = [0.0] * max_order
        score = 0.0
        if any(correct):  # no match at all: BLEU 0 whatever the smoothing (sacrebleu #141)
            method = self._method
            mteval = 1.0
            for n in range(max_order):
                c: float = correct[n]
                t: float = total[n]
                if add_k and n:
                    assert k is not None
                    c += k
                    t += k
                if t == 0:
                    break
                if c:
                    percents[n] = 100.0 * c / t
                elif method == "exp":
                    mteval *= 2
                    percents[n] = 100.0 / (mteval * t)
                elif method == "floor":
                    assert k is not None
                    percents[n] = 100.0 * k / t
            # sacrebleu's 100-scale arithmetic can land an ulp above 100 (exp(log(100)) for a
            # perfect match is 100.00000000000004): clamp to the documented [0, 1].
            score = min(self._mean_of_logs(percents[:used], bp) / 100.0, 1.0)

        return BLEUResult(score, tuple([p / 100.0 for p in percents]), bp, sys_len, ref_len,
                          tuple(correct), tuple(total), used)

    def _mean_of_logs(self, percents: list[float], bp: float) -> float:
        """bp * exp(weighted mean of log precisions), percent scale; 0 if a weighted one is 0."""
        weights = self._weights
        if weights is None:
            if not percents or 0.0 in percents:
                return 0.0  # sacrebleu: log(0) floored to -9999999999, and exp() of that is 0.0
            # built-in sum over the logs in order, as sacrebleu does: bit-identical scores
            return bp * math.exp(sum(map(math.log, percents)) / len(percents))
        used_weights = weights[: len(percents)]
        weight_sum = sum(used_weights)
        if weight_sum <= 0:
            return 0.0  # all the weight is on orders that were not used
        log_sum = 0.0
        for w, p in zip(used_weights, percents):
            if w > 0:
                if p == 0.0:
                    return 0.0
                log_sum += w * math.log(p)
        return bp * math.exp(log_sum / weight_sum)


def _check_smooth_value(method: str, value: float) -> None:
    """A smoothing value is a finite number >= 0, and at most 1 for ``floor`` (keeps p <= 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"smooth_value must be a finite number, got {value!r}")
    if value < 0:
        raise ValueError(f"smooth_value must be >= 0, got {value!r}")
    if method == "floor" and value > 1:
        raise ValueError(f"smooth_value for 'floor' must be in [0, 1] (a fraction of a match), got {value!r}")

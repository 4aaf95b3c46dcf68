"""Corpus formulas of the language-model metrics, from summed per-text statistics (no torch, so
that a comparison can recompute corpus perplexity or KL without loading a model stack)."""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from opik_metrics.core.statistics import corpus_formula
from opik_metrics.core.statistics_checks import first_violation, negative

PERPLEXITY_FIELDS = ("nll_sum", "n_tokens")
KL_FIELDS = ("kl_sum", "n_tokens")


def safe_exp(x: float) -> float:
    """exp(x), or inf where it overflows."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _check_tokens(rows: Any, **_: Any) -> Optional[tuple[int, str]]:
    """The scored tokens are a count."""
    return first_violation(negative(rows, [1], ["n_tokens"]))


def _check_nll(rows: Any) -> Optional[tuple[int, str]]:
    """A negative log-likelihood sum is at least 0 (every token's probability is at most 1), give or
    take rounding (a log-softmax in half precision can give -1e-7 for a near-certain token)."""
    import numpy as np      # only when checking: this module loads with the catalog

    slack = 1e-6 * np.maximum(1.0, rows[:, 1])
    return first_violation(negative(rows, [1], ["n_tokens"]),
                           (rows[:, 0] < -slack, "a negative log-likelihood sum below 0 (nll_sum is -log p, never "
                                                 "below 0)"))


@corpus_formula(check=_check_nll)
def perplexity_from_statistics(values: Sequence[float]) -> float:
    """exp(total NLL / total tokens); 1.0 when no token is scored (an empty sum of log-likelihoods)."""
    nll_sum, n_tokens = values
    return safe_exp(nll_sum / n_tokens) if n_tokens else 1.0


@corpus_formula(check=_check_tokens)
def kl_from_statistics(values: Sequence[float], *, reduction: str = "mean") -> float:
    """Token-weighted mean KL (or the total, ``reduction="sum"``); 0.0 when no token is scored."""
    kl_sum, n_tokens = values
    if reduction == "sum":
        return float(kl_sum)
    return kl_sum / n_tokens if n_tokens else 0.0

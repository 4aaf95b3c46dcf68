"""Multiple-testing corrections of p-values: none, Holm's step-down and Bonferroni.

Testing five scores at alpha = 0.05 each gives far more than a 5% chance that at least one looks
significant by luck; these corrections bound that family-wise chance by alpha. A missing p-value
(None or NaN: a pair with no test) is not part of the family: it is left out of the count m and
stays None in the result.
"""
from __future__ import annotations

import math
import numbers
from typing import Optional, Sequence

__all__ = ["CORRECTIONS", "adjust", "correction_label"]

#: The accepted ``method`` names, the default (Holm) first.
CORRECTIONS = ("holm", "bonferroni", "none")

_LABELS = {"holm": "Holm", "bonferroni": "Bonferroni", "none": "uncorrected"}


def correction_label(method: str) -> str:
    """How reports name a correction: "Holm", "Bonferroni" or "uncorrected"."""
    return _LABELS[_check_method(method)]


def _check_method(method: object) -> str:
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {method!r}")
    return str(method)


def _p_or_none(value: object, position: int) -> Optional[float]:
    """A p-value in [0, 1] as a float, None for a missing one (None or NaN); anything else is an error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"p_values[{position}] must be a number in [0, 1] or None, got {value!r}")
    p = float(value)
    if math.isnan(p):
        return None
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p_values[{position}] is {p!r}; a p-value lies in [0, 1]")
    return p


def adjust(p_values: Sequence[Optional[float]], method: str = "holm") -> list[Optional[float]]:
    """Adjusted p-values, in the order given; compare each with alpha as a raw p-value would be.

    - ``none``: the raw p-values.
    - ``bonferroni``: min(1, m * p).
    - ``holm``: with the m p-values sorted ascending, p_(i) becomes min(1, max over j <= i of
      (m - j + 1) * p_(j)) (Holm 1979, as adjusted p-values: Wright 1992). Monotone in the raw
      p-value, never below it, never above Bonferroni's; tied p-values get the same adjusted value.

    m counts the p-values present; None or NaN entries are left out of it and come back as None.
    """
    method = _check_method(method)
    values = [_p_or_none(p, k) for k, p in enumerate(p_values)]
    if method == "none":
        return values
    present = {k: p for k, p in enumerate(values) if p is not None}
    m = len(present)
    out: list[Optional[float]] = [None] * len(values)
    if method == "bonferroni":
        for k, p in present.items():
            out[k] = min(1.0, m * p)
        return out
    running = 0.0
    for rank, k in enumerate(sorted(present, key=present.__getitem__)):
        running = max(running, min(1.0, (m - rank) * present[k]))
        out[k] = running
    return out

"""How the comparison writes its numbers, the same on the report page and in the terminal."""
from __future__ import annotations

import math
from typing import Any

from opik_metrics.core.numbers import is_number

DASH = "—"   # a number that is not there (no test, no score)


def fmt_num(value: Any, signed: bool = False) -> str:
    """A number with 4 significant digits (0.4123, 23.46, 1234); "—" for a missing one."""
    if not is_number(value):
        return DASH
    if isinstance(value, int):
        return f"{value:+d}" if signed else str(value)
    sign = "+" if signed else ""
    if value == 0:
        return f"{sign}0" if not signed else "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= 6 or magnitude < -4:
        return f"{value:{sign}.3e}"
    return f"{value:{sign}.{max(0, 3 - magnitude)}f}"


def fmt_p(value: Any) -> str:
    """A p-value: "<0.001" below 0.001, three decimals otherwise, "—" when there is none."""
    if not is_number(value):
        return DASH
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def fmt_interval(low: Any, high: Any, signed: bool = False) -> str:
    """``[low, high]`` with the same decimals for both ends (4 significant digits of the larger one)."""
    if not (is_number(low) and is_number(high)):
        return DASH
    larger = max(abs(low), abs(high))
    if larger == 0 or not 1e-4 <= larger < 1e6:
        return f"[{fmt_num(low, signed)}, {fmt_num(high, signed)}]"
    decimals = max(0, 3 - math.floor(math.log10(larger)))
    sign = "+" if signed else ""
    return f"[{low:{sign}.{decimals}f}, {high:{sign}.{decimals}f}]"

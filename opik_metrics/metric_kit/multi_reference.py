"""What metrics with a choice of rule for several references share: the check of the mode asked
for, and the mean of per-reference statistics rows (``multi_reference="mean"``: an item's
statistics are the mean over its references of its single-reference statistics, so that the corpus
score is the metric's own formula of their sum, ``from_statistics(sum(statistics))``)."""
from __future__ import annotations

from typing import Sequence

#: The mode that averages single-reference scores (BARTScore's name for it too).
MEAN = "mean"


def check_mode(value: object, modes: Sequence[str]) -> str:
    """``value`` when it is one of ``modes``, else a ValueError naming the option and its choices."""
    if not isinstance(value, str) or value not in modes:
        raise ValueError(f"multi_reference: expected one of {', '.join(modes)}, got {value!r}")
    return value


def mean_rows(rows: Sequence[Sequence[float]]) -> list[float]:
    """The mean of statistics rows, field by field (each field's sum, in row order, over their number)."""
    if not rows:
        raise ValueError("the mean of no statistics rows")
    n = len(rows)
    return [sum(column) / n for column in zip(*rows)]


def empty_note(empty: Sequence[int], what: str) -> str:
    """Why a mean over references counts some of them as 0: ``empty`` are their indices."""
    which = ", ".join(map(str, empty))
    return f"references {which} have no {what}: each scores 0 in the mean over references"

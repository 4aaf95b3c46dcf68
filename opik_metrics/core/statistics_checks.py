"""Checks of item statistics that no real item can have (a negative count, more matches than
n-grams), which a corpus formula states with ``@corpus_formula(check=...)``: a comparison refuses a
damaged or hand-edited record instead of computing a corpus score from it. Vectorised over rows;
numpy is imported when a check runs (a formula's module imports this one at start-up).
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence


def statistics_problem(formula: Callable[..., float], rows: Any, **options: Any) -> Optional[tuple[int, str]]:
    """The first invalid row of ``rows`` (items x fields) under ``formula``'s own check, or None
    (also when the formula states no check)."""
    import numpy as np

    check = getattr(formula, "__statistics_check__", None)
    matrix = np.asarray(rows, dtype=np.float64)
    if check is None or matrix.size == 0:
        return None
    return check(matrix.reshape(len(matrix), -1), **options)


def first_violation(*rules: tuple[Any, str]) -> Optional[tuple[int, str]]:
    """The first row breaking any of ``rules`` ((a boolean mask over rows, the rule in words), in
    order), as (row index, words), or None: the building block of a formula's statistics check."""
    import numpy as np

    found: Optional[tuple[int, str]] = None
    for mask, words in rules:
        hits = np.flatnonzero(mask)
        if hits.size and (found is None or hits[0] < found[0]):
            found = (int(hits[0]), words)
    return found


def negative(rows: Any, columns: Any, names: Sequence[str]) -> tuple[Any, str]:
    """The rule "these columns are counts": a mask of the rows with a negative one."""
    import numpy as np

    below = rows[:, columns] < 0
    bad = np.any(below, axis=1)
    hits = np.flatnonzero(bad)
    if not hits.size:
        return bad, "no count below 0"
    column = int(np.flatnonzero(below[hits[0]])[0])
    return bad, f"{names[column]} is {rows[hits[0], columns][column]:g}, a count below 0"


def above(rows: Any, small: Sequence[int], large: Sequence[int], words: str) -> tuple[Any, str]:
    """The rule "column small[k] never exceeds column large[k]": a mask of the rows where one does."""
    import numpy as np

    return np.any(rows[:, list(small)] > rows[:, list(large)], axis=1), words

"""Summable per-item statistics (sacrebleu's extract-statistics / compute-from-statistics,
torchmetrics' update / compute): items give vectors, ``a + b`` merges them, and a corpus formula
turns the total into the corpus score. The bootstrap resamples them; Ray reduces them.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Sequence

Formula = Callable[..., float]


@dataclass(frozen=True, slots=True)
class Statistics:
    """Numbers under named fields for one item (or a sum of items) of one metric."""

    fields: tuple[str, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.fields) != len(self.values):
            raise ValueError(f"statistics have {len(self.fields)} fields but {len(self.values)} values")

    def __add__(self, other: "Statistics") -> "Statistics":
        if not isinstance(other, Statistics):
            return NotImplemented
        if other.fields != self.fields:
            raise ValueError(f"cannot add statistics of fields {self.fields} and {other.fields}: "
                             "they come from different metrics or options")
        return Statistics(self.fields, tuple(a + b for a, b in zip(self.values, other.values)))

    def __radd__(self, other: object) -> "Statistics":
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self    # sum(list_of_statistics)
        return NotImplemented

    def __getitem__(self, field: str) -> float:
        return self.values[self.fields.index(field)]

    def as_list(self) -> list[float]:
        """The values, for storing with an item's score (fields live in the metric's facts)."""
        return list(self.values)


def corpus_formula(function: Formula) -> Formula:
    """Mark ``function(values, **options) -> float`` as a corpus formula that stored facts may name."""
    function.__corpus_formula__ = True  # type: ignore[attr-defined]
    return function


def formula_path(function: Formula) -> str:
    """``module:name`` of a corpus formula, the form recorded in a metric's facts."""
    if not getattr(function, "__corpus_formula__", False):
        raise ValueError(f"{function!r} is not marked with @corpus_formula")
    return f"{function.__module__}:{function.__qualname__}"


def resolve_formula(path: str) -> Formula:
    """The corpus formula recorded as ``module:name``; only functions marked @corpus_formula."""
    module, _, name = str(path).partition(":")
    try:
        function: Any = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ValueError(f"corpus formula {path!r} cannot be loaded: {exc}") from None
    if not getattr(function, "__corpus_formula__", False):
        raise ValueError(f"{path!r} is not a corpus formula (not marked with @corpus_formula)")
    return function


@corpus_formula
def mean_formula(values: Sequence[float], *, field: int = 0) -> float:
    """Mean of per-item scores: ``values`` ends with the item count."""
    count = values[-1]
    return values[field] / count if count else 0.0

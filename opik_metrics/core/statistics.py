"""Summable per-item statistics (sacrebleu's extract-statistics / compute-from-statistics,
torchmetrics' update / compute): items give vectors, ``a + b`` merges them, and a corpus formula
turns the total into the corpus score. The bootstrap resamples them; Ray reduces them.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

Formula = Callable[..., float]
#: ``check(rows, **options)``: the first item row (of a rows x fields array) whose statistics no
#: real item can have, as (row index, the rule it breaks in words), or None when every row is valid.
StatisticsCheck = Callable[..., Optional[tuple[int, str]]]


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


#: The corpus formulas opik-metrics ships, as recorded in facts (``module:name``). A recorded name
#: among these imports its module (ours, and only that one) the first time it is resolved.
SHIPPED_FORMULAS = frozenset({
    "opik_metrics.core.statistics:mean_formula",
    "opik_metrics.text.bleu.scorer:bleu_from_statistics",
    "opik_metrics.text.chrf.scorer:chrf_from_statistics",
    "opik_metrics.text.ter.scorer:ter_from_statistics",
    "opik_metrics.text.coco.bleu:coco_bleu_from_statistics",
    "opik_metrics.text.coco.suite:coco_from_statistics",
    "opik_metrics.text.meteor.corpus:meteor_from_statistics",
    "opik_metrics.neural.lm.formulas:perplexity_from_statistics",
    "opik_metrics.neural.lm.formulas:kl_from_statistics",
})

_REGISTERED: dict[str, Formula] = {}     # module:name -> formula, for every formula defined in this process


class UnknownFormula(ValueError):
    """Recorded facts name a corpus formula that is neither ours nor registered in this process: it is
    not imported (data never chooses the code that runs)."""


def corpus_formula(function: Formula | None = None, *, check: StatisticsCheck | None = None) -> Any:
    """Mark ``function(values, **options) -> float`` as a corpus formula that stored facts may name,
    and register it under its ``module:name``: a user's own formula is found once its module is imported.
    ``@corpus_formula(check=...)`` also states which item statistics are impossible (negative counts,
    matches above their totals), so that a comparison refuses a damaged record instead of using it."""
    def mark(formula: Formula) -> Formula:
        formula.__corpus_formula__ = True  # type: ignore[attr-defined]
        formula.__statistics_check__ = check  # type: ignore[attr-defined]
        _REGISTERED[_path_of(formula)] = formula
        return formula
    return mark if function is None else mark(function)


def _path_of(function: Formula) -> str:
    return f"{function.__module__}:{function.__qualname__}"


def formula_path(function: Formula) -> str:
    """``module:name`` of a corpus formula, the form recorded in a metric's facts (the formula is
    registered, so facts made in this process resolve in it)."""
    if not getattr(function, "__corpus_formula__", False):
        raise ValueError(f"{function!r} is not marked with @corpus_formula")
    path = _path_of(function)
    _REGISTERED.setdefault(path, function)
    return path


def resolve_formula(path: str, experiment: str | None = None) -> Formula:
    """The corpus formula recorded as ``module:name``: one registered in this process (marked
    @corpus_formula where it was defined, or named by facts made here) or one opik-metrics ships.
    Nothing else is imported: any other name raises ``UnknownFormula`` naming ``experiment``."""
    path = str(path)
    function = _REGISTERED.get(path)
    if function is None and path in SHIPPED_FORMULAS:
        importlib.import_module(path.partition(":")[0])        # ours: defining it registers it
        function = _REGISTERED.get(path)
    if function is None:
        who = f"experiment {experiment!r} records" if experiment is not None else "the facts name"
        raise UnknownFormula(f"{who} a corpus formula {path!r} that is not one of opik-metrics' formulas nor a "
                             "registered one: not loaded (a formula of your own registers itself with "
                             "@corpus_formula when its module is imported)")
    return function


def _check_mean(rows: Any, *, field: int = 0) -> Optional[tuple[int, str]]:
    """The item count is a count (the scores may be any number)."""
    from opik_metrics.core.statistics_checks import first_violation, negative   # it imports this module

    return first_violation(negative(rows, [-1], ["items"]))


@corpus_formula(check=_check_mean)
def mean_formula(values: Sequence[float], *, field: int = 0) -> float:
    """Mean of per-item scores: ``values`` ends with the item count."""
    count = values[-1]
    return values[field] / count if count else 0.0


def whole_or_fraction(value: float) -> Any:
    """A statistic as an int when it is whole, else the float it is: counts stay exact, and
    ``multi_reference="mean"``'s reference-averaged statistics keep their fractions."""
    if isinstance(value, int):
        return int(value)
    number = float(value)
    return int(number) if number.is_integer() else number

"""METEOR's statistics as one flat row of numbers (summable, storable beside any metric's), and the
jar's corpus score from their sums."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from opik_metrics.core import corpus_formula
from opik_metrics.core.statistics import whole_or_fraction
from opik_metrics.core.statistics_checks import first_violation, negative
from opik_metrics.text.meteor.align import MODULES
from opik_metrics.text.meteor.scorer import MeteorStatistics, score_statistics

_SIDES = ("test_content", "reference_content", "test_function", "reference_function")
FIELDS: tuple[str, ...] = (
    "test_length", "reference_length", "test_function_words", "reference_function_words",
    *(f"{side}_{module}" for module in MODULES for side in _SIDES),
    "corpus_chunks", "test_word_matches", "reference_word_matches")


def flat_statistics(s: MeteorStatistics) -> tuple[float, ...]:
    """``s`` in ``FIELDS`` order; a segment matched whole in one chunk adds no chunk (the jar's
    corpus sum leaves it out), so plain sums of these rows are what the jar scores."""
    row: list[float] = [s.test_length, s.reference_length, s.test_function_words, s.reference_function_words]
    for m in range(len(MODULES)):
        row += [s.test_content_matches[m], s.reference_content_matches[m], s.test_function_matches[m],
                s.reference_function_matches[m]]
    row += [0 if s.is_whole_match() else s.chunks, s.test_word_matches, s.reference_word_matches]
    return tuple(float(v) for v in row)


def _check_meteor(rows: Any) -> Optional[tuple[int, str]]:
    """METEOR's statistics are counts (lengths, matches per module, chunks)."""
    return first_violation(negative(rows, list(range(len(FIELDS))), FIELDS))


@corpus_formula(check=_check_meteor)
def meteor_from_statistics(values: Sequence[float]) -> float:
    """The jar's final (corpus) score of summed ``flat_statistics`` rows."""
    if len(values) != len(FIELDS):
        raise ValueError(f"METEOR statistics have {len(FIELDS)} numbers, got {len(values)}")
    ints = [whole_or_fraction(v) for v in values]       # fractions: reference-averaged statistics
    n = len(MODULES)
    test_content, ref_content, test_function, ref_function = (
        tuple(ints[4 + 4 * m + side] for m in range(n)) for side in range(4))
    stats = MeteorStatistics(ints[0], ints[1], ints[2], ints[3], test_content, ref_content, test_function,
                             ref_function, ints[-3], ints[-2], ints[-1])
    return score_statistics(stats)

"""What an Opik server can store as a score, and marking what it cannot as failed.

The server keeps a feedback score only when it is finite and within +-999,999,999.999999999, and
it validates a batch of up to 1,000 scores whole (one bad value refuses all of them, and the SDK
only logs that); experiment scores are read back through a Decimal(18, 9), the same range. A
result outside it is therefore marked ``scoring_failed`` (Opik's SDK sends no failed result), its
value kept in ``metadata["unsent_value"]`` and its reason saying why, so the other scores arrive.
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Iterable

from _opik import ScoreResult

# apps/opik-backend: ValidationUtils.MAX_FEEDBACK_SCORE_VALUE (FeedbackScore, FeedbackScoreBatchItem);
# the largest Decimal(18, 9) too, the experiment scores' type when the experiments are read back
SCORE_LIMIT = Decimal("999999999.999999999")
SCALE = Decimal(1).scaleb(-9)       # utils/ValidationUtils.SCALE: JsonBigDecimalDeserializer rounds to 9 decimals
UNSENT_KEY = "unsent_value"

def storable(value: Any) -> bool:
    """Whether ``value`` is a number the server stores: finite and, as JSON writes it, within the limit."""
    if isinstance(value, bool):
        return True
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    if abs(number) < 999_999_999.0:        # the common case, decided without a Decimal
        return True
    return math.isfinite(number) and abs(Decimal(repr(number))) <= SCORE_LIMIT


def server_value(value: Any) -> float | None:
    """``value`` as an Opik server keeps a score: the number JSON writes, rounded HALF_EVEN to 9
    decimals; None when the server cannot store it (see ``storable``)."""
    if isinstance(value, bool) or not storable(value):
        return None
    return float(Decimal(repr(float(value))).quantize(SCALE, rounding=ROUND_HALF_EVEN))


def shown(value: Any) -> Any:
    """The value as metadata (JSON) can hold it: a finite float, else ``"inf"``, ``"-inf"``, ``"nan"``."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return repr(value)
    return number if math.isfinite(number) else str(number)


def mark_unstorable(results: Iterable[ScoreResult]) -> list[ScoreResult]:
    """``results`` (ScoreResults) with every unfailed one the server cannot store marked failed,
    in place: value 0.0, the value itself in ``metadata["unsent_value"]``, the reason saying why."""
    out = list(results)
    for result in out:
        if not isinstance(result, ScoreResult) or result.scoring_failed or storable(result.value):
            continue
        if _is_nan(result.value):          # no number at all: the metric's own fault, not the server's range
            why = ("the metric computed no number (nan): for a model-backed metric the model's output was NaN "
                   "(damaged weights, or an overflow in half precision); recorded as failed, so that it is not "
                   "sent and the other scores arrive")
        else:
            why = (f"{shown(result.value)} is not a score an Opik server stores (finite, at most "
                   "999,999,999.999999999 in size): recorded as failed, so that it is not sent and the other "
                   "scores arrive")
        result.reason = f"{result.reason}; {why}" if result.reason else why
        result.metadata = {**(result.metadata or {}), UNSENT_KEY: shown(result.value)}
        result.value, result.scoring_failed = 0.0, True
    return out


def _is_nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def unsent(result: ScoreResult) -> bool:
    """Whether ``result`` failed only because the server could not store its value."""
    return result.scoring_failed and UNSENT_KEY in (result.metadata or {})


def value_of(result: ScoreResult) -> float:
    """The value a metric gave, also when the server could not store it (``mark_unstorable``)."""
    return float((result.metadata or {})[UNSENT_KEY]) if unsent(result) else float(result.value)

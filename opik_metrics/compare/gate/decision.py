"""The CI regression gate's decision: given each gated score's paired difference, interval and
p-value, say per score whether it passes and why, and for the whole gate one exit line.

Plain inputs (``GateRow``), so the gate knows nothing of stores, files or the comparison model.

Rules (``mode``, per score, after correcting the p-values of the tested scores for their number):

- ``worse``: fails when the score is significantly worse in its declared direction: adjusted
  p < alpha and the difference on the bad side (below 0 when higher is better, above 0 when lower
  is better).
- ``not-better``: fails unless the score is significantly better: adjusted p < alpha and the
  difference on the good side.
- a margin X for a score (non-inferiority) replaces the mode's test for that score: it fails unless
  the difference's interval stays on the good side of -X in the score's direction (higher is
  better: low > -X; lower is better: high < X). Such a score is decided by its interval, not by a
  p-value, so it is not in the family the correction counts (its adjusted p is None).

Which p-value. The gate asks a one-sided question ("is it worse?", "is it better?"), so it tests the
one-sided p of the comparison's test in the observed direction (``PairResult.p_one_sided``: the share of
the null's draws at least as far on the observed side, from the same null as the report's two-sided p;
for a pass/fail score the exact McNemar tail). "p < alpha with the difference on the bad side" is then
a one-sided test at level alpha. Under a null the two-sided p falls below alpha in about alpha of the
cases and the one-sided p in about 2 x alpha, half of them on each side (tests/compare/test_calibration.py
measures both). A comparison written before the one-sided p existed holds sacrebleu's p-value only,
which behaves as one-sided (it falls below alpha about twice as often as a two-sided p): the gate uses it.

Correction in ``not-better`` mode: passing needs every gated score significantly better, an
intersection-union test that keeps its level without correction; the correction is still applied so
that "adjusted p" means the same in every mode. It only makes passing harder.

Scores with no verdict (too few paired items, no p-value, no interval), "untested":

- ``not-better`` and margins fail: the gate asks the new system to show something (an improvement,
  a bounded loss) and nothing was shown. The reason says why and what to do (more items).
- ``worse`` passes the untested score: the gate asks for evidence of a regression and there is none
  to hold against the change; failing would block every change to a small test set whatever it
  does. The outcome says "untested" and the exit line names it, so the pass is not silent. But when
  no gated score at all could be tested, ``decide`` raises ``GateDataError``: a gate that tested
  nothing has no evidence either way, and that is a broken set-up (exit 2), not a regression (exit 1).
  Over a comparison (``gating.gate_comparison``) every untested score is such a data error already.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from opik_metrics.compare.statistics.corrections import adjust, correction_label
from opik_metrics.compare.report.formatting import fmt_interval, fmt_num, fmt_p

__all__ = ["MODES", "GateDataError", "GateOutcome", "GateResult", "GateRow", "decide", "decide_score"]

#: The gate's modes, as ``--fail-on`` names them.
MODES = ("worse", "not-better")


class GateDataError(ValueError):
    """What the gate was given cannot be judged (no gated score testable; in a comparison also a
    score missing on one side, too few paired items, different options): a usage or data error,
    exit 2, never taken for a regression (exit 1)."""


@dataclass(frozen=True)
class GateRow:
    """One gated score of a paired comparison, as the gate and its renderers read it.

    ``delta`` is new - base, ``low``/``high`` its interval; ``p_raw`` the paired test's one-sided p in
    the observed direction (None when there is no test); ``no_verdict`` a reason the comparison gives no verdict although a p-value
    may be shown (e.g. "only 3 paired items: a verdict needs at least 5"); ``n`` the paired items.
    """

    name: str
    higher_is_better: bool
    base: Optional[float]
    new: Optional[float]
    delta: Optional[float]
    low: Optional[float]
    high: Optional[float]
    p_raw: Optional[float]
    n: Optional[int] = None
    no_verdict: Optional[str] = None


@dataclass(frozen=True)
class GateOutcome:
    """The gate's decision on one score: ``passed``, one sentence saying why, and the numbers used.

    ``rule`` is "worse", "not-better" or "margin"; ``tested`` is False when the score had no verdict
    (see the module's rules for how each rule treats that).
    """

    name: str
    passed: bool
    tested: bool
    rule: str
    reason: str
    p_raw: Optional[float]
    p_adjusted: Optional[float]
    correction: str
    margin: Optional[float] = None


@dataclass(frozen=True)
class GateResult:
    """Every gated score's outcome, the settings used, and the one-sentence exit line."""

    outcomes: tuple[GateOutcome, ...]
    mode: str
    correction: str
    alpha: float
    passed: bool
    exit_line: str

    @property
    def failures(self) -> tuple[GateOutcome, ...]:
        return tuple(o for o in self.outcomes if not o.passed)


# -- validation -----------------------------------------------------------------------------


def _number(value: object, what: str) -> Optional[float]:
    """A finite float, None for a missing one (None or NaN); infinities and non-numbers are errors."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{what} must be a number or None, got {value!r}")
    x = float(value)
    if math.isnan(x):
        return None
    if math.isinf(x):
        raise ValueError(f"{what} is {x!r}; it must be finite")
    return x


def _p_value(value: object, what: str) -> Optional[float]:
    """A p-value in [0, 1], or None for a missing one."""
    p = _number(value, what)
    if p is not None and not 0.0 <= p <= 1.0:
        raise ValueError(f"{what} is {p!r}; a p-value lies in [0, 1]")
    return p


def _check_alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1) (e.g. 0.05), got {alpha!r}")
    return float(alpha)


def _check_mode(mode: object) -> str:
    if mode not in MODES:
        raise ValueError(f"mode (--fail-on) must be one of {', '.join(MODES)}; got {mode!r}")
    return str(mode)


def _check_margin(name: str, margin: object) -> Optional[float]:
    if margin is None:
        return None
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) or not (0.0 <= float(margin) < math.inf):
        raise ValueError(f"the margin of {name} must be a finite number >= 0, got {margin!r}")
    return float(margin)


# -- one score ------------------------------------------------------------------------------


def _bad_side(delta: float, higher_is_better: bool) -> bool:
    return delta < 0 if higher_is_better else delta > 0


def _difference(delta: float, low: Optional[float], high: Optional[float], higher_is_better: bool) -> str:
    """ "worse by 0.012 [-0.020, -0.004]" / "better by ..." with the signed interval of new - base."""
    word = "worse" if _bad_side(delta, higher_is_better) else "better"
    interval = f" {fmt_interval(low, high, signed=True)}" if low is not None and high is not None else ""
    direction = "" if higher_is_better else " (lower is better)"
    return f"{word} by {fmt_num(abs(delta))}{interval}{direction}"


def _p_text(p_raw: Optional[float], p_adjusted: Optional[float], correction: str) -> str:
    """ "one-sided p=0.002 (Holm-adjusted 0.006)", or "one-sided p=0.002" uncorrected; p-values below
    0.001 as "p<0.001"."""
    def one(p: Optional[float]) -> str:
        text = fmt_p(p)
        return text if text.startswith("<") else f"={text}"
    if correction == "none":
        return f"one-sided p{one(p_raw)}"
    return f"one-sided p{one(p_raw)} ({correction_label(correction)}-adjusted {fmt_p(p_adjusted)})"


def decide_score(name: str, higher_is_better: bool, delta: Optional[float], low: Optional[float],
                 high: Optional[float], p_raw: Optional[float], p_adjusted: Optional[float], *,
                 alpha: float = 0.05, mode: str = "worse", margin: Optional[float] = None,
                 correction: str = "holm", no_verdict: Optional[str] = None) -> GateOutcome:
    """The gate's decision on one score (rules in the module docstring); ``p_adjusted`` is this
    score's p after the family's correction (equal to ``p_raw`` when ``correction`` is "none")."""
    mode, alpha = _check_mode(mode), _check_alpha(alpha)
    margin = _check_margin(name, margin)
    if not isinstance(higher_is_better, bool):
        raise ValueError(f"higher_is_better of {name} must be a bool, got {higher_is_better!r}")
    delta, low, high = (_number(delta, f"{name}: delta"), _number(low, f"{name}: low"),
                        _number(high, f"{name}: high"))
    p_raw, p_adjusted = _p_value(p_raw, f"{name}: p_raw"), _p_value(p_adjusted, f"{name}: p_adjusted")
    if margin is not None:
        return _by_margin(name, higher_is_better, delta, low, high, p_raw, margin, correction, no_verdict)
    why_untested = no_verdict or (None if delta is not None and p_adjusted is not None else "no paired test")
    if why_untested is not None:
        if mode == "worse":
            reason = (f"{name} is untested ({why_untested}), so it shows no regression to hold against the "
                      "change; only more paired items would test it")
        else:
            reason = (f"{name} is untested ({why_untested}), so it cannot show the improvement the gate "
                      "requires; add paired items (or gate it with --fail-on worse)")
        return GateOutcome(name, mode == "worse", False, mode, reason, p_raw, p_adjusted, correction)
    assert delta is not None and p_adjusted is not None
    significant = p_adjusted < alpha
    worse = _bad_side(delta, higher_is_better)
    better = delta != 0 and not worse
    if mode == "worse":
        passed = not (significant and worse)
    else:
        passed = significant and better
    if delta == 0:
        said = f"{name} is unchanged"
    else:
        said = f"{name} is {'significantly ' if significant else ''}{_difference(delta, low, high, higher_is_better)}"
    said += f", {_p_text(p_raw, p_adjusted, correction)}"
    if not significant:
        said += f", not significant at alpha={alpha:g}"
    if mode == "not-better" and not passed:
        said += "; the gate requires a significant improvement"
    return GateOutcome(name, passed, True, mode, said, p_raw, p_adjusted, correction)


def _by_margin(name: str, higher_is_better: bool, delta: Optional[float], low: Optional[float],
               high: Optional[float], p_raw: Optional[float], margin: float, correction: str,
               no_verdict: Optional[str]) -> GateOutcome:
    """Non-inferiority: the interval's bad end must stay strictly inside the margin."""
    bound = f"-{margin:g}" if higher_is_better else f"+{margin:g}"
    if no_verdict is not None or delta is None or low is None or high is None:
        why = no_verdict or "no interval for the difference"
        reason = (f"{name} is untested ({why}), so it cannot show that its loss stays within the margin "
                  f"{margin:g}; add paired items")
        return GateOutcome(name, False, False, "margin", reason, p_raw, None, correction, margin)
    end = low if higher_is_better else high
    inside = end > -margin if higher_is_better else end < margin
    side = "above" if higher_is_better else "below"
    diff = _difference(delta, low, high, higher_is_better) if delta != 0 else (
        f"unchanged {fmt_interval(low, high, signed=True)}")
    if inside:
        reason = f"{name}'s difference stays {side} {bound} (its margin): {diff}"
    else:
        reason = (f"{name}'s interval reaches {'below' if higher_is_better else 'above'} its margin {bound}, so a "
                  f"loss beyond the margin is not ruled out: {diff}")
    return GateOutcome(name, inside, True, "margin", reason, p_raw, None, correction, margin)


# -- the gate -------------------------------------------------------------------------------


def decide(rows: Sequence[GateRow], mode: str = "worse", correction: str = "holm", alpha: float = 0.05,
           margins: Optional[Mapping[str, float]] = None) -> GateResult:
    """The gate over ``rows`` (the gated scores): corrects the p-values of the scores decided by a
    test (those without a margin and with a verdict) for their number, decides each score, and
    writes the exit line. ``margins`` maps a score's name to its non-inferiority margin."""
    mode, alpha = _check_mode(mode), _check_alpha(alpha)
    correction_label(correction)  # validates the name
    rows = list(rows)
    if not rows:
        raise ValueError("the gate has no score to gate: name scores with --metric or compare some")
    for k, row in enumerate(rows):
        if not isinstance(row, GateRow):
            raise ValueError(f"rows[{k}] must be a GateRow, got {type(row).__name__}")
    names = [row.name for row in rows]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise ValueError(f"score {duplicate!r} is gated twice; each score is gated once")
    margins = dict(margins or {})
    unknown = [n for n in margins if n not in names]
    if unknown:
        raise ValueError(f"--margin names {', '.join(map(repr, unknown))}, which is not a gated score "
                         f"(gated: {', '.join(names)})")
    for row in rows:
        _p_value(row.p_raw, f"{row.name}: p_raw")
    tested = [row.name not in margins and row.no_verdict is None and _number(row.p_raw, f"{row.name}: p_raw")
              is not None and _number(row.delta, f"{row.name}: delta") is not None for row in rows]
    adjusted = adjust([row.p_raw if t else None for row, t in zip(rows, tested)], correction)
    outcomes = tuple(
        decide_score(row.name, row.higher_is_better, row.delta, row.low, row.high, row.p_raw, adjusted[k],
                     alpha=alpha, mode=mode, margin=margins.get(row.name), correction=correction,
                     no_verdict=row.no_verdict)
        for k, row in enumerate(rows))
    if not any(o.tested for o in outcomes):   # nothing tested: no evidence either way, a data error
        raise GateDataError(f"no gated score could be tested ({', '.join(o.name for o in outcomes)}): the gate has "
                            "no evidence either way; add paired items")
    passed = all(o.passed for o in outcomes)
    return GateResult(outcomes, mode, correction, alpha, passed, _exit_line(outcomes, mode, correction, sum(tested)))


def _exit_line(outcomes: Sequence[GateOutcome], mode: str, correction: str, family: int) -> str:
    """One sentence: the first failure and its statistics (and how many more), or why it passed."""
    failures = [o for o in outcomes if not o.passed]
    untested = [o.name for o in outcomes if not o.tested]
    if failures:
        first = failures[0]
        more = f" (and {len(failures) - 1} more: {', '.join(o.name for o in failures[1:])})" if len(failures) > 1 else ""
        return f"gate failed: {first.reason}{more}"
    by_margin = sum(1 for o in outcomes if o.rule == "margin")
    parts = []
    if family:
        parts.append(f"{family} tested score{'s' if family != 1 else ''}, {correction_label(correction)}")
    if by_margin:
        parts.append(f"{by_margin} within {'its' if by_margin == 1 else 'their'} margin")
    if family == 0:
        line = "gate passed: every gated score stays within its margin"
    elif mode == "worse":
        line = "gate passed: no gated score is significantly worse"
    else:
        line = "gate passed: every gated score is significantly better"
    line += f" ({'; '.join(parts)})"
    if untested:
        line += f"; untested, so not held against the change: {', '.join(untested)}"
    return line

"""The CI gate over a comparison: every gated score of each system against the baseline (the
first experiment; the pairs of two systems are not gated) becomes a ``GateRow``, ``gate.decide`` judges them as one family (one correction for
all of them), and each decision is written into its pair's entry of the comparison.

What the gate cannot judge is a data error (``GateDataError``, a ValueError: exit 2), never a
regression (exit 1): a gated score missing on one side, too few paired items for a verdict, and
scores whose two sides were made with different options (a stemmer, a tokenizer, a model: the
signature's fields other than package versions) unless ``allow_different_options``; a side that
records no signature (``reading.signing``) counts as made differently.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from opik_metrics.compare.gate.decision import GateDataError, GateResult, GateRow, decide
from opik_metrics.compare.model import Comparison, GateOutcome, Pair, PairResult, Verdict
from opik_metrics.compare.reading.signing import unsigned_difference

__all__ = ["GateDataError", "GatedComparison", "gate_comparison"]


@dataclass(frozen=True)
class GatedComparison:
    """The comparison with the gate's outcome in each gated entry, the gate's rows and its result."""

    comparison: Comparison
    rows: tuple[GateRow, ...]
    result: GateResult

    @property
    def passed(self) -> bool:
        return self.result.passed


def _row_name(score: str, pair: Pair, pairs: int) -> str:
    """A score's name in the gate: the score alone for one pair, else with the system it judges."""
    return score if pairs == 1 else f"{score} ({pair.system} vs {pair.baseline})"


def _gated_scores(comparison: Comparison, scores: Sequence[str] | None) -> list[str]:
    compared = [m.name for m in comparison.metrics]
    if not scores:
        return compared
    unknown = [s for s in scores if s not in compared]
    if unknown:
        raise ValueError(f"cannot gate {', '.join(map(repr, unknown))}: not a compared score (compared: "
                         f"{', '.join(compared) or 'none'})")
    return list(dict.fromkeys(scores))


def _untestable(comparison: Comparison, pair: Pair, score: str, entry: PairResult | None) -> str | None:
    """Why the gate cannot judge ``score`` of ``pair`` (one side lacks it, too few paired items), or None."""
    per = comparison.scores.get(score, {})
    missing = [name for name in (pair.baseline, pair.system) if name not in per]
    if missing:
        return f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} no {score}"
    if entry is None or entry.n == 0:
        return f"no paired item has {score} in both {pair.baseline} and {pair.system}"
    if entry.verdict is Verdict.NONE:
        return f"{score} ({pair.system} vs {pair.baseline}): {entry.note or f'no verdict on {entry.n} paired item(s)'}"
    return None


def _with_unsigned(comparison: Comparison, pair: Pair, scores: Sequence[str]) -> Pair:
    """``pair`` with a signature difference for each of ``scores`` a side records no signature for."""
    configs = {e.name: e.config for e in comparison.experiments}
    unsigned = {score: found for score in scores if score not in pair.option_differences
                and (found := unsigned_difference(score, configs.get(pair.baseline), configs.get(pair.system)))}
    return replace(pair, option_differences={**pair.option_differences, **unsigned}) if unsigned else pair


def gate_comparison(comparison: Comparison, *, mode: str = "worse", correction: str = "holm",
                    margins: Mapping[str, float] | None = None, scores: Sequence[str] | None = None,
                    allow_different_options: bool = False) -> GatedComparison:
    """Gate ``scores`` (default: every compared score) of every pair at the comparison's alpha.
    ``margins`` maps a score to its non-inferiority margin (for every pair). Raises ``GateDataError``
    for what cannot be gated (module docstring); ``allow_different_options`` gates scores made with
    different options all the same, and says so first among the comparison's notes."""
    margins = dict(margins or {})
    gated = _gated_scores(comparison, scores)
    stray = [name for name in margins if name not in gated]
    if stray:
        raise ValueError(f"--margin names {', '.join(map(repr, stray))}, which is not a gated score "
                         f"(gated: {', '.join(gated)})")
    baseline = comparison.names[0]
    judged = [k for k, pair in enumerate(comparison.pairs) if pair.baseline == baseline]
    comparison = replace(comparison, pairs=tuple(_with_unsigned(comparison, pair, gated) if k in judged else pair
                                                 for k, pair in enumerate(comparison.pairs)))
    if not judged:
        raise ValueError("the gate needs a baseline and at least one system to judge")
    problems = [why for k in judged for score in gated
                if (why := _untestable(comparison, comparison.pairs[k], score,
                                       comparison.pairs[k].metrics.get(score))) is not None]
    if problems:
        raise GateDataError(f"cannot gate: {'; '.join(problems)} (a data error, not a regression: fix the inputs, "
                            "or gate fewer scores with --metric)")
    different = [(comparison.pairs[k], text) for k in judged
                 if (text := comparison.pairs[k].options_text(gated))]
    if different and not allow_different_options:
        raise GateDataError("cannot gate scores made with different options: " + "; ".join(
            f"{pair.system} vs {pair.baseline}: {text}" for pair, text in different)
            + " (the difference would be the options', not the systems'; score both the same way, or pass "
              "--allow-different-options to gate them anyway)")
    rows: list[GateRow] = []
    row_margins: dict[str, float] = {}
    where: dict[str, tuple[int, str]] = {}
    for k in judged:
        pair = comparison.pairs[k]
        for score in gated:
            entry = pair.metrics[score]          # every gated entry has a verdict (else refused above)
            name = _row_name(score, pair, len(judged))
            rows.append(GateRow(name=name, higher_is_better=comparison.metric(score).higher_is_better,
                                base=entry.baseline_value, new=entry.system_value, delta=entry.delta,
                                low=entry.delta_low, high=entry.delta_high, p_raw=entry.gate_p, n=entry.n))
            where[name] = (k, score)
            if score in margins:
                row_margins[name] = margins[score]
    result = decide(rows, mode=mode, correction=correction, alpha=comparison.settings.alpha, margins=row_margins)
    pairs = list(comparison.pairs)
    for outcome in result.outcomes:
        k, score = where[outcome.name]
        entry = pairs[k].metrics[score]
        gate = GateOutcome(correction=outcome.correction, p_adjusted=outcome.p_adjusted, margin=outcome.margin,
                           passed=outcome.passed, reason=outcome.reason)
        pairs[k] = replace(pairs[k], metrics={**pairs[k].metrics, score: replace(entry, gate=gate)})
    note = f"gate (--fail-on {mode}, {correction} correction over {len(rows)} gated score(s)): {result.exit_line}"
    gated_comparison = replace(comparison, pairs=tuple(pairs), notes=(*comparison.notes, note))
    return GatedComparison(gated_comparison, tuple(rows), result)

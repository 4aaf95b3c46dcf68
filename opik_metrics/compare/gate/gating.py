"""The CI gate over a comparison: every gated score of each system against the baseline (the
first experiment; the pairs of two systems are not gated) becomes a ``GateRow``, ``gate.decide`` judges them as one family (one correction for
all of them), and each decision is written into its pair's entry of the comparison.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from opik_metrics.compare.gate.decision import GateResult, GateRow, decide
from opik_metrics.compare.model import Comparison, GateOutcome, Pair, Verdict


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


def gate_comparison(comparison: Comparison, *, mode: str = "worse", correction: str = "holm",
                    margins: Mapping[str, float] | None = None, scores: Sequence[str] | None = None) -> GatedComparison:
    """Gate ``scores`` (default: every compared score) of every pair at the comparison's alpha.
    ``margins`` maps a score to its non-inferiority margin (for every pair)."""
    margins = dict(margins or {})
    gated = _gated_scores(comparison, scores)
    stray = [name for name in margins if name not in gated]
    if stray:
        raise ValueError(f"--margin names {', '.join(map(repr, stray))}, which is not a gated score "
                         f"(gated: {', '.join(gated)})")
    baseline = comparison.names[0]
    judged = [k for k, pair in enumerate(comparison.pairs) if pair.baseline == baseline]
    if not judged:
        raise ValueError("the gate needs a baseline and at least one system to judge")
    rows: list[GateRow] = []
    row_margins: dict[str, float] = {}
    where: dict[str, tuple[int, str]] = {}
    for k in judged:
        pair = comparison.pairs[k]
        for score in gated:
            entry = pair.metrics.get(score)
            if entry is None:
                continue
            name = _row_name(score, pair, len(judged))
            no_verdict = None
            if entry.verdict is Verdict.NONE:
                no_verdict = entry.note or f"no verdict on {entry.n} paired item(s)"
            rows.append(GateRow(name=name, higher_is_better=comparison.metric(score).higher_is_better,
                                base=entry.baseline_value, new=entry.system_value, delta=entry.delta,
                                low=entry.delta_low, high=entry.delta_high, p_raw=entry.p_value, n=entry.n,
                                no_verdict=no_verdict))
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

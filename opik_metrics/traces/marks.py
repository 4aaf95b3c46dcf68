"""The mark a feedback score's reason carries: which metric configuration wrote it (its signature),
how many scores it wrote for that trace and the value it sent. A rerun skips a trace whose scores of
that metric all carry the same mark, so an interrupted run (Ctrl-C, kill -9) resumes without scoring
a trace twice, and a changed configuration (another signature) scores again; the value in the mark
lets the rerun check what the server holds against what was sent without scoring again. A mark
without a value (written before marks carried one) does not count: that trace is scored again."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

_MARK = re.compile(r" ?\[opik-metrics (\d+) (?:=(\S+) )?(.+)\]$")


@dataclass(frozen=True)
class MarkedScore:
    """One score a metric wrote: its name, the value sent (from the mark), the value the server
    holds and the whole reason (mark included: what a resend writes again)."""

    name: str
    sent: float
    held: Any
    reason: str


def signature_of(metric: Any) -> str:
    """The metric's configuration as text: the pack's ``Signature``, else its class and name."""
    signature = getattr(metric, "signature", None)
    return str(signature) if signature is not None else f"{type(metric).__module__}.{type(metric).__qualname__}:" \
                                                           f"{metric.name}"


def marked(reason: str | None, signature: str, count: int, value: float) -> str:
    """``reason`` followed by the mark of a metric that wrote ``count`` scores for the trace, this
    one of ``value`` (as the server keeps it)."""
    mark = f"[opik-metrics {count} ={float(value)!r} {signature}]"
    return f"{reason} {mark}" if reason else mark


def unmarked(reason: str | None) -> str | None:
    """A marked reason without its mark (None when nothing else is left)."""
    if reason is None:
        return None
    return _MARK.sub("", reason) or None


def _sent_value(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def marked_scores(scores: Iterable[Mapping[str, Any]], signature: str) -> list[MarkedScore] | None:
    """The scores the metric of ``signature`` wrote for a trace when ``scores`` (its feedback scores:
    name, value, reason) hold all of them (as many marked ones as the mark says), else None."""
    groups: dict[int, list[MarkedScore]] = {}
    for score in scores:
        reason = score.get("reason") or ""
        found = _MARK.search(reason)
        if not found or found.group(3) != signature:
            continue
        sent = _sent_value(found.group(2))
        if sent is None:                 # a mark without a value: nothing to check the server against
            continue
        groups.setdefault(int(found.group(1)), []).append(MarkedScore(score.get("name", ""), sent,
                                                                      score.get("value"), reason))
    return next((group for n, group in groups.items() if len(group) >= n), None)


def scored_by(scores: Iterable[Mapping[str, Any]], signature: str) -> bool:
    """Whether ``scores`` hold every score that the metric of ``signature`` wrote for the trace."""
    return marked_scores(scores, signature) is not None

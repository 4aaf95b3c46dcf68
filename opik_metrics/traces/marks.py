"""The mark a feedback score's reason carries: which metric configuration wrote it (its signature)
and how many scores it wrote for that trace. A rerun skips a trace whose scores of that metric all
carry the same mark, so an interrupted run (Ctrl-C, kill -9) resumes without scoring a trace twice,
and a changed configuration (another signature) scores again."""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

_MARK = re.compile(r" ?\[opik-metrics (\d+) (.+)\]$")


def signature_of(metric: Any) -> str:
    """The metric's configuration as text: the pack's ``Signature``, else its class and name."""
    signature = getattr(metric, "signature", None)
    return str(signature) if signature is not None else f"{type(metric).__module__}.{type(metric).__qualname__}:" \
                                                           f"{metric.name}"


def marked(reason: str | None, signature: str, count: int) -> str:
    """``reason`` followed by the mark of a metric that wrote ``count`` scores for the trace."""
    mark = f"[opik-metrics {count} {signature}]"
    return f"{reason} {mark}" if reason else mark


def unmarked(reason: str | None) -> str | None:
    """A marked reason without its mark (None when nothing else is left)."""
    if reason is None:
        return None
    return _MARK.sub("", reason) or None


def scored_by(scores: Iterable[Mapping[str, Any]], signature: str) -> bool:
    """Whether ``scores`` (a trace's feedback scores: name, value, reason) hold every score that the
    metric of ``signature`` wrote for it: as many marked ones as the mark says."""
    counts: dict[int, int] = {}
    for score in scores:
        found = _MARK.search(score.get("reason") or "")
        if found and found.group(2) == signature:
            n = int(found.group(1))
            counts[n] = counts.get(n, 0) + 1
    return any(have >= n for n, have in counts.items())

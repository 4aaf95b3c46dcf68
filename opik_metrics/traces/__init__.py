"""Scoring what Opik already holds: a project's traces or spans, read page by page with Opik's
filter language, scored with the pack's metrics, the scores written back as feedback scores (once
per metric configuration, resumable) and read back; a window's summary and two windows compared.
Names are imported when first used, so that the command line checks its arguments first."""
from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "Selection": "opik_metrics.traces.reading",
    "TraceFields": "opik_metrics.traces.fields",
    "TraceScoreReport": "opik_metrics.traces.scoring",
    "score_traces": "opik_metrics.traces.scoring",
    "WindowComparison": "opik_metrics.traces.summary",
    "WindowSummary": "opik_metrics.traces.summary",
    "compare_windows": "opik_metrics.traces.summary",
    "summarize": "opik_metrics.traces.summary",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'opik_metrics.traces' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)

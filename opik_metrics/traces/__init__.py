"""Scoring what Opik already holds: a project's traces or spans, read page by page with Opik's
filter language, scored with the pack's metrics, the scores written back as feedback scores (once
per metric configuration, resumable) and read back; a window's summary and two windows compared."""
from opik_metrics.traces.fields import TraceFields
from opik_metrics.traces.reading import Selection
from opik_metrics.traces.scoring import TraceScoreReport, score_traces
from opik_metrics.traces.summary import WindowComparison, WindowSummary, compare_windows, summarize

__all__ = ["Selection", "TraceFields", "TraceScoreReport", "WindowComparison", "WindowSummary", "compare_windows",
           "score_traces", "summarize"]

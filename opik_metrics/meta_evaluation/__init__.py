"""Meta-evaluation: which metric to trust, judged against human ratings (correlations at the pooled,
item and system levels, metric-vs-metric tests, the raters' own agreement, label agreement).
It reuses compare's resampling and corrections (``opik_metrics.compare.statistics``)."""
from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # loaded on first use: the command line imports this package before it parses its arguments
    if name == "agreement":
        from opik_metrics.meta_evaluation.source import agreement

        return agreement
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

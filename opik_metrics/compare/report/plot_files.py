"""What the report pages know of their plots, without matplotlib: the folder, one figure's file and
caption, and why a report has no plots when the report extra is not installed."""
from __future__ import annotations

from dataclasses import dataclass

from opik_metrics.core.extras import install_hint, missing_modules

PLOTS_DIR = "plots"


@dataclass(frozen=True)
class PlotFile:
    """One figure of the report: ``path`` is relative to the report folder (``plots/xxx.png``)."""

    path: str
    title: str
    caption: str
    section: str
    metric: str | None = None
    pair: tuple[str, str] | None = None  # (baseline, system)


def plots_unavailable() -> str | None:
    """Why no plots can be drawn (matplotlib, the report extra, is not installed), or None when they can."""
    if not missing_modules("report"):
        return None
    return f"no plots: they need the report extra (matplotlib): {install_hint('report')}"

"""Writes the comparison report folder: comparison.json, index.html and the plots/ PNGs it shows;
each renamed into place, so that no link planted in the folder is followed (``core.report_files``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from opik_metrics.compare.report.html import render_html
from opik_metrics.compare.model import Comparison
from opik_metrics.compare.report.plot_files import PLOTS_DIR, plots_unavailable
from opik_metrics.core.report_files import real_folder, remove_file, write_in_place

JSON_NAME = "comparison.json"
HTML_NAME = "index.html"


@dataclass(frozen=True)
class ReportFiles:
    """The files a report consists of."""

    html: Path
    json: Path
    plots: list[Path] = field(default_factory=list)
    note: str | None = None          # why the page has no plots (the report extra is not installed)


def _prepare_dir(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"report folder {out_dir} exists and is not a folder")
    plots = real_folder(out_dir / PLOTS_DIR)          # a link there is replaced, never followed
    for old in plots.glob("[0-9][0-9][0-9]-*.png"):   # a previous report's plots: none may linger
        remove_file(old)


def write_report(comparison: Comparison, out_dir: str | Path) -> ReportFiles:
    """Write ``comparison.json``, the plots and ``index.html`` into ``out_dir`` (created if missing).
    Without the report extra (matplotlib) the page is written with no plots and says why (``note``):
    the numbers, intervals and verdicts need no plot, and a gate's report must not fail for want of one."""
    if not isinstance(comparison, Comparison):
        raise ValueError(f"expected a Comparison (compare_experiments' result, or Comparison.from_dict of a "
                         f"comparison.json), got {type(comparison).__name__}")
    text = comparison.to_json()  # before anything is written: a NaN leaves no half-written report
    out_dir = Path(out_dir)
    _prepare_dir(out_dir)
    json_path = out_dir / JSON_NAME
    write_in_place(json_path, text)
    note = plots_unavailable()      # without matplotlib the page and the JSON are still written, and say so
    plots = []
    if note is None:
        from opik_metrics.compare.report.plots import write_plots
        plots = write_plots(comparison, out_dir / PLOTS_DIR)
    html_path = out_dir / HTML_NAME
    write_in_place(html_path, render_html(comparison, plots, plots_note=note), errors="backslashreplace")
    return ReportFiles(html=html_path, json=json_path, plots=[out_dir / p.path for p in plots], note=note)

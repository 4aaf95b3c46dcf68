"""Figures of the comparison report (score distributions, means with CIs, paired differences) as PNGs.

Figures are built with ``matplotlib.figure.Figure`` and the Agg canvas, never pyplot, so no global
figure state is created or leaked and the output is the same for the same input.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from opik_metrics.compare.model import Comparison, Pair, ScoreSummary, ScoreValue
from opik_metrics.compare.report.plot_files import PLOTS_DIR, PlotFile
from opik_metrics.core.numbers import is_number
from opik_metrics.core.report_files import real_folder, save_figure

FIGSIZE = (6.4, 3.6)
DPI = 100
SECTION_DISTRIBUTIONS = "Score distributions"
SECTION_MEANS = "Means with confidence intervals"
SECTION_DIFFERENCES = "Paired differences"
_LABEL_CHARS = 28
_MAX_BINS = 40
_ROUNDING = 1e-12         # differences within this (relative) span are one value: float rounding, not a spread
_JITTER_SEED = 0


# ----------------------------------------------------------------------------- small helpers

def _colour(index: int) -> str:
    """Matplotlib's default cycle colour for experiment ``index``: the same experiment, the same colour."""
    return f"C{index % 10}"


def _mpl_text(text: Any, limit: int | None = None) -> str:
    """User text for a figure: shortened, and ``$`` escaped so that it is not read as mathtext."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _slug(text: str) -> str:
    """File-name-safe form of a metric name (ASCII letters, digits, dashes)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
    return slug[:40] or "metric"


def _finite(values: Sequence[Any] | None) -> np.ndarray:
    """The finite numbers of ``values`` as a float array (None and NaN dropped)."""
    numbers = [v for v in (values or []) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    array = np.asarray(numbers, dtype=float)
    return array[np.isfinite(array)]


def _direction(metric: ScoreSummary) -> str:
    return "higher is better" if metric.higher_is_better else "lower is better"


def _confidence_label(comparison: Comparison) -> str:
    """"95%" from settings.confidence (0.95)."""
    confidence = comparison.settings.confidence
    return f"{confidence * 100:g}%" if is_number(confidence) else "CI"


def _new_figure() -> tuple[Figure, Any]:
    """A detached figure (no pyplot) of the report's size, with one axes."""
    figure = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _legend_outside(ax: Any) -> None:
    """Legend to the right of the axes, so that it never hides data."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False,
              borderaxespad=0.0)


def _log_labels(axis: Any) -> None:
    """Label a log axis with plain numbers (20, 30) rather than 2×10¹."""
    axis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1.5, 0.6)))


def _short_names(names: Sequence[str]) -> list[str]:
    return [_mpl_text(n, 18) for n in names]


# ----------------------------------------------------------------------------- distributions

def _distribution_figure(comparison: Comparison, metric: ScoreSummary) -> Figure | None:
    """Box plot plus jittered item points per experiment, log axis for log-scale metrics."""
    name = metric.name
    log = metric.scale == "log"
    per_experiment = comparison.scores.get(name) or {}
    series = []
    for index, experiment in enumerate(comparison.names):
        entry = per_experiment.get(experiment)
        values = _finite(entry.values) if entry else np.empty(0)
        if log:
            values = values[values > 0]
        if entry and values.size:
            series.append((index, experiment, values, entry.value))
    if not series:
        return None
    figure, ax = _new_figure()
    positions = list(range(len(series)))
    ax.boxplot([s[2] for s in series], positions=positions, widths=0.5, showfliers=False,
               medianprops={"color": "black"}, whiskerprops={"color": "0.4"}, capprops={"color": "0.4"},
               boxprops={"color": "0.4"})
    rng = np.random.default_rng(_JITTER_SEED)
    means = []
    for position, (index, experiment, values, mean) in zip(positions, series):
        jitter = rng.uniform(-0.18, 0.18, values.size)
        ax.scatter(position + jitter, values, s=10, alpha=0.55, color=_colour(index), linewidths=0,
                   label=f"{_mpl_text(experiment, _LABEL_CHARS)} (n={values.size})", zorder=3)
        means.append(mean if is_number(mean) and (mean > 0 or not log) else float(np.mean(values)))
    ax.scatter(positions, means, marker="D", s=36, color="black", zorder=4, label="mean")
    ax.set_xticks(positions, _short_names([s[1] for s in series]))
    if log:
        ax.set_yscale("log")
        _log_labels(ax.yaxis)
    ax.set_title(_mpl_text(f"{name}: per-item scores", 60))
    ax.set_xlabel("experiment")
    ax.set_ylabel(_mpl_text(f"{name} ({_direction(metric)})", 40))
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    return figure


def _distribution_caption(metric: ScoreSummary) -> str:
    scale = " Log scale." if metric.scale == "log" else ""
    return (f"Per-item {metric.name} scores of each experiment: the box spans the quartiles (line: median, "
            f"whiskers: 1.5 IQR), dots are items (jittered sideways), the diamond is the mean; "
            f"{_direction(metric)}.{scale}")


# ----------------------------------------------------------------------------- means with CIs

def _bounds(entry: ScoreValue) -> tuple[Any, float | None, float | None]:
    low, high = entry.low, entry.high
    return entry.value, (low if is_number(low) else None), (high if is_number(high) else None)


def _in_unit_interval(comparison: Comparison, metric: ScoreSummary) -> bool:
    """Whether a linear metric's means and CIs all lie in [0, 1], so it can share an axis with others."""
    if metric.scale == "log":
        return False
    entries = (comparison.scores.get(metric.name) or {}).values()
    numbers = [n for e in entries for n in _bounds(e) if is_number(n)]
    return bool(numbers) and all(-1e-9 <= n <= 1 + 1e-9 for n in numbers)


def _error_bar(ax: Any, x: float, entry: ScoreValue, colour: str, label: str, horizontal: bool) -> None:
    """One mean with its interval (no bar when the interval is unknown)."""
    value, low, high = _bounds(entry)
    if not is_number(value):
        return
    error = None
    if low is not None and high is not None:
        error = [[max(value - low, 0.0)], [max(high - value, 0.0)]]
    if horizontal:
        ax.errorbar([value], [x], xerr=error, fmt="o", capsize=4, color=colour, label=label)
    else:
        ax.errorbar([x], [value], yerr=error, fmt="o", capsize=4, color=colour, label=label)


def _means_overview_figure(comparison: Comparison, metrics: list[ScoreSummary]) -> Figure:
    """All unit-interval metrics on one axis: one error bar per experiment and metric."""
    names = comparison.names
    figure, ax = _new_figure()
    width = 0.7 / max(len(names), 1)
    for index, experiment in enumerate(names):
        offset = (index - (len(names) - 1) / 2) * width
        labelled = False
        for position, metric in enumerate(metrics):
            entry = (comparison.scores.get(metric.name) or {}).get(experiment)
            if entry and is_number(entry.value):
                label = "_nolegend_" if labelled else _mpl_text(experiment, _LABEL_CHARS)
                _error_bar(ax, position + offset, entry, _colour(index), label, horizontal=False)
                labelled = True
    ticks = [_mpl_text(m.name, 16) + ("" if m.higher_is_better else "\n(lower better)")
             for m in metrics]
    ax.set_xticks(range(len(metrics)), ticks, fontsize="small" if len(metrics) > 3 else None,
                  rotation=20 if len(metrics) > 4 else 0, ha="right" if len(metrics) > 4 else "center")
    ax.set_xlim(-0.6, len(metrics) - 0.4)
    ax.set_title(f"Means with {_confidence_label(comparison)} confidence intervals")
    ax.set_xlabel("metric")
    ax.set_ylabel("score")
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    return figure


def _means_metric_figure(comparison: Comparison, metric: ScoreSummary) -> Figure | None:
    """One metric's means per experiment (horizontal error bars), log axis for log-scale metrics."""
    per_experiment = comparison.scores.get(metric.name) or {}
    rows = [(i, n) for i, n in enumerate(comparison.names)
            if n in per_experiment and is_number(per_experiment[n].value)]
    if not rows:
        return None
    figure, ax = _new_figure()
    for position, (index, experiment) in enumerate(rows):
        _error_bar(ax, position, per_experiment[experiment], _colour(index),
                   _mpl_text(experiment, _LABEL_CHARS), horizontal=True)
    ax.set_yticks(range(len(rows)), _short_names([r[1] for r in rows]))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    if metric.scale == "log":
        ax.set_xscale("log")
        _log_labels(ax.xaxis)
    ax.set_title(_mpl_text(f"{metric.name}: mean with {_confidence_label(comparison)} CI", 60))
    ax.set_xlabel(_mpl_text(f"{metric.name} ({_direction(metric)})", 50))
    ax.set_ylabel("experiment")
    ax.grid(axis="x", alpha=0.3)
    _legend_outside(ax)
    return figure


# ----------------------------------------------------------------------------- paired differences

def _bins(differences: np.ndarray) -> np.ndarray:
    """Histogram edges: numpy's "auto" rule, at most 40 bins, a narrow range when all values are equal
    (or equal but for float rounding, where numpy cannot make finite-sized bins)."""
    low, high = float(differences.min()), float(differences.max())
    if high - low <= _ROUNDING * max(1.0, abs(low), abs(high)):
        span = max(abs(low) * 0.05, 1e-3)
        return np.linspace(low - span, high + span, 11)
    edges = np.histogram_bin_edges(differences, bins="auto")
    return edges if len(edges) - 1 <= _MAX_BINS else np.linspace(low, high, _MAX_BINS + 1)


def _difference_figure(comparison: Comparison, metric: ScoreSummary, pair: Pair,
                       system_index: int) -> Figure | None:
    """Histogram of per-item differences (system − baseline), lines at 0 and at the mean, delta CI shaded."""
    entry = pair.metrics.get(metric.name)
    differences = _finite(entry.differences if entry is not None else None)
    if entry is None or not differences.size:
        return None
    colour = _colour(system_index)
    figure, ax = _new_figure()
    ax.hist(differences, bins=_bins(differences), color="0.6", edgecolor="white", label="items")
    low, high = entry.delta_low, entry.delta_high
    if is_number(low) and is_number(high):
        ax.axvspan(low, high, color=colour, alpha=0.25, lw=0,
                   label=f"{_confidence_label(comparison)} CI of delta")
    ax.axvline(0.0, color="black", linestyle="--", linewidth=1, label="no difference")
    mean = float(np.mean(differences))
    ax.axvline(mean, color=colour, linewidth=2, label=f"mean difference ({mean:+.4g})")
    baseline, system = pair.baseline, pair.system
    ax.set_title(_mpl_text(f"{metric.name}: {_mpl_text(system, 20)} − {_mpl_text(baseline, 20)}", 70))
    ax.set_xlabel(_mpl_text(f"per-item difference in {metric.name} (system − baseline)", 60))
    ax.set_ylabel("items")
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax)
    return figure


def _difference_caption(metric: ScoreSummary, pair: Pair, count: int) -> str:
    better = "right of 0" if metric.higher_is_better else "left of 0"
    return (f"Per-item differences in {metric.name} ({pair.system} minus {pair.baseline}) "
            f"on {count} shared items; {better} means {pair.system} is better. Dashed line: no "
            f"difference; solid line: mean difference; shaded: the delta's confidence interval.")


# ----------------------------------------------------------------------------- all figures

def iter_figures(comparison: Comparison) -> Iterator[tuple[PlotFile, Figure]]:
    """Every figure of the report with its description, in page order, built but not saved."""
    metrics = list(comparison.metrics)
    confidence = _confidence_label(comparison)
    counter = iter(range(1, 10_000))

    def path(kind: str, metric: str, suffix: str = "") -> str:
        return f"{PLOTS_DIR}/{next(counter):03d}-{kind}-{_slug(metric)}{suffix}.png"

    for metric in metrics:
        if metric.kind == "corpus":
            continue
        figure = _distribution_figure(comparison, metric)
        if figure is not None:
            yield PlotFile(path("dist", metric.name), f"{metric.name}: per-item scores",
                           _distribution_caption(metric), SECTION_DISTRIBUTIONS, metric.name), figure

    shared = [m for m in metrics if _in_unit_interval(comparison, m)]
    if shared:
        listed = ", ".join(m.name for m in shared)
        yield PlotFile(path("means", "overview"), f"Means with {confidence} confidence intervals",
                       f"Mean of each experiment with its {confidence} confidence interval, for the metrics "
                       f"on a 0–1 scale ({listed}).", SECTION_MEANS), \
            _means_overview_figure(comparison, shared)
    for metric in metrics:
        if metric in shared:
            continue
        figure = _means_metric_figure(comparison, metric)
        if figure is not None:
            scale = " Log scale." if metric.scale == "log" else ""
            yield PlotFile(path("means", metric.name), f"{metric.name}: mean with {confidence} CI",
                           f"Mean {metric.name} of each experiment with its {confidence} confidence "
                           f"interval; {_direction(metric)}.{scale}", SECTION_MEANS, metric.name), figure

    names = comparison.names
    for number, pair in enumerate(comparison.pairs, start=1):
        baseline, system = pair.baseline, pair.system
        system_index = names.index(system) if system in names else number
        for metric in metrics:
            figure = _difference_figure(comparison, metric, pair, system_index)
            if figure is None:
                continue
            count = _finite(pair.metrics[metric.name].differences).size
            yield PlotFile(path("diff", metric.name, f"-pair{number}"),
                           f"{metric.name}: {system} − {baseline}",
                           _difference_caption(metric, pair, count), SECTION_DIFFERENCES, metric.name,
                           (baseline, system)), figure


def write_plots(comparison: Comparison, plots_dir: str | Path) -> list[PlotFile]:
    """Save every figure as a PNG into ``plots_dir`` (created); paths in the result are ``plots/<file>``."""
    plots_dir = real_folder(Path(plots_dir))
    written = []
    for plot, figure in iter_figures(comparison):
        save_figure(figure, plots_dir / Path(plot.path).name, dpi=DPI, metadata={"Software": None})
        figure.clear()  # detached figures are not registered with pyplot: clearing frees them at once
        written.append(plot)
    return written

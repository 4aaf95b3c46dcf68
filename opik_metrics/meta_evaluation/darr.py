"""WMT's DARR Kendall-like tau (the WMT17-19 metrics tasks' segment level; Ma et al. 2018, 2019):
how often a metric orders the pairs of translations people ordered ("relative ranking" pairs built
from direct assessments, DARR) the way they did.

For each human pair (better, worse) a metric is concordant when it scores the better one higher
and discordant otherwise, a tie in the metric included (WMT17-19's segment-level rule, which
penalises a metric's ties):

    tau = (Concordant - Discordant) / (Concordant + Discordant)

So tau is 2 x (share of pairs ordered as people did) - 1, in [-1, 1]. A lower-is-better metric is
negated first. The interval is a percentile bootstrap over the pairs, or over segments (a segment's
pairs drawn together) when the pairs name their segment; the same draws as
``resample_indices(units, resamples, seed)`` for every metric.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Collection, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from opik_metrics.compare.statistics.bootstrap import percentile_interval, resample_indices
from opik_metrics.compare.statistics.defaults import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED,
                                                      MAX_RESAMPLES, bounded_count, seed_and_confidence_problem)

__all__ = ["DARR_RULE", "DarrAgreement", "DarrSettings", "DarrTau", "darr_agreement", "darr_tau"]

DARR_RULE = ("WMT DARR Kendall-like tau = (Concordant - Discordant) / (Concordant + Discordant) over the human "
             "pairs (better, worse): concordant when the metric scores the better one higher, discordant otherwise, "
             "a tie in the metric counted as discordant (WMT17-19's segment-level rule)")

#: Bound on the elements of one (resamples x units) block of counts.
_BLOCK = 1 << 22


@dataclass(frozen=True)
class DarrSettings:
    """The bootstrap of the interval: resamples, seed, confidence."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE

    def check(self) -> None:
        problem = bounded_count("resamples", self.resamples, MAX_RESAMPLES)
        if problem is not None:
            raise ValueError(problem)
        problem = seed_and_confidence_problem(self.seed, self.confidence)
        if problem is not None:
            raise ValueError(problem)


@dataclass(frozen=True)
class DarrTau:
    """One metric's DARR tau over the pairs, its counts (``ties``: the metric ties, counted among
    the discordant) and its percentile interval."""

    metric: str
    tau: float | None
    concordant: int
    discordant: int
    ties: int
    low: float | None = None
    high: float | None = None
    resamples: int = 0
    oriented: bool = False          # lower-is-better: negated before comparing
    reason: str | None = None


@dataclass
class DarrAgreement:
    """Every metric's DARR tau against one set of human pairs."""

    source: str
    pairs_file: str
    n_pairs: int
    n_units: int
    unit: str                        # what the bootstrap resamples: "pair" or "segment"
    settings: DarrSettings
    metrics: list[DarrTau]
    rule: str = DARR_RULE
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), allow_nan=False))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    def format_table(self) -> str:
        s = self.settings
        units = f"{self.n_units} segments resampled" if self.unit == "segment" else "pairs resampled"
        lines = [f"DARR agreement of {self.source} with the human pairs of {self.pairs_file}: {self.n_pairs} pairs; "
                 f"{int(round(s.confidence * 100))}% bootstrap intervals ({units}), {s.resamples} resamples, "
                 f"seed {s.seed}", self.rule]
        rows = [["metric", "tau", "concordant", "discordant", "of which ties"]]
        for m in self.metrics:
            rows.append([m.metric + (" (negated)" if m.oriented else ""),
                         "n/a" if m.tau is None else f"{m.tau:.3f} [{_fmt(m.low)}, {_fmt(m.high)}]",
                         str(m.concordant), str(m.discordant), str(m.ties)])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines += [f"{m.metric}: {m.reason}" for m in self.metrics if m.reason]
        lines += self.notes
        return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}"


def darr_tau(better: object, worse: object) -> tuple[float, int, int, int]:
    """(tau, concordant, discordant, ties) of a metric's scores of each pair's better and worse
    item; tau NaN when there is no pair."""
    b, w = np.asarray(better, dtype=np.float64), np.asarray(worse, dtype=np.float64)
    if b.shape != w.shape or b.ndim != 1:
        raise ValueError(f"better and worse must be 1-D of one length, got {b.shape} and {w.shape}")
    concordant = int(np.count_nonzero(b > w))
    ties = int(np.count_nonzero(b == w))
    discordant = int(b.size) - concordant
    tau = (concordant - discordant) / b.size if b.size else float("nan")
    return float(tau), concordant, discordant, ties


def darr_agreement(better: Mapping[str, Sequence[float] | np.ndarray], worse: Mapping[str, Sequence[float] | np.ndarray],
                   settings: DarrSettings | None = None, *, units: Sequence[object] | None = None, source: str = "", pairs_file: str = "",
                   lower_is_better: Collection[str] = (), progress: bool = False) -> DarrAgreement:
    """Each metric's DARR tau: ``better[m]`` / ``worse[m]`` are its scores of each pair's better and
    worse item (one value per pair, in the pairs' order, finite); ``lower_is_better`` metrics are
    negated first. ``units``: each pair's segment (pairs of one segment are resampled together; the
    segments numbered in first-seen order for the draws); None: each pair is a unit of its own."""
    settings = settings or DarrSettings()
    settings.check()
    n = len(next(iter(better.values()))) if better else 0
    if units is None:
        unit = np.arange(n)
    else:
        names = [str(u) for u in units]
        order = {name: k for k, name in enumerate(dict.fromkeys(names))}      # units in first-seen order
        unit = np.array([order[name] for name in names], dtype=np.int64)
        if unit.size != n:
            raise ValueError(f"units: one per pair ({n}), got {unit.size}")
    n_units = int(unit.max(initial=-1)) + 1
    pairs_per_unit = np.bincount(unit, minlength=n_units).astype(np.float64)
    idx = resample_indices(n_units, settings.resamples, settings.seed) if n_units else None
    bar = tqdm(total=len(better) * settings.resamples, desc="DARR resamples", unit="resample", disable=not progress,
               leave=False)
    out = []
    for metric in better:
        sign = -1.0 if metric in lower_is_better else 1.0
        b = sign * np.asarray(better[metric], dtype=np.float64)
        w = sign * np.asarray(worse[metric], dtype=np.float64)
        bad = np.flatnonzero(~(np.isfinite(b) & np.isfinite(w)))
        if bad.size:
            raise ValueError(f"pair {int(bad[0]) + 1}: {metric} is not a finite number on both of its items")
        tau, c, d, ties = darr_tau(b, w)
        if n == 0 or idx is None:
            out.append(DarrTau(metric, None, c, d, ties, oriented=sign < 0, reason="no pairs"))
            continue
        per_unit = np.bincount(unit, weights=(b > w).astype(np.float64), minlength=n_units)
        values = np.empty(settings.resamples)
        step = max(1, _BLOCK // max(n_units, 1))
        for start in range(0, settings.resamples, step):
            block = idx[start:start + step]
            rows = block.shape[0]
            offsets = (np.arange(rows, dtype=np.int64) * n_units)[:, None]
            counts = np.bincount((block + offsets).ravel(), minlength=rows * n_units).reshape(rows, n_units)
            total = counts @ pairs_per_unit
            values[start:start + rows] = 2.0 * (counts @ per_unit) / total - 1.0
            bar.update(rows)
        interval = percentile_interval(tau, values, settings.confidence)
        out.append(DarrTau(metric, tau, c, d, ties, interval.low, interval.high, settings.resamples,
                           oriented=sign < 0))
    bar.close()
    return DarrAgreement(source=source, pairs_file=pairs_file, n_pairs=n, n_units=n_units,
                         unit="pair" if units is None else "segment", settings=settings, metrics=out)

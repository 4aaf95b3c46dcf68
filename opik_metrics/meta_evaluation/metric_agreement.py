"""Which metric agrees with people: each automatic score's Kendall, Spearman and Pearson
correlation with a human score on the items both have, with bootstrap intervals (items
resampled), and a paired bootstrap of each metric's correlation against the best one's.

Works on plain mappings (item key -> human ratings, score name -> item key -> value), so the same
numbers come from the local store, Opik or a record file (``sources`` reads them; see
``human_ratings``). A correlation that cannot be computed (a column with one value, fewer than two
items) is None with the reason, never NaN.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from opik_metrics.compare.statistics.bootstrap import (paired_from_resamples, percentile_interval, resample_indices,
                                                       resamples_for)
from opik_metrics.compare.statistics.correlation import METHODS, distinct_counts, resampled_correlations_together
from opik_metrics.compare.statistics.defaults import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_RESAMPLES,
                                                      bounded_count, seed_and_confidence_problem)

__all__ = ["DEFAULT_KENDALL", "DEFAULT_METHODS", "RATERS", "Agreement", "AgreementSettings", "Correlation",
           "MetricAgreement", "VersusBest", "agreement_from_scores", "too_few_resamples"]

#: Bound on the elements of one (resamples x pairs) block of weights.
_BLOCK = 1 << 22

#: How several ratings of one item enter: their mean as one pair, or each rating as a pair of its own
#: (the item's pairs are resampled together).
RATERS = ("mean", "pairs")

#: The correlations computed when ``--method`` names none, in the order their columns are printed:
#: Kendall tau-b first, as meta-evaluations print it (SummEval, Fabbri et al. 2021; the WMT metrics
#: task; the CLIPScore paper on Flickr8K-CF), then tau-c (the CLIPScore paper's Flickr8K-Expert
#: number, ratings on a 1-4 scale), Spearman and Pearson. ``--method`` sets the columns and their order.
DEFAULT_METHODS = ("kendall_b", "kendall_c", "spearman", "pearson")
DEFAULT_KENDALL = DEFAULT_METHODS[0]
KENDALL_NOTE = ("Kendall tau-b leads, as SummEval and the WMT metrics task print it (tau-c beside it, the CLIPScore "
                "paper's Flickr8K-Expert number); --method sets the columns and their order")


@dataclass(frozen=True)
class AgreementSettings:
    """Which correlations, how ratings combine, and the bootstrap (resamples, seed, confidence)."""

    methods: tuple[str, ...] = DEFAULT_METHODS
    raters: str = "mean"
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE

    def check(self) -> None:
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown or not self.methods:
            raise ValueError(f"methods: choose from {', '.join(METHODS)}, got {list(self.methods)!r}")
        if self.raters not in RATERS:
            raise ValueError(f"raters: expected mean or pairs, got {self.raters!r}")
        problem = bounded_count("resamples", self.resamples, MAX_RESAMPLES)
        if problem is not None:
            raise ValueError(problem)
        problem = seed_and_confidence_problem(self.seed, self.confidence)
        if problem is not None:
            raise ValueError(problem)


@dataclass(frozen=True)
class Correlation:
    """One correlation with its percentile interval; ``estimate`` None (with ``reason``) when undefined.
    ``resamples`` counts those that gave a value (a resample whose column is constant gives none)."""

    method: str
    estimate: float | None
    low: float | None = None
    high: float | None = None
    resamples: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class VersusBest:
    """A metric's correlation minus the best metric's, on the items all three (human, it, best) have:
    paired bootstrap interval and p-value; ``significant`` when p < 1 - confidence and the metric is
    below the best there (the best is chosen on each metric's own items, so on the shared ones a
    metric can come out above it: that is not "significantly below the best")."""

    method: str
    best: str
    delta: float | None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    significant: bool = False
    n_items: int = 0
    resamples: int = 0
    reason: str | None = None


@dataclass
class MetricAgreement:
    """One automatic score against the human score."""

    metric: str
    n_items: int                     # items with both a human rating and this score
    n_pairs: int                     # pairs correlated (items, or ratings with raters="pairs")
    human_only: int                  # items rated by people that lack this score
    oriented: bool = False           # lower-is-better: its values were negated, so agreement is positive
    correlations: dict[str, Correlation] = field(default_factory=dict)
    versus_best: dict[str, VersusBest] = field(default_factory=dict)


@dataclass
class Agreement:
    """Every metric's agreement with one human score on one experiment."""

    experiment: str
    source: str
    human: str
    settings: AgreementSettings
    human_items: int                 # items with at least one human rating
    metrics: list[MetricAgreement]
    best: dict[str, str | None]      # method -> the metric with the highest correlation
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["settings"]["methods"] = list(self.settings.methods)
        data["kendall_variant"] = {"default": DEFAULT_KENDALL, "why": KENDALL_NOTE}
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    def format_table(self) -> str:
        """A plain-text table: one row per metric, each correlation with its interval; a `*` marks
        a metric significantly below the best, `best` the best."""
        methods = list(self.settings.methods)
        s = self.settings
        lines = [f"agreement of {self.experiment} ({self.source}) with human score {self.human!r}: "
                 f"{self.human_items} rated items, raters={s.raters}; {int(round(s.confidence * 100))}% bootstrap "
                 f"intervals, {s.resamples} item resamples, seed {s.seed}", KENDALL_NOTE]
        header = ["metric", "n", *methods]
        rows = [header]
        for m in self.metrics:
            cells = [m.metric + (" (negated)" if m.oriented else ""), str(m.n_items)]
            for method in methods:
                c = m.correlations[method]
                if c.estimate is None:
                    cells.append("n/a")
                    continue
                mark = " best" if self.best.get(method) == m.metric else ""
                vb = m.versus_best.get(method)
                if vb is not None and vb.significant:
                    mark = " *"
                cells.append(f"{c.estimate:.3f} [{_fmt(c.low)}, {_fmt(c.high)}]{mark}")
            rows.append(cells)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
        lines.append(f"* significantly below the best (paired bootstrap, p < {1 - s.confidence:.2g})")
        for m in self.metrics:
            for method in methods:
                if m.correlations[method].reason:
                    lines.append(f"{m.metric} {method}: {m.correlations[method].reason}")
        lines += self.notes
        return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}"


def _ratings(values: Sequence[float], key: str) -> list[float]:
    out = [float(v) for v in values]
    bad = [v for v in out if not math.isfinite(v)]
    if bad or not out:
        raise ValueError(f"item {key!r}: human ratings must be finite numbers, got {list(values)!r}")
    return out


class _Pairs:
    """The (score, rating) pairs on a list of items, and which item each pair belongs to."""

    def __init__(self, keys: Sequence[str], human: Mapping[str, list[float]], scores: Mapping[str, float],
                 raters: str) -> None:
        self.n_items = len(keys)
        if raters == "mean":
            self.item = np.arange(len(keys))
            self.human = np.array([float(np.mean(human[k])) for k in keys])
            self.score = np.array([scores[k] for k in keys], dtype=np.float64)
        else:
            self.item = np.array([i for i, k in enumerate(keys) for _ in human[k]], dtype=np.int64)
            self.human = np.array([r for k in keys for r in human[k]], dtype=np.float64)
            self.score = np.array([scores[k] for k in keys for _ in human[k]], dtype=np.float64)

    def weights(self, idx: np.ndarray) -> np.ndarray:
        """How often each resample (row of item indices) draws each pair: its item's count."""
        rows = idx.shape[0]
        offsets = (np.arange(rows, dtype=np.int64) * self.n_items)[:, None]
        counts = np.bincount((idx + offsets).ravel(), minlength=rows * self.n_items).reshape(rows, self.n_items)
        return counts[:, self.item]

    def defined_rows(self, idx: np.ndarray) -> np.ndarray:
        w = self.weights(idx)
        return (distinct_counts(self.human, w) >= 2) & (distinct_counts(self.score, w) >= 2)


class _Resampled:
    """Every asked-for correlation of one metric on its items: the full-sample values and the
    values on each resample (NaN where a column is constant), computed once, a block of resamples
    at a time so memory stays bounded; a paired test on the same items reuses them."""

    def __init__(self, pairs: _Pairs, settings: AgreementSettings, bar: Any) -> None:
        methods = list(settings.methods)
        self.pairs = pairs
        self.value = {m: float(v[0]) for m, v in resampled_correlations_together(
            methods, pairs.score, pairs.human, np.ones((1, pairs.human.size), dtype=np.int64)).items()}
        idx = resample_indices(pairs.n_items, settings.resamples, settings.seed)
        self.values = {m: np.empty(settings.resamples) for m in methods}
        self.defined = np.empty(settings.resamples, dtype=bool)
        step = max(1, _BLOCK // max(pairs.human.size, 1))
        for start in range(0, settings.resamples, step):
            w = pairs.weights(idx[start:start + step])
            stop = start + w.shape[0]
            self.defined[start:stop] = (distinct_counts(pairs.human, w) >= 2) & (distinct_counts(pairs.score, w) >= 2)
            for m, v in resampled_correlations_together(methods, pairs.score, pairs.human, w).items():
                self.values[m][start:stop] = v
            bar.update(w.shape[0])


def _undefined_reason(pairs: _Pairs, metric: str, human: str) -> str | None:
    if pairs.n_items < 2:
        return f"only {pairs.n_items} item(s) have both {metric} and {human}; a correlation needs two"
    if np.unique(pairs.human).size < 2:
        return f"the human score {human} is {pairs.human[0]:g} on every item {metric} has: no ranking to agree with"
    if np.unique(pairs.score).size < 2:
        return f"{metric} is {pairs.score[0]:g} on every rated item: it ranks nothing"
    return None


def agreement_from_scores(human: Mapping[str, Sequence[float]], scores: Mapping[str, Mapping[str, float]],
                          settings: AgreementSettings | None = None, *, experiment: str = "", source: str = "",
                          human_name: str = "human", lower_is_better: Collection[str] = (),
                          progress: bool = False) -> Agreement:
    """The agreement of each score in ``scores`` (name -> item key -> value) with the human ratings
    (item key -> one or more ratings) on the items both have. Scores in ``lower_is_better`` are
    negated first, so that for every metric a higher correlation means closer to people.
    ``progress`` shows a bar of resamples done (stderr)."""
    settings = settings or AgreementSettings()
    settings.check()
    ratings = {str(k): _ratings(v, str(k)) for k, v in human.items()}
    item_order = list(ratings)
    results: list[MetricAgreement] = []
    values: dict[str, dict[str, float]] = {}
    bar = tqdm(total=0, desc="agreement resamples", unit="resample", disable=not progress, leave=False)
    cache: dict[tuple[str, tuple[str, ...]], _Resampled | None] = {}

    def resampled(name: str, keys: list[str]) -> _Resampled | None:
        """The metric's correlations on ``keys``, computed once (None when undefined there)."""
        key = (name, tuple(keys))
        if key not in cache:
            pairs = _Pairs(keys, ratings, values[name], settings.raters)
            if _undefined_reason(pairs, name, human_name):
                cache[key] = None
            else:
                bar.total += settings.resamples
                bar.refresh()
                cache[key] = _Resampled(pairs, settings, bar)
        return cache[key]

    for name, by_item in scores.items():
        sign = -1.0 if name in lower_is_better else 1.0
        values[name] = {str(k): sign * float(v) for k, v in by_item.items() if str(k) in ratings}
        bad = [k for k, v in values[name].items() if not math.isfinite(v)]
        if bad:
            raise ValueError(f"item {bad[0]!r}: score {name} is {values[name][bad[0]]!r}; scores must be finite")
        keys = [k for k in item_order if k in values[name]]
        pairs = _Pairs(keys, ratings, values[name], settings.raters)
        result = MetricAgreement(metric=name, n_items=len(keys), n_pairs=int(pairs.human.size),
                                 human_only=len(ratings) - len(keys), oriented=sign < 0)
        reason = _undefined_reason(pairs, name, human_name)
        computed = None if reason else resampled(name, keys)
        for method in settings.methods:
            result.correlations[method] = _correlation(computed, method, settings.confidence, reason)
        results.append(result)
    best: dict[str, str | None] = {}
    for method in settings.methods:
        defined = [m for m in results if m.correlations[method].estimate is not None]
        top = max(defined, key=lambda m: m.correlations[method].estimate or 0.0, default=None)
        best[method] = top.metric if top else None
        if top is None:
            continue
        for m in results:
            if m is not top and m.correlations[method].estimate is not None:
                m.versus_best[method] = _versus(method, m.metric, top.metric, item_order, ratings, values, settings,
                                                resampled)
    bar.close()
    notes = []
    if settings.raters == "pairs":
        notes.append("raters=pairs: each rating is a pair of its own; an item's pairs are resampled together")
    floor = resamples_for(1.0 - settings.confidence)
    if settings.resamples < floor:
        notes.append(too_few_resamples(settings.resamples, 1.0 - settings.confidence))
    return Agreement(experiment=experiment, source=source, human=human_name, settings=settings,
                     human_items=len(ratings), metrics=results, best=best, notes=notes)


def too_few_resamples(resamples: int, alpha: float, noun: str = "resamples") -> str:
    """The one line that says a resample (or permutation) count cannot show significance at ``alpha``."""
    return (f"{resamples} {noun} cannot show anything significant at {alpha:.2g}: the smallest p-value is "
            f"1/{resamples + 1}; use at least {resamples_for(alpha)}")


def _correlation(computed: _Resampled | None, method: str, confidence: float, reason: str | None) -> Correlation:
    if computed is None:
        return Correlation(method, None, reason=reason)
    value = computed.value[method]
    rows = computed.values[method][computed.defined]
    if rows.size == 0:
        return Correlation(method, value, resamples=0, reason="every resample has a constant column: no interval")
    interval = percentile_interval(value, rows, confidence)
    return Correlation(method, value, interval.low, interval.high, int(rows.size))


def _versus(method: str, metric: str, best: str, item_order: list[str], ratings: Mapping[str, list[float]],
            values: Mapping[str, Mapping[str, float]], settings: AgreementSettings,
            resampled: Callable[[str, list[str]], _Resampled | None]) -> VersusBest:
    """``metric``'s correlation minus ``best``'s, paired on the items both scores and the human have."""
    keys = [k for k in item_order if k in values[metric] and k in values[best]]
    mine = _Pairs(keys, ratings, values[metric], settings.raters)
    theirs = _Pairs(keys, ratings, values[best], settings.raters)
    reason = _undefined_reason(mine, metric, "the human score") or _undefined_reason(theirs, best, "the human score")
    if reason:
        return VersusBest(method, best, None, n_items=len(keys), reason=reason)
    a, b = resampled(metric, keys), resampled(best, keys)
    assert a is not None and b is not None
    rows = a.defined & b.defined
    if not rows.any():
        return VersusBest(method, best, None, n_items=len(keys), reason="every resample has a constant column")
    result = paired_from_resamples(b.value[method], a.value[method], b.values[method][rows], a.values[method][rows],
                                   settings.confidence)
    return VersusBest(method, best, result.delta, result.delta_low, result.delta_high, result.p_value,
                      significant=result.p_value < 1.0 - settings.confidence and result.delta < 0, n_items=len(keys),
                      resamples=int(rows.sum()), reason=result.note)

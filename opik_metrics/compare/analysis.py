"""Compare experiments item by item: per-metric means (and corpus scores) with seeded bootstrap
confidence intervals, paired bootstrap significance on shared items, wins/ties/losses, the items
that differ most, and failed items. The result is a typed ``Comparison`` (``compare/model.py``) whose
verdicts, in each score's declared direction, are worked out here and nowhere else.

It claims no more than the items allow: a verdict (significant or not) needs ``min_items`` paired
items (below that the p-value is shown for information and the verdict is "n/a", as it is when no
item can be paired); scores that are not finite (an infinite perplexity, NaN) are counted per
experiment and score, left out of means and tests, and said so in the notes.
"""
from __future__ import annotations

import functools
import heapq
import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from itertools import combinations
from typing import Any, Sequence

import numpy as np

from opik_metrics.core.versions import ours, package_version
from opik_metrics.compare.statistics.defaults import MAX_PERMUTATIONS, MAX_RESAMPLES, bounded_count
from opik_metrics.compare.statistics.bootstrap import (DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, CorpusStatistic,
                                            MeanStatistic, ResampledOnce, bootstrap_interval, paired_bootstrap,
                                            resample_indices,
                                            wins_ties_losses)
from opik_metrics.core import CorpusFacts, ScoreFacts, Signature, resolve_formula
from opik_metrics.core.statistics_checks import statistics_problem
from opik_metrics.compare.model import (Comparison, ComparisonSettings, ExperimentSummary, FailedItem,
                                        ItemDifference, Pair, PairResult, ScoreSummary, ScoreValue, Verdict)
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.compare.reading.signing import unsigned_difference
from opik_metrics.compare.statistics.binary import mcnemar_exact, newcombe_paired_interval, wilson_interval
from opik_metrics.compare.statistics.bootstrap import P_VALUE_RULES
from opik_metrics.compare.statistics.permutation import DEFAULT_PERMUTATIONS, paired_permutation
from opik_metrics.compare.statistics.trials import by_cluster, nondeterminism, ratio_of_sums, trial_counts, units_of
from opik_metrics.core.numbers import is_number

TEST_NAME = "paired bootstrap resampling (Koehn 2004), as sacrebleu's paired_bs"
DEFAULT_MIN_ITEMS = 5

#: ``--test``: "auto" tests pass/fail scores (every value 0 or 1, one trial per item, no clusters) with
#: the exact McNemar test and every other score with the paired permutation test (approximate
#: randomization, sacrebleu's paired-ar: it keeps its level at any number of items, where the
#: bootstrap's p rejects 7-18% of true nulls below 50 items; docs/compare.md); "bootstrap" and
#: "permutation" test every score their way. Intervals are the bootstrap's whatever the test.
TESTS = ("auto", "bootstrap", "permutation")

#: What comparison.json records as the test that made each p-value.
TEST_LABELS = {"bootstrap": "paired-bs", "permutation": "paired-ar", "mcnemar": "mcnemar-exact"}

def test_label(test: str, p_value: str) -> str:
    """The recorded name of a test under a p-value rule: "paired-bs", "paired-ar-sacrebleu", "mcnemar-exact"."""
    label = TEST_LABELS[test]
    return f"{label}-sacrebleu" if p_value == "sacrebleu" and test != "mcnemar" else label


def test_words(settings: "CompareSettings") -> str:
    """The comparison's tests in words, as its settings record them."""
    rule = ("sacrebleu's p-value (centred absolute differences; it behaves as one-sided)"
            if settings.p_value == "sacrebleu" else "two-sided p from the null shifted to mean zero")
    if settings.paired_test == "permutation":
        main = f"paired permutation test (approximate randomization, {settings.permutations} shuffles)"
    else:
        main = TEST_NAME
    binary = ("; pass/fail scores: exact McNemar test, Wilson and Newcombe intervals"
              if settings.test == "auto" and settings.p_value == "calibrated" else "")
    return f"{main}, {rule}; intervals: percentile bootstrap{binary}"


@dataclass(frozen=True)
class CompareSettings:
    """How to compare: resamples and seed of the bootstrap, confidence, items listed, ties, metrics."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    confidence: float = DEFAULT_CONFIDENCE
    top_k: int = 5
    tie_tolerance: float = 1e-9
    metrics: tuple[str, ...] | None = None   # None: every score but precision/recall parts
    all_scores: bool = False                 # also the precision/recall parts
    min_items: int = DEFAULT_MIN_ITEMS       # paired items a verdict needs (fewer: p-value shown, verdict n/a)
    cluster_by: str | None = None            # an item field: the bootstrap draws whole clusters of items
    test: str = "auto"                       # TESTS
    p_value: str = "calibrated"              # bootstrap.P_VALUE_RULES ("sacrebleu": its paired-bs p-value)
    permutations: int = DEFAULT_PERMUTATIONS  # shuffles of the permutation test

    @property
    def alpha(self) -> float:
        return round(1.0 - self.confidence, 12)

    def check(self) -> None:
        for problem in (bounded_count("resamples", self.resamples, MAX_RESAMPLES),
                        bounded_count("permutations", self.permutations, MAX_PERMUTATIONS)):
            if problem is not None:
                raise ValueError(problem)
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence: expected a number between 0 and 1, got {self.confidence!r}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k: expected a non-negative integer, got {self.top_k!r}")
        if isinstance(self.min_items, bool) or not isinstance(self.min_items, int) or self.min_items < 1:
            raise ValueError(f"min_items: expected a positive integer, got {self.min_items!r}")
        if self.cluster_by is not None and (not isinstance(self.cluster_by, str) or not self.cluster_by.strip()):
            raise ValueError(f"cluster_by: expected a field name, got {self.cluster_by!r}")
        if self.test not in TESTS:
            raise ValueError(f"test: expected one of {', '.join(TESTS)}, got {self.test!r}")
        if self.p_value not in P_VALUE_RULES:
            raise ValueError(f"p_value: expected one of {', '.join(P_VALUE_RULES)}, got {self.p_value!r}")

    @property
    def paired_test(self) -> str:
        """The test of scores that are not pass/fail: "permutation" (``auto`` with calibrated p-values,
        or asked for), else "bootstrap" (asked for, or sacrebleu's p-values: its default paired-bs)."""
        if self.test == "permutation" or (self.test == "auto" and self.p_value == "calibrated"):
            return "permutation"
        return "bootstrap"

    @property
    def binary_tests(self) -> bool:
        """Whether pass/fail scores get McNemar's test and Wilson intervals (``test="auto"``, calibrated p)."""
        return self.test == "auto" and self.p_value == "calibrated"


def score_facts(name: str, experiments: Sequence[ExperimentRecords]) -> ScoreFacts:
    """What the experiments' recorded metric facts say about score ``name``: its own declared
    facts, else the direction of the metric that gave it (a foreign metric's ``higher_is_better``),
    else higher-is-better. Never decided from the name. Experiments that state opposite directions
    for the score are a data error: no comparison can be right for both."""
    declared = [(e.name, facts.score(name)) for e in experiments for facts in e.facts.values()
                if facts.score(name) is not None]
    if not declared:
        declared = [(e.name, ScoreFacts(name, higher_is_better=e.facts[e.score_metrics.get(name, name)].higher_is_better))
                    for e in experiments if e.score_metrics.get(name, name) in e.facts]
    if not declared:
        return ScoreFacts(name)
    first_name, first = declared[0]
    for other_name, other in declared[1:]:
        assert other is not None and first is not None
        if other.higher_is_better != first.higher_is_better:
            raise ValueError(f"{first_name} and {other_name} disagree on the direction of {name}: "
                             f"{_direction(first.higher_is_better)} in {first_name}, "
                             f"{_direction(other.higher_is_better)} in {other_name}; a comparison cannot be "
                             "right for both (was one record file edited, or two different metrics given one name?)")
    assert first is not None
    return first


def _direction(higher_is_better: bool) -> str:
    return "higher is better" if higher_is_better else "lower is better"


def unpaired(experiments: Sequence[ExperimentRecords]) -> str | None:
    """Why no two of ``experiments`` can be compared item by item, in one line, or None when some
    pair shares an item with an output in both. Items pair up by their input (the item key), so
    experiments on different datasets share none; the command line stops on this (exit 2)
    instead of printing a table that says "nothing to compare" on every row."""
    reasons = []
    for a, b in combinations(experiments, 2):
        keys = {item.key: item for item in a.items}
        common = [(keys[item.key], item) for item in b.items if item.key in keys]
        if any(not x.failed and not y.failed for x, y in common):
            return None
        if common:
            reasons.append(f"{a.name} and {b.name} share {len(common)} item(s), but none has an output in both "
                           "(each failed in one of them; see their failed items)")
        else:
            datasets = (f"; {a.name} is on dataset {a.dataset!r}, {b.name} on {b.dataset!r}"
                        if a.dataset != b.dataset else "")
            reasons.append(f"{a.name} and {b.name} have no item in common (items pair up by their input{datasets})")
    return "nothing to compare: " + "; ".join(reasons) if reasons else None


def compare_experiments(experiments: Sequence[ExperimentRecords], settings: CompareSettings = CompareSettings(),
                        source: str | None = None, created_at: str | None = None) -> Comparison:
    """The comparison of ``experiments`` (the first is the baseline of each pair it is in)."""
    settings.check()
    _check_experiments(experiments)
    experiments = [units_of(e, settings.cluster_by) for e in experiments]
    metrics = _select_metrics(experiments, settings)
    context = _Context(settings, _pass_fail_scores(metrics, experiments, settings))
    scores = {m.name: _metric_scores(m, experiments, settings, context) for m in metrics}
    pairs = tuple(_pair(a, b, metrics, settings, context) for a, b in combinations(experiments, 2))
    tests = sum(1 for p in pairs for entry in p.metrics.values() if entry.significant is not None)
    versions: dict[str, str | None] = {name: package_version(name) for name in ("numpy", "sacrebleu", "matplotlib")}
    return Comparison(
        created_at=created_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        source=source or experiments[0].source,
        settings=ComparisonSettings(resamples=settings.resamples, seed=settings.seed, confidence=settings.confidence,
                                    alpha=settings.alpha, tie_tolerance=settings.tie_tolerance,
                                    top_k=settings.top_k, min_items=settings.min_items, test=test_words(settings),
                                    p_value=settings.p_value,
                                    permutations=settings.permutations if settings.paired_test == "permutation"
                                    else None),
        versions=versions | {"opik-metrics": ours()},
        experiments=tuple(_experiment_entry(e) for e in experiments),
        metrics=tuple(metrics),
        scores=scores,
        pairs=pairs,
        failed_items={e.name: tuple(_failed_entry(item) for item in e.failed_items) for e in experiments},
        notes=tuple(_notes(experiments, metrics, scores, pairs, tests, settings, context)),
    )


def _check_experiments(experiments: Sequence[ExperimentRecords]) -> None:
    if len(experiments) < 2:
        raise ValueError(f"compare needs at least two experiments, got {len(experiments)}")
    names = [e.name for e in experiments]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"experiment names must differ; repeated: {', '.join(repeated)}")
    for e in experiments:         # before any work: a formula neither ours nor registered is refused, unloaded
        e.check_formulas()


# ---- metrics ------------------------------------------------------------------------------

def _select_metrics(experiments: Sequence[ExperimentRecords], settings: CompareSettings) -> list[ScoreSummary]:
    item_names: dict[str, None] = {}
    for e in experiments:
        item_names.update(dict.fromkeys(e.score_names()))
    corpora = _corpora(experiments)
    available: list[tuple[str, str]] = []
    for name in item_names:
        available.append((name, "mean"))
        for corpus in corpora.get(name, []):
            if any(_has_statistics(corpus, item, e) for e in experiments for item in e.items):
                available.append((corpus, "corpus"))
    if settings.metrics:
        known = {name: kind for name, kind in available}
        unknown = [m for m in settings.metrics if m not in known]
        if unknown:
            raise ValueError(f"metric {', '.join(unknown)} is in none of the experiments; "
                             f"they have: {', '.join(known) or 'no scores'}")
        chosen = [(m, known[m]) for m in dict.fromkeys(settings.metrics)]
    else:
        chosen = [(n, k) for n, k in available if settings.all_scores or not score_facts(n, experiments).part]
    if not chosen:
        raise ValueError("the experiments have no scores to compare")
    out = []
    for name, kind in chosen:
        facts = score_facts(name, experiments)
        low, high = facts.bounds
        out.append(ScoreSummary(name=name, kind=kind, higher_is_better=facts.higher_is_better, scale=facts.scale,
                                bounds=(low, high), signature=_signature(name, experiments)))
    return out


def _corpora(experiments: Sequence[ExperimentRecords]) -> dict[str, list[str]]:
    """Corpus scores of their own (not means), by the item score that carries their statistics."""
    out: dict[str, list[str]] = {}
    for e in experiments:
        for facts in e.facts.values():
            for corpus in facts.own_corpora:
                if corpus.name not in out.get(corpus.carrier, []):
                    out.setdefault(corpus.carrier, []).append(corpus.name)
    return out


def _signature(score: str, experiments: Sequence[ExperimentRecords]) -> str | None:
    """The signature of the metric that declared ``score``, else the one its results carry."""
    for e in experiments:
        for facts in e.facts.values():
            if facts.score(score) is not None and facts.signature:
                return str(facts.signature)
    for e in experiments:
        if score in e.experiment_score_metadata and e.experiment_score_metadata[score].get("signature"):
            return str(e.experiment_score_metadata[score]["signature"])
        for item in e.items:
            signature = item.metadata.get(score, {}).get("signature")
            if signature:
                return str(signature)
    return None


def _stats_row(corpus: CorpusFacts, item: ItemRecord) -> Any:
    """The statistics ``corpus`` reads from a scored item (its carrier score's metadata), as
    recorded; None when the item is failed, lacks the carrier score or records no statistics."""
    if item.failed or corpus.carrier not in item.scores:
        return None
    return (item.metadata.get(corpus.carrier) or {}).get("statistics")


_PLAIN_NUMBERS = (int, float)


def statistics_damage(corpus: CorpusFacts, row: Any) -> str | None:
    """What makes a recorded statistics row unusable for ``corpus`` (not a list, the wrong number of
    values, a value that is not a finite number), naming the field; None for a usable row."""
    width = len(corpus.fields)
    if not isinstance(row, list):
        return f"are {row!r}, not a list of {width} numbers"
    if len(row) != width:
        return f"have {len(row)} value(s), not {width} ({', '.join(corpus.fields)})"
    for k, value in enumerate(row):
        if not is_number(value):
            what = (f"{'NaN' if value != value else f'{value:g}'}, not a finite number" if isinstance(value, float)
                    else f"{value!r}, not a number")
            return f"hold {corpus.fields[k]} (value {k + 1} of {width}) = {what}"
    return None


def _statistics_rows(corpus: CorpusFacts, items: Sequence[ItemRecord], experiment: ExperimentRecords
                     ) -> tuple[dict[str, list], frozenset[str]]:
    """The statistics row of every scored item that records one, by key, and the keys of the scored
    items that record none (a metric span Opik kept no metadata for: counted, said in the notes). A row that
    is there but unusable (``statistics_damage``), or that no item can have (the corpus formula's
    own check: a negative count, more matches than n-grams), is a data error naming the
    experiment, the item and the field. Plain int and float rows are checked by numpy at once
    (100,000 BLEU rows: 1.1 million numbers), any other row one value at a time."""
    width = len(corpus.fields)
    found: list[tuple[ItemRecord, Any]] = []
    missing: list[str] = []
    for item in items:
        if item.failed or corpus.carrier not in item.scores:
            continue
        row = (item.metadata.get(corpus.carrier) or {}).get("statistics")
        if row is None:
            missing.append(item.key)
        else:
            found.append((item, row))
    plain = [isinstance(row, list) and len(row) == width and all(type(v) in _PLAIN_NUMBERS for v in row)
             for _, row in found]                      # exactly int or float: no bool
    matrix = np.array([row for (_, row), p in zip(found, plain) if p], dtype=np.float64).reshape(-1, width)
    finite = iter(np.all(np.isfinite(matrix), axis=1, keepdims=False).reshape(-1).tolist())
    for (item, row), p in zip(found, plain):
        if not (next(finite) if p else statistics_damage(corpus, row) is None):
            raise ValueError(f"{_where(experiment, item)}: the statistics of {corpus.carrier} (for {corpus.name}) "
                             f"{statistics_damage(corpus, row)}; the record was edited or damaged (score it again)")
    valid = {item.key: row for item, row in found}
    problem = statistics_problem(resolve_formula(corpus.formula, experiment.name), list(valid.values()),
                                 **corpus.options)
    if problem is not None:
        item = found[problem[0]][0]
        raise ValueError(f"{_where(experiment, item)}: the statistics of {corpus.carrier} (for {corpus.name}) "
                         f"cannot come from any item: {problem[1]}; the record was edited or damaged")
    return valid, frozenset(missing)


def _where(experiment: ExperimentRecords, item: ItemRecord) -> str:
    """Where an item's record is, for an error: the experiment (a record file's path) and the item."""
    return f"{experiment.name}: item {item.key} (row {item.position + 1})"


def _statistic(metric: ScoreSummary, experiment: ExperimentRecords, items: Sequence[ItemRecord],
               column: _Column, clusters: tuple[str, ...] | None = None) -> Any:
    """The statistic of ``metric`` over ``items`` (in that order) of ``experiment``: items in
    ``column.has``, so each has its value or its statistics row. With ``clusters``, a cluster
    bootstrap's statistic: one row per cluster (the sum and count of its items' values, or its
    items' summed statistics), so that a resample draws whole clusters."""
    name = metric.name
    if metric.kind == "mean":
        values = [item.scores[name] for item in items]
        if clusters is None:
            return MeanStatistic(values)
        return CorpusStatistic(by_cluster([[v, 1.0] for v in values], clusters), ratio_of_sums)
    corpus = experiment.corpus(name)
    assert corpus is not None
    formula = functools.partial(resolve_formula(corpus.formula, experiment.name), **corpus.options)
    rows = [column.rows[item.key] for item in items]
    return CorpusStatistic(rows if clusters is None else by_cluster(rows, clusters), formula)


def _has_statistics(corpus_name: str, item: ItemRecord, experiment: ExperimentRecords) -> bool:
    """Whether a scored item records statistics for the corpus score ``corpus_name`` (damaged ones
    too: the comparison then refuses them, naming the item, instead of leaving the score out)."""
    corpus = experiment.corpus(corpus_name)
    return not item.failed and corpus is not None and _stats_row(corpus, item) is not None


def _source(metric: ScoreSummary, experiment: ExperimentRecords) -> str:
    """The item score a metric reads: its own name, or the score carrying a corpus score's statistics."""
    if metric.kind == "corpus":
        corpus = experiment.corpus(metric.name)
        if corpus is not None:
            return corpus.carrier
    return metric.name


def _kinds(values: Sequence[str]) -> dict[str, int]:
    """How many of each non-finite kind, in a fixed order."""
    return {kind: values.count(kind) for kind in ("inf", "-inf", "nan") if values.count(kind)}


def _kinds_text(kinds: dict[str, int]) -> str:
    return ", ".join(f"{count} {'NaN' if kind == 'nan' else kind}" for kind, count in kinds.items())


class _Context:
    """What one comparison computes once and reads many times. The bootstrap's item indices for
    ``n`` items (they depend on n, resamples and seed only), drawn once while ``n`` stays the same,
    so every score of every pair over the same items shares one (resamples x n) draw; only the last
    draw is kept. And each score's column of an experiment: which items have a usable value, which
    a non-finite one, and a corpus score's checked statistics rows, read once per item."""

    def __init__(self, settings: CompareSettings, pass_fail: frozenset[str] = frozenset()) -> None:
        self.resamples, self.seed = settings.resamples, settings.seed
        self.pass_fail = pass_fail          # the scores tested as pass/fail (McNemar, Wilson, Newcombe)
        self.clustered = settings.cluster_by is not None
        self.last: tuple[int, Any] | None = None
        self.columns: dict[tuple[str, str], _Column] = {}
        self.statistics: dict[tuple[str, str, tuple[str, ...], tuple[str, ...] | None], ResampledOnce] = {}

    def units(self, items: Sequence[ItemRecord]) -> tuple[tuple[str, ...] | None, int]:
        """The cluster of each item (None without clustering) and how many units the bootstrap draws."""
        if not self.clustered:
            return None, len(items)
        labels = tuple(str(item.cluster) for item in items)
        return labels, len(set(labels))

    def indices(self, n_items: int) -> Any:
        if self.last is None or self.last[0] != n_items:
            self.last = None                  # the old draw goes before the new one is made
            idx = resample_indices(n_items, self.resamples, self.seed)
            idx.flags.writeable = False
            self.last = (n_items, idx)
        return self.last[1]

    def statistic(self, metric: ScoreSummary, experiment: ExperimentRecords, items: Sequence[ItemRecord],
                  clusters: tuple[str, ...] | None = None) -> Any:
        """``_statistic`` of ``metric`` over ``items`` (in that order), made once: an experiment's
        interval and a paired test's side over the same items share its resamples. With ``clusters``
        (one label per item) the statistic's units are the clusters, in first-seen order."""
        key = (metric.name, experiment.name, tuple(item.key for item in items), clusters)
        if key not in self.statistics:
            self.statistics[key] = ResampledOnce(_statistic(metric, experiment, items,
                                                            self.column(metric, experiment), clusters))
        return self.statistics[key]

    def column(self, metric: ScoreSummary, experiment: ExperimentRecords) -> _Column:
        key = (metric.name, experiment.name)
        if key not in self.columns:
            self.columns[key] = _Column.of(metric, experiment)
        return self.columns[key]


@dataclass(frozen=True)
class _Column:
    """One score of one experiment: the keys of the items that have a usable value (not failed; a
    finite score, or statistics for a corpus score), each item's non-finite kind, a corpus score's
    statistics rows by key, and the keys of scored items that record no statistics for it."""

    has: frozenset[str]
    kinds: dict[str, str]
    rows: dict[str, list]
    no_statistics: frozenset[str] = frozenset()

    @classmethod
    def of(cls, metric: ScoreSummary, experiment: ExperimentRecords) -> _Column:
        live = [item for item in experiment.items if not item.failed]
        rows: dict[str, list] = {}
        missing: frozenset[str] = frozenset()
        if metric.kind == "mean":
            has = frozenset(item.key for item in live if metric.name in item.scores)
        else:
            corpus = experiment.corpus(metric.name)
            if corpus is not None:
                rows, missing = _statistics_rows(corpus, live, experiment)
            has = frozenset(rows)
        source = _source(metric, experiment)
        kinds = {item.key: item.non_finite[source] for item in live if item.non_finite.get(source)}
        return cls(has, kinds, rows, missing)


def _pass_fail_scores(metrics: Sequence[ScoreSummary], experiments: Sequence[ExperimentRecords],
                      settings: CompareSettings) -> frozenset[str]:
    """The mean scores compared as pass/fail: every value of every experiment 0 or 1, each item one
    trial (an item's mean over trials is a rate, not a pass), no clusters, and ``settings.binary_tests``.
    A score whose facts declare it binary (scale "binary") with another value is a data error."""
    out = set()
    candidates = settings.binary_tests and settings.cluster_by is None
    for metric in metrics:
        declared = metric.scale == "binary"
        if metric.kind != "mean" or not (declared or candidates):
            continue
        if _pass_fail(metric, experiments, declared) and candidates:
            out.add(metric.name)
    return frozenset(out)


def _pass_fail(metric: ScoreSummary, experiments: Sequence[ExperimentRecords], declared: bool) -> bool:
    """Whether every scored item has ``metric`` 0 or 1 over one trial (and some item has it). A
    score ``declared`` binary is checked on every one-trial item (another value: ValueError naming
    it); any other stops at the first item that says no."""
    name, seen, passes = metric.name, False, True
    for e in experiments:
        for item in e.items:
            if item.failed or name not in item.scores:
                continue
            seen = True
            if item.trials == 1 and item.scores[name] not in (0.0, 1.0):
                if declared:
                    raise ValueError(f"{e.name}: item {item.key!r} has {name} = {item.scores[name]!r}, "
                                     f"but its metric declares {name} a pass/fail score (0 or 1)")
                return False
            if item.trials != 1:
                passes = False
                if not declared:
                    return False
    return seen and passes


def _metric_scores(metric: ScoreSummary, experiments: Sequence[ExperimentRecords],
                   settings: CompareSettings, context: _Context) -> dict[str, ScoreValue]:
    out = {}
    for e in experiments:
        column = context.column(metric, e)
        items = [item for item in e.items if item.key in column.has]
        odd = list(column.kinds.values())
        if not items:
            continue
        clusters, units = context.units(items)
        if metric.name in context.pass_fail:
            passes = sum(int(item.scores[metric.name]) for item in items)
            low, high = wilson_interval(passes, len(items), settings.confidence)
            estimate, how = passes / len(items), "wilson"
        else:
            interval = bootstrap_interval(context.statistic(metric, e, items, clusters), context.indices(units),
                                          settings.confidence)
            estimate, low, high, how = interval.estimate, interval.low, interval.high, None
        out[e.name] = ScoreValue(
            value=estimate, low=low, high=high, n=len(items), interval=how,
            failed=len(e.items) - len(items) - len(odd) + e.failed_elsewhere, non_finite=len(odd),
            non_finite_kinds=_kinds(odd),
            values=tuple(item.scores[metric.name] for item in items) if metric.kind == "mean" else (),
            recorded=e.experiment_scores.get(metric.name) if metric.kind == "corpus" else None)
    return out


# ---- pairs --------------------------------------------------------------------------------

def _pair(baseline: ExperimentRecords, system: ExperimentRecords, metrics: Sequence[ScoreSummary],
          settings: CompareSettings, context: _Context) -> Pair:
    base_items = {item.key: item for item in baseline.items}
    shared = [(base_items[item.key], item) for item in system.items
              if item.key in base_items and not item.failed and not base_items[item.key].failed]
    shared.sort(key=lambda pair: pair[0].position)
    keys = frozenset(item.key for _, item in shared)
    options = {m.name: differing for m in metrics
               if (differing := signature_differences(m.name, baseline, system)[0]
                   or unsigned_difference(m.name, baseline.config, system.config))}
    return Pair(baseline=baseline.name, system=system.name, shared_items=len(shared),
                config_differences=_config_differences(baseline.config, system.config),
                metrics={m.name: _no_statistics_note(_pair_metric(m, baseline, system, shared, keys, settings, context), m,
                                                     baseline, system, shared, context) for m in metrics},
                option_differences=options)


def _no_statistics_note(entry: PairResult, metric: ScoreSummary, baseline: ExperimentRecords,
                        system: ExperimentRecords, shared: Sequence[tuple[ItemRecord, ItemRecord]],
                        context: _Context) -> PairResult:
    """``entry`` with a note counting the shared items left out of a corpus score because one side
    records no statistics for them (the comparison's notes say which experiment)."""
    base_missing = context.column(metric, baseline).no_statistics
    system_missing = context.column(metric, system).no_statistics
    left_out = sum(1 for a, b in shared if a.key in base_missing or b.key in system_missing)
    if not left_out:
        return entry
    sides = "; ".join(f"{e.name}: {n}" for e, n in (
        (baseline, sum(1 for a, _ in shared if a.key in base_missing)),
        (system, sum(1 for _, b in shared if b.key in system_missing))) if n)
    note = f"{left_out} of {len(shared)} shared items left out: they record no statistics for {metric.name} ({sides})"
    return replace(entry, note="; ".join(filter(None, (entry.note, note))))


#: The version fields of the pack's signatures, for two records both made before signatures named
#: their versions (``Signature.versions``): without this, a newer sacrebleu would read as another option.
RECORDED_BEFORE_VERSIONS = ("version", "opik_metrics", "opik-metrics", "nltk", "transformers", "torch", "bert-score")


def recorded_signature(score: str, experiment: ExperimentRecords) -> Signature | None:
    """The signature the experiment records for the metric that gave ``score`` (None: none recorded)."""
    for facts in experiment.facts.values():
        if facts.score(score) is not None and facts.signature is not None:
            return facts.signature
    return None


def signature_differences(score: str, baseline: ExperimentRecords, system: ExperimentRecords
                          ) -> tuple[dict[str, tuple[Any, Any]], dict[str, tuple[Any, Any]]]:
    """How the two experiments' signatures of ``score`` differ: the options that change the number
    (a field one side lacks counts, as its value None) and, apart, the package versions; each as
    ``{field: (baseline, system)}``. Empty when either side records no signature."""
    a, b = recorded_signature(score, baseline), recorded_signature(score, system)
    if a is None or b is None:
        return {}, {}
    versions = set(a.versions) | set(b.versions) or set(RECORDED_BEFORE_VERSIONS) & (set(a.fields) | set(b.fields))
    fields = list(dict.fromkeys([*a.fields, *b.fields]))
    differing = {k: (a.fields.get(k), b.fields.get(k)) for k in fields
                 if _json(a.fields.get(k)) != _json(b.fields.get(k))}
    return ({k: v for k, v in differing.items() if k not in versions},
            {k: v for k, v in differing.items() if k in versions})


def _pair_metric(metric: ScoreSummary, baseline: ExperimentRecords, system: ExperimentRecords,
                 shared: Sequence[tuple[ItemRecord, ItemRecord]], keys: frozenset[str],
                 settings: CompareSettings, context: _Context) -> PairResult:
    """``metric`` compared over the ``shared`` items, whose keys are ``keys`` (a pair's two items share one)."""
    base_column, system_column = context.column(metric, baseline), context.column(metric, system)
    if keys <= base_column.has and keys <= system_column.has:
        both = shared                         # the common case, without a look-up per item
    else:
        both = [(a, b) for a, b in shared if a.key in base_column.has and b.key in system_column.has]
    base_kinds = [base_column.kinds[k] for k in keys & base_column.kinds.keys()]
    system_kinds = [system_column.kinds[k] for k in keys & system_column.kinds.keys()]
    odd = {"baseline": _kinds(base_kinds), "system": _kinds(system_kinds)}
    left_out = len(keys & (base_column.kinds.keys() | system_column.kinds.keys()))
    notes = []
    if left_out:
        sides = "; ".join(f"{e.name}: {_kinds_text(odd[side])}" for side, e in (("baseline", baseline),
                                                                              ("system", system)) if odd[side])
        notes.append(f"{left_out} of {len(shared)} shared items left out: {metric.name} is not finite there "
                     f"({sides})")
    non_finite = {side: sum(kinds.values()) for side, kinds in odd.items()}
    if not both:
        notes.insert(0, "no shared item has this score in both experiments: nothing to compare")
        return PairResult(baseline_value=None, system_value=None, delta=None, delta_low=None, delta_high=None,
                          p_value=None, verdict=Verdict.NONE, n=0, non_finite=non_finite, non_finite_kinds=odd,
                          wins=None, ties=None, losses=None, differences=(), largest_differences=(),
                          note="; ".join(notes))
    clusters, units = context.units([a for a, _ in both])     # a pair's clusters: the baseline's labels
    idx = context.indices(units)
    base_statistic = context.statistic(metric, baseline, [a for a, _ in both], clusters)
    system_statistic = context.statistic(metric, system, [b for _, b in both], clusters)
    result = paired_bootstrap(base_statistic, system_statistic, idx, settings.confidence, settings.p_value)
    p_value: float | None = result.p_value
    p_one: float | None = result.p_one_sided
    delta_low, delta_high, test = result.delta_low, result.delta_high, "bootstrap"
    if metric.name in context.pass_fail:
        table = mcnemar_exact([a.scores[metric.name] for a, _ in both], [b.scores[metric.name] for _, b in both])
        p_value, p_one, test = table.p_value, table.p_one_sided, "mcnemar"
        delta_low, delta_high = newcombe_paired_interval(table, settings.confidence)
        notes.append(f"pass/fail: exact McNemar test on the {table.system_only + table.baseline_only} items where "
                     f"the two differ ({table.system_only} pass only in {system.name}, {table.baseline_only} only in "
                     f"{baseline.name}); Wilson intervals, Newcombe's for the difference")
    elif settings.paired_test == "permutation" and units > 1:
        shuffled = paired_permutation(base_statistic, system_statistic, settings.permutations, settings.seed,
                                      settings.p_value)
        p_value, p_one, test = shuffled.p_value, shuffled.p_one_sided, "permutation"
    significant: bool | None = p_value is not None and p_value < settings.alpha
    if units == 1:                 # every resample is the one pair (or cluster): no spread, nothing to test
        significant, p_value, p_one = None, None, None
        what = "paired item" if clusters is None else f"cluster ({len(both)} paired items)"
        notes.insert(0, f"only 1 {what}: no test is possible and a verdict needs at least {settings.min_items}")
    elif units < settings.min_items:
        significant = None
        what = "paired items" if clusters is None else f"clusters ({len(both)} paired items)"
        notes.insert(0, f"only {units} {what}: a verdict needs at least "
                        f"{settings.min_items}; the p-value is shown for information only")
    elif test == "permutation" and 2.0 ** (1 - units) >= settings.alpha and result.note is None:
        notes.append(f"with {units} paired units the permutation test's smallest two-sided p is "
                     f"1/2^{units - 1} = {2.0 ** (1 - units):.3g}: no difference can be significant at "
                     f"alpha={settings.alpha:g}; more items would test it")
    if result.note:
        notes.insert(0, result.note)
    wins = ties = losses = None
    differences: tuple[float, ...] = ()
    largest: tuple[ItemDifference, ...] = ()
    if metric.kind == "mean":
        a_values = [a.scores[metric.name] for a, _ in both]
        b_values = [b.scores[metric.name] for _, b in both]
        wins, ties, losses = wins_ties_losses(a_values, b_values, metric.higher_is_better, settings.tie_tolerance)
        differences = tuple(b - a for a, b in zip(a_values, b_values))
        largest = _largest(both, metric.name, settings.top_k)
    return PairResult(baseline_value=result.baseline, system_value=result.system, delta=result.delta,
                      delta_low=delta_low, delta_high=delta_high, p_value=p_value, p_one_sided=p_one,
                      test=test_label(test, settings.p_value) if p_value is not None else None,
                      verdict=Verdict.of(significant, result.delta, metric.higher_is_better), n=len(both),
                      non_finite=non_finite, non_finite_kinds=odd, wins=wins, ties=ties, losses=losses,
                      differences=differences, largest_differences=largest, note="; ".join(notes) or None)


def _largest(both: Sequence[tuple[ItemRecord, ItemRecord]], name: str, top_k: int) -> tuple[ItemDifference, ...]:
    ranked = heapq.nsmallest(top_k, both, key=lambda ab: (-abs(ab[1].scores[name] - ab[0].scores[name]),
                                                          ab[0].position))     # sorted(...)[:top_k], in O(n)
    return tuple(ItemDifference(key=a.key, position=a.position, input=input_text(a.input),
                                baseline_output=a.text(), system_output=b.text(), baseline_score=a.scores[name],
                                system_score=b.scores[name], delta=b.scores[name] - a.scores[name])
                 for a, b in ranked[:top_k] if b.scores[name] != a.scores[name])


def _config_differences(a: dict, b: dict) -> dict[str, tuple[Any, Any]]:
    """Top-level config entries that differ (run-time settings and versions aside)."""
    keys = [k for k in dict.fromkeys([*a, *b]) if k not in ("runtime",)]
    return {k: (a.get(k), b.get(k)) for k in keys if _json(a.get(k)) != _json(b.get(k))}


# ---- experiments, failures, notes ---------------------------------------------------------

def input_text(item_input: dict) -> str:
    """An item's input as one readable line: its text fields, ``name: value`` joined by `` | ``."""
    parts = []
    for key, value in item_input.items():
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = " / ".join(value)
        parts.append(f"{key}: {value if isinstance(value, str) else _json(value)}")
    return " | ".join(parts)


def _experiment_entry(e: ExperimentRecords) -> ExperimentSummary:
    scored = sum(1 for item in e.items if not item.failed)
    return ExperimentSummary(name=e.name, dataset=e.dataset, status=e.status, items=len(e.items) + e.failed_elsewhere,
                             scored_items=scored, failed_items=len(e.items) - scored + e.failed_elsewhere,
                             model=e.model(), source=e.source, config=e.config,
                             experiment_scores=e.experiment_scores)


def _failed_entry(item: ItemRecord) -> FailedItem:
    return FailedItem(key=item.key, position=item.position, stage=item.stage, reason=item.reason,
                      input=input_text(item.input))


def _notes(experiments: Sequence[ExperimentRecords], metrics: Sequence[ScoreSummary],
           scores: dict[str, dict[str, ScoreValue]], pairs: Sequence[Pair], tests: int,
           settings: CompareSettings, context: _Context) -> list[str]:
    notes = _signature_notes(experiments, metrics, pairs)
    entries = [(p, m, p.metrics[m.name]) for p in pairs for m in metrics]
    few = [(p, m, e) for p, m, e in entries if 0 < e.n < settings.min_items]
    if few:
        shown = ", ".join(f"{m.name} ({p.system} vs {p.baseline}: {e.n})" for p, m, e in few[:6])
        notes.append(f"a verdict (significant or not) needs at least {settings.min_items} paired items; below that "
                     f"the verdict is n/a and the p-value is for information only: {shown}"
                     + (f" and {len(few) - 6} more" if len(few) > 6 else ""))
    empty = [(p, m) for p, m, e in entries if e.n == 0]
    if empty:
        shown = ", ".join(f"{m.name} ({p.system} vs {p.baseline})" for p, m in empty[:6])
        notes.append(f"nothing to compare (no shared item has the score in both experiments), verdict n/a: {shown}"
                     + (f" and {len(empty) - 6} more" if len(empty) > 6 else ""))
    for m in metrics:
        for e in experiments:
            odd = list(context.column(m, e).kinds.values())
            if odd:
                with_output = sum(1 for item in e.items if not item.failed)
                notes.append(f"{e.name}: {m.name} is not finite for {len(odd)} of {with_output} items with an "
                             f"output ({_kinds_text(_kinds(odd))}); they are left out of its value, interval and "
                             "paired tests")
    for m in metrics:
        for e in experiments:
            missing = context.column(m, e).no_statistics
            if missing:
                scored = len(missing) + len(context.column(m, e).has)
                notes.append(f"{e.name}: {len(missing)} of {scored} scored items record no statistics for {m.name} "
                             f"(the first: {next(item.key for item in e.items if item.key in missing)}); they are left out of its value, interval and paired tests")
    for m in metrics:
        corpus = next((c for c in (e.corpus(m.name) for e in experiments) if c is not None), None)
        if m.kind == "corpus" and corpus is not None and corpus.mean_of_carrier:
            notes.append(f"{m.name} is by definition the mean of {corpus.carrier} over the items (how the metric "
                         f"defines its corpus score), so its row repeats {corpus.carrier}'s")
    if tests > 1:
        notes.append(f"p-values are not corrected for multiple comparisons: this report makes {tests} tests; "
                     f"with a Bonferroni correction a difference is significant at p < {settings.alpha / tests:.2g}")
    datasets = sorted({e.dataset for e in experiments})
    if len(datasets) > 1:
        notes.append(f"the experiments ran on different datasets ({', '.join(datasets)}); "
                     "pairs are made of items with identical content")
    for e in experiments:
        if e.failed_elsewhere:
            notes.append(f"{e.name}: {e.failed_elsewhere} failed item(s) were never uploaded to the server; "
                         "their reasons are counted in the experiment config (failure_reasons)")
        if e.config.get("metrics") and not e.facts:
            notes.append(f"{e.name}: its config records no metric facts (made by an older opik-metrics): its "
                         "scores are compared as higher-is-better and have no corpus scores")
    notes.extend(_whole_set_notes(experiments))
    notes.extend(_one_sided_notes(experiments))
    notes.extend(_unit_notes(experiments, metrics, settings))
    for m in metrics:
        for e in experiments:
            entry = scores[m.name].get(e.name)
            if entry is None:
                notes.append(f"{e.name} has no {m.name} score")
            elif m.kind == "corpus" and entry.recorded is not None \
                    and abs(entry.recorded - entry.value) > 1e-9 * max(1.0, abs(entry.value)):
                notes.append(f"{e.name}: {m.name} recomputed from item statistics is {entry.value:.6g}, "
                             f"the experiment recorded {entry.recorded:.6g} (items differ, e.g. failed ones)")
    return notes


def _signature_notes(experiments: Sequence[ExperimentRecords], metrics: Sequence[ScoreSummary],
                     pairs: Sequence[Pair]) -> list[str]:
    """First among the notes: scores whose two sides were made with different options (different
    measurements, not a difference between systems: each pair's ``option_differences``), then
    those made by different package versions."""
    notes = []
    for pair, (a, b) in zip(pairs, combinations(experiments, 2)):     # the pairs are made in this order
        versions = {}
        for m in metrics:
            versions.update(signature_differences(m.name, a, b)[1])
        if pair.option_differences:
            text = pair.options_text()
            notes.append(f"{a.name} and {b.name} were scored with different options, so their numbers differ for "
                         f"that reason too: {text}; a regression gate refuses to judge these scores unless told "
                         "--allow-different-options")
        if versions:
            notes.append(f"{a.name} and {b.name} were scored by different package versions "
                         + ", ".join(f"({k}: {x} vs {y})" for k, (x, y) in versions.items())
                         + "; their options are the same")
    return notes


def _one_sided_notes(experiments: Sequence[ExperimentRecords], shown: int = 10) -> list[str]:
    """Items of one experiment of a pair that the other lacks (by key: a record's id, a stored
    item's content), counted and named: they are in no paired test, never paired by position."""
    notes = []
    for a, b in combinations(experiments, 2):
        keys_a, keys_b = {item.key for item in a.items}, {item.key for item in b.items}
        if not keys_a & keys_b:
            continue            # nothing shared at all: ``unpaired`` says so
        for one, other, keys in ((a, b, keys_b), (b, a, keys_a)):
            alone = [item.key for item in one.items if item.key not in keys]
            if alone:
                names = ", ".join(alone[:shown]) + (f" and {len(alone) - shown} more" if len(alone) > shown else "")
                notes.append(f"{len(alone)} item(s) of {one.name} are not in {other.name}, so they are in no paired "
                             f"test of the two: {names}")
    return notes


def _unit_notes(experiments: Sequence[ExperimentRecords], metrics: Sequence[ScoreSummary],
                settings: CompareSettings) -> list[str]:
    """What the bootstrap resamples (items of several trials, clusters) and how much the trials vary."""
    notes = []
    for e in experiments:
        items, rows = trial_counts(e)
        if rows > items:
            notes.append(f"{e.name}: {items} items, {rows} trials in all ({rows / items:.3g} per item): each item is "
                         "the mean of its trials (a corpus score sums their statistics), and the item, not the "
                         "trial, is what the bootstrap resamples")
            for m in metrics:
                spread = nondeterminism([item for item in e.items if not item.failed], m.name)
                if spread is not None and spread[0] == 0:
                    notes.append(f"{e.name}: {m.name} is the same on every trial of every item (deterministic)")
                elif spread is not None:
                    notes.append(f"{e.name}: {m.name} varies across the trials of an item by a mean standard "
                                 f"deviation of {spread[0]:.4g}; trial-to-trial variation is {spread[1]:.0%} of "
                                 "the variance of the item means that the interval reflects")
        if settings.cluster_by is not None:
            clusters = {item.cluster for item in e.items if not item.failed}
            notes.append(f"{e.name}: resampled by cluster ({settings.cluster_by}): {len(clusters)} clusters of "
                         f"{sum(1 for item in e.items if not item.failed)} scored items; a resample draws whole "
                         "clusters, so items of one cluster are not counted as independent")
    return notes


def _whole_set_notes(experiments: Sequence[ExperimentRecords]) -> list[str]:
    """What the report says of corpus scores computed over the whole set at once (an ``evaluate``
    module's): their recorded values, and that they get no interval and no test."""
    names = dict.fromkeys(s.name for e in experiments for facts in e.facts.values() for s in facts.whole_set_corpora)
    notes = []
    for name in names:
        values = ", ".join(f"{e.name}: " + (f"{e.experiment_scores[name]:.6g}" if is_number(
            e.experiment_scores.get(name)) else "not recorded") for e in experiments)
        notes.append(f"{name} is computed by its metric over the whole set at once, from no per-item statistics: "
                     f"recorded values ({values}) are shown as they are, with no interval and no test")
    return notes


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)

"""Experiment scores that show each score's uncertainty in Opik without a second command: for
``opik.evaluate(experiment_scoring_functions=interval_scores(metrics))`` (or ``run_experiment``'s
``scorers=``), each metric's scores get their mean and seeded bootstrap interval, and a corpus
score of its own (corpus BLEU, perplexity) its value and an interval from resampled statistics.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from _opik import ScoreResult   # opik.evaluation.metrics.score_result.ScoreResult, without importing opik

from opik_metrics.compare.analysis import CompareSettings
from opik_metrics.compare.statistics.bootstrap import CorpusStatistic, MeanStatistic, bootstrap_interval, resample_indices
from opik_metrics.compare.statistics.defaults import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED
from opik_metrics.compare.publishing.publication import interval_names
from opik_metrics.core import facts_of, resolve_formula
from opik_metrics.experiments.experiment_results import by_dataset_item
from opik_metrics.core.numbers import is_number


def _reason(n: int, left_out: int, resamples: int, seed: int, confidence: float) -> str:
    text = f"{n} items, {confidence * 100:g}% bootstrap interval ({resamples} resamples, seed {seed})"
    return text + (f"; {left_out} item(s) left out: failed or not finite" if left_out else "")


def _results_named(test_results: Sequence[Any], name: str) -> list[ScoreResult | None]:
    """Per test result, its ScoreResult called ``name`` (None where there is none or it failed)."""
    out = []
    for tr in test_results:
        found = next((r for r in tr.score_results or [] if r.name == name and not r.scoring_failed), None)
        out.append(found)
    return out


def _mean_scores(name: str, items: list[list[Any]], settings: dict) -> list[ScoreResult]:
    """``name``'s mean and interval over ``items`` (the test results by dataset item)."""
    values = []                      # per item, the mean over its trials that have a finite value
    for trials in items:
        found = [float(r.value) for r in _results_named(trials, name) if r is not None and is_number(r.value)]
        if found:
            values.append(sum(found) / len(found))
    if not values:
        return []
    statistic = MeanStatistic(values)
    interval = bootstrap_interval(statistic, resample_indices(len(values), settings["resamples"], settings["seed"]),
                                  settings["confidence"])
    reason = _reason(len(values), len(items) - len(values), **settings)
    low, high = interval_names(name, settings["confidence"])
    return [ScoreResult(name=f"{name}.mean", value=statistic.value, reason=reason),
            ScoreResult(name=low, value=interval.low, reason=reason),
            ScoreResult(name=high, value=interval.high, reason=reason)]


def _corpus_scores(corpus: Any, items: list[list[Any]], settings: dict) -> list[ScoreResult]:
    """A corpus score and its interval over ``items`` (the test results by dataset item)."""
    rows = []                        # per item, the statistics of its trials summed
    for trials in items:
        found = []
        for r in _results_named(trials, corpus.carrier):
            row = (r.metadata or {}).get("statistics") if r is not None else None
            if isinstance(row, list) and len(row) == len(corpus.fields) and all(is_number(v) for v in row):
                found.append(row)
        if found:
            rows.append([sum(column) for column in zip(*found)])
    if not rows:
        return []
    statistic = CorpusStatistic(rows, functools.partial(resolve_formula(corpus.formula), **corpus.options))
    interval = bootstrap_interval(statistic, resample_indices(len(rows), settings["resamples"], settings["seed"]),
                                  settings["confidence"])
    reason = _reason(len(rows), len(items) - len(rows), **settings) + "; from summed item statistics"
    low, high = interval_names(corpus.name, settings["confidence"])
    return [ScoreResult(name=corpus.name, value=statistic.value, reason=reason),
            ScoreResult(name=low, value=interval.low, reason=reason),
            ScoreResult(name=high, value=interval.high, reason=reason)]


def interval_scores(metrics: Sequence[Any], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                    confidence: float = DEFAULT_CONFIDENCE, parts: bool = False) -> list[Callable]:
    """One experiment scoring function per metric (the pack's or Opik's own). Each gives, per main
    score the metric states (for a metric that states nothing: the score named after it),
    ``<score>.mean``, ``<score>.ci_low`` and ``<score>.ci_high``, and for each corpus score of its
    own, its value with ``.ci_low`` / ``.ci_high``. Failed and non-finite item scores are left out
    and counted in the reason. The trials of one dataset item (``trial_count``) are one item: its
    mean score, its summed statistics. ``parts``: precision and recall scores too."""
    settings = {"resamples": resamples, "seed": seed, "confidence": confidence}
    CompareSettings(resamples=resamples, seed=seed, confidence=confidence).check()   # now, not after the run
    functions = []
    for metric in metrics:
        facts = facts_of(metric)
        names = [s.name for s in facts.scores if parts or not s.part]
        corpora = facts.own_corpora

        def score(test_results: list, names: list = names, corpora: tuple = corpora) -> list[ScoreResult]:
            items = by_dataset_item(test_results)      # grouped once, for every score of the metric
            out = [r for name in names for r in _mean_scores(name, items, settings)]
            return out + [r for corpus in corpora for r in _corpus_scores(corpus, items, settings)]

        score.__name__ = f"{facts.metric}_intervals"
        functions.append(score)
    return functions

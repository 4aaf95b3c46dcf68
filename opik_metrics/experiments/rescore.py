"""Add metrics to an experiment in the local store without running its task again: the stored
outputs and references are scored with the new metrics, chunk by chunk, each item's new scores
committed a chunk at a time (under the experiment's lease, as a run); then the corpus scores are
computed from the items' statistics and the metrics' facts go into the experiment's config.

A rescore that stops halfway leaves its metrics listed under ``rescoring`` in the config; the
same rescore again scores only the items still lacking them.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from tqdm.auto import tqdm

from opik_metrics.core import facts_of
from opik_metrics.core.versions import ours
from opik_metrics.core.table import one_line
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.experiments.local_runner import as_test_results, summarize
from opik_metrics.experiments.experiment_scorers import ExperimentScorer, experiment_scorers, run_experiment_scorers
from opik_metrics.scoring import Scorer, check_metrics
from opik_metrics.experiments.spans import tracing_disabled
from opik_metrics.experiments.store import ExperimentStore, StoreError, StoredItem, StoredScore
from opik_metrics.experiments.store.records import dumps, utc_now
from opik_metrics.experiments.summary import ExperimentSummary
from opik_metrics.metric_kit.tracking import scoring_untracked

PENDING = "rescoring"        # config key: the metrics of a rescore that has not finished
HISTORY = "rescores"         # config key: each finished rescore (its metrics, when, which opik-metrics)


class MetricPresent(StoreError):
    """A metric the experiment already has, asked for again without ``replace``."""


def _check_score_names(name: str, owners: dict[str, str], metrics: Sequence[Any]) -> None:
    """Refuse a new metric whose score names another metric's stored scores: saving would replace
    them (one stored score per item and name), silently."""
    for metric in metrics:
        taken = sorted(s.name for s in facts_of(metric).scores
                       if s.name in owners and owners[s.name] != metric.name)
        if taken:
            raise MetricPresent(f"experiment {name!r}: metric {metric.name!r} gives {', '.join(map(repr, taken))}, "
                                f"which metric {owners[taken[0]]!r} already stored; name= it otherwise")


def _to_drop(name: str, config: dict, stored: set[str], metrics: Sequence[Any], replace: bool) -> list[str]:
    """The metrics whose earlier scores go (``replace``); raises MetricPresent for one the
    experiment has, unless it is the same metric, made the same way, of an interrupted rescore."""
    recorded = config.get("metrics") or {}
    pending = set(config.get(PENDING) or [])
    drop = []
    for metric in metrics:
        if metric.name not in recorded and metric.name not in stored:
            continue
        same = dumps(recorded.get(metric.name)) == dumps(facts_of(metric).as_dict())
        if metric.name in pending and same:
            continue          # resumed: the items it scored keep their scores
        if not replace:
            why = ("an interrupted rescore made it with other settings" if metric.name in pending
                   else "it already has scores from it")
            raise MetricPresent(f"experiment {name!r}: metric {metric.name!r} is already there ({why}); pass "
                                "--replace (replace=True) to score every item with it again, or name= it otherwise")
        drop.append(metric.name)
    return drop


def scoring_inputs(item: StoredItem) -> dict:
    """What a metric is called with for a stored item: its input and its output, as in the run. An
    image the output names by a cached path that is gone is read from the item's ``image_url``
    again (the caption pipeline's items)."""
    inputs = {**item.input, **(item.output or {})}
    image, url = inputs.get("image"), item.input.get("image_url")
    if isinstance(image, str) and isinstance(url, str) and "://" not in image and not Path(image).is_file():
        inputs["image"] = url
    return inputs


def rescore_local(store: ExperimentStore, name: str, metrics: Sequence[Any], *,
                  scorers: Sequence[ExperimentScorer] | None = None, replace: bool = False,
                  chunk_size: int = 256, progress: bool = True) -> ExperimentSummary:
    """Score stored experiment ``name`` with ``metrics`` (never calling its task) and add their item
    and corpus scores and facts; see the module's docstring. ``scorers``: experiment-level scores
    (default: the metrics' corpus scores). Failed items stay failed, with their reason."""
    metrics = list(metrics)
    check_metrics(metrics, "scoring_metrics")
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ValueError(f"chunk_size: expected a positive integer, got {chunk_size!r}")
    started = time.perf_counter()
    info = store.info(name)
    every = store.items(info.id)
    unfinished = [it for it in every if it.status in ("pending", "output")]
    if unfinished:
        raise StoreError(f"experiment {name!r} in {store.path} has {len(unfinished)} items its run has not "
                         "finished (interrupted): run it again to finish them, then add metrics")
    # CIDEr-D's document frequencies from every item's references, as the run fits them: before the
    # facts are compared and recorded (they name the context)
    fit_corpus_contexts(metrics, [it.input.get("reference") for it in every if it.trial == 0])   # items, not trials
    stored = {s.metric for it in every for s in it.scores.values()}
    _check_score_names(name, {s.name: s.metric for it in every for s in it.scores.values()}, metrics)
    drop = _to_drop(name, info.config, stored, metrics, replace)
    names = [m.name for m in metrics]
    recorded = {**(info.config.get("metrics") or {}), **{m.name: facts_of(m).as_dict() for m in metrics}}
    pending = sorted(set(info.config.get(PENDING) or []) | set(names))
    config = {**info.config, "metrics": recorded, PENDING: pending}
    exp_id = store.begin_rescore(name, info.config, config, drop)
    scored = store.items(exp_id, ["scored"])
    todo = [it for it in scored if not set(names) <= {s.metric for s in it.scores.values()}]
    done = config
    bar = tqdm(total=len(scored), initial=len(scored) - len(todo), desc=one_line(f"rescoring {name}"), unit="item",
               disable=not progress)
    try:
        with tracing_disabled(), scoring_untracked():
            for start in range(0, len(todo), chunk_size):
                _score(store, exp_id, metrics, todo[start:start + chunk_size])
                bar.update(len(todo[start:start + chunk_size]))
            scorers = experiment_scorers(metrics) if scorers is None else list(scorers)
            corpus = run_experiment_scorers(scorers, as_test_results(store.items(exp_id, ["scored"]))) \
                if scored else []
            store.save_experiment_scores(exp_id, [_stored("", r) for r in corpus], keep_others=True)
        left = [n for n in pending if n not in names]
        history = list(info.config.get(HISTORY) or []) + [{"metrics": names, "replaced": drop,
                                                            "finished_at": utc_now(), "opik-metrics": ours()}]
        done = {k: v for k, v in {**config, HISTORY: history}.items() if k != PENDING}
        if left:
            done[PENDING] = left
    finally:
        bar.close()
        if store.holds(exp_id):
            store.end_rescore(exp_id, done, time.perf_counter() - started)
    summary = summarize(store, name)
    summary.resumed_items = len(scored) - len(todo)
    summary.parts = sorted(set().union(*(facts_of(m).part_names for m in metrics)))
    return summary


def _score(store: ExperimentStore, exp_id: int, metrics: Sequence[Any], chunk: list[StoredItem]) -> None:
    """Score one chunk with each metric an item still lacks; the chunk's new scores committed together."""
    start = time.perf_counter()
    new: list[list[tuple[str, Any]]] = [[] for _ in chunk]
    made: list[list[str]] = [[] for _ in chunk]
    for metric in metrics:
        lacking = [k for k, it in enumerate(chunk) if metric.name not in {s.metric for s in it.scores.values()}]
        if not lacking:
            continue
        scored = Scorer([metric]).results([scoring_inputs(chunk[k]) for k in lacking])
        for k, item_results in zip(lacking, scored):
            new[k].extend(item_results)
            made[k].append(metric.name)
    share = (time.perf_counter() - start) / len(chunk)
    store.add_scores(exp_id, [(item.key, item.trial, names, [_stored(metric, r) for metric, r in results])
                              for item, results, names in zip(chunk, new, made) if names], share)


def _stored(metric: str, result: Any) -> StoredScore:
    return StoredScore(result.name, metric, result.value, bool(result.scoring_failed), result.reason,
                       dict(result.metadata or {}))

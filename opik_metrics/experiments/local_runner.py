"""Run an experiment into the local store: chunk by chunk, task then metrics, each item committed
as it finishes (with ``trial_count``, each trial of each item: the task and the metrics are called
again for every trial, as ``opik.evaluate`` calls them); Opik tracing is off (no server: nothing sent, no retries, no wait at exit) and
the task's spans are kept in the store instead.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

from _opik import ScoreResult   # the class opik.evaluation.metrics.score_result exports, without importing opik
from tqdm.auto import tqdm

from opik_metrics.core.table import one_line
from opik_metrics.experiments.experiment_scorers import ExperimentScorer, run_experiment_scorers
from opik_metrics.scoring import Scorer
from opik_metrics.experiments.spans import collect_spans, tracing_disabled
from opik_metrics.experiments.store import ExperimentStore, StoredItem, StoredScore
from opik_metrics.experiments.summary import ExperimentSummary, item_keys
from opik_metrics.metric_kit.tracking import scoring_untracked
from opik_metrics.experiments.experiment_results import one_test_result
from opik_metrics.experiments.opik_arguments import ScoringKeyMapping, scoring_inputs
from opik_metrics.experiments.tasks import Task, prepare_chunk


def _run_task(store: ExperimentStore, exp_id: int, task: Task, item: StoredItem) -> None:
    with collect_spans() as spans:
        start = time.perf_counter()
        try:
            output = task(item.input)
            if not isinstance(output, dict):
                raise TypeError(f"the task must return a dict, got {type(output).__name__}")
        except Exception as exc:
            store.save_failure(exp_id, item.key, "task", f"{type(exc).__name__}: {exc}", spans,
                               time.perf_counter() - start, trial=item.trial)
            item.status = "failed"
            return
    store.save_output(exp_id, item.key, output, spans, time.perf_counter() - start, trial=item.trial)
    item.output, item.status = output, "output"


def _run_chunk(store: ExperimentStore, exp_id: int, task: Task, metrics: Sequence[Any],
               chunk: list[StoredItem], mapping: ScoringKeyMapping | None = None) -> None:
    need_task = [item for item in chunk if item.status != "output"]
    failures = prepare_chunk(task, [item.input for item in need_task])
    for k, item in enumerate(need_task):
        if k in failures:
            store.save_failure(exp_id, item.key, failures[k].stage, failures[k].reason, trial=item.trial)
            item.status = "failed"
        else:
            _run_task(store, exp_id, task, item)
    ready = [item for item in chunk if item.status == "output"]
    if not ready:
        return
    start = time.perf_counter()
    scored = Scorer(metrics).results([scoring_inputs(item.input, item.output, mapping, f"item {item.position + 1}")
                                      for item in ready])
    share = (time.perf_counter() - start) / len(ready)
    for item, results in zip(ready, scored):
        store.save_scores(exp_id, item.key, [StoredScore(r.name, metric, r.value, bool(r.scoring_failed),
                                                         r.reason, dict(r.metadata or {}))
                                             for metric, r in results], share, trial=item.trial)


def as_test_results(items: Sequence[StoredItem], mapping: ScoringKeyMapping | None = None) -> list[Any]:
    """Opik TestResults from stored items, so experiment-level scorers run as under opik.evaluate
    (with the run's ``scoring_key_mapping`` applied to their scoring inputs, as Opik does)."""
    return [one_test_result(item.key, item.input, item.output, [_as_score_result(s) for s in item.scores.values()],
                            scoring_inputs(item.input, item.output, mapping, f"item {item.position + 1}")
                            if mapping else None, trial=item.trial)
            for item in items]


def _as_score_result(score: StoredScore) -> ScoreResult:
    """A stored score as Opik's run would have handed it to experiment scorers: a non-finite value
    as the float it was, a score without a value as Opik's failed score (0.0, ``scoring_failed``)."""
    if score.non_finite is not None:
        return ScoreResult(name=score.name, value=float(score.non_finite), reason=score.reason,
                           metadata=score.metadata, scoring_failed=score.failed)
    if score.value is None:
        return ScoreResult(name=score.name, value=0.0, reason=score.reason or "no value was stored for this score",
                           metadata=score.metadata, scoring_failed=True)
    return ScoreResult(name=score.name, value=score.value, reason=score.reason, metadata=score.metadata,
                       scoring_failed=score.failed)


def summarize(store: ExperimentStore, name: str) -> ExperimentSummary:
    """The summary of a stored experiment."""
    info = store.info(name)
    failed = store.items(info.id, ["failed"])
    return ExperimentSummary(
        name=name, backend="local", dataset=info.dataset, location=str(store.path), items=info.items,
        failed_items=info.failed_items, scores=info.scores, experiment_scores=info.experiment_scores,
        failures=[{"item": it.position, "stage": it.failure_stage, "reason": it.failure, "input": it.input,
                   **({"trial": it.trial} if info.trials > 1 else {})} for it in failed],
        seconds=info.seconds, trials=info.trials)


def run_local(name: str, items: Sequence[dict], task: Task, metrics: Sequence[Any], *, dataset_name: str,
              config: dict, scorers: Sequence[ExperimentScorer], store: ExperimentStore, chunk_size: int = 16,
              progress: bool = True, retry_failed: bool = False, overwrite: bool = False,
              scoring_key_mapping: ScoringKeyMapping | None = None, trials: int = 1) -> ExperimentSummary:
    """Run (or resume) experiment ``name`` over ``items`` into ``store``, each item ``trials`` times
    (``trial_count``); see ``run_experiment``. A rerun runs only the trials not finished yet.

    The run holds the experiment's lease in the store from ``begin`` to ``finish``: another process
    running the same experiment meanwhile gets ``ExperimentLocked`` (or waits: ``store.lock_wait``)
    instead of redoing every item beside this one.
    """
    started = time.perf_counter()
    exp_id, _ = store.begin(name, dataset_name, config, list(zip(item_keys(items), items)), overwrite, trials=trials)
    todo = store.items(exp_id, ["pending", "output", *(["failed"] if retry_failed else [])])
    total = len(store.items(exp_id))
    status = "interrupted"
    bar = tqdm(total=total, initial=total - len(todo), desc=one_line(f"scoring {name}"),
               unit="item" if trials == 1 else "trial",
               disable=not progress)
    try:
        with tracing_disabled(), scoring_untracked():
            for start in range(0, len(todo), chunk_size):
                chunk = todo[start:start + chunk_size]
                _run_chunk(store, exp_id, task, metrics, chunk, scoring_key_mapping)
                bar.update(len(chunk))
            scored = store.items(exp_id, ["scored"])
            corpus = run_experiment_scorers(scorers, as_test_results(scored, scoring_key_mapping)) if scored else []
            store.save_experiment_scores(exp_id, [StoredScore(r.name, "", r.value, bool(r.scoring_failed), r.reason,
                                                              dict(r.metadata or {})) for r in corpus])
        status = "finished"
    finally:
        bar.close()
        if store.holds(exp_id):     # a run whose lease was taken over writes nothing more
            store.finish(exp_id, status, time.perf_counter() - started)
    summary = summarize(store, name)
    summary.resumed_items = total - len(todo)
    return summary

"""The experiment runner every pipeline shares: dataset items -> task -> metrics, on an Opik
server (``opik.evaluate``) when one is configured, else into the local SQLite store.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from opik_metrics.core import facts_of
from opik_metrics.experiments.experiment_config import experiment_config
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.experiments.local_runner import run_local
from opik_metrics.experiments.opik_arguments import refuse_server_only
from opik_metrics.experiments.opik_server import Backend, choose_backend
from opik_metrics.experiments.experiment_scorers import ExperimentScorer, experiment_scorers
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.experiments.summary import ExperimentSummary
from opik_metrics.experiments.tasks import Task


def _check_inputs(name: str, dataset_name: str, items: Sequence[dict], metrics: Sequence[Any],
                  chunk_size: int) -> None:
    for field, value in (("experiment name", name), ("dataset name", dataset_name)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{field}: expected a non-empty string, got {value!r}")
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"item {k}: expected a dict (a dataset item), got {type(item).__name__}")
    for k, metric in enumerate(metrics):
        if not callable(getattr(metric, "score", None)) or not getattr(metric, "name", None):
            raise ValueError(f"metric {k}: expected an Opik metric (with .name and .score), got {metric!r}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size: expected a positive integer, got {chunk_size!r}")


def run_experiment(
    name: str,
    items: Sequence[dict],
    task: Task,
    metrics: Sequence[Any],
    *,
    dataset_name: str,
    config: Mapping[str, Any] | None = None,
    scorers: Sequence[ExperimentScorer] | None = None,
    backend: str | Backend = "auto",
    store: str | os.PathLike | ExperimentStore | None = None,
    project_name: str | None = None,
    chunk_size: int = 16,
    progress: bool = True,
    retry_failed: bool = False,
    overwrite: bool = False,
    task_threads: int = 1,
    opik_arguments: Mapping[str, Any] | None = None,
    journal: bool = True,
) -> ExperimentSummary:
    """Run ``task`` over ``items`` and score each output with ``metrics``.

    ``task(item) -> dict`` is merged with the item to call each metric, as ``opik.evaluate`` does;
    a task with ``prepare(items)`` gets each chunk first (batched work, per-item failures).
    ``config`` (model, settings, data) gets metric signatures and package versions added.
    ``scorers`` are experiment-level (default: the metrics' ``experiment_score``, e.g. corpus BLEU).
    ``backend``: "auto" (Opik when configured, else local; an explicit ``store`` means local),
    "local" or "opik". Locally, a re-run of the same name and config resumes; ``retry_failed``
    re-runs failed items; ``overwrite`` replaces a stored experiment of that name. ``task_threads``:
    ``opik.evaluate``'s threads on a server (the local store runs items in order). ``opik_arguments``:
    more of ``opik.evaluate``'s arguments (``trial_count``, ``scoring_key_mapping``...): on a server
    passed to it, locally carried out or refused (``opik_arguments.LOCAL_REFUSALS``) before anything runs.
    Locally ``trial_count=N`` runs each item N times (the task and the metrics each time), keeps every
    trial and records ``trial_count`` in the config (a resume must ask for as many).
    ``journal``: on a server, also keep the run in the local store (``store``, else the default one)
    as it goes, and read back what the server kept (``summary.missing``).
    """
    items = list(items)
    metrics = list(metrics)
    _check_inputs(name, dataset_name, items, metrics, chunk_size)
    if store is not None and backend == "auto":
        backend = "local"
    chosen = choose_backend(backend)
    extra = dict(opik_arguments or {})
    if chosen.kind != "opik":
        refuse_server_only(extra)
    trials = extra.get("trial_count")
    trials = 1 if trials is None else trials
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trial_count: expected a positive integer, got {trials!r}")
    fit_corpus_contexts(metrics, [item.get("reference") for item in items])    # before the config records signatures
    scorers = experiment_scorers(metrics) if scorers is None else list(scorers)
    full_config = experiment_config(dict(config or {}), metrics)
    parts = sorted(set().union(*(facts_of(m).part_names for m in metrics)))
    if chosen.kind == "opik":
        from opik_metrics.experiments.opik_runner import run_on_opik    # imports opik: only for a server

        book = (store if isinstance(store, ExperimentStore) else ExperimentStore(store)) if journal else None
        try:
            summary = run_on_opik(name, items, task, metrics, dataset_name=dataset_name, config=full_config,
                                  scorers=scorers, url=chosen.url, project_name=project_name,
                                  chunk_size=chunk_size, progress=progress, task_threads=task_threads,
                                  opik_arguments=extra, journal=book)
        finally:
            if book is not None and book is not store:
                book.close()
        summary.parts = parts
        return summary
    if trials > 1:
        full_config["trial_count"] = trials
    owned = not isinstance(store, ExperimentStore)
    db = store if isinstance(store, ExperimentStore) else ExperimentStore(store)
    try:
        summary = run_local(name, items, task, metrics, dataset_name=dataset_name, config=full_config,
                            scorers=scorers, store=db, chunk_size=chunk_size, progress=progress,
                            retry_failed=retry_failed, overwrite=overwrite,
                            scoring_key_mapping=extra.get("scoring_key_mapping"), trials=trials)
        summary.parts = parts
        return summary
    finally:
        if owned:
            db.close()


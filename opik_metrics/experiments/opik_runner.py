"""Run an experiment on an Opik server: batch work first, then the Opik dataset (created or
reused) and ``opik.evaluate`` with the experiment config and experiment-level scores.
"""
from __future__ import annotations

import functools
import importlib
import os
import time
from collections import Counter
from typing import Any, Sequence

import opik

from opik_metrics.experiments.journal import EvaluationJournal
from opik_metrics.experiments.opik_datasets import insert_items
from opik_metrics.experiments.push import check_recorded_push, push_command, push_target
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.experiments.opik_server import server_errors
from opik_metrics.core.numbers import is_number
from opik_metrics.experiments.experiment_scorers import ExperimentScorer
from opik_metrics.experiments.experiment_results import by_dataset_item
from opik_metrics.scoring import as_results
from opik_metrics.experiments.storable_scores import storable_metrics
from opik_metrics.experiments.summary import ExperimentSummary
from opik_metrics.experiments.tasks import ItemFailure, Task, prepare_chunk


# What Opik imports inside a function on the scoring path, the first time a task or metric raises
# in ``opik.evaluate`` (opik/evaluation/engine/exception_analyzer.py,
# ``is_llm_provider_rate_limit_error``: ``import openai``, ``import litellm.exceptions``). Two
# scoring threads doing that first import at once race on litellm's package import and abort the
# whole run ("ImportError: cannot import name ... partially initialized module 'litellm...'", or
# ``_DeadlockError``). Imported here, in the calling thread, before the scoring threads start.
LAZY_IMPORTS = ("openai", "litellm.exceptions")


def preload_lazy_imports() -> None:
    """Import what Opik would import lazily in its scoring threads (``LAZY_IMPORTS``), with
    litellm told to use its bundled model cost map (``LITELLM_LOCAL_MODEL_COST_MAP``, unless the
    caller chose otherwise) so that importing it does not reach for the network."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    for name in LAZY_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:   # not installed: Opik's own import fails the same way, in every thread
            pass


def _prepare_all(task: Task, items: Sequence[dict], chunk_size: int) -> dict[int, ItemFailure]:
    failures: dict[int, ItemFailure] = {}
    for start in range(0, len(items), chunk_size):
        chunk_failures = prepare_chunk(task, items[start:start + chunk_size])
        failures.update({start + k: f for k, f in chunk_failures.items()})
    return failures


def _storable_scorer(scorer: ExperimentScorer) -> ExperimentScorer:
    """An experiment-level scorer whose results an Opik server cannot store are marked failed."""
    @functools.wraps(scorer)
    def scored(test_results: list) -> list:
        return as_results(scorer(test_results))
    return scored


def _means(test_results: Sequence[Any]) -> dict[str, float]:
    """Each score's mean over the items, an item's trials (``trial_count``) first averaged into one value."""
    item_means: dict[str, list[float]] = {}
    for trials in by_dataset_item(test_results):
        values: dict[str, list[float]] = {}
        for tr in trials:
            for s in tr.score_results:
                if not s.scoring_failed and is_number(s.value):
                    values.setdefault(s.name, []).append(float(s.value))
        for name, found in values.items():
            item_means.setdefault(name, []).append(sum(found) / len(found))
    return {name: sum(v) / len(v) for name, v in item_means.items()}


def run_on_opik(name: str, items: Sequence[dict], task: Task, metrics: Sequence[Any], *, dataset_name: str,
                config: dict, scorers: Sequence[ExperimentScorer], url: str | None = None,
                project_name: str | None = None, chunk_size: int = 16, progress: bool = True,
                task_threads: int = 1, client: Any = None,
                opik_arguments: dict[str, Any] | None = None,
                journal: ExperimentStore | None = None) -> ExperimentSummary:
    """Items whose batch work failed are left out of the dataset; the config counts them by reason.
    ``opik_arguments``: more of ``opik.evaluate``'s arguments, passed to it as they are. ``journal``:
    a local store where the run is kept as it goes (``experiments.journal``); the server's copy is
    then read back, and ``summary.missing`` names what it lacks (``experiments push NAME`` sends it)."""
    extra = dict(opik_arguments or {})
    started = time.perf_counter()
    book = (EvaluationJournal(journal, name, dataset_name, config, items, url, trials=int(extra.get("trial_count") or 1))
            if journal is not None else None)
    failures = _prepare_all(task, items, chunk_size)
    if book is not None:
        book.failures(failures)
    good = [item for k, item in enumerate(items) if k not in failures]
    failed = [{"item": k, "stage": f.stage, "reason": f.reason, "input": items[k]} for k, f in sorted(failures.items())]
    summary = ExperimentSummary(name=name, backend="opik", dataset=dataset_name, location=url or "",
                                items=len(items), failed_items=len(failed), failures=failed)
    if not good:
        if book is not None:
            book.interrupted()
        summary.seconds = time.perf_counter() - started
        return summary
    try:
        return _evaluate(summary, name, good, [k for k in range(len(items)) if k not in failures], task, metrics,
                         failures, config=config, scorers=scorers, url=url, project_name=project_name,
                         progress=progress, task_threads=task_threads, client=client, extra=extra, book=book,
                         started=started)
    finally:
        if book is not None:
            book.interrupted()        # a run that did not come back whole (no-op once finished)


def _evaluate(summary: ExperimentSummary, name: str, good: list[dict], positions: list[int], task: Task,
              metrics: Sequence[Any], failures: dict[int, ItemFailure], *, config: dict,
              scorers: Sequence[ExperimentScorer], url: str | None, project_name: str | None, progress: bool,
              task_threads: int, client: Any, extra: dict[str, Any], book: EvaluationJournal | None,
              started: float) -> ExperimentSummary:
    """``opik.evaluate`` on the items whose batch work succeeded; with a journal, the run kept and read back."""
    items, failed = summary.items, summary.failed_items
    with server_errors(url, f"the dataset {summary.dataset!r} (creating it or inserting its items)"):
        client = client or opik.Opik(project_name=project_name)
        dataset, ids = insert_items(client, summary.dataset, good)
    if book is not None:
        book.link(positions, ids)
    reasons = Counter(str(f) for f in failures.values())
    preload_lazy_imports()
    # only Opik's own REST errors are turned into one line here: a task or metric talking to
    # another HTTP service keeps its own exception
    with server_errors(url, f"the experiment {name!r}", transport=False):
        result = opik.evaluate(
            dataset=dataset, task=task if book is None else book.task(task), scoring_metrics=storable_metrics(metrics),
            experiment_name=name, project_name=project_name, verbose=1 if progress else 0, task_threads=task_threads,
            dataset_item_ids=ids, experiment_scoring_functions=[_storable_scorer(s) for s in scorers],
            experiment_config={**config, "items": items, "failed_items": failed,
                               "failure_reasons": dict(reasons.most_common(20))},
            **extra,
        )
    summary.trials = int(extra.get("trial_count") or 1)
    summary.failed_items += len(good) - len(by_dataset_item(result.test_results))
    summary.scores = _means(result.test_results)
    summary.experiment_scores = {s.name: (s.value if not s.scoring_failed else None)
                                 for s in result.experiment_scores}
    summary.location = result.experiment_url or summary.location
    if book is not None:
        book.results(result.test_results, result.experiment_scores, metrics)
        target = push_target(url, project_name, dataset.name, name)
        book.note_push(target, result.experiment_id, result.test_results)
        summary.journal = push_command(book.name, book.store.path, name, project_name)
        report = check_recorded_push(book.store, book.name, client, target, url)
        if report.read_back and not report.complete:
            summary.missing = report.missing_line()
    summary.seconds = time.perf_counter() - started
    return summary

"""``opik_metrics.evaluate``: ``opik.evaluate``'s call, with or without an Opik server. On the
configured server when one answers; in the local store when none is configured or one is asked
for (``store=``), resumable and ready to push; a configured server that does not answer is a
one-line error within seconds, never a hang.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.summary import ExperimentSummary


def _items(dataset: Any, nb_samples: int | None) -> tuple[list[dict], str | None]:
    """The items of ``dataset`` (a list of dicts, or an ``opik`` Dataset) and its name, if it has one."""
    if isinstance(dataset, (list, tuple)):
        items, name = list(dataset), None
    elif callable(getattr(dataset, "get_items", None)):
        items = [{k: v for k, v in item.items() if k != "id"} for item in dataset.get_items()]
        name = getattr(dataset, "name", None)
    else:
        raise ValueError(f"dataset: expected a list of items (dicts) or an opik Dataset, got {type(dataset).__name__}")
    if nb_samples is not None:
        if isinstance(nb_samples, bool) or not isinstance(nb_samples, int) or nb_samples < 1:
            raise ValueError(f"nb_samples: expected a positive integer, got {nb_samples!r}")
        items = items[:nb_samples]
    return items, name


def evaluate(dataset: Any, task: Callable[[dict], dict], scoring_metrics: Sequence[Any] | None = None, *,
             experiment_name: str | None = None, experiment_config: Mapping[str, Any] | None = None,
             experiment_scoring_functions: Sequence[Callable] | None = None, project_name: str | None = None,
             task_threads: int = 1, nb_samples: int | None = None, dataset_name: str | None = None,
             store: str | os.PathLike | None = None, backend: str = "auto", verbose: int = 1,
             overwrite: bool = False) -> ExperimentSummary:
    """Run ``task`` on every item of ``dataset`` and score it with ``scoring_metrics``, as
    ``opik.evaluate`` does, and return the experiment's summary (means, experiment scores, failures).

    Args:
        dataset: a list of items (dicts), or an ``opik`` Dataset (on a server).
        task: ``task(item) -> dict``; its output is merged with the item to call each metric.
        scoring_metrics: Opik metrics (the pack's or Opik's own).
        experiment_name: re-run with the same name (and config) to resume in the local store;
            default ``<dataset name>-<UTC time>``.
        experiment_config: recorded with the experiment (metric facts and versions are added).
        experiment_scoring_functions: experiment-level scores (default: each metric's corpus score,
            e.g. corpus BLEU); ``compare.experiment_intervals.interval_scores(metrics)`` adds intervals.
        task_threads: threads of ``opik.evaluate`` on a server (the local store runs in order).
        nb_samples: only the first ``nb_samples`` items.
        dataset_name: the dataset's name (default: the Opik dataset's, else "dataset").
        store: the local store's path (implies the local store; default ``$OPIK_METRICS_STORE`` or
            the user data folder); ``opik-metrics experiments push NAME`` uploads it later.
        backend: "auto" (the server when one is configured, else the local store), "local" or "opik".
        verbose: 0 hides progress bars.
        overwrite: replace a stored experiment of the same name instead of resuming it.
    """
    items, name = _items(dataset, nb_samples)
    dataset_name = dataset_name or name or "dataset"
    if experiment_name is None:
        experiment_name = f"{dataset_name}-{datetime.now(timezone.utc):%Y-%m-%d-%H%M%S}"
    return run_experiment(experiment_name, items, task, list(scoring_metrics or []), dataset_name=dataset_name,
                          config=experiment_config,
                          scorers=None if experiment_scoring_functions is None else list(experiment_scoring_functions),
                          backend=backend, store=store, project_name=project_name, progress=bool(verbose),
                          overwrite=overwrite, task_threads=task_threads)

"""``opik_metrics.evaluate``: ``opik.evaluate``'s call, with or without an Opik server. On the
configured server when one answers; in the local store when none is configured or one is asked
for (``store=``), resumable and ready to push; a configured server that does not answer is a
one-line error within seconds, never a hang. ``opik_metrics.evaluate_experiment``: metrics added to
an experiment you have (``opik.evaluate_experiment``'s call), on the server or in the store.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

from opik_metrics.experiments.opik_server import choose_backend
from opik_metrics.experiments.rescore import rescore_local
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.experiment_scorers import experiment_scorers
from opik_metrics.experiments.store import ExperimentStore
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

    Examples:
        >>> import os, tempfile
        >>> from opik_metrics import BLEU, evaluate
        >>> outputs = {"le chat": "the cat sat on the mat", "un chien": "a dog runs"}
        >>> data = [{"input": "le chat", "reference": "the cat sat on a mat"},
        ...         {"input": "un chien", "reference": "a dog is running"}]
        >>> folder = tempfile.TemporaryDirectory()
        >>> summary = evaluate(data, task=lambda item: {"output": outputs[item["input"]]},
        ...                    scoring_metrics=[BLEU(track=False)], experiment_name="demo",
        ...                    store=os.path.join(folder.name, "runs.sqlite"), verbose=0)
        >>> summary.backend, summary.items, round(summary.scores["bleu"], 4)   # the mean sentence BLEU
        ('local', 2, 0.4658)
        >>> round(summary.experiment_scores["corpus_bleu"], 4)                 # sacrebleu's corpus BLEU
        0.4415
        >>> folder.cleanup()
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


def evaluate_experiment(experiment_name: str, scoring_metrics: Sequence[Any], scoring_functions: Sequence[Any] | None = None,
                        scoring_threads: int = 16, verbose: int = 1, scoring_key_mapping: Mapping[str, Any] | None = None,
                        experiment_id: str | None = None,
                        experiment_scoring_functions: Sequence[Callable] | None = None,
                        project_name: str | None = None, *, store: str | os.PathLike | None = None,
                        backend: str = "auto", replace: bool = False) -> ExperimentSummary:
    """Add ``scoring_metrics`` to an experiment you have, without running its task again, as
    ``opik.evaluate_experiment`` does: on the configured server through it, else in the local store.

    Args (``opik.evaluate_experiment``'s first):
        experiment_name: the experiment to score.
        scoring_metrics: the metrics to add (their facts go into the experiment's config).
        scoring_functions, scoring_key_mapping, experiment_id, scoring_threads: as Opik's, on a
            server only (the local store scores in order, with the run's own inputs).
        experiment_scoring_functions: experiment-level scores (default: each metric's corpus score,
            from the items' statistics), added beside the ones the experiment has.
        store: the local store's path (implies the local store).
        backend: "auto" (the server when one is configured, else the local store), "local" or "opik".
        replace: score again with a metric the experiment already has (else refused: MetricPresent).
            Locally, an interrupted call resumes: called again, it scores only the items still lacking
            the metric.

    Examples:
        >>> import os, tempfile
        >>> from opik_metrics import BLEU, ROUGE, evaluate, evaluate_experiment
        >>> folder = tempfile.TemporaryDirectory()
        >>> store = os.path.join(folder.name, "runs.sqlite")
        >>> data = [{"output": "the cat sat on the mat", "reference": "the cat sat on a mat"},
        ...         {"output": "a dog runs", "reference": "a dog is running"}]
        >>> _ = evaluate(data, task=lambda item: {}, scoring_metrics=[BLEU(track=False)],
        ...              experiment_name="demo", store=store, verbose=0)
        >>> summary = evaluate_experiment("demo", [ROUGE(rouge_types=["rouge1"], track=False)],
        ...                               store=store, verbose=0)
        >>> round(summary.scores["bleu"], 4), round(summary.scores["rouge1_f1"], 4)   # the task ran once
        (0.4658, 0.7024)
        >>> folder.cleanup()
    """
    metrics = list(scoring_metrics or [])
    scorers = (experiment_scorers(metrics) if experiment_scoring_functions is None
               else list(experiment_scoring_functions))
    chosen = choose_backend("local" if store is not None and backend == "auto" else backend)
    if chosen.kind == "opik":
        from opik_metrics.experiments.opik_rescore import rescore_on_opik   # imports opik: only for a server

        return rescore_on_opik(experiment_name, metrics, scorers=scorers, url=chosen.url, project_name=project_name,
                               experiment_id=experiment_id, scoring_functions=scoring_functions,
                               scoring_key_mapping=scoring_key_mapping, scoring_threads=scoring_threads,
                               verbose=verbose, replace=replace)
    given = [n for n, v in (("scoring_functions", scoring_functions), ("scoring_key_mapping", scoring_key_mapping),
                            ("experiment_id", experiment_id)) if v]
    if given:
        raise ValueError(f"{', '.join(given)}: only on an Opik server; the local store scores each item "
                         "with its stored input and output")
    with ExperimentStore(store, create=False) as db:        # no store there: StoreNotFound, no new file
        return rescore_local(db, experiment_name, metrics, scorers=scorers, replace=replace, progress=bool(verbose))

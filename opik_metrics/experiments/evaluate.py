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
from opik_metrics.experiments.opik_arguments import ScoringKeyMapping, recorded_mapping, recorded_prompts
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.experiments.summary import ExperimentSummary


class ResultsMissing(RuntimeError):
    """``evaluate`` ran on a server, but reading the experiment back found part of it missing there:
    nothing is lost (the local store holds every result) and ``experiments push NAME`` sends the rest.

    Examples:
        >>> from opik_metrics import ResultsMissing
        >>> from opik_metrics.experiments.summary import ExperimentSummary
        >>> summary = ExperimentSummary(name="blip-base", backend="opik", dataset="cc", location="",
        ...                             journal="opik-metrics experiments push blip-base --store runs.sqlite",
        ...                             missing="the server kept 0 of 4 items")
        >>> print(ResultsMissing(summary))  # doctest: +NORMALIZE_WHITESPACE
        experiment 'blip-base' on the Opik server is incomplete: the server kept 0 of 4 items. Every result
        is kept in the local store: `opik-metrics experiments push blip-base --store runs.sqlite` sends
        what is missing
    """

    def __init__(self, summary: ExperimentSummary) -> None:
        self.summary = summary
        super().__init__(f"experiment {summary.name!r} on the Opik server is incomplete: {summary.missing}. Every "
                         f"result is kept in the local store: `{summary.journal}` sends what is missing")


def _items(dataset: Any, nb_samples: int | None,
           dataset_item_ids: Sequence[str] | None = None) -> tuple[list[dict], str | None]:
    """The items of ``dataset`` (a list of dicts, or an ``opik`` Dataset) and its name, if it has one;
    with ``dataset_item_ids``, only the items of those ids (an item's ``id``), in the dataset's order."""
    if isinstance(dataset, (list, tuple)):
        items, name = list(dataset), None
    elif callable(getattr(dataset, "get_items", None)):
        items = list(dataset.get_items())
        name = getattr(dataset, "name", None)
    else:
        raise ValueError(f"dataset: expected a list of items (dicts) or an opik Dataset, got {type(dataset).__name__}")
    if dataset_item_ids is not None:
        wanted = {str(i) for i in dataset_item_ids}
        found = {str(item.get("id")) for item in items if isinstance(item, dict) and item.get("id") is not None}
        missing = sorted(wanted - found)
        if missing:
            raise ValueError(f"dataset_item_ids: no item of the dataset has the id {missing[0]!r}"
                             + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        items = [item for item in items if str(item.get("id")) in wanted]
    if not isinstance(dataset, (list, tuple)):
        items = [{k: v for k, v in item.items() if k != "id"} for item in items]   # Opik's id is not content
    if nb_samples is not None:
        if isinstance(nb_samples, bool) or not isinstance(nb_samples, int) or nb_samples < 1:
            raise ValueError(f"nb_samples: expected a positive integer, got {nb_samples!r}")
        items = items[:nb_samples]
    return items, name


def evaluate(dataset: Any, task: Callable[[dict], dict], scoring_metrics: Sequence[Any] | None = None,
             scoring_functions: Sequence[Any] | None = None, experiment_name_prefix: str | None = None,
             experiment_name: str | None = None, project_name: str | None = None,
             experiment_config: Mapping[str, Any] | None = None, verbose: int = 1, nb_samples: int | None = None,
             task_threads: int = 1, prompt: Any = None, prompts: Sequence[Any] | None = None,
             scoring_key_mapping: ScoringKeyMapping | None = None, dataset_item_ids: Sequence[str] | None = None,
             dataset_sampler: Any = None, trial_count: int = 1,
             experiment_scoring_functions: Sequence[Callable] | None = None,
             experiment_tags: Sequence[str] | None = None, dataset_filter_string: str | None = None,
             blueprint_id: str | None = None, error_tolerance: int | None = None, *,
             dataset_name: str | None = None, store: str | os.PathLike | None = None, backend: str = "auto",
             overwrite: bool = False, journal: bool = True) -> ExperimentSummary:
    """Run ``task`` on every item of ``dataset`` and score it with ``scoring_metrics``, as
    ``opik.evaluate`` does, and return the experiment's summary (means, experiment scores, failures).

    Every argument of ``opik.evaluate`` (opik 2.2), with its meaning: on a server each goes to
    ``opik.evaluate`` as it is. In the local store ``scoring_key_mapping``, ``dataset_item_ids``,
    ``experiment_name_prefix``, ``experiment_tags``, ``prompt``/``prompts`` (recorded in the config),
    ``trial_count`` (every trial kept and resumed on its own) and ``error_tolerance`` (the store
    records every failure and goes on) are carried out; ``scoring_functions``, ``dataset_sampler``,
    ``dataset_filter_string`` and ``blueprint_id`` are refused in one line saying why
    (``LocalArgumentRefused``).

    Args:
        dataset: a list of items (dicts), or an ``opik`` Dataset (on a server).
        task: ``task(item) -> dict``; its output is merged with the item to call each metric.
        scoring_metrics: Opik metrics (the pack's or Opik's own).
        experiment_name: re-run with the same name (and config) to resume in the local store;
            default ``<prefix or dataset name>-<UTC time>``.
        experiment_config: recorded with the experiment (metric facts and versions are added).
        experiment_scoring_functions: experiment-level scores (default: each metric's corpus score,
            e.g. corpus BLEU); ``compare.publishing.experiment_intervals.interval_scores(metrics)`` adds intervals.
        task_threads: threads of ``opik.evaluate`` on a server (the local store runs in order;
            default 1 here, 16 in Opik: a model-backed metric shares one model across threads).
        nb_samples: only the first ``nb_samples`` items.
        scoring_key_mapping: metric argument -> a key of the item and its task output (or a
            function of them), as Opik maps them.
        dataset_item_ids: only these items (by their ``id``).
        trial_count: runs of each item (the task and the metrics called again each time), on a server
            as in the local store, which keeps each trial (``experiments push`` sends one trace and
            experiment item per trial); ``compare`` averages an item's trials and resamples items.
        experiment_tags: recorded with the experiment (on a server: Opik's own tags).
        prompt: an Opik prompt, recorded with the experiment (on a server: linked by Opik).
        prompts: several Opik prompts, as ``prompt``.
        dataset_name: the dataset's name (default: the Opik dataset's, else "dataset").
        store: the local store's path (implies the local store; default ``$OPIK_METRICS_STORE`` or
            the user data folder); ``opik-metrics experiments push NAME`` uploads it later.
        backend: "auto" (the server when one is configured, else the local store), "local" or "opik".
        verbose: 0 hides progress bars.
        overwrite: replace a stored experiment of the same name instead of resuming it.
        journal: on a server, keep the run in the local store as it goes (the default store; with
            ``backend="opik"``, ``store`` names another), then read back what the server kept. If
            something did not arrive, ``ResultsMissing`` says what, its ``summary`` is the run's,
            and ``opik-metrics experiments push NAME`` sends what is missing.

    Raises:
        ResultsMissing: on a server, the read-back found items or scores missing (see ``journal``).

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
    items, name = _items(dataset, nb_samples, dataset_item_ids)
    dataset_name = dataset_name or name or "dataset"
    if experiment_name is None:
        experiment_name = f"{experiment_name_prefix or dataset_name}-{datetime.now(timezone.utc):%Y-%m-%d-%H%M%S}"
    if error_tolerance is not None and int(error_tolerance) not in (10, 20):
        raise ValueError(f"error_tolerance: expected opik.ErrorTolerance.METRIC_ERRORS (10) or ALL_SCORING_ERRORS "
                         f"(20), got {error_tolerance!r}")
    server_arguments = {k: v for k, v in (
        ("scoring_functions", scoring_functions), ("prompt", prompt), ("prompts", prompts),
        ("scoring_key_mapping", scoring_key_mapping), ("dataset_sampler", dataset_sampler),
        ("trial_count", trial_count if trial_count != 1 else None), ("experiment_tags", experiment_tags),
        ("dataset_filter_string", dataset_filter_string), ("blueprint_id", blueprint_id),
        ("error_tolerance", error_tolerance)) if v is not None}
    config = dict(experiment_config or {})
    for key, value in (("tags", list(experiment_tags) if experiment_tags else None),
                       ("prompts", recorded_prompts(prompt, prompts)),
                       ("scoring_key_mapping", recorded_mapping(scoring_key_mapping))):
        if value is not None:
            config.setdefault(key, value)
    summary = run_experiment(experiment_name, items, task, list(scoring_metrics or []), dataset_name=dataset_name,
                             config=config,
                             scorers=None if experiment_scoring_functions is None else list(experiment_scoring_functions),
                             backend=backend, store=store, project_name=project_name, progress=bool(verbose),
                             overwrite=overwrite, task_threads=task_threads, opik_arguments=server_arguments,
                             journal=journal)
    if summary.missing is not None:
        raise ResultsMissing(summary)
    return summary


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

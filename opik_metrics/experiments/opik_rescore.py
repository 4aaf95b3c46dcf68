"""Add metrics to an experiment on an Opik server through ``opik.evaluate_experiment``: every
score checked against the server's range, the metrics' corpus scores added beside the experiment
scores already there (a write of experiment scores replaces them all), and the metrics' facts
added to the experiment's config, as ``opik_metrics.evaluate`` records them.
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import opik
from opik.evaluation.metrics.score_result import ScoreResult

from opik_metrics.core import facts_of
from opik_metrics.experiments.opik_runner import _means, _storable_scorer, preload_lazy_imports
from opik_metrics.experiments.opik_server import server_errors
from opik_metrics.experiments.rescore import MetricPresent
from opik_metrics.experiments.experiment_scorers import ExperimentScorer
from opik_metrics.experiments.storable_scores import storable_metrics
from opik_metrics.experiments.summary import ExperimentSummary


def _keep_others(before: dict[str, float], made: list[str]) -> ExperimentScorer:
    """An experiment scorer giving back the scores the experiment had whose names the new ones do
    not take (run last: ``made`` holds the names the others returned)."""
    def kept(test_results: list) -> list[ScoreResult]:
        return [ScoreResult(name=n, value=v) for n, v in before.items() if n not in made]
    return kept


def _noting(scorer: ExperimentScorer, made: list[str]) -> ExperimentScorer:
    def noted(test_results: list) -> Any:
        results = scorer(test_results)
        made.extend(r.name for r in (results if isinstance(results, list) else [results]))
        return results
    return noted


def rescore_on_opik(name: str, metrics: Sequence[Any], *, scorers: Sequence[ExperimentScorer], url: str | None,
                    project_name: str | None = None, experiment_id: str | None = None,
                    scoring_functions: Sequence[Any] | None = None, scoring_key_mapping: Any = None,
                    scoring_threads: int = 16, verbose: int = 1, replace: bool = False,
                    client: Any = None) -> ExperimentSummary:
    """``opik.evaluate_experiment`` with ``metrics`` on the server's experiment ``name``; a metric
    its config records, or whose score it has, is refused (MetricPresent) unless ``replace``."""
    started = time.perf_counter()
    with server_errors(url, f"the experiment {name!r} (finding it)"):
        client = client or opik.Opik(project_name=project_name)
        found = ([client.get_experiment_by_id(experiment_id)] if experiment_id
                 else [e for e in client.get_experiments_by_name(name, project_name=project_name)
                       if e.name == name])      # it matches names containing ``name``
        if len(found) != 1:
            raise ValueError(f"experiment_name: {len(found)} experiments on {url or 'the Opik server'} are named "
                             f"{name!r}; pass experiment_id= to say which")
        experiment = found[0]
        data = experiment.get_experiment_data()
    config = dict(data.metadata) if isinstance(data.metadata, dict) else {}
    recorded = dict(config.get("metrics") or {}) if isinstance(config.get("metrics"), dict) else {}
    there = set(recorded) | {s.name for s in data.feedback_scores or []}
    present = [m.name for m in metrics if m.name in there]
    if present and not replace:
        raise MetricPresent(f"experiment {name!r} on {url or 'the Opik server'}: metric {present[0]!r} is already "
                            "there; pass replace=True to score every item with it again, or name= it otherwise")
    before = {s.name: s.value for s in data.experiment_scores or []}
    made: list[str] = []
    functions = [_noting(_storable_scorer(s), made) for s in scorers] + [_keep_others(before, made)]
    preload_lazy_imports()
    with server_errors(url, f"the experiment {name!r}", transport=False):
        result = opik.evaluate_experiment(
            experiment_name=name, scoring_metrics=storable_metrics(metrics),
            scoring_functions=list(scoring_functions) if scoring_functions else None,
            scoring_threads=scoring_threads, verbose=verbose, scoring_key_mapping=scoring_key_mapping,
            experiment_id=experiment.id, experiment_scoring_functions=functions, project_name=project_name)
    with server_errors(url, f"the config of experiment {name!r}"):
        recorded.update({m.name: facts_of(m).as_dict() for m in metrics})
        client.update_experiment(experiment.id, experiment_config={**config, "metrics": recorded})
    return ExperimentSummary(
        name=name, backend="opik", dataset=getattr(data, "dataset_name", None) or "",
        location=result.experiment_url or url or "", items=len(result.test_results),
        scores=_means(result.test_results),
        experiment_scores={s.name: (s.value if not s.scoring_failed else None) for s in result.experiment_scores},
        seconds=time.perf_counter() - started)

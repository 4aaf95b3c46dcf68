"""``agreement --publish``: each correlation and its interval as experiment scores on the experiment
in Opik (``agreement.kendall_b.cider``, ``agreement.kendall_b.cider.ci_low`` / ``.ci_high``), and the
whole agreement in its metadata. Scores someone else logged are kept (read, merge, one write);
names an earlier agreement publish wrote are replaced; the same agreement twice writes nothing.
A meta-evaluation (levels, raters, labels) publishes the same way under ``meta.`` names and its own
metadata key.
A correlation with no value is not sent (the server takes numbers only): the metadata says why.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from opik_metrics.meta_evaluation.evaluation import MetaEvaluation
from opik_metrics.meta_evaluation.metric_agreement import Agreement
from opik_metrics.compare.publishing.publication import interval_names, same_stored
from opik_metrics.compare.reading.sources import opik_experiment

AGREEMENT_KEY = "opik_metrics_agreement"
PREFIX = "agreement"
META_KEY = "opik_metrics_meta_evaluation"
META_PREFIX = "meta"


@dataclass
class AgreementPublished:
    """What a publish did on the experiment: written or unchanged, and names kept as someone else
    logged them (name -> [their value, ours])."""

    experiment: str
    written: bool
    scores: dict[str, float] = field(default_factory=dict)
    kept: dict[str, list[float]] = field(default_factory=dict)


def agreement_scores(result: Agreement) -> dict[str, float]:
    """The experiment scores of an agreement: per score and method its correlation and interval."""
    out: dict[str, float] = {}
    for m in result.metrics:
        for method, c in m.correlations.items():
            if c.estimate is None:
                continue
            name = f"{PREFIX}.{method}.{m.metric}"
            out[name] = c.estimate
            if c.low is not None and c.high is not None:
                low, high = interval_names(name, result.settings.confidence)
                out[low], out[high] = c.low, c.high
    return out


def publish_agreement(result: Agreement, name: str, *, client: Any = None,
                      project_name: str | None = None) -> AgreementPublished:
    """Write ``result`` onto experiment ``name`` on the Opik server (the configured one without
    ``client``); OpikServerError (one line) when it is missing or the server refuses the write."""
    return publish_scores(agreement_scores(result), AGREEMENT_KEY,
                          {"human": result.human, "agreement": result.to_dict()}, name,
                          client=client, project_name=project_name)


def meta_scores(result: MetaEvaluation) -> dict[str, float]:
    """The experiment scores of a meta-evaluation: per level, statistic and score its value and
    interval (``meta.item.kendall_b.cider``, ``meta.raters.alpha_interval``, ``meta.labels.kappa.judge``)."""
    out: dict[str, float] = {}

    def put(name: str, estimate: float | None, low: float | None, high: float | None) -> None:
        if estimate is None:
            return
        out[name] = estimate
        if low is not None and high is not None:
            lo, hi = interval_names(name, result.settings.confidence)
            out[lo], out[hi] = low, high

    for metric, by_level in result.correlations.items():
        for level, values in by_level.items():
            for stat, v in values.items():
                put(f"{META_PREFIX}.{level}.{stat}.{metric}", v.estimate, v.low, v.high)
    for kind, value in result.alpha.items():
        put(f"{META_PREFIX}.raters.alpha_{kind}", value, None, None)
    for metric, labels in result.labels.items():
        for stat, lv in labels.values.items():
            put(f"{META_PREFIX}.labels.{stat}.{metric}", lv.estimate, lv.low, lv.high)
    return out


def publish_meta(result: MetaEvaluation, name: str, *, client: Any = None,
                 project_name: str | None = None) -> AgreementPublished:
    """Write a meta-evaluation onto experiment ``name`` (each experiment it compared gets the same)."""
    return publish_scores(meta_scores(result), META_KEY, {"human": result.human, "meta_evaluation": result.to_dict()},
                          name, client=client, project_name=project_name)


def publish_scores(plan: dict[str, float], key: str, record: dict, name: str, *, client: Any = None,
                   project_name: str | None = None) -> AgreementPublished:
    """Experiment scores ``plan`` and metadata ``record`` (under ``key``, with the names published)
    written onto experiment ``name`` in one PATCH; scores someone else logged are kept."""
    import opik
    from opik.rest_api.types.experiment_score import ExperimentScore

    from opik_metrics.experiments.opik_server import (PUBLISH_ADVICE, answer_failure, choose_backend, client_url,
                                                      server_errors)

    if client is None:
        url = choose_backend("opik", local_advice=PUBLISH_ADVICE).url
        with server_errors(url, "connecting the Opik client"):
            client = opik.Opik(project_name=project_name)
    else:
        url = client_url(client)
    experiment = opik_experiment(client, name, project_name)
    with server_errors(url, f"reading experiment {name!r} (GET experiments/{experiment.id})"):
        data = experiment.get_experiment_data()
    held = [(s.name, s.value) for s in data.experiment_scores or [] if s.name is not None]
    metadata = copy.deepcopy(data.metadata) if isinstance(data.metadata, dict) else {}
    previous = (metadata.get(key) or {}).get("published_scores")
    previous = previous if isinstance(previous, dict) else {}
    mine = {n for n, v in held if n in previous and same_stored(v, previous[n])}
    theirs = {n: v for n, v in held if n not in mine}
    ours = {n: v for n, v in plan.items() if n not in theirs}
    kept = {n: [theirs[n], v] for n, v in plan.items() if n in theirs and not same_stored(theirs[n], v)}
    current = dict(held)
    scores = [(n, v) for n, v in held if n not in mine] + \
             [(n, current[n] if n in mine and same_stored(current[n], v) else v) for n, v in ours.items()]
    stored = {**record, "published_scores": ours}
    if kept:
        stored["kept_existing_scores"] = kept
    new_metadata = {**metadata, key: stored}
    report = AgreementPublished(experiment=name, written=False, scores=ours, kept=kept)
    if dict(scores) == current and len(scores) == len(held) and new_metadata == metadata:
        return report
    try:
        # one PATCH for both: the scores and the metadata that says which of them are ours
        client.rest_client.experiments.update_experiment(
            experiment.id, metadata=new_metadata, experiment_scores=[ExperimentScore(name=n, value=v) for n, v in scores])
    except Exception as exc:
        failure = answer_failure(exc, url, f"the update of experiment {name!r}")
        if failure is None:
            raise
        raise failure from None
    report.written = True
    return report

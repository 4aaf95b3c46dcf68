"""Upload a stored experiment to an Opik server later: the dataset (created or reused), the
experiment with its config, one trace per item with the task's spans and attachments, every
feedback score (as ``opik.evaluate`` logs them) and the experiment-level scores. A server that
refuses a request (HTTP 401, 404, 500) is one OpikServerError line naming it and the status.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import opik
from opik.api_objects.experiment.experiment_item import ExperimentItemReferences
from opik.evaluation.metrics.score_result import ScoreResult
from opik.types import BatchFeedbackScoreDict
from tqdm.auto import tqdm

from opik_metrics.experiments.opik_datasets import insert_items
from opik_metrics.experiments.opik_server import choose_backend, client_url, server_errors
from opik_metrics.experiments.store import ExperimentStore, StoreError, StoredItem


@dataclass
class PushReport:
    """What was uploaded."""

    name: str
    dataset: str
    traces: int
    skipped_items: int           # failed items: no output to upload
    target: str


def _time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _attachments(span: dict) -> list[opik.Attachment] | None:
    files = [a for a in span.get("attachments") or [] if Path(a["path"]).is_file()]
    return [opik.Attachment(data=a["path"], file_name=a["file_name"], content_type=a["content_type"])
            for a in files] or None


def push_item(client: Any, item: StoredItem, project_name: str | None) -> str:
    """One trace for one scored item: input, output, the task's spans, feedback scores; its id."""
    spans = item.trace or []
    failed = {s.name: s.reason for s in item.scores.values() if s.failed}
    trace = client.trace(
        name="evaluation_task", input=item.input, output=item.output,
        start_time=_time(spans[0].get("start_time")) if spans else None,
        end_time=_time(spans[-1].get("end_time")) if spans else _time(item.finished_at),
        metadata={"source": "opik-metrics local store", "item_key": item.key,
                  "task_seconds": item.task_seconds, "score_seconds": item.score_seconds,
                  **({"failed_scores": failed} if failed else {})},
        project_name=project_name)
    for span in spans:
        trace.span(name=span.get("name"), type=span.get("type", "general"), input=span.get("input"),
                   output=span.get("output"), metadata=span.get("metadata"),
                   start_time=_time(span.get("start_time")), end_time=_time(span.get("end_time")),
                   attachments=_attachments(span))
    scores = [BatchFeedbackScoreDict(id=trace.id, name=s.name, value=s.value, reason=s.reason)
              for s in item.scores.values() if not s.failed and s.value is not None]
    if scores:
        client.log_traces_feedback_scores(scores=scores, project_name=project_name)
    return trace.id


def push_experiment(store: ExperimentStore, name: str, *, client: Any = None, project_name: str | None = None,
                    dataset_name: str | None = None, experiment_name: str | None = None,
                    progress: bool = True) -> PushReport:
    """Upload experiment ``name`` from ``store``; without ``client``, the configured server must answer.

    Raises OpikServerError (one line: the server's URL, what was refused, the HTTP status) when the
    server's API refuses a request or stops answering; the store is then left unmarked.
    """
    info = store.info(name)
    scored = store.items(info.id, ["scored"])
    if not scored:
        raise StoreError(f"experiment {name!r} in {store.path} has no scored items to push")
    target = "Opik"
    url = client_url(client)
    if client is None:
        backend = choose_backend("opik")
        target, url = backend.reason, backend.url
    with server_errors(url, "connecting the Opik client"):
        if client is None:
            client = opik.Opik(project_name=project_name)
    with server_errors(url, f"the dataset {dataset_name or info.dataset!r} (creating it or inserting its items)"):
        dataset, ids = insert_items(client, dataset_name or info.dataset, [item.input for item in scored])
    with server_errors(url, f"creating the experiment {experiment_name or name!r}"):
        experiment = client.create_experiment(
            dataset_name=dataset.name, name=experiment_name or name, project_name=project_name,
            experiment_config={**info.config, "items": info.items, "failed_items": info.failed_items,
                               "pushed_from": f"opik-metrics local store {store.path}"})
    with server_errors(url, f"the traces and scores of experiment {experiment_name or name!r}"):
        refs = [ExperimentItemReferences(dataset_item_id=item_id, trace_id=push_item(client, item, project_name))
                for item, item_id in tqdm(list(zip(scored, ids)), desc=f"pushing {name}", unit="item",
                                          disable=not progress)]
        experiment.insert(experiment_items_references=refs)
        corpus = [ScoreResult(name=s.name, value=s.value, reason=s.reason)
                  for s in store.experiment_score_rows(info.id) if not s.failed and s.value is not None]
        if corpus:
            experiment.log_experiment_scores(score_results=corpus)
        client.flush()
    store.mark_pushed(name, target)
    return PushReport(name=experiment_name or name, dataset=dataset.name, traces=len(refs),
                      skipped_items=info.items - len(scored), target=target)

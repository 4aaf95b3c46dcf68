"""Upload a stored experiment to an Opik server later: the dataset (created or reused), the
experiment with its config, one trace per item with the task's spans and attachments, every
feedback score (as ``opik.evaluate`` logs them) and the experiment-level scores. An experiment run
with ``trial_count`` goes as Opik stores trials: one trace and one experiment item per trial, the
trials of an item linked to its one dataset item. A server that
refuses a request (HTTP 401, 404, 500) is one OpikServerError line naming it and the status.

The SDK sends traces, experiment items and feedback scores in the background and only logs a batch
the server refuses (one bad score refuses a batch of up to 1,000), so after ``flush`` the push
reads back what the server kept: the experiment's items, each joined to its trace and that trace's
feedback scores, and the experiment scores. What is missing is named in the report. The
experiment's id and each trial's trace id are noted in the store before they are sent (span ids
derive from the trace id), so a rerun of the same push sends only what is missing, under the same
ids: no second experiment, trace or experiment item. Only a push that arrived whole marks the
experiment pushed.
"""
from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from _opik import ScoreResult   # opik.evaluation.metrics.score_result.ScoreResult, without importing opik
from tqdm.auto import tqdm

from opik_metrics.core.table import one_line
from opik_metrics.experiments.opik_datasets import insert_items
from opik_metrics.experiments.opik_server import (PUSH_ADVICE, answer_failure, choose_backend, client_url,
                                                  server_errors)
from opik_metrics.experiments.store import ExperimentStore, StoreError, StoredItem, StoredScore
from opik_metrics.metric_kit.server_range import storable

if TYPE_CHECKING:
    import opik
    from opik.types import BatchFeedbackScoreDict

READBACK_SECONDS = 3.0       # how long the read-back waits for writes a server does not show at once
_SHOWN = 5                   # item positions and score names the one-line summary names


@dataclass
class PushReport:
    """What was sent and, read back after the push, what the server kept."""

    name: str
    dataset: str
    traces: int                  # traces sent by this push (a rerun sends only the missing ones)
    skipped_items: int           # failed item trials: no output to upload
    target: str
    items: int = 0               # scored item trials: a trace and an experiment item each on the server
    scores: int = 0              # their feedback scores a server stores (failed, non-finite ones are not sent)
    sent_scores: int = 0         # feedback scores sent by this push
    experiment_id: str | None = None
    resumed: bool = False        # an earlier push to the same experiment was continued
    read_back: bool = False      # False: the client cannot read back (a stand-in); nothing was checked
    kept_items: int = 0          # items whose trace and experiment item the server holds
    kept_scores: int = 0
    missing_items: list[int] = field(default_factory=list)        # positions, as `experiments show --items`
    missing_item_keys: list[str] = field(default_factory=list)    # the store's trial keys (store.trial_key) of the same
    trials: int = 1              # runs of each item (trial_count): ``items`` counts every trial
    missing_scores: dict[str, int] = field(default_factory=dict)  # score name -> items lacking it
    changed_scores: dict[str, int] = field(default_factory=dict)  # score name -> items where the server has another value
    missing_experiment_scores: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether the server holds everything (as far as it was read back), with the store's values."""
        return not (self.missing_items or self.missing_scores or self.changed_scores or self.missing_experiment_scores)

    def missing_line(self) -> str:
        """One line: how many items and scores the server kept, and a few of those it lacks or holds
        with another value than the store's."""
        lacking = sum(self.missing_scores.values())
        line = (f"the server kept {self.kept_items} of {self.items} items; {lacking} of {self.scores} feedback "
                "scores missing")
        if self.changed_scores:
            line += f", {sum(self.changed_scores.values())} with another value than the store's"
        if self.missing_items:
            line += f"; items without their trace or experiment item: {_few(self.missing_items)}"
        if self.missing_scores:
            names = sorted(self.missing_scores, key=lambda n: -self.missing_scores[n])
            line += "; scores missing: " + _few([f"{n} ({self.missing_scores[n]})" for n in names])
        if self.changed_scores:
            names = sorted(self.changed_scores, key=lambda n: -self.changed_scores[n])
            line += "; scores changed on the server: " + _few([f"{n} ({self.changed_scores[n]})" for n in names])
        if self.missing_experiment_scores:
            line += f"; experiment scores missing: {_few(self.missing_experiment_scores)}"
        return line


def _few(values: Sequence[Any]) -> str:
    shown = ", ".join(str(v) for v in values[:_SHOWN])
    return shown + (f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else "")


def push_command(stored: str, store_path: Any, remote: str, project_name: str | None) -> str:
    """The ``experiments push`` command line that continues the push of stored experiment ``stored``
    to experiment ``remote`` (in ``project_name``): the same target, so it completes it in place."""
    import shlex

    words = ["opik-metrics", "experiments", "push", stored, "--store", str(store_path)]
    if remote != stored:
        words += ["--as", remote]
    if project_name:
        words += ["--project", project_name]
    return shlex.join(words)


def push_target(url: str | None, project_name: str | None, dataset: str, experiment: str) -> str:
    """The key of a push in the store: the server, the project, the dataset and experiment names there."""
    return json.dumps({"server": url, "project": project_name, "dataset": dataset, "experiment": experiment},
                      sort_keys=True)


def span_id(trace_id: str, index: int) -> str:
    """The id of a trace's ``index``-th span, derived from the trace id (a UUIDv7 at the trace's time),
    so a span sent again replaces itself on the server instead of appearing twice."""
    digest = hashlib.sha256(f"{trace_id}/span/{index}".encode()).digest()
    raw = bytearray(uuid.UUID(trace_id).bytes[:6] + digest[:10])
    raw[6] = 0x70 | (raw[6] & 0x0F)
    raw[8] = 0x80 | (raw[8] & 0x3F)
    return str(uuid.UUID(bytes=bytes(raw)))


def _time(text: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def _attachments(span: dict) -> list[opik.Attachment] | None:
    import opik

    files = [a for a in span.get("attachments") or [] if Path(a["path"]).is_file()]
    return [opik.Attachment(data=a["path"], file_name=a["file_name"], content_type=a["content_type"])
            for a in files] or None


def _sent_value(score: StoredScore) -> float | None:
    """The value a push sends for this stored score; None when it sends none (a failed score, or a
    value a server does not store)."""
    return score.value if not score.failed and storable(score.value) else None


def sent_scores(item: StoredItem) -> set[str]:
    """The names of the item's feedback scores a push sends."""
    return {s.name for s in item.scores.values() if _sent_value(s) is not None}


def _feedback(item: StoredItem, trace_id: str, names: set[str] | None = None) -> list[BatchFeedbackScoreDict]:
    return [{"id": trace_id, "name": s.name, "value": value, "reason": s.reason}   # opik's BatchFeedbackScoreDict
            for s in item.scores.values()
            if (value := _sent_value(s)) is not None and (names is None or s.name in names)]


def push_item(client: Any, item: StoredItem, project_name: str | None, trace_id: str | None = None) -> str:
    """One trace for one scored item: input, output, the task's spans, feedback scores; its id.
    With ``trace_id`` (noted before), the trace and its spans keep their ids when sent again."""
    spans = item.trace or []
    failed = {s.name: s.reason for s in item.scores.values() if s.failed}
    failed.update({s.name: f"{s.non_finite or s.value} is not a score an Opik server stores: not sent"
                   for s in item.scores.values() if not s.failed and not storable(s.value)})
    trace = client.trace(
        id=trace_id, name="evaluation_task", input=item.input, output=item.output,
        start_time=_time(spans[0].get("start_time")) if spans else None,
        end_time=_time(spans[-1].get("end_time")) if spans else _time(item.finished_at),
        metadata={"source": "opik-metrics local store", "item_key": item.key, **({"trial": item.trial} if item.trial else {}),
                  "task_seconds": item.task_seconds, "score_seconds": item.score_seconds,
                  **({"failed_scores": failed} if failed else {})},
        project_name=project_name)
    for k, span in enumerate(spans):
        trace.span(id=span_id(trace.id, k) if trace_id else None, name=span.get("name"),
                   type=span.get("type", "general"), input=span.get("input"), output=span.get("output"),
                   metadata=span.get("metadata"), start_time=_time(span.get("start_time")),
                   end_time=_time(span.get("end_time")), attachments=_attachments(span))
    scores = _feedback(item, trace.id)
    if scores:
        client.log_traces_feedback_scores(scores=scores, project_name=project_name)
    return trace.id


@dataclass
class _Kept:
    """What the server holds of one experiment, read back through the SDK."""

    items: Counter = field(default_factory=Counter)               # trace id -> experiment items linking it
    traces: set[str] = field(default_factory=set)                  # trace ids whose trace is there
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)   # trace id -> its feedback scores: name -> value
    experiment_scores: dict[str, float] = field(default_factory=dict)


def _read_back(experiment: Any, limit: int) -> _Kept:
    """The experiment's items joined to their traces and feedback scores (``Experiment.get_items``:
    the server's compare view, where an item whose trace is missing comes without output or scores)
    and its experiment scores (``get_experiment_data``)."""
    kept = _Kept()
    for row in experiment.get_items(max_results=limit, truncate=True):
        kept.items[row.trace_id] += 1
        if row.evaluation_task_output is not None:
            kept.traces.add(row.trace_id)
            kept.scores.setdefault(row.trace_id, {}).update({s["name"]: s.get("value")
                                                             for s in row.feedback_scores or []})
    data = experiment.get_experiment_data()
    kept.experiment_scores = {s.name: s.value for s in data.experiment_scores or []}
    return kept


def _can_read_back(experiment: Any) -> bool:
    return callable(getattr(experiment, "get_items", None)) and callable(getattr(experiment, "get_experiment_data",
                                                                                 None))


def _same(ours: float | None, theirs: Any) -> bool:
    """Whether the server's value is ours (to the 9 decimals a server keeps; a value it does not
    show counts as the same): a rescore that replaced a score sends it again."""
    if ours is None or not isinstance(theirs, (int, float)) or isinstance(theirs, bool):
        return True
    return math.isclose(ours, float(theirs), rel_tol=1e-9, abs_tol=1e-8)


def kept_scores(item: StoredItem, there: dict[str, Any]) -> set[str]:
    """The names of the item's sent scores the server holds with our value (``there``: name -> value)."""
    return {s.name for s in item.scores.values()
            if s.name in there and (value := _sent_value(s)) is not None and _same(value, there[s.name])}


def _compare(report: PushReport, scored: list[StoredItem], traces: dict[str, str], corpus: list[ScoreResult],
             kept: _Kept) -> None:
    """Fill the report's kept and missing fields from what was read back."""
    report.read_back, report.kept_items, report.kept_scores = True, 0, 0
    report.missing_items, report.missing_item_keys, report.missing_scores = [], [], {}
    report.changed_scores = {}
    for item in scored:
        trace_id = traces[item.trial_key]
        names = sent_scores(item)
        held = kept.scores.get(trace_id, {}) if trace_id in kept.traces else {}
        there = kept_scores(item, held)
        if kept.items[trace_id] and trace_id in kept.traces:
            report.kept_items += 1
        else:
            report.missing_items.append(item.position)
            report.missing_item_keys.append(item.trial_key)
        report.kept_scores += len(there)
        for name in sorted(names - there):
            lost = report.changed_scores if held.get(name) is not None else report.missing_scores
            lost[name] = lost.get(name, 0) + 1
    report.missing_experiment_scores = [s.name for s in corpus if s.name not in kept.experiment_scores
                                        or not _same(s.value, kept.experiment_scores[s.name])]


def _check(report: PushReport, experiment: Any, limit: int, scored: list[StoredItem], traces: dict[str, str],
           corpus: list[ScoreResult]) -> None:
    """Read back until everything is there or READBACK_SECONDS pass (a server may show writes late)."""
    deadline = time.monotonic() + READBACK_SECONDS
    while True:
        _compare(report, scored, traces, corpus, _read_back(experiment, limit))
        if report.complete or time.monotonic() >= deadline:
            return
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def _experiment(client: Any, store: ExperimentStore, info: Any, target: str, dataset: Any, name: str,
                project_name: str | None, store_path: Path) -> tuple[Any, bool]:
    """(the experiment on the server, whether an earlier push created it): found by the id noted in
    the store, else created under an id noted first."""
    from opik import id_helpers
    from opik.exceptions import ExperimentNotFound

    record = store.push_record(info.id, target)
    if record is not None:
        try:
            return client.get_experiment_by_id(record.remote_id), True
        except ExperimentNotFound:      # noted, but its creation never arrived: created now, same id
            remote_id = record.remote_id
    else:
        remote_id = id_helpers.generate_id()
        store.start_push(info.id, target, remote_id)
    experiment = client.create_experiment(
        dataset_name=dataset.name, name=name, project_name=project_name, experiment_id=remote_id,
        experiment_config=_pushed_config(info, store_path))
    return experiment, record is not None


def _pushed_config(info: Any, store_path: Path) -> dict:
    return {**info.config, "items": info.items, "failed_items": info.failed_items,
            "pushed_from": f"opik-metrics local store {store_path}"}


def _update_config(client: Any, experiment: Any, info: Any, store_path: Path) -> None:
    """The stored config on an experiment pushed before, when its metrics differ (a rescore added
    some): ``compare --opik`` reads the metrics' facts from there. Merged into what the server
    holds (an update replaces the metadata whole): what ``compare --publish`` and ``agreement
    --publish`` wrote there stays."""
    config = json.loads(json.dumps(_pushed_config(info, store_path), default=str))
    there = experiment.get_experiment_data().metadata
    if not isinstance(there, dict) or there.get("metrics") != config.get("metrics"):
        client.update_experiment(experiment.id, experiment_config={**(there if isinstance(there, dict) else {}),
                                                                   **config})


def _sent_experiment_scores(store: ExperimentStore, exp_id: int) -> list[ScoreResult]:
    """The stored experiment scores a server stores (finite, not failed), as the push sends them."""
    return [ScoreResult(name=s.name, value=value, reason=s.reason)
            for s in store.experiment_score_rows(exp_id) if (value := _sent_value(s)) is not None]


def push_experiment(store: ExperimentStore, name: str, *, client: Any = None, project_name: str | None = None,
                    dataset_name: str | None = None, experiment_name: str | None = None,
                    progress: bool = True) -> PushReport:
    """Upload experiment ``name`` from ``store``; without ``client``, the configured server must answer.

    Reads back what the server kept; ``report.complete`` says whether it is all there (the store is
    then marked pushed), else the report names what is missing and the same call sends just that.
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
        backend = choose_backend("opik", local_advice=PUSH_ADVICE)    # push has no local way to offer
        target, url = backend.reason, backend.url
    remote_name = experiment_name or name
    import opik     # only now: every check above (the store, the items, the server's health) is quick
    from opik import id_helpers
    from opik.api_objects.experiment.experiment_item import ExperimentItemReferences

    with server_errors(url, "connecting the Opik client"):
        if client is None:
            client = opik.Opik(project_name=project_name)
    with server_errors(url, f"the dataset {dataset_name or info.dataset!r} (creating it or inserting its items)"):
        contents = {item.key: item.input for item in scored}      # an item's trials share its dataset item
        dataset, found = insert_items(client, dataset_name or info.dataset, list(contents.values()))
        by_key = dict(zip(contents, found))
        ids = [by_key[item.key] for item in scored]
    key = push_target(url, project_name, dataset.name, remote_name)
    with server_errors(url, f"finding or creating the experiment {remote_name!r}"):
        experiment, resumed = _experiment(client, store, info, key, dataset, remote_name, project_name, store.path)
        if resumed and _can_read_back(experiment):
            _update_config(client, experiment, info, store.path)
    record = store.push_record(info.id, key)
    traces = dict(record.traces) if record else {}
    new = {item.trial_key: id_helpers.generate_id() for item in scored if item.trial_key not in traces}
    if new:
        store.save_push_traces(info.id, key, new)
        traces.update(new)
    corpus = _sent_experiment_scores(store, info.id)
    readable = _can_read_back(experiment)
    limit = max(10_000, 2 * len(scored))
    report = PushReport(name=remote_name, dataset=dataset.name, traces=0,
                        skipped_items=info.items * info.trials - len(scored), target=target, items=len(scored),
                        scores=sum(len(sent_scores(i)) for i in scored), trials=info.trials,
                        experiment_id=getattr(experiment, "id", None), resumed=resumed)
    with server_errors(url, f"reading back experiment {remote_name!r} before sending what it lacks"):
        before = _read_back(experiment, limit) if resumed and readable else _Kept()
    with server_errors(url, f"the traces and scores of experiment {remote_name!r}"):
        refs, only_scores = [], []
        for item, item_id in tqdm(list(zip(scored, ids)), desc=one_line(f"pushing {name}"), unit="item", disable=not progress):
            trace_id = traces[item.trial_key]
            if before.items[trace_id] and trace_id in before.traces:
                lacking = sent_scores(item) - kept_scores(item, before.scores.get(trace_id, {}))
                only_scores.extend(_feedback(item, trace_id, lacking))
                continue
            push_item(client, item, project_name, trace_id)
            report.traces += 1
            report.sent_scores += len(sent_scores(item))
            if not before.items[trace_id]:
                refs.append(ExperimentItemReferences(dataset_item_id=item_id, trace_id=trace_id))
        if only_scores:
            client.log_traces_feedback_scores(scores=only_scores, project_name=project_name)
            report.sent_scores += len(only_scores)
        if refs:
            experiment.insert(experiment_items_references=refs)
        try:
            _log_experiment_scores(experiment, corpus, before.experiment_scores)
        except Exception as exc:
            if not readable or answer_failure(exc, url, "") is None:
                raise               # else the read-back names the experiment scores missing
        client.flush()
    if readable:
        with server_errors(url, f"reading back experiment {remote_name!r} after the push (run the push again to "
                                "check and finish it)"):
            _check(report, experiment, limit, scored, traces, corpus)
    if report.complete:
        store.finish_push(info.id, key)
        store.mark_pushed(name, target)
    return report


def check_recorded_push(store: ExperimentStore, name: str, client: Any, target: str, url: str | None = None,
                        report_target: str = "Opik") -> PushReport:
    """Read back, sending nothing, what the server holds of stored experiment ``name`` under the
    push noted for ``target`` (by ``experiments push``, or by ``evaluate`` on a server, which notes
    the experiment's and traces' ids as it journals the run); a complete one is marked pushed."""
    info = store.info(name)
    scored = store.items(info.id, ["scored"])
    record = store.push_record(info.id, target)
    if record is None:
        raise StoreError(f"experiment {name!r} in {store.path} has no push to {target} on record")
    corpus = _sent_experiment_scores(store, info.id)
    report = PushReport(name=name, dataset=info.dataset, traces=0, skipped_items=info.items * info.trials - len(scored),
                        target=report_target, items=len(scored), scores=sum(len(sent_scores(i)) for i in scored),
                        trials=info.trials, experiment_id=record.remote_id, resumed=True)
    with server_errors(url, f"reading back experiment {name!r}"):
        experiment = client.get_experiment_by_id(record.remote_id)
        if _can_read_back(experiment):
            _check(report, experiment, max(10_000, 2 * len(scored)), scored, dict(record.traces), corpus)
    if report.read_back and report.complete:
        store.finish_push(info.id, target)
        store.mark_pushed(name, report_target)
    return report


def _log_experiment_scores(experiment: Any, corpus: list[ScoreResult], there: dict[str, float]) -> None:
    """Our experiment scores when the server lacks one, with the others it holds (each write
    replaces the whole list: a comparison published there stays)."""
    if not corpus or all(s.name in there and _same(s.value, there[s.name]) for s in corpus):
        return
    ours = {s.name for s in corpus}
    others = [ScoreResult(name=n, value=v) for n, v in there.items() if n not in ours]
    experiment.log_experiment_scores(score_results=others + corpus)

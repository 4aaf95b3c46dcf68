"""Score what a project already holds (production traces or spans) with the pack's metrics and
write each score back as a feedback score, with the metric's reason and its mark (``marks``).

Pages are read newest first through the SDK's search (``reading``), the next one while one is
scored (``read_ahead``); each metric scores a page's entities through the one scorer
(``score_batch`` where it has one); the scores go out from a writer thread (``writing``) while the
next page is scored, in requests of whole entities and at most 1,000 scores (the server validates a
batch whole), only values the server stores. An entity that already holds a metric's scores under
the same signature is skipped unless ``replace``: a rerun after Ctrl-C or kill -9 scores only what
is missing, and sends again any score the server holds with another value than its mark says was
sent. One run at a time per project and metric signature (``lease``); the server and project are
checked first (``connection``). After the writes the run reads back what arrived, a block of pages
at a time, and names what is missing or held with another value. Memory holds a few pages, the
block being checked, the summary's values (a float per entity and score) and summed statistics.
"""
from __future__ import annotations

import math
import time
from array import array
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any, Sequence

from tqdm.auto import tqdm

from opik_metrics.core import facts_of
from opik_metrics.core.statistics import Statistics
from opik_metrics.core.table import one_line
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.experiments.opik_server import OpikServerError, client_url, server_errors
from opik_metrics.metric_kit.server_range import server_value
from opik_metrics.scoring.scorer import Scorer, batch_fields, check_metrics, text_field
from opik_metrics.traces.connection import check_project, connect
from opik_metrics.traces.fields import TraceFields, Unreadable
from opik_metrics.traces.lease import scoring_lease
from opik_metrics.traces.read_ahead import read_ahead
from opik_metrics.traces.marks import MarkedScore, marked, marked_scores, signature_of
from opik_metrics.traces.reading import PAGE_SIZE, Selection, pages
from opik_metrics.traces.summary import WindowSummary, summarize
from opik_metrics.traces.writing import ScoreWriter, sender

READBACK_SECONDS = 3.0            # how long the read-back waits for writes a server shows late
READBACK_BLOCK = 10_000           # entities written before their scores are read back
_SHOWN = 5


@dataclass
class TraceScoreReport:
    """What a run read, scored, skipped, sent and, read back, what the server kept."""

    project_name: str
    entity: str = "traces"
    selected: int = 0                                             # entities the selection holds
    scored: int = 0                                               # entities given at least one new score
    sent_scores: int = 0
    skipped: dict[str, int] = field(default_factory=dict)         # metric -> entities it had already scored
    resent: dict[str, int] = field(default_factory=dict)          # metric -> skipped entities holding other values
    resent_ids: dict[str, list[str]] = field(default_factory=dict)
    without_reference: dict[str, int] = field(default_factory=dict)   # metric -> entities with no reference
    without_reference_ids: dict[str, list[str]] = field(default_factory=dict)
    unreadable: int = 0                                           # entities whose fields cannot be inputs
    unreadable_examples: list[str] = field(default_factory=list)  # "trace ID: field 'output' (...): ..."
    failed: dict[str, int] = field(default_factory=dict)          # metric -> entities it could not score
    failed_examples: list[str] = field(default_factory=list)
    read_back: bool = False
    kept_scores: int = 0
    missing_scores: dict[str, int] = field(default_factory=dict)  # score name -> entities lacking it
    missing_ids: list[str] = field(default_factory=list)
    summary: WindowSummary | None = None
    values: dict[str, Any] = field(default_factory=dict, repr=False)   # score name -> every entity's value

    @property
    def complete(self) -> bool:
        """Whether the server holds every score sent (as read back)."""
        return not self.missing_scores

    def _few(self, values: Sequence[str]) -> str:
        return ", ".join(values[:_SHOWN]) + (f" and {len(values) - _SHOWN} more" if len(values) > _SHOWN else "")

    def lines(self) -> list[str]:
        """What happened, a line each: counts, then what was left out and why."""
        one = self.entity[:-1]
        out = [f"{self.selected} {self.entity} selected in project {self.project_name!r}: {self.scored} scored, "
               f"{self.sent_scores} feedback scores sent"]
        for metric, n in self.skipped.items():
            out.append(f"{metric}: {n} {self.entity} already scored with the same signature, skipped (--replace "
                       "scores them again)")
        for metric, n in self.resent.items():
            out.append(f"{metric}: {n} of the {self.entity} it had scored held another value than the one it sent "
                       "(or none), sent again: " + self._few(self.resent_ids.get(metric, [])))
        for metric, n in self.without_reference.items():
            out.append(f"{metric}: {n} {self.entity} have no reference, not scored: "
                       + self._few(self.without_reference_ids.get(metric, [])))
        if self.unreadable:
            out.append(f"{self.unreadable} {self.entity} have a field a metric cannot read (missing, or not text), "
                       "not scored by it: " + self._few(self.unreadable_examples))
        for metric, n in self.failed.items():
            out.append(f"{metric}: {n} {self.entity} failed to score")
        if self.failed_examples:
            out.append("failures: " + self._few(self.failed_examples))
        if self.read_back:
            out.append(f"read back: the server holds {self.kept_scores} of the {self.sent_scores} scores sent"
                       + ("" if self.complete else "; missing: " + self._few(
                           [f"{n} ({c})" for n, c in self.missing_scores.items()])
                          + f" on {one}s " + self._few(self.missing_ids)))
        return [one_line(line) for line in out]

    def as_dict(self) -> dict[str, Any]:
        return {"project": self.project_name, "entity": self.entity, "selected": self.selected, "scored": self.scored,
                "sent_scores": self.sent_scores, "skipped": self.skipped, "resent": self.resent,
                "resent_ids": self.resent_ids, "without_reference": self.without_reference,
                "without_reference_ids": self.without_reference_ids, "unreadable": self.unreadable,
                "unreadable_examples": self.unreadable_examples, "failed": self.failed,
                "failed_examples": self.failed_examples, "read_back": self.read_back,
                "kept_scores": self.kept_scores, "missing_scores": self.missing_scores,
                "missing_ids": self.missing_ids, "complete": self.complete,
                "summary": self.summary.as_dict() if self.summary else None}


def _needs(metric: Any) -> tuple[bool, bool]:
    """(needs a reference, needs an image): from the metric's catalog card, else its ``score``."""
    card = getattr(type(metric), "card", None)
    if card is not None:
        needs_reference = getattr(metric, "needs_reference", card.needs_reference)    # BARTScore's: by direction
        return bool(needs_reference), bool(card.needs_image) or "image" in batch_fields(metric).values()
    import inspect
    try:
        parameter = inspect.signature(metric.score).parameters.get("reference")
    except (TypeError, ValueError):
        parameter = None
    needs_reference = parameter is not None and parameter.default is inspect.Parameter.empty
    return needs_reference, "image" in batch_fields(metric).values()


_ROW_FIELDS = ("id", "input", "output", "metadata", "name", "tags", "thread_id", "first_message", "last_message")


_HELD: dict[type, tuple[str, ...]] = {}       # a functools.cache: typeshed has no type[Any] as Hashable


def _fields_held(kind: type) -> tuple[str, ...]:
    """The row's fields an entity of type ``kind`` has: a pydantic model's own (asking one for a
    field it lacks costs an AttributeError: a trace has no ``first_message``); else all of them."""
    if kind not in _HELD:
        fields = getattr(kind, "model_fields", None)
        _HELD[kind] = tuple(n for n in _ROW_FIELDS if n in fields) if isinstance(fields, dict) else _ROW_FIELDS
    return _HELD[kind]


def _row(entity: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An entity read by the SDK as (its fields, its feedback scores: name, value, reason)."""
    row = dict.fromkeys(_ROW_FIELDS)
    for name in _fields_held(type(entity)):
        row[name] = getattr(entity, name, None)
    extra = getattr(entity, "model_extra", None)
    if isinstance(extra, dict):     # what the server sent beyond the SDK's model (pydantic keeps it)
        for name in extra.keys() & row.keys():
            row[name] = extra[name]
    scores = [{"name": s.name, "value": s.value, "reason": s.reason} for s in entity.feedback_scores or []]
    return row, scores


def _same(ours: float, theirs: Any) -> bool:
    return isinstance(theirs, (int, float)) and not isinstance(theirs, bool) and \
        math.isclose(ours, float(theirs), rel_tol=1e-9, abs_tol=1e-8)


class _Run:
    """One run's state: the metrics, what to send, what to check, what the summary needs."""

    def __init__(self, metrics: Sequence[Any], fields: TraceFields, selection: Selection, replace: bool,
                 report: TraceScoreReport) -> None:
        self.metrics, self.fields, self.selection, self.replace, self.report = metrics, fields, selection, replace, report
        self.signatures = {m.name: signature_of(m) for m in metrics}
        self.needs = {m.name: _needs(m) for m in metrics}
        self.scorers = {m.name: Scorer([m]) for m in metrics}
        self.summed = {m.name: facts_of(m).corpus is not None and hasattr(m, "item_statistics") for m in metrics}
        self.values: dict[str, array] = {}
        self.totals: dict[str, Statistics] = {}     # metric -> summed statistics of the entities scored now
        self.counted: dict[str, int] = {}
        self.pending: dict[str, dict[str, float]] = {}     # entity id -> score name -> value sent
        self.scored_now: set[str] = set()                  # entities of this page given a new score

    def _value(self, name: str, value: float) -> None:
        column = self.values.get(name)
        if column is None:
            column = self.values[name] = array("d")
        column.append(value)

    def _inputs(self, metric: Any, row: dict[str, Any]) -> dict[str, Any] | str:
        """The metric's inputs from one entity, or why it has none ("reference" when it lacks one)."""
        needs_reference, needs_image = self.needs[metric.name]
        inputs: dict[str, Any] = {}
        for name in ("output", "reference", "image", "source"):
            if name == "image" and not needs_image or name == "source" and not getattr(metric, "needs_source", False):
                continue
            try:
                value = self.fields.read(row, name)
            except Unreadable as exc:       # a damaged reference is named even where it is optional
                return str(exc)
            if value is None:
                if name == "reference":
                    if needs_reference:
                        return "reference"
                    continue
                return f"field {name!r} ({','.join(self.fields.path(name))}) is missing"
            inputs[name] = value
        key = text_field(metric)
        if key != "output":
            inputs[key] = inputs.pop("output")
        if "source" in inputs:               # under the scoring input the metric reads it from (``source_field``)
            inputs[getattr(metric, "source_field", "source")] = inputs.pop("source")
        return inputs

    def page(self, page: Sequence[Any]) -> list[list[dict[str, Any]]]:
        """Score one page; the feedback scores to send, grouped by entity (a list per entity)."""
        rows = [_row(e) for e in page]
        self.report.selected += len(rows)
        one = self.selection.entity[:-1]
        unreadable: dict[str, str] = {}
        sent: dict[str, list[dict[str, Any]]] = {}
        for metric in self.metrics:
            signature = self.signatures[metric.name]
            items, ids = [], []
            for row, scores in rows:
                held = None if self.replace else marked_scores(scores, signature)
                if held is not None:
                    self.report.skipped[metric.name] = self.report.skipped.get(metric.name, 0) + 1
                    self._verify(metric.name, row["id"], held, sent)
                    continue
                inputs = self._inputs(metric, row)
                if inputs == "reference":
                    self.report.without_reference[metric.name] = self.report.without_reference.get(metric.name, 0) + 1
                    shown = self.report.without_reference_ids.setdefault(metric.name, [])
                    if len(shown) < 20:
                        shown.append(row["id"])
                    continue
                if isinstance(inputs, str):
                    unreadable.setdefault(row["id"], f"{one} {row['id']}: {inputs}")
                    continue
                items.append(inputs)
                ids.append(row["id"])
            for entity_id, results in zip(ids, self.scorers[metric.name].results(items)):
                self._results(metric, entity_id, [r for _, r in results], sent)
        self.report.unreadable += len(unreadable)
        self.report.unreadable_examples.extend(list(unreadable.values())[: max(0, 20 - len(self.report.unreadable_examples))])
        self.report.scored += len(self.scored_now)
        self.scored_now.clear()
        return list(sent.values())

    def _verify(self, metric: str, entity_id: str, held: list[MarkedScore], sent: dict[str, list[dict[str, Any]]]) -> None:
        """A skipped entity's scores checked against the values their marks say were sent: one the
        server holds with another value (or none) is sent again, with its reason, and read back."""
        differs = [m for m in held if not _same(m.sent, m.held)]
        for score in held:
            self._value(score.name, score.sent)
        if not differs:
            return
        self.report.resent[metric] = self.report.resent.get(metric, 0) + 1
        shown = self.report.resent_ids.setdefault(metric, [])
        if len(shown) < 20:
            shown.append(entity_id)
        for score in differs:
            sent.setdefault(entity_id, []).append({"id": entity_id, "name": score.name, "value": score.sent,
                                                   "reason": score.reason, "project_name": self.selection.project_name})
            self.pending.setdefault(entity_id, {})[score.name] = score.sent

    def _results(self, metric: Any, entity_id: str, results: list[Any], sent: dict[str, list[dict[str, Any]]]) -> None:
        good = [r for r in results if not r.scoring_failed]
        if len(good) < len(results):
            self.report.failed[metric.name] = self.report.failed.get(metric.name, 0) + 1
            if len(self.report.failed_examples) < 20:
                failed = next(r for r in results if r.scoring_failed)
                self.report.failed_examples.append(one_line(f"{self.selection.entity[:-1]} {entity_id}: {metric.name}: "
                                                            f"{failed.reason}"))
        if not good:
            return
        signature, project_name = self.signatures[metric.name], self.selection.project_name
        scores: list[dict[str, Any]] | None = None
        pending: dict[str, float] = {}
        for result in good:
            value = server_value(result.value)
            if value is None:       # marked failed by the scorer already; kept for safety
                continue
            if scores is None:
                scores, pending = sent.setdefault(entity_id, []), self.pending.setdefault(entity_id, {})
                self.scored_now.add(entity_id)
            scores.append({"id": entity_id, "name": result.name, "value": float(result.value),
                           "reason": marked(result.reason, signature, len(good), value), "project_name": project_name})
            pending[result.name] = value
            self._value(result.name, value)      # as the server keeps it: the same on a rerun that skips
        if self.summed[metric.name]:
            try:
                stats = metric.item_statistics(results)
            except (KeyError, ValueError):
                return
            self.totals[metric.name] = stats if metric.name not in self.totals else self.totals[metric.name] + stats
            self.counted[metric.name] = self.counted.get(metric.name, 0) + 1

    def corpus(self) -> tuple[dict[str, float], dict[str, int]]:
        values, counts = {}, {}
        for metric in self.metrics:
            if metric.name in self.totals:
                made = metric.from_statistics(self.totals[metric.name])
                for result in made if isinstance(made, list) else [made]:     # a suite's: one per corpus score
                    if not result.scoring_failed:
                        values[result.name] = float(result.value)
                        counts[result.name] = self.counted[metric.name]
        return values, counts


def _read_back(client: Any, selection: Selection, pending: dict[str, dict[str, float]], top: str | None,
               page_size: int) -> dict[str, dict[str, Any]]:
    """The feedback scores the server holds for the pending entities: the pages from ``top`` down to
    the oldest pending id (the selection's filter, unless it reads feedback scores: those changed)."""
    plain = selection if "feedback_scores" not in (selection.filter_string or "") else \
        Selection(selection.project_name, selection.entity, None, selection.since, selection.until)
    oldest = min(pending)
    held: dict[str, dict[str, Any]] = {}
    for page in pages(client, plain, page_size, below=top, scores_only=True):
        for entity in page:
            if entity.id in pending:
                held[entity.id] = entity.scores
        if page[-1].id <= oldest:
            break
    return held


def _check(client: Any, writer: ScoreWriter, run: _Run, top: str | None, page_size: int) -> None:
    """Wait for the writes, read back the pending block until it is all there or READBACK_SECONDS
    pass; note what is missing."""
    if not run.pending:
        return
    writer.wait()
    client.flush()                  # threads' scores go through the SDK's streamer
    report = run.report
    deadline = time.monotonic() + READBACK_SECONDS
    while True:
        held = _read_back(client, run.selection, run.pending, top, page_size)
        missing = {eid: [n for n, v in names.items() if not _same(v, held.get(eid, {}).get(n))]
                   for eid, names in run.pending.items()}
        missing = {eid: names for eid, names in missing.items() if names}
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    report.read_back = True
    report.kept_scores += sum(len(names) for names in run.pending.values()) - sum(len(n) for n in missing.values())
    for eid, names in missing.items():
        for name in names:
            report.missing_scores[name] = report.missing_scores.get(name, 0) + 1
        if len(report.missing_ids) < 20:
            report.missing_ids.append(eid)
    run.pending.clear()


def _references(client: Any, selection: Selection, fields: TraceFields, page_size: int,
                progress: bool) -> list[Any]:
    """The first pass for a metric whose item scores depend on the whole set (CIDEr-D's document
    frequencies): every selected entity's reference, so that pages score as one pass over the
    selection would. Memory holds these references (only these)."""
    references = []
    bar = tqdm(desc=one_line(f"reading references of {selection.project_name}"), unit=selection.entity[:-1],
               disable=not progress)
    for page in pages(client, selection, page_size):
        for entity in page:
            row = _row(entity)[0]
            try:                            # only what will be scored: a text output and a reference
                output, reference = fields.read(row, "output"), fields.read(row, "reference")
            except Unreadable:
                continue                    # named when the page is scored
            if output is not None and reference is not None:
                references.append(reference)
        bar.update(len(page))
    bar.close()
    return references


def _write(client: Any, url: str | None, metrics: list[Any], trace_fields: TraceFields, selection: Selection,
           replace: bool, report: TraceScoreReport, page_size: int, progress: bool) -> _Run:
    """Score the selection page by page, send the scores and read them back (under the run's lease)."""
    project_name, entity = selection.project_name, selection.entity
    if any(getattr(m, "corpus_pending", False) for m in metrics):
        with server_errors(url, f"reading the references of project {project_name!r}'s {entity}"):
            fit_corpus_contexts(metrics, _references(client, selection, trace_fields, page_size, progress))
    run = _Run(list(metrics), trace_fields, selection, replace, report)
    bar = tqdm(desc=one_line(f"scoring {entity} of {project_name}"), unit=entity[:-1], disable=not progress)
    top: str | None = None          # the cursor above the block being written (None: the newest)
    below: str | None = None
    with server_errors(url, f"scoring the {entity} of project {project_name!r}"):
        try:
            with ScoreWriter(sender(client, entity, project_name)) as writer, \
                    closing(read_ahead(pages(client, selection, page_size))) as ahead:
                for page in ahead:
                    report.sent_scores += writer.put(run.page(page))
                    bar.update(len(page))
                    below = page[-1].id
                    if len(run.pending) >= READBACK_BLOCK:
                        _check(client, writer, run, top, page_size)
                        top = below
                _check(client, writer, run, top, page_size)
        except OpikServerError:     # a read stopped (a server that does not page): the writer's queue went out; the SDK's too
            client.flush(timeout=int(READBACK_SECONDS) + 10)
            raise
    bar.close()
    return run


def score_traces(project_name: str, metrics: Sequence[Any], *, filter_string: str | None = None,
                 since: Any = None, until: Any = None, fields: TraceFields | Sequence[str] | None = None,
                 entity: str = "traces", replace: bool = False, client: Any = None, page_size: int = PAGE_SIZE,
                 summary: bool = True, resamples: int | None = None, progress: bool = True) -> TraceScoreReport:
    """Score project ``project_name``'s traces (``entity="spans"``: its spans; ``"threads"``: its
    threads, read in one search, the fields under ``first_message`` / ``last_message``) that pass
    ``filter_string`` (Opik's query language) and start within [``since``, ``until``) with ``metrics``,
    and log each score as a feedback score on its trace. ``fields``: where the inputs are (a
    TraceFields or ``--field`` options, e.g. ``["output=output.caption", "reference=metadata.ref"]``).

    Returns the report: what was scored, skipped (already scored by the same metric configuration;
    ``replace=True`` scores it again), left out (no reference, unreadable fields: each named by id
    and field), and, read back, what the server lacks (``report.complete``); with ``summary``, each
    score's mean with its bootstrap interval and the corpus scores.
    """
    check_metrics(metrics)
    if not isinstance(page_size, int) or isinstance(page_size, bool) or not 1 <= page_size <= 2000:
        raise ValueError(f"page_size: expected 1 to 2000 (the server streams at most 2,000 a page), got {page_size!r}")
    selection = Selection(project_name, entity, filter_string, since, until)
    trace_fields = fields if isinstance(fields, TraceFields) else TraceFields.parse(fields)
    if client is None:
        client = connect(project_name)
    else:
        check_project(client, project_name)
    url = client_url(client)
    report = TraceScoreReport(project_name=project_name, entity=entity)
    with scoring_lease(url, project_name, entity, {m.name: signature_of(m) for m in metrics}):
        run = _write(client, url, list(metrics), trace_fields, selection, replace, report, page_size, progress)
    report.values = dict(run.values)
    if summary:
        from opik_metrics.compare.statistics.defaults import DEFAULT_RESAMPLES
        corpus, counts = run.corpus()
        report.summary = summarize({n: v for n, v in run.values.items()}, corpus, counts,
                                   resamples=resamples or DEFAULT_RESAMPLES)
    return report


__all__ = ["TraceScoreReport", "score_traces"]

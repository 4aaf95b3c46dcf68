"""An Opik REST API on 127.0.0.1 for the endpoints that reading and publishing a comparison call,
so that Opik's real SDK (``OPIK_URL_OVERRIDE``) runs over HTTP against it.

Every request body is checked against the SDK's own REST models (``opik.rest_api``): a field the
model does not know, or a value it refuses, is answered 422 and recorded in ``invalid``; a path it
does not serve is answered 404 and recorded in ``unexpected``. What is written is kept, so a test
reads it back through the SDK. ``fail_next(method, pattern, status)`` makes requests fail;
``ignore_cursor`` makes trace and span searches ignore their cursor (``id <`` filters and
``last_retrieved_id``: every page is the first), ``check_answers=False`` leaves the check of trace
and span reads against the SDK's models out (benches), ``stored_offset`` adds a number to every feedback
score value kept (a server that keeps another value than the one sent, the reason unchanged).
Experiments are seeded from the local store, shaped as ``opik.evaluate`` leaves them on a server:
a dataset item per distinct input, an experiment item per item with its feedback scores, and one
span per metric whose output holds the ScoreResults (metadata included).

Beyond the SDK's models the server applies the backend's own rules (tests/opik_server_rules.py, each
with the Opik source it comes from): every body is read as the backend's JSON mapper reads it (a
body it cannot read is a 400 recorded in ``invalid``), BigDecimal fields are rounded as it rounds
them, a feedback-score batch with one bad score is refused whole. It serves what the SDK's
background streamer sends (trace and span batches and updates, trace and span feedback-score
batches), so ``opik.evaluate`` and ``client.trace(...)`` run against it without the in-memory
emulator; an experiment item reads its trace's input, output and feedback scores, as the real
server joins them. Trace and span searches apply the filters of Opik's query language and page
newest first below ``last_retrieved_id``, as the backend's stream does (rules.check_filters).
"""
from __future__ import annotations

import bisect
import functools
import gzip
import json
import re
import threading
import typing
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pydantic
from opik.api_objects import opik_client
from opik.id_helpers import generate_id
from opik.rest_api.spans.types.span_search_stream_request_public_exclude_item import \
    SpanSearchStreamRequestPublicExcludeItem
from opik.rest_api.traces.types.trace_search_stream_request_public_exclude_item import \
    TraceSearchStreamRequestPublicExcludeItem
from opik.rest_api.types.dashboard_page_public import DashboardPagePublic
from opik.rest_api.types.dashboard_public import DashboardPublic
from opik.rest_api.types.dashboard_update_public import DashboardUpdatePublic
from opik.rest_api.types.dashboard_write import DashboardWrite
from opik.rest_api.types.dataset import Dataset
from opik.rest_api.types.dataset_item import DatasetItem
from opik.rest_api.types.dataset_item_batch import DatasetItemBatch
from opik.rest_api.types.dataset_item_page_compare import DatasetItemPageCompare
from opik.rest_api.types.dataset_item_page_public import DatasetItemPagePublic
from opik.rest_api.types.dataset_item_public import DatasetItemPublic
from opik.rest_api.types.dataset_public import DatasetPublic
from opik.rest_api.types.dataset_version_page_public import DatasetVersionPagePublic
from opik.rest_api.types.experiment import Experiment
from opik.rest_api.types.experiment_item import ExperimentItem
from opik.rest_api.types.experiment_public import ExperimentPublic
from opik.rest_api.types.experiment_score import ExperimentScore
from opik.rest_api.types.experiment_update import ExperimentUpdate
from opik.rest_api.types.feedback_score_batch_item import FeedbackScoreBatchItem
from opik.rest_api.types.feedback_score_batch_item_thread import FeedbackScoreBatchItemThread
from opik.rest_api.types.project_detailed import ProjectDetailed
from opik.rest_api.types.project_public import ProjectPublic
from opik.rest_api.types.span_public import SpanPublic
from opik.rest_api.types.span_update import SpanUpdate
from opik.rest_api.types.span_write import SpanWrite
from opik.rest_api.types.trace_public import TracePublic
from opik.rest_api.types.trace_thread import TraceThread
from opik.rest_api.types.trace_update import TraceUpdate
from opik.rest_api.types.trace_write import TraceWrite
from opik.rest_api.types.workspace_name_holder import WorkspaceNameHolder

from tests import opik_server_rules as rules

_NOW = "2026-11-25T00:00:00Z"


@functools.cache
def _known_fields(model: type[pydantic.BaseModel]) -> frozenset[str]:
    return frozenset({f.alias or name for name, f in model.model_fields.items()} | set(model.model_fields))


def check_body(model: type[pydantic.BaseModel], body: Any) -> None:
    """Raise ValueError unless ``body`` is an object of ``model`` with no field it does not know."""
    if not isinstance(body, dict):
        raise ValueError(f"{model.__name__}: expected a JSON object, got {type(body).__name__}")
    unknown = set(body) - _known_fields(model)
    if unknown:
        raise ValueError(f"{model.__name__}: unknown fields {sorted(unknown)}")
    try:
        model.model_validate(body)
    except pydantic.ValidationError as exc:
        raise ValueError(f"{model.__name__}: {exc}") from None


def _public(model: type[pydantic.BaseModel], data: dict) -> dict:
    """``data`` as the server would answer it: checked against the SDK's response model."""
    check_body(model, data)
    return data


_TRACE_EXCLUDE = typing.get_args(typing.get_args(TraceSearchStreamRequestPublicExcludeItem)[0])
_SPAN_EXCLUDE = typing.get_args(typing.get_args(SpanSearchStreamRequestPublicExcludeItem)[0])
_DEFAULT_PROJECT_ID = "01a20000-0000-7000-8000-000000000001"


def _object(body: Any, what: str) -> dict:
    """``body`` when it is a JSON object (what Jackson maps onto a record), else a 400."""
    if not isinstance(body, dict):
        raise rules.Refused(f"Unable to process JSON. {what}: expected a JSON object", rules.BAD_REQUEST)
    return body


def _check_keys(body: Any, allowed: set[str], what: str) -> dict:
    """``body`` an object with no key outside ``allowed`` (a request the SDK has no model for)."""
    _object(body, what)
    unknown = set(body) - allowed
    if unknown:
        raise ValueError(f"{what}: unknown fields {sorted(unknown)}")
    return body


class OpikRestServer:
    """The state and the HTTP server; ``url`` is the API base (what OPIK_URL_OVERRIDE holds)."""

    def __init__(self, check_answers: bool = True) -> None:
        self.check_answers = check_answers                      # off: reads skip the check of their answers
        self.lock = threading.Lock()
        self.projects: dict[str, dict] = {}
        self.experiments: dict[str, dict] = {}
        self.datasets: dict[str, dict] = {}
        self.dataset_items: dict[str, list[dict]] = {}
        self.experiment_items: dict[str, list[dict]] = {}
        self.traces: dict[str, dict] = {}
        self._sorted_traces: list[dict] | None = None
        self.thread_models: dict[tuple, str] = {}               # (project, thread id) -> thread model id
        self.spans: dict[str, list[dict]] = {}                  # trace id -> its spans
        self.feedback_scores: dict[tuple[str, str], dict[str, dict]] = {}   # (trace|span, id) -> name -> score
        self.authored: dict[tuple[str, str], dict[str, dict[str, dict]]] = {}   # ... -> name -> author -> score
        self.users: dict[str, str] = {}                         # API key -> the user it authenticates
        self._request = threading.local()                       # the user of the request being answered
        self.dashboards: dict[str, dict] = {}
        self.attachments: list[dict] = []                       # each: its upload-start fields and data
        self.requests: list[tuple[str, str, Any]] = []
        self.invalid: list[str] = []
        self.unexpected: list[str] = []
        self._failures: list[tuple[str, re.Pattern, int]] = []
        self.ignore_cursor = False                              # searches serve the first page every time
        self.stored_offset = 0.0                                # added to every feedback score value kept
        self.project(rules.DEFAULT_PROJECT, _DEFAULT_PROJECT_ID)
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/api"

    def __enter__(self) -> "OpikRestServer":
        # The SDK keeps one global client (opik.evaluate, @track): one left by an earlier test would
        # send to that test's server. Cleared here, the next one reads the URL the test sets.
        opik_client.reset_global_client()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        opik_client.reset_global_client()        # ends it: what it still holds reaches this server
        self._http.shutdown()
        self._http.server_close()

    def fail_next(self, method: str, pattern: str, status: int, times: int = 1) -> None:
        """Answer the next ``times`` ``method`` requests whose path matches ``pattern`` with ``status``
        (the SDK tries a 429 or 5xx three times, about 11 s in all: ``times=3`` fails it for good)."""
        self._failures.extend([(method, re.compile(pattern), status)] * times)

    def heal(self) -> None:
        """Answer every request again."""
        self._failures.clear()

    def writes(self) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if r[0] in ("POST", "PATCH", "PUT", "DELETE")
                and not r[1].endswith(("/stream", "/retrieve", "/search"))]

    # ---- seeding ------------------------------------------------------------------------

    def project(self, name: str, project_id: str | None = None) -> dict:
        """Project ``name``, created when it is not there (as the backend's getOrCreate does)."""
        if name not in self.projects:
            self.projects[name] = {"id": project_id or generate_id(), "name": name, "created_at": _NOW}
        return self.projects[name]

    def add_dataset(self, name: str, rows: list[dict]) -> str:
        """A dataset of ``rows`` (each an item's data)."""
        dataset_id = generate_id()
        self.datasets[dataset_id] = {"id": dataset_id, "name": name, "created_at": _NOW}
        self.dataset_items[dataset_id] = [{"id": generate_id(), "data": row, "source": "sdk"} for row in rows]
        return dataset_id

    def add_experiment(self, name: str, dataset: str, config: dict, experiment_scores: dict[str, float],
                       items: list[dict]) -> str:
        """An experiment on ``dataset``; each item: ``input``, ``output``, ``scores`` (list of
        ScoreResult dicts) and ``metrics`` (score name -> metric name). Stored as the backend keeps
        what ``opik.evaluate`` sends (a trace per item holding its input, output and feedback
        scores; numbers rounded); a value the backend would have refused raises ValueError."""
        dataset_id = next((i for i, d in self.datasets.items() if d["name"] == dataset), None)
        if dataset_id is None:
            dataset_id = generate_id()
            self.datasets[dataset_id] = {"id": dataset_id, "name": dataset, "created_at": _NOW}
            self.dataset_items[dataset_id] = []
        experiment_id = generate_id()
        scores = rules.check_experiment_scores([{"name": k, "value": v} for k, v in experiment_scores.items()])
        self.experiments[experiment_id] = {
            "id": experiment_id, "name": name, "dataset_name": dataset, "dataset_id": dataset_id,
            "project_name": rules.DEFAULT_PROJECT, "metadata": config, "status": "completed", "created_at": _NOW,
            "experiment_scores": scores}
        self.experiment_items[experiment_id] = []
        for item in items:
            dataset_item = next((d for d in self.dataset_items[dataset_id] if d["data"] == item["input"]), None)
            if dataset_item is None:
                dataset_item = {"id": generate_id(), "data": item["input"], "source": "sdk"}
                self.dataset_items[dataset_id].append(dataset_item)
            trace_id = generate_id()
            self.traces[trace_id] = {"id": trace_id, "project_name": rules.DEFAULT_PROJECT, "name": "evaluation_task",
                                     "start_time": _NOW, "input": rules.json_node(item["input"]),
                                     "output": rules.json_node(item["output"])}
            batch = rules.check_feedback_score_batch(
                [{"id": trace_id, "name": s["name"], "value": s["value"], "reason": s.get("reason"),
                  "source": "sdk"} for s in item["scores"]]) if item["scores"] else []
            self._store_scores("trace", batch)
            self.experiment_items[experiment_id].append({
                "id": generate_id(), "experiment_id": experiment_id, "dataset_item_id": dataset_item["id"],
                "trace_id": trace_id})
            by_metric: dict[str, list] = {}
            for s in item["scores"]:
                by_metric.setdefault(item["metrics"][s["name"]], []).append(s)
            self.spans[trace_id] = [{"id": generate_id(), "trace_id": trace_id, "project_name": rules.DEFAULT_PROJECT,
                                     "name": metric, "type": "general", "start_time": _NOW,
                                     "output": rules.json_node({"output": results})}
                                    for metric, results in by_metric.items()]
        return experiment_id

    def experiment_named(self, name: str) -> dict:
        return next(e for e in self.experiments.values() if e["name"] == name)

    def trace_scores(self, trace_id: str) -> dict[str, float]:
        """The feedback scores stored for trace ``trace_id``: name -> value."""
        return {n: s["value"] for n, s in self.feedback_scores.get(("trace", trace_id), {}).items()}

    # ---- answering ----------------------------------------------------------------------

    def answer_raw(self, method: str, path: str, query: dict, raw: bytes) -> tuple[int, Any, bool]:
        """``answer`` for a body as it came: read by the backend's JSON rules first (a body they
        cannot read is refused whole, 400, before any route sees it)."""
        if method == "PUT" and path.removeprefix("/api") == "/v1/private/attachment/upload":
            return self.answer(method, path, query, raw)         # a file's bytes, not JSON
        try:
            body = rules.parse_json(raw) if raw else None
        except rules.Refused as exc:
            with self.lock:
                self.requests.append((method, path, raw.decode("utf-8", "replace")))
                self.invalid.append(f"{method} {path}: {exc}")
            return exc.status, {"errors": [str(exc)]}, False
        return self.answer(method, path, query, body)

    def answer(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any, bool]:
        """(status, JSON body, whether the body is a stream of JSON lines)."""
        with self.lock:
            self.requests.append((method, path, body))
            for k, (m, pattern, status) in enumerate(self._failures):
                if m == method and pattern.search(path):
                    del self._failures[k]
                    return status, {"errors": [f"injected HTTP {status}"]}, False
            try:
                return self._route(method, path, query, body)
            except ValueError as exc:           # rules.Refused carries its status; the rest is 422
                self.invalid.append(f"{method} {path}: {exc}")
                return getattr(exc, "status", 422), {"errors": [str(exc)]}, False

    def _route(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any, bool]:
        p = path.removeprefix("/api")
        if p == "/is-alive/ping":
            return 200, {"healthy": True}, False
        if method == "GET" and p == "/is-alive/ver":
            return 200, {"version": "2.2.122"}, False
        if method == "POST" and p == "/v1/private/projects/retrieve":
            if not set(body or {}) <= {"name", "includeStats"}:
                raise ValueError(f"projects/retrieve: unknown fields {sorted(set(body) - {'name', 'includeStats'})}")
            project = self.projects.get(body.get("name"))
            if project is None:
                return 404, {"errors": ["Project not found"]}, False
            return 200, _public(ProjectDetailed, {"id": project["id"], "name": project["name"]}), False
        match = re.fullmatch(r"/v1/private/projects/([0-9a-f-]{36})", p)
        if method == "GET" and match:           # opik.evaluate_experiment asks a trace's project by id
            project = next((pr for pr in self.projects.values() if pr["id"] == match.group(1)), None)
            if project is None:
                return 404, {"errors": ["Project not found"]}, False
            return 200, _public(ProjectPublic, {"id": project["id"], "name": project["name"]}), False
        if method == "GET" and p == "/v1/private/auth/workspace":
            return 200, _public(WorkspaceNameHolder, {"workspace_name": "default"}), False
        routed = self._route_tracing(method, p, query, body)
        if routed is not None:
            return routed
        if method == "POST" and p == "/v1/private/experiments/finish":
            if set(body or {}) != {"ids"} or not all(i in self.experiments for i in body["ids"]):
                raise ValueError("expected {'ids': [experiment ids]}")
            for i in body["ids"]:
                self.experiments[i]["status"] = "completed"
            return 204, None, False
        if method == "POST" and p == "/v1/private/experiments/stream":
            name = (body or {}).get("name") or ""
            found = [e for e in self.experiments.values() if name.lower() in e["name"].lower()]
            for experiment in found:            # the FIND query reads every matching experiment
                rules.check_experiment_readable(experiment)
            return 200, self._page([self._experiment_public(e) for e in found], body), True
        if method == "POST" and p == "/v1/private/experiments":
            scores = rules.check_experiment_scores(_object(body, "Experiment")
                                                   .get("experiment_scores"))
            check_body(Experiment, body)
            dataset_id = next(i for i, d in self.datasets.items() if d["name"] == body["dataset_name"])
            experiment = {k: v for k, v in body.items() if v is not None}
            experiment.update(id=body.get("id") or generate_id(), dataset_id=dataset_id, created_at=_NOW,
                              project_name=body.get("project_name") or rules.DEFAULT_PROJECT)
            if scores is not None:
                experiment["experiment_scores"] = scores
            self.project(experiment["project_name"])
            self.experiments[experiment["id"]] = experiment
            self.experiment_items[experiment["id"]] = []
            return 201, None, False
        if method == "POST" and p == "/v1/private/experiments/items":
            rows = (body or {}).get("experiment_items")
            if set(body or {}) != {"experiment_items"} or not isinstance(rows, list):
                raise ValueError("expected {'experiment_items': [...]}")
            for row in rows:
                check_body(ExperimentItem, row)
            for row in rows:
                self.experiment_items[row["experiment_id"]].append(dict(row))
            return 204, None, False
        if method == "POST" and p == "/v1/private/datasets/items/stream":
            found = [i for i, d in self.datasets.items() if d["name"] == (body or {}).get("dataset_name")]
            rows = [_public(DatasetItemPublic, {**row, "dataset_id": found[0]}) for row in self.dataset_items[found[0]]] \
                if found else []
            return 200, self._page(rows, {"limit": (body or {}).get("steam_limit"), **(body or {})}), True
        match = re.fullmatch(r"/v1/private/experiments/([^/]+)", p)
        if match and match.group(1) in self.experiments:
            experiment = self.experiments[match.group(1)]
            if method == "GET":
                rules.check_experiment_readable(experiment)
                return 200, self._experiment_public(experiment), False
            if method == "PATCH":
                scores = rules.check_experiment_scores(_object(body, "ExperimentUpdate")
                                                       .get("experiment_scores"))
                check_body(ExperimentUpdate, body)
                for score in body.get("experiment_scores") or []:
                    check_body(ExperimentScore, score)
                if "metadata" in body:
                    experiment["metadata"] = body["metadata"]
                if scores is not None:
                    experiment["experiment_scores"] = scores
                return 204, None, False
        if method == "POST" and p == "/v1/private/datasets":
            check_body(Dataset, body)
            if any(d["name"] == body["name"] for d in self.datasets.values()):
                return 409, {"errors": ["a dataset of that name exists"]}, False
            dataset_id = body.get("id") or generate_id()
            self.datasets[dataset_id] = {"id": dataset_id, "name": body["name"], "created_at": _NOW}
            self.dataset_items[dataset_id] = []
            return 201, None, False
        if method == "PUT" and p == "/v1/private/datasets/items":
            check_body(DatasetItemBatch, body)
            found = [i for i, d in self.datasets.items()
                     if i == body.get("dataset_id") or d["name"] == body.get("dataset_name")]
            if not found:
                return 404, {"errors": ["dataset not found"]}, False
            rows = self.dataset_items[found[0]]
            for item in body["items"]:
                check_body(DatasetItem, item)
                if not any(r["data"] == item["data"] for r in rows):      # Opik keeps one row per content
                    rows.append({"id": item.get("id") or generate_id(), "data": item["data"],
                                 "source": item.get("source", "sdk")})
            return 204, None, False
        if method == "POST" and p == "/v1/private/datasets/retrieve":
            found = [d for d in self.datasets.values() if d["name"] == (body or {}).get("dataset_name")]
            if not found:
                return 404, {"errors": ["dataset not found"]}, False
            return 200, _public(DatasetPublic, found[0]), False
        match = re.fullmatch(r"/v1/private/datasets/([^/]+)", p)
        if method == "GET" and match and match.group(1) in self.datasets:
            return 200, _public(DatasetPublic, self.datasets[match.group(1)]), False
        match = re.fullmatch(r"/v1/private/datasets/([^/]+)/items", p)
        if method == "GET" and match and match.group(1) in self.datasets:
            rows = [{**r, "dataset_id": match.group(1)} for r in self.dataset_items[match.group(1)]]
            return 200, _public(DatasetItemPagePublic, _numbered_page(rows, query)), False
        match = re.fullmatch(r"/v1/private/datasets/([^/]+)/versions", p)
        if method == "GET" and match and match.group(1) in self.datasets:    # unversioned datasets only
            return 200, _public(DatasetVersionPagePublic, {"page": 1, "size": 0, "total": 0, "content": []}), False
        match = re.fullmatch(r"/v1/private/datasets/([^/]+)/items/experiments/items", p)
        if method == "GET" and match:
            return 200, self._compare_page(match.group(1), query), False
        if p == "/v1/private/dashboards":
            if method == "GET":
                name = (query.get("name") or [""])[0]
                found = [d for d in self.dashboards.values() if name.lower() in d["name"].lower()]
                return 200, _public(DashboardPagePublic, _numbered_page(found, query)), False
            if method == "POST":
                check_body(DashboardWrite, body)
                rules.check_dashboard(body)
                board = {k: v for k, v in body.items() if v is not None and k != "project_name"}
                project_name = rules.dashboard_project(body)
                if project_name is not None:
                    board["project_id"] = self.project(project_name)["id"]
                board.update(id=generate_id(), created_at=_NOW, last_updated_at=_NOW,
                             scope="workspace" if not body.get("project_name") else "project")
                self.dashboards[board["id"]] = board
                return 201, _public(DashboardPublic, board), False
        match = re.fullmatch(r"/v1/private/dashboards/([^/]+)", p)
        if match and match.group(1) in self.dashboards:
            board = self.dashboards[match.group(1)]
            if method == "GET":
                return 200, _public(DashboardPublic, board), False
            if method == "PATCH":
                check_body(DashboardUpdatePublic, body)
                rules.check_dashboard(body, update=True)
                board.update({k: v for k, v in body.items() if v is not None})
                return 200, _public(DashboardPublic, board), False
        self.unexpected.append(f"{method} {path}")
        return 404, {"errors": [f"not served here: {method} {path}"]}, False

    # ---- traces, spans and their feedback scores ----------------------------------------

    def _route_tracing(self, method: str, p: str, query: dict, body: Any) -> tuple[int, Any, bool] | None:
        """What the SDK's background streamer sends, and the reads of it; None: not a tracing path."""
        if method == "POST" and p == "/v1/private/attachment/upload-start":
            fields = {"file_name", "num_of_file_parts", "mime_type", "project_name", "entity_type", "entity_id", "path"}
            _check_keys(body, fields, "attachment/upload-start")
            for name in ("file_name", "entity_type", "entity_id"):
                rules.not_blank(body.get(name), name)
            # The backend without S3 answers the magic upload id "BEMinIO" and one URL of its own, to
            # which the SDK PUTs the file (opik/file_upload/upload_client.py).
            ticket = {k: body[k] for k in ("file_name", "entity_type", "entity_id", "mime_type", "project_name")
                      if body.get(k) is not None}
            return 200, {"upload_id": "BEMinIO",
                         "pre_sign_urls": [f"{self.url}/v1/private/attachment/upload?{urlencode(ticket)}"]}, False
        if method == "PUT" and p == "/v1/private/attachment/upload":
            ticket = {k: v[0] for k, v in query.items()}
            if not {"file_name", "entity_type", "entity_id"} <= set(ticket):
                raise ValueError("attachment/upload: not a URL this server gave (file_name, entity_type, entity_id)")
            self.attachments = [a for a in self.attachments if (a["entity_type"], a["entity_id"], a["file_name"])
                                != (ticket["entity_type"], ticket["entity_id"], ticket["file_name"])]
            self.attachments.append({**ticket, "data": body or b""})
            return 204, None, False
        if method == "POST" and p in ("/v1/private/traces/batch", "/v1/private/spans/batch"):
            key = "traces" if "traces" in p else "spans"
            _check_keys(body, {key}, f"{key} batch")
            rows = rules.check_batch(body.get(key), key)
            for row in rows:
                check_body(TraceWrite if key == "traces" else SpanWrite, row)
            for row in rows:
                self._write(key, row)
            return 204, None, False
        if method == "POST" and p in ("/v1/private/traces", "/v1/private/spans"):
            key = "traces" if p.endswith("traces") else "spans"
            rules.check_trace_or_span(body, key[:-1], span=key == "spans")
            check_body(TraceWrite if key == "traces" else SpanWrite, body)
            self._write(key, body)
            return 201, None, False
        match = re.fullmatch(r"/v1/private/(traces|spans)/([0-9a-f-]{36})", p)
        if match and method == "PATCH":
            key, entity_id = match.groups()
            if isinstance(body, dict) and key == "spans" and body.get("total_estimated_cost") is not None:
                rules.big_decimal(body["total_estimated_cost"], "total_estimated_cost")
            check_body(TraceUpdate if key == "traces" else SpanUpdate, body)
            rules.null_or_not_blank(body.get("project_name"), "project_name")
            self._write(key, {**body, "id": entity_id}, update=True)
            return 204, None, False
        if method == "PUT" and p in ("/v1/private/traces/feedback-scores", "/v1/private/spans/feedback-scores"):
            _check_keys(body, {"scores"}, "feedback scores batch")
            scores = rules.check_feedback_score_batch(body.get("scores"))
            for score in scores:
                check_body(FeedbackScoreBatchItem, score)
            self._store_scores("trace" if "/traces/" in p else "span", scores)
            return 204, None, False
        if match and method == "GET" and match.group(1) == "traces":
            trace = self.traces.get(match.group(2))
            if trace is None or "start_time" not in trace:
                return 404, {"errors": ["Trace not found"]}, False
            return 200, self._trace_public(trace), False
        if method == "POST" and p == "/v1/private/traces/search":
            _check_keys(body, {"project_name", "project_id", "filters", "last_retrieved_id", "limit", "truncate",
                               "strip_attachments", "exclude", "from_time", "to_time"}, "traces/search")
            filters = rules.check_filters(body.get("filters"), "traces")
            limit = rules.search_limit(body.get("limit"))
            project = self._project_of_request(body)
            rows = self._searched(self._traces_newest_first(), lambda t: "start_time" in t and
                                  t.get("project_name") == project, "trace", filters, body.get("last_retrieved_id"),
                                  limit)
            exclude = rules.check_exclude(body.get("exclude"), _TRACE_EXCLUDE, "traces/search")
            return 200, [self._trace_public(t, exclude) for t in rows], True
        if method == "POST" and p == "/v1/private/traces/threads/search":
            _check_keys(body, {"project_name", "project_id", "filters", "last_retrieved_thread_model_id", "limit",
                               "truncate", "strip_attachments", "from_time", "to_time"}, "traces/threads/search")
            if body.get("last_retrieved_thread_model_id") is not None:
                self.unexpected.append(f"{method} {p} with a cursor (not served here)")
                return 404, {"errors": ["thread search cursors are not served here"]}, False
            filters = rules.check_filters(body.get("filters"), "threads")
            limit = rules.search_limit(body.get("limit"))
            project = self._project_of_request(body)
            threads = [t for t in self._threads(project)
                       if rules.matches(t, self.feedback_scores.get(("thread", t["id"]), {}), filters)]
            return 200, [self._thread_public(t) for t in threads[:limit]], True
        if method == "PUT" and p == "/v1/private/traces/threads/feedback-scores":
            _check_keys(body, {"scores"}, "thread feedback scores batch")
            for score in body.get("scores") or []:
                check_body(FeedbackScoreBatchItemThread, score)
            self._store_scores("thread", rules.check_thread_feedback_score_batch(body.get("scores")))
            return 204, None, False
        if method == "POST" and p == "/v1/private/spans/search":
            _check_keys(body, {"trace_id", "project_name", "project_id", "type", "filters", "limit",
                               "last_retrieved_id", "truncate", "exclude", "from_time", "to_time"}, "spans/search")
            filters = rules.check_filters(body.get("filters"), "spans")
            limit = rules.search_limit(body.get("limit"))
            project = self._project_of_request(body)
            candidates = (self.spans.get(body["trace_id"], []) if body.get("trace_id")
                          else [s for spans in self.spans.values() for s in spans])
            rows = self._searched(sorted(candidates, key=lambda s: s["id"], reverse=True),
                                  lambda s: "start_time" in s and s.get("project_name", rules.DEFAULT_PROJECT) == project,
                                  "span", filters, body.get("last_retrieved_id"), limit)
            exclude = rules.check_exclude(body.get("exclude"), _SPAN_EXCLUDE, "spans/search")
            return 200, [self._span_public(s, exclude) for s in rows], True
        return None

    def _project_of_request(self, body: dict) -> str | None:
        """The project a search names (by name or id; without either the backend answers 400)."""
        if body.get("project_name"):
            return body["project_name"]
        if body.get("project_id"):
            return next((n for n, pr in self.projects.items() if pr["id"] == body["project_id"]), None)
        raise rules.Refused("Either 'project_name' or 'project_id' must be provided", rules.BAD_REQUEST)

    def _write(self, key: str, row: dict, update: bool = False) -> None:
        """A trace or span created or updated (an update may come first: both are kept and merged)."""
        stored = {k: (rules.json_node(v) if k in ("input", "output", "metadata") else v)
                  for k, v in row.items() if v is not None and k not in ("tags_to_add", "tags_to_remove")}
        if update and (row.get("tags_to_add") or row.get("tags_to_remove")):
            before = self.traces.get(row["id"], {}) if key == "traces" else \
                next((s for s in self.spans.get(row["trace_id"], []) if s["id"] == row["id"]), {})
            tags = set(stored.get("tags", before.get("tags", []))) | set(row.get("tags_to_add") or [])
            stored["tags"] = sorted(tags - set(row.get("tags_to_remove") or []))
        if key == "spans" and "total_estimated_cost" in stored:
            stored["total_estimated_cost"] = rules.big_decimal(stored["total_estimated_cost"], "total_estimated_cost")
        if not update or stored.get("project_name"):
            stored["project_name"] = row.get("project_name") or rules.DEFAULT_PROJECT
            self.project(stored["project_name"])
        if key == "traces":
            self.traces.setdefault(stored["id"], {}).update(stored)
            return
        spans = self.spans.setdefault(stored["trace_id"], [])
        existing = next((s for s in spans if s["id"] == stored["id"]), None)
        if existing is None:
            spans.append(stored)
        else:
            existing.update(stored)

    def _store_scores(self, entity: str, scores: list[dict]) -> None:
        """A checked batch kept: one score per entity, name and author (the author's later one
        replaces it); reads see each name's authors folded together (rules.folded_score)."""
        author = getattr(self._request, "author", rules.DEFAULT_AUTHOR)
        now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
        for score in scores:
            self.project(score.get("project_name") or rules.DEFAULT_PROJECT)
            kept = {k: v for k, v in score.items() if v is not None and k not in ("id", "project_name", "project_id")}
            kept["last_updated_at"] = now
            if self.stored_offset and isinstance(kept.get("value"), (int, float)):
                kept["value"] = kept["value"] + self.stored_offset
            by_author = self.authored.setdefault((entity, score["id"]), {}).setdefault(score["name"], {})
            by_author[author] = kept
            self.feedback_scores.setdefault((entity, score["id"]), {})[score["name"]] = rules.folded_score(by_author)

    def _scores_of(self, entity: str, entity_id: str) -> list[dict]:
        return list(self.feedback_scores.get((entity, entity_id), {}).values())

    def _trace_public(self, trace: dict, exclude: Any = None) -> dict:
        """A trace as a read answers it, without the fields ``exclude`` names (a search's)."""
        row = {k: v for k, v in trace.items() if k not in ("project_name",)}
        row["project_id"] = self.projects[trace["project_name"]]["id"] if trace.get("project_name") else None
        row["feedback_scores"] = self._scores_of("trace", trace["id"]) or None
        row["span_count"] = len(self.spans.get(trace["id"], []))
        return _excluding(self._answer(TracePublic, {k: v for k, v in row.items() if v is not None}), exclude)

    def _span_public(self, span: dict, exclude: Any = None) -> dict:
        row = {k: v for k, v in span.items() if k != "project_name"}
        if span.get("project_name") in self.projects:
            row["project_id"] = self.projects[span["project_name"]]["id"]
        scores = self._scores_of("span", span["id"])
        if scores:
            row["feedback_scores"] = scores
        return _excluding(self._answer(SpanPublic, row), exclude)

    def _answer(self, model: type[pydantic.BaseModel], row: dict) -> dict:
        """A trace or span as read: checked against the SDK's model unless ``check_answers`` is off
        (that check of the stand-in itself is most of a search's time; benches timing a client turn
        it off, as no real server spends it)."""
        return _public(model, row) if self.check_answers else row

    def _experiment_public(self, experiment: dict) -> dict:
        """An experiment as the FIND query reads it: its traces' feedback scores averaged by name."""
        totals: dict[str, list[float]] = {}
        items = self.experiment_items.get(experiment["id"], [])
        for item in items:
            for score in self._scores_of("trace", item["trace_id"]):
                totals.setdefault(score["name"], []).append(score["value"])
        row = dict(experiment)
        if totals:
            row["feedback_scores"] = [{"name": n, "value": sum(v) / len(v)} for n, v in totals.items()]
        row["trace_count"] = len({i["trace_id"] for i in items if i["trace_id"] in self.traces})
        return _public(ExperimentPublic, row)

    def _threads(self, project: str | None) -> list[dict]:
        """The project's threads made from its traces, newest thread model first: first_message the
        first trace's input, last_message the last trace's output (by start time)."""
        grouped: dict[str, list[dict]] = {}
        for trace in self.traces.values():
            if trace.get("thread_id") and "start_time" in trace and trace.get("project_name") == project:
                grouped.setdefault(trace["thread_id"], []).append(trace)
        threads = []
        for thread_id, traces in grouped.items():
            traces.sort(key=lambda t: (t["start_time"], t["id"]))
            model_id = self.thread_models.setdefault((project, thread_id), generate_id())
            threads.append({"id": thread_id, "thread_model_id": model_id, "project_name": project,
                            "start_time": traces[0]["start_time"], "end_time": traces[-1].get("end_time"),
                            "first_message": traces[0].get("input"), "last_message": traces[-1].get("output"),
                            "number_of_messages": 2 * len(traces)})
        return sorted(threads, key=lambda t: t["thread_model_id"], reverse=True)

    def _thread_public(self, thread: dict) -> dict:
        row = {k: v for k, v in thread.items() if k != "project_name" and v is not None}
        row["project_id"] = self.projects[thread["project_name"]]["id"]
        scores = self._scores_of("thread", thread["id"])
        if scores:
            row["feedback_scores"] = scores
        return _public(TraceThread, row)

    def _traces_newest_first(self) -> list[dict]:
        """Every trace by id, newest first; sorted again only when traces were added since."""
        if self._sorted_traces is None or len(self._sorted_traces) != len(self.traces):
            self._sorted_traces = sorted(self.traces.values(), key=lambda t: t["id"], reverse=True)
        return self._sorted_traces

    def _searched(self, newest_first: list[dict], wanted: Any, entity: str, filters: list[dict], last: Any,
                  limit: int) -> list[dict]:
        """A search stream's page (``rules.search_page``): below the cursor, rows that are ``wanted``
        (the project's) and pass ``filters``, at most ``limit``."""
        if self.ignore_cursor:
            last = None
            filters = [f for f in filters if not (f.get("field") == "id" and f.get("operator") == "<")]
        # The first row below the cursor and below every ``id <`` filter (those compare lowercased
        # ids, and an ASCII id, as every UUID, is never above its lowercase, so every row skipped
        # fails them); the filters are still applied to each row served.
        bounds = [str(last)] if last is not None else []
        bounds += [str(f.get("value") or "").lower() for f in filters if f.get("field") == "id" and f.get("operator") == "<"]
        start = max((_first_below(newest_first, bound) for bound in bounds), default=0)
        page: list[dict] = []
        for row in newest_first[start:]:
            if len(page) == limit:
                break
            if wanted(row) and (not filters or rules.matches(row, self.feedback_scores.get((entity, row["id"]), {}),
                                                             filters)):
                page.append(row)
        return rules.search_page(page, last, limit)

    def _page(self, rows: list[dict], body: Any) -> list[dict]:
        """A streamed read: after ``last_retrieved_id``, at most ``limit`` rows."""
        body = body or {}
        last = body.get("last_retrieved_id")
        if last is not None:
            ids = [r["id"] for r in rows]
            rows = rows[ids.index(last) + 1:] if last in ids else []
        return rows[: body.get("limit") or len(rows)]

    def _compare_page(self, dataset_id: str, query: dict) -> dict:
        """Dataset items with their experiment items, each joined to its trace (input, output and
        feedback scores), as the backend's compare query joins them."""
        experiment_ids = json.loads((query.get("experiment_ids") or ["[]"])[0])
        rows = []
        for dataset_item in self.dataset_items.get(dataset_id, []):
            items = [self._joined(i) for e in experiment_ids for i in self.experiment_items.get(e, [])
                     if i["dataset_item_id"] == dataset_item["id"]]
            if items:
                rows.append({**dataset_item, "data": dict(dataset_item["data"]), "experiment_items": items})
        return _public(DatasetItemPageCompare, _numbered_page(rows, query))

    def _joined(self, item: dict) -> dict:
        trace = self.traces.get(item["trace_id"], {})
        joined = {**item, "input": trace.get("input"), "output": trace.get("output"),
                  "feedback_scores": self._scores_of("trace", item["trace_id"])}
        return {k: v for k, v in joined.items() if v is not None}


def _first_below(newest_first: list[dict], bound: str) -> int:
    """The index of the first row (ids descending) whose id is below ``bound``."""
    return bisect.bisect_left(newest_first, True, key=lambda row: row["id"] < bound)


def _excluding(row: dict, exclude: Any) -> dict:
    """A searched row without the fields the request's ``exclude`` names (the id always stays), as
    TraceSearchStreamRequest's / SpanSearchStreamRequest's ``exclude`` leaves them out."""
    return {k: v for k, v in row.items() if k == "id" or k not in exclude} if exclude else row


def _numbered_page(rows: list[dict], query: dict) -> dict:
    """Page ``page`` of ``size`` rows (query parameters), as Opik's paged answers hold it."""
    page = int((query.get("page") or ["1"])[0])
    size = int((query.get("size") or ["100"])[0])
    content = rows[(page - 1) * size: page * size]
    return {"page": page, "size": len(content), "total": len(rows), "content": content}


def _handler(server: OpikRestServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":   # a file streamed by the SDK
                raw = self._chunked()
            else:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding") == "gzip":      # the SDK gzips larger JSON bodies
                raw = gzip.decompress(raw)
            key = self.headers.get("Authorization")
            server._request.author = server.users.get(key, rules.DEFAULT_AUTHOR) if key else rules.DEFAULT_AUTHOR
            status, answer, stream = server.answer_raw(self.command, parts.path, parse_qs(parts.query), raw)
            if answer is None:
                data = b""
            elif stream:
                data = "".join(json.dumps(row) + "\n" for row in answer).encode()
            else:
                data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream" if stream else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _chunked(self) -> bytes:
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():         # trailers, then the blank line
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()                           # the CRLF after each chunk

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler

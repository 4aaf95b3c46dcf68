"""An Opik REST API on 127.0.0.1 for the endpoints that reading and publishing a comparison call,
so that Opik's real SDK (``OPIK_URL_OVERRIDE``) runs over HTTP against it.

Every request body is checked against the SDK's own REST models (``opik.rest_api``): a field the
model does not know, or a value it refuses, is answered 422 and recorded in ``invalid``; a path it
does not serve is answered 404 and recorded in ``unexpected``. What is written is kept, so a test
reads it back through the SDK. ``fail_next(method, pattern, status)`` makes requests fail.
Experiments are seeded from the local store, shaped as ``opik.evaluate`` leaves them on a server:
a dataset item per distinct input, an experiment item per item with its feedback scores, and one
span per metric whose output holds the ScoreResults (metadata included).
"""
from __future__ import annotations

import gzip
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pydantic
from opik.id_helpers import generate_id
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
from opik.rest_api.types.project_detailed import ProjectDetailed
from opik.rest_api.types.span_public import SpanPublic
from opik.rest_api.types.workspace_name_holder import WorkspaceNameHolder

_NOW = "2026-11-25T00:00:00Z"


def _known_fields(model: type[pydantic.BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()} | set(model.model_fields)


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


class OpikRestServer:
    """The state and the HTTP server; ``url`` is the API base (what OPIK_URL_OVERRIDE holds)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.experiments: dict[str, dict] = {}
        self.datasets: dict[str, dict] = {}
        self.dataset_items: dict[str, list[dict]] = {}
        self.experiment_items: dict[str, list[dict]] = {}
        self.spans: dict[str, list[dict]] = {}
        self.dashboards: dict[str, dict] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.invalid: list[str] = []
        self.unexpected: list[str] = []
        self._failures: list[tuple[str, re.Pattern, int]] = []
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/api"

    def __enter__(self) -> "OpikRestServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
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
                and not r[1].endswith(("/stream", "/retrieve", "/spans/search"))]

    # ---- seeding ------------------------------------------------------------------------

    def add_dataset(self, name: str, rows: list[dict]) -> str:
        """A dataset of ``rows`` (each an item's data)."""
        dataset_id = generate_id()
        self.datasets[dataset_id] = {"id": dataset_id, "name": name, "created_at": _NOW}
        self.dataset_items[dataset_id] = [{"id": generate_id(), "data": row, "source": "sdk"} for row in rows]
        return dataset_id

    def add_experiment(self, name: str, dataset: str, config: dict, experiment_scores: dict[str, float],
                       items: list[dict]) -> str:
        """An experiment on ``dataset``; each item: ``input``, ``output``, ``scores`` (list of
        ScoreResult dicts) and ``metrics`` (score name -> metric name)."""
        dataset_id = next((i for i, d in self.datasets.items() if d["name"] == dataset), None)
        if dataset_id is None:
            dataset_id = generate_id()
            self.datasets[dataset_id] = {"id": dataset_id, "name": dataset, "created_at": _NOW}
            self.dataset_items[dataset_id] = []
        experiment_id = generate_id()
        self.experiments[experiment_id] = {
            "id": experiment_id, "name": name, "dataset_name": dataset, "dataset_id": dataset_id,
            "project_name": "Default Project", "metadata": config, "status": "completed", "created_at": _NOW,
            "experiment_scores": [{"name": k, "value": v} for k, v in experiment_scores.items()]}
        self.experiment_items[experiment_id] = []
        for item in items:
            dataset_item = next((d for d in self.dataset_items[dataset_id] if d["data"] == item["input"]), None)
            if dataset_item is None:
                dataset_item = {"id": generate_id(), "data": item["input"], "source": "sdk"}
                self.dataset_items[dataset_id].append(dataset_item)
            trace_id = generate_id()
            self.experiment_items[experiment_id].append({
                "id": generate_id(), "experiment_id": experiment_id, "dataset_item_id": dataset_item["id"],
                "trace_id": trace_id, "input": item["input"], "output": item["output"],
                "feedback_scores": [{"name": s["name"], "value": s["value"], "reason": s.get("reason"),
                                     "source": "sdk"} for s in item["scores"]]})
            by_metric: dict[str, list] = {}
            for s in item["scores"]:
                by_metric.setdefault(item["metrics"][s["name"]], []).append(s)
            self.spans[trace_id] = [{"id": generate_id(), "trace_id": trace_id, "name": metric,
                                     "type": "general", "start_time": _NOW, "output": {"output": results}}
                                    for metric, results in by_metric.items()]
        return experiment_id

    def experiment_named(self, name: str) -> dict:
        return next(e for e in self.experiments.values() if e["name"] == name)

    # ---- answering ----------------------------------------------------------------------

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
            except ValueError as exc:
                self.invalid.append(f"{method} {path}: {exc}")
                return 422, {"errors": [str(exc)]}, False

    def _route(self, method: str, path: str, query: dict, body: Any) -> tuple[int, Any, bool]:
        p = path.removeprefix("/api")
        if p == "/is-alive/ping":
            return 200, {"healthy": True}, False
        if method == "GET" and p == "/is-alive/ver":
            return 200, {"version": "2.2.122"}, False
        if method == "POST" and p == "/v1/private/projects/retrieve":
            if not set(body or {}) <= {"name", "includeStats"}:
                raise ValueError(f"projects/retrieve: unknown fields {sorted(set(body) - {'name', 'includeStats'})}")
            return 200, _public(ProjectDetailed, {"id": "01a20000-0000-7000-8000-000000000001", "name": body["name"]}), False
        if method == "GET" and p == "/v1/private/auth/workspace":
            return 200, _public(WorkspaceNameHolder, {"workspace_name": "default"}), False
        if method == "POST" and p == "/v1/private/experiments/finish":
            if set(body or {}) != {"ids"} or not all(i in self.experiments for i in body["ids"]):
                raise ValueError("expected {'ids': [experiment ids]}")
            for i in body["ids"]:
                self.experiments[i]["status"] = "completed"
            return 204, None, False
        if method == "POST" and p == "/v1/private/experiments/stream":
            name = (body or {}).get("name") or ""
            found = [_public(ExperimentPublic, e) for e in self.experiments.values()
                     if name.lower() in e["name"].lower()]
            return 200, self._page(found, body), True
        if method == "POST" and p == "/v1/private/experiments":
            check_body(Experiment, body)
            dataset_id = next(i for i, d in self.datasets.items() if d["name"] == body["dataset_name"])
            experiment = {k: v for k, v in body.items() if v is not None}
            experiment.update(id=body.get("id") or generate_id(), dataset_id=dataset_id, created_at=_NOW,
                              project_name=body.get("project_name") or "Default Project")
            self.experiments[experiment["id"]] = experiment
            self.experiment_items[experiment["id"]] = []
            return 201, None, False
        if method == "POST" and p == "/v1/private/experiments/items":
            rows = (body or {}).get("experiment_items")
            if set(body or {}) != {"experiment_items"} or not isinstance(rows, list):
                raise ValueError("expected {'experiment_items': [...]}")
            for row in rows:
                check_body(ExperimentItem, row)
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
                return 200, _public(ExperimentPublic, experiment), False
            if method == "PATCH":
                check_body(ExperimentUpdate, body)
                for score in body.get("experiment_scores") or []:
                    check_body(ExperimentScore, score)
                if "metadata" in body:
                    experiment["metadata"] = body["metadata"]
                if "experiment_scores" in body:
                    experiment["experiment_scores"] = list(body["experiment_scores"])
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
        if method == "POST" and p == "/v1/private/spans/search":
            spans = [_public(SpanPublic, s) for s in self.spans.get((body or {}).get("trace_id"), [])]
            return 200, self._page(spans, body), True
        if p == "/v1/private/dashboards":
            if method == "GET":
                name = (query.get("name") or [""])[0]
                found = [d for d in self.dashboards.values() if name.lower() in d["name"].lower()]
                return 200, _public(DashboardPagePublic, _numbered_page(found, query)), False
            if method == "POST":
                check_body(DashboardWrite, body)
                board = {k: v for k, v in body.items() if v is not None and k != "project_name"}
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
                board.update({k: v for k, v in body.items() if v is not None})
                return 200, _public(DashboardPublic, board), False
        self.unexpected.append(f"{method} {path}")
        return 404, {"errors": [f"not served here: {method} {path}"]}, False

    def _page(self, rows: list[dict], body: Any) -> list[dict]:
        """A streamed read: after ``last_retrieved_id``, at most ``limit`` rows."""
        body = body or {}
        last = body.get("last_retrieved_id")
        if last is not None:
            ids = [r["id"] for r in rows]
            rows = rows[ids.index(last) + 1:] if last in ids else []
        return rows[: body.get("limit") or len(rows)]

    def _compare_page(self, dataset_id: str, query: dict) -> dict:
        experiment_ids = json.loads((query.get("experiment_ids") or ["[]"])[0])
        rows = []
        for dataset_item in self.dataset_items.get(dataset_id, []):
            items = [i for e in experiment_ids for i in self.experiment_items.get(e, [])
                     if i["dataset_item_id"] == dataset_item["id"]]
            if items:
                rows.append({**dataset_item, "data": dict(dataset_item["data"]), "experiment_items": items})
        return _public(DatasetItemPageCompare, _numbered_page(rows, query))


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
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding") == "gzip":      # the SDK gzips larger JSON bodies
                raw = gzip.decompress(raw)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            status, answer, stream = server.answer(self.command, parts.path, parse_qs(parts.query), body)
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

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler

"""Opik servers that misbehave, stood in on 127.0.0.1: a healthy ping but 401/404/500 on the API
(one line naming the server and the status, not Opik's REST traceback), a health check answered
slowly or byte by byte (its 3 s deadline holds in total), and the litellm import that Opik does
lazily in its scoring threads (done once, before they start)."""
import ast
import inspect
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from opik_metrics.experiments import opik_runner, opik_server
from opik_metrics.experiments.opik_server import OpikServerError, OpikServerUnavailable, api_failure, check_server

HEALTHY = json.dumps({"healthy": True}).encode()


class _FakeOpik(BaseHTTPRequestHandler):
    """``/api/is-alive/ping`` as set in ``server.ping``: "ok", "drip-body" (one byte each 0.3 s),
    "drip-head" (the status line and headers byte by byte) or "late" (after 2 s). Any other path
    answers ``server.status`` with an Opik-style error body."""

    protocol_version = "HTTP/1.0"

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        server = self.server
        try:
            if not self.path.endswith("/is-alive/ping"):
                body = json.dumps({"errors": [f"fault {server.status}"]}).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            head = (f"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(HEALTHY)}\r\n\r\n").encode()
            if server.ping == "late" and server.stop.wait(2.0):
                return
            if server.ping == "drip-head":
                for byte in head:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    if server.stop.wait(0.2):
                        return
            else:
                self.wfile.write(head)
            if server.ping == "drip-body":
                for byte in HEALTHY:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    if server.stop.wait(0.3):
                        return
            else:
                self.wfile.write(HEALTHY)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_opik():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpik)
    httpd.daemon_threads = True
    httpd.stop, httpd.ping, httpd.status = threading.Event(), "ok", 401
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}/api"
    httpd.stop.set()
    httpd.shutdown()
    httpd.server_close()


def _within(call, limit_s):
    """(exception raised by ``call()`` or None, seconds); fails if it is still running after ``limit_s``."""
    box = {"error": None}

    def run():
        start = time.monotonic()
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc
        box["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"still running after {limit_s} s"
    return box["error"], box["seconds"]


# ---- the health check's deadline ------------------------------------------------------------

@pytest.mark.parametrize("ping", ["drip-body", "drip-head", "late"])
def test_health_check_deadline_holds_in_total(fake_opik, ping):
    httpd, url = fake_opik
    httpd.ping = ping
    error, seconds = _within(lambda: check_server(url, timeout=1.0), 4.0)
    assert isinstance(error, OpikServerUnavailable) and f"Opik server at {url} did not answer within 1 s" in str(error)
    assert seconds <= 1.0 + 0.3


def test_a_prompt_healthy_ping_still_passes(fake_opik):
    _, url = fake_opik
    error, seconds = _within(lambda: check_server(url, timeout=1.0), 4.0)
    assert error is None and seconds < 1.0


# ---- an API that refuses: one line ---------------------------------------------------------

@pytest.fixture
def stored_experiment(tmp_path):
    from opik_metrics import BLEU
    from opik_metrics.experiments.runner import run_experiment
    from tests.experiments.toy import ITEMS, EchoTask

    path = tmp_path / "store.sqlite"
    run_experiment("toy", ITEMS, EchoTask(), [BLEU()], dataset_name="toy-data", store=path, progress=False)
    return path


@pytest.mark.parametrize("status, words", [(401, "Unauthorized (fault 401); check the API key"),
                                           (404, "Not Found (fault 404); the server answers its health check "
                                                 "but not this API")])
def test_push_to_an_api_that_refuses_is_one_line(fake_opik, stored_experiment, monkeypatch, capsys, status, words):
    from opik.api_objects import opik_client

    from opik_metrics.cli.main import main

    httpd, url = fake_opik
    httpd.status = status
    monkeypatch.setenv("OPIK_URL_OVERRIDE", url)
    monkeypatch.setattr(opik_server, "_opik_config", lambda: SimpleNamespace(
        url_override=url, model_fields_set={"url_override"}, api_key=None, config_file_exists=False))
    opik_client.reset_global_client()
    try:
        start = time.monotonic()
        code = main(["experiments", "push", "toy", "--store", str(stored_experiment), "--no-progress"])
        seconds = time.monotonic() - start
    finally:
        opik_client.reset_global_client()
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("opik-metrics: error:")]
    assert code == 2 and "Traceback" not in err and len(lines) == 1, err
    assert f"Opik server at {url} refused the dataset 'toy-data'" in lines[0]
    assert f"HTTP {status} {words}" in lines[0]
    assert seconds < 5


def test_server_errors_are_one_line_for_5xx_and_broken_connections():
    import httpx
    from opik.rest_api.core.api_error import ApiError

    error = api_failure(ApiError(status_code=500, headers={}, body={"errors": ["boom\n  at line 3"]}),
                        "http://opik.local/api", "creating the experiment 'x'")
    assert isinstance(error, OpikServerError) and isinstance(error, OpikServerUnavailable)
    assert str(error) == ("Opik server at http://opik.local/api refused creating the experiment 'x': "
                          "HTTP 500 Internal Server Error (boom at line 3); the server failed; see its logs "
                          "and run the command again")
    assert error.status == 500
    broken = api_failure(httpx.ConnectError("refused"), "http://opik.local/api", "pushing")
    assert "stopped answering while pushing: ConnectError" in str(broken) and "\n" not in str(broken)
    assert api_failure(httpx.ConnectError("refused"), None, "x", transport=False) is None
    assert api_failure(KeyError("not ours"), None, "x") is None


# ---- Opik's lazy litellm import, done before the scoring threads -----------------------------

def test_preloaded_names_cover_opiks_lazy_imports_on_the_scoring_path():
    from opik.evaluation.engine import exception_analyzer

    tree = ast.parse(inspect.getsource(exception_analyzer))
    lazy = {alias.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
            for node in ast.walk(fn) if isinstance(node, ast.Import) for alias in node.names}
    lazy |= {node.module for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
             for node in ast.walk(fn) if isinstance(node, ast.ImportFrom) and node.module}
    assert "litellm.exceptions" in lazy
    assert lazy <= set(opik_runner.LAZY_IMPORTS)


def test_run_on_opik_imports_them_before_opik_evaluate(monkeypatch):
    events = []

    def recording_import(name, *args, **kwargs):   # records only: litellm's real import takes seconds
        events.append(("import", name, os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP")))
        return SimpleNamespace(__name__=name)

    def fake_evaluate(**kwargs):
        events.append(("evaluate",))
        return SimpleNamespace(test_results=[], experiment_scores=[], experiment_url="http://opik.local/x")

    class Dataset:
        name = "d"

        def insert(self, rows):
            self.rows = rows

        def get_items(self):
            return [{"id": str(k), **row} for k, row in enumerate(self.rows)]

    client = SimpleNamespace(get_or_create_dataset=lambda name: Dataset())
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    monkeypatch.setattr(opik_runner.importlib, "import_module", recording_import)
    monkeypatch.setattr(opik_runner.opik, "evaluate", fake_evaluate)
    opik_runner.run_on_opik("x", [{"q": 1}], lambda item: {"output": ""}, [], dataset_name="d", config={},
                            scorers=[], client=client, progress=False)
    assert events[-1] == ("evaluate",)
    assert ("import", "litellm.exceptions", "True") in events[:-1]
    assert ("import", "openai", "True") in events[:-1]

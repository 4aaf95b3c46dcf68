"""Opik servers on 127.0.0.1 that answer their health check and then fail (issue 40, item 7): they
stop answering, answer JSON of another shape, a 200 that is not JSON, a 500, or trickle an answer
in byte by byte. ``opik_metrics.evaluate`` and ``compare --opik`` / ``--publish`` end in one line
naming the server and the step, within ``OPIK_METRICS_SERVER_TIMEOUT`` (plus the SDK's own retries
where it retries), not Opik's 100 s read timeout tried three times nor a REST traceback.

The faults are played by the REST stand-in of tests/opik_rest_server.py, whose handler is swapped for
one that first looks up ``faults`` (method, path pattern, how)."""
from __future__ import annotations

import re
import threading
import time

import pytest

from opik_metrics import BLEU, evaluate
from opik_metrics.cli.main import main
from opik_metrics.experiments import opik_server
from opik_metrics.experiments.opik_server import OpikServerError, OpikServerUnavailable, server_timeout
from tests.compare.opik_seed import seed_from_store
from tests.compare.systems import store_with
from tests.opik_rest_server import OpikRestServer
from tests.pipelines.caption_fixtures import caption_tsv, image_server, one_thread, tiny_blip  # noqa: F401

ITEMS = [{"input": "A dog runs along the beach.", "reference": "a dog running on the beach"},
         {"input": "Two cats asleep on a sofa.", "reference": "two cats sleeping on a couch"}]
REFS = ["the dog runs on the beach", "the cat sleeps on the sofa", "the bus stops on the road",
        "the man rides a bike", "the boat sails on the sea", "the kid plays on the grass"]
GOOD = [r.replace("the ", "a ", 1) for r in REFS]
POOR = [" ".join(r.split()[:2]) for r in REFS]
SOME_JSON_OF_ANOTHER_SHAPE = b'["not", "what", "opik", "answers"]'


def task(item):
    return {"output": item["input"].lower().rstrip(".")}


class FaultyServer(OpikRestServer):
    """The REST stand-in, with ``fault(method, pattern, how)``: every matching request is answered
    ``how``: "silent" (reads the request, never answers), "not-json" (200, an HTML page),
    "wrong-shape" (200, a JSON array where Opik answers an object), "drip" (200 with a long body,
    one byte each 0.2 s) or "no-id" (experiments/stream: an experiment without its id)."""

    def __init__(self) -> None:
        super().__init__()
        self.faults: list[tuple[str, re.Pattern, str]] = []
        self.stop = threading.Event()
        base = self._http.RequestHandlerClass
        server = self

        class Faulty(base):  # type: ignore[valid-type, misc]
            def _serve(self) -> None:
                how = next((h for m, p, h in server.faults if m == self.command and p.search(self.path)), None)
                if how is None:
                    return super()._serve()
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    self._chunked()
                else:
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if how == "silent":
                    server.stop.wait(60)
                    self.close_connection = True
                    return None
                body = {"not-json": b"<html><body>Welcome to the proxy</body></html>",
                        "wrong-shape": SOME_JSON_OF_ANOTHER_SHAPE,
                        "drip": b'{"id": "0193", "name": "poor", "dataset_name": "shared"' + b" " * 10_000 + b"}\n",
                        "no-id": b'{"name": "poor", "dataset_name": "shared"}\n{"name": "good", '
                                 b'"dataset_name": "shared"}\n'}[how]
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if how == "not-json" else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if how == "drip":
                        for byte in body:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            if server.stop.wait(0.2):
                                break
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                return None

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        self._http.RequestHandlerClass = Faulty

    def fault(self, method: str, pattern: str, how: str) -> None:
        self.faults.append((method, re.compile(pattern), how))

    def __exit__(self, *exc) -> None:
        self.stop.set()
        super().__exit__(*exc)


@pytest.fixture
def server(monkeypatch):
    with FaultyServer() as srv:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", srv.url)
        monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", "1")
        yield srv


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    return store_with(tmp_path_factory.mktemp("faults") / "store.sqlite", REFS, {"poor": POOR, "good": GOOD},
                      metrics=[BLEU()])


def _one_line(capsys, *args):
    """(exit code, the one error line, seconds) of the CLI; fails on a traceback or several lines."""
    start = time.monotonic()
    code = main(list(args))
    seconds = time.monotonic() - start
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("opik-metrics: error:")]
    assert "Traceback" not in err and len(lines) == 1, err
    return code, lines[0], seconds


# ---- the setting -----------------------------------------------------------------------------

def test_the_timeout_is_30_s_unless_set_and_a_bad_setting_is_one_line(monkeypatch):
    monkeypatch.delenv("OPIK_METRICS_SERVER_TIMEOUT", raising=False)
    assert server_timeout() == 30.0
    monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", "4.5")
    assert server_timeout() == 4.5
    for bad in ("soon", "0", "-3", "inf", "nan"):
        monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", bad)
        with pytest.raises(OpikServerUnavailable, match="OPIK_METRICS_SERVER_TIMEOUT must be a number of seconds"):
            server_timeout()


def test_opik_clients_built_after_the_hook_wait_the_configured_time(monkeypatch):
    from opik.hooks import httpx_client_hook

    monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", "7")
    opik_server.use_server_timeout()
    opik_server.use_server_timeout()                 # once is enough; a second call changes nothing
    timeout = httpx_client_hook.build_init_arguments({"timeout": None})["timeout"]
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (7.0, 7.0, 7.0, 7.0)
    monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", "2")          # read when each client is built
    assert httpx_client_hook.build_init_arguments({})["timeout"].read == 2.0


# ---- opik_metrics.evaluate --------------------------------------------------------------------

def test_evaluate_against_a_server_that_falls_silent_after_its_health_check(server):
    server.fault("POST", "/v1/private/", "silent")
    server.fault("PUT", "/v1/private/", "silent")
    server.fault("GET", "/v1/private/", "silent")
    start = time.monotonic()
    with pytest.raises(OpikServerError) as raised:
        evaluate(dataset=ITEMS, task=task, scoring_metrics=[BLEU()], experiment_name="x", verbose=0)
    seconds = time.monotonic() - start
    message = str(raised.value)
    assert "\n" not in message and f"Opik server at {server.url}" in message
    assert "did not answer within 1 s (OPIK_METRICS_SERVER_TIMEOUT) while the dataset 'dataset'" in message
    assert "run the command again once the server answers" in message
    # Opik's SDK tries a request that times out 3 times, 5-6 s apart: 3 x 1 s + about 11 s
    assert seconds < 3 * 1 + 12 + 8, seconds


def test_evaluate_against_a_server_answering_json_of_another_shape(server):
    for method in ("GET", "POST", "PUT", "PATCH"):
        server.fault(method, "/v1/private/", "wrong-shape")
    start = time.monotonic()
    with pytest.raises(OpikServerError) as raised:
        evaluate(dataset=ITEMS, task=task, scoring_metrics=[BLEU()], experiment_name="x", verbose=0)
    message = str(raised.value)
    assert "\n" not in message and f"Opik server at {server.url} answered the dataset 'dataset'" in message
    assert "with JSON of another shape than Opik's API gives" in message
    assert "server's version matches the opik package" in message
    assert time.monotonic() - start < 10


# ---- compare --opik and --publish --------------------------------------------------------------

@pytest.fixture
def seeded(server, store_path):
    seed_from_store(server, store_path, ["poor", "good"])
    return server


def test_compare_against_a_server_that_falls_silent_ends_within_the_timeout(seeded, capsys, tmp_path):
    seeded.fault("POST", "/v1/private/", "silent")
    code, line, seconds = _one_line(capsys, "compare", "poor", "good", "--opik", "-o", str(tmp_path))
    assert code == 2 and f"Opik server at {seeded.url}" in line
    assert "within 1 s (OPIK_METRICS_SERVER_TIMEOUT) while searching for experiment 'poor' (experiments/stream)" \
        in line
    assert seconds < 1 + 3, seconds


def test_compare_against_a_dripping_experiments_stream(seeded, capsys, tmp_path):
    seeded.fault("POST", "/experiments/stream", "drip")
    code, line, seconds = _one_line(capsys, "compare", "poor", "good", "--opik", "-o", str(tmp_path))
    assert code == 2 and f"Opik server at {seeded.url} did not finish answering within 1 s" in line
    assert "searching for experiment 'poor' (experiments/stream)" in line
    assert seconds < 1 + 3, seconds


def test_compare_against_a_compare_view_that_is_not_json(seeded, capsys, tmp_path):
    seeded.fault("GET", "/items/experiments/items", "not-json")
    code, line, _ = _one_line(capsys, "compare", "poor", "good", "--opik", "-o", str(tmp_path))
    assert code == 2 and f"Opik server at {seeded.url} answered reading the items of experiment 'poor'" in line
    assert "HTTP 200 but a body that is not JSON ('<html><body>Welcome to the proxy</body></html>')" in line


def test_compare_against_a_500_on_spans_search(seeded, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("OPIK_METRICS_SERVER_TIMEOUT", "30")          # the SDK's retries take 11 s
    seeded.fail_next("POST", "/spans/search", 500, times=3)
    code, line, _ = _one_line(capsys, "compare", "poor", "good", "--opik", "-o", str(tmp_path))
    assert code == 2 and f"Opik server at {seeded.url} refused reading the metric spans of experiment 'poor'" \
        in line and "(spans/search): HTTP 500 Internal Server Error (injected HTTP 500)" in line


def test_publish_when_the_search_gives_experiments_without_an_id(seeded, capsys):
    seeded.fault("POST", "/experiments/stream", "no-id")
    code, line, _ = _one_line(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code == 2 and f"Opik server at {seeded.url} answered the search for experiment 'poor'" in line
    assert "with an experiment without an id" in line
    assert not any("/experiments/None" in path for _, path, _ in seeded.requests)
    assert seeded.writes() == []


def test_errors_of_a_users_own_code_keep_their_own_exception():
    import httpx
    import pydantic

    from opik_metrics.experiments.opik_server import answer_failure

    assert answer_failure(httpx.ReadTimeout("the user's LLM API"), "http://opik.local/api", "x",
                          transport=False) is None
    try:
        pydantic.TypeAdapter(int).validate_python("not a number")
    except pydantic.ValidationError as exc:
        assert answer_failure(exc, "http://opik.local/api", "x") is None
    assert "did not answer within" in str(answer_failure(httpx.ReadTimeout("silent"), "http://opik.local/api", "x"))


def test_publish_when_an_experiment_read_is_not_json(seeded, capsys):
    seeded.fault("GET", r"/v1/private/experiments/[^/]+$", "not-json")
    code, line, _ = _one_line(capsys, "compare", "poor", "good", "--opik", "--publish")
    assert code == 2 and f"Opik server at {seeded.url} answered reading experiment 'poor' (GET experiments/" in line
    assert "HTTP 200 but a body that is not JSON" in line and seeded.writes() == []


# ---- experiments push ----------------------------------------------------------------------------

@pytest.fixture
def stored_toy(tmp_path):
    from opik_metrics.experiments.runner import run_experiment
    from tests.experiments.toy import ITEMS as TOY, EchoTask

    path = tmp_path / "store.sqlite"
    run_experiment("toy", TOY, EchoTask(), [BLEU()], dataset_name="toy-data", store=path, progress=False)
    return path


@pytest.mark.parametrize("how, words", [("wrong-shape", "with JSON of another shape than Opik's API gives"),
                                        ("silent", "did not answer within 1 s (OPIK_METRICS_SERVER_TIMEOUT)")])
def test_push_to_a_server_that_fails_after_its_health_check(server, stored_toy, capsys, how, words):
    for method in ("GET", "POST", "PUT", "PATCH"):
        server.fault(method, "/v1/private/", how)
    code, line, seconds = _one_line(capsys, "experiments", "push", "toy", "--store", str(stored_toy), "--no-progress")
    assert code == 2 and f"Opik server at {server.url}" in line and "the dataset 'toy-data'" in line
    assert words in line and "run the command again" in line
    assert seconds < 3 * 1 + 12 + 8, seconds


# ---- the caption pipeline ----------------------------------------------------------------------

def test_the_caption_pipeline_against_a_server_answering_json_of_another_shape(server, tmp_path, caption_tsv,  # noqa: F811
                                                                               tiny_blip, one_thread):  # noqa: F811
    from opik_metrics.images import ImageFetcher
    from opik_metrics.pipelines.captioning.captioner import BlipCaptioner
    from opik_metrics.pipelines.captioning.conceptual_captions import read_tsv
    from opik_metrics.pipelines.captioning.task import CaptionTask
    from opik_metrics.experiments.runner import run_experiment
    from tests.pipelines.caption_fixtures import FAST_GENERATION

    for method in ("GET", "POST", "PUT", "PATCH"):
        server.fault(method, "/v1/private/", "wrong-shape")
    task = CaptionTask(BlipCaptioner(str(tiny_blip), generation=FAST_GENERATION, batch_size=2),
                       ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0), progress=False)
    items = [row.as_item() for row in read_tsv(str(caption_tsv))][:2]
    with pytest.raises(OpikServerError) as raised:
        run_experiment("captions", items, task, [BLEU()], dataset_name="cc", backend="opik", progress=False)
    message = str(raised.value)
    assert "\n" not in message and f"Opik server at {server.url} answered the dataset 'cc'" in message
    assert "JSON of another shape than Opik's API gives" in message and "run the command again" in message

"""The writer thread (traces/writing.py): the body it sends is the SDK's own (serialised once,
``prepared_put``), requests go out in the order the pages were scored, a 409 counts as taken and a
refusal is left to the read-back, a lost server stops the run with one line (exit 2 from the
command line), and no writer thread outlives a run, whatever way it ends."""
from __future__ import annotations

import threading
import time

import httpx
import pytest

from opik_metrics import BLEU
from opik_metrics.cli.main import main
from opik_metrics.experiments.opik_server import OpikServerError
from opik_metrics.traces import score_traces
from opik_metrics.traces import writing
from opik_metrics.traces.prepared_put import json_put
from opik_metrics.traces.writing import ScoreWriter, sender
from tests.traces.conftest import PROJECT, log_project


def _writers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "opik-metrics-score-writer"]


def _put_bodies(server, entity: str = "traces") -> list[list[dict]]:
    return [body["scores"] for m, p, body in server.requests if m == "PUT" and p.endswith(f"/{entity}/feedback-scores")]


def _writers_left(seconds: float = 5) -> list[threading.Thread]:
    """The writer threads still there once none is, or ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while _writers() and time.monotonic() < deadline:
        time.sleep(0.01)
    return _writers()


def _failing_from_the_second(error: Exception, calls: list):
    """A ``json_put`` whose first request goes through and whose later ones raise ``error``, as
    the SDK's retry raises it once its tries are spent; each payload is appended to ``calls``."""
    def failing(rest_client, path):
        put = json_put(rest_client, path)

        def answer(payload):
            calls.append(payload)
            if len(calls) >= 2:
                raise error
            put(payload)
        return answer
    return failing


@pytest.mark.parametrize("entity", ["traces", "spans"])
def test_the_body_sent_is_the_one_the_sdk_sends(server, client, entity):
    trace = client.trace(name="t", project_name=PROJECT)
    span = trace.span(name="s")
    client.flush()
    target = trace.id if entity == "traces" else span.id
    scores = [{"id": target, "name": "bleu", "value": 0.25, "reason": "why"},
              {"id": target, "name": "rouge", "value": 1.0, "reason": None}]
    log = client.log_traces_feedback_scores if entity == "traces" else client.log_spans_feedback_scores
    log(scores=scores, project_name=PROJECT)
    client.flush()
    sender(client, entity, PROJECT)(scores)
    sdk, ours = _put_bodies(server, entity)
    assert ours == sdk and server.invalid == [] and server.unexpected == []
    assert all(s["source"] == "sdk" and s["project_name"] == PROJECT for s in ours)


def test_requests_follow_the_pages_and_the_values_are_the_metrics(server, client):
    logged = log_project(client)
    report = score_traces(PROJECT, [BLEU(track=False)], client=client, page_size=4, progress=False)
    assert report.complete and report.sent_scores == 17 and server.invalid == []
    ids = [s["id"] for body in _put_bodies(server) for s in body]
    assert len(ids) == 17 and ids == sorted(ids, reverse=True)          # newest first, page after page
    bleu = BLEU(track=False)
    for (_, trace_id), names in server.feedback_scores.items():
        t = logged[trace_id]
        expected = bleu.score(t["output"]["output"], t["metadata"]["reference"])[0].value
        assert names["bleu"]["value"] == pytest.approx(expected, abs=1e-9)
    assert _writers() == []


def test_a_409_is_taken_and_a_refusal_is_left_to_the_read_back(server, client, caplog):
    trace = client.trace(name="t", project_name=PROJECT)
    client.flush()
    send = sender(client, "traces", PROJECT)
    server.fail_next("PUT", r"/traces/feedback-scores$", 409)
    send([{"id": trace.id, "name": "bleu", "value": 0.5}])               # no error, nothing logged
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    server.fail_next("PUT", r"/traces/feedback-scores$", 422)
    send([{"id": trace.id, "name": "bleu", "value": 0.5}])
    assert any("refused a request of 1 trace feedback scores (HTTP 422" in r.getMessage() for r in caplog.records)


def test_a_writer_that_loses_the_server_stops_the_run_with_one_line(server, client, monkeypatch, capsys):
    log_project(client)
    calls: list = []
    monkeypatch.setattr(writing, "json_put",
                        _failing_from_the_second(httpx.ConnectError("[Errno 111] Connection refused"), calls))
    with pytest.raises(OpikServerError, match=r"stopped answering while scoring the traces of project 'captions': "
                                              r"ConnectError: \[Errno 111\] Connection refused"):
        score_traces(PROJECT, [BLEU(track=False)], client=client, page_size=4, progress=False)
    assert len(calls) == 2 and len(_put_bodies(server)) == 1          # the first page's scores, then it stopped
    assert _writers() == []

    import opik
    monkeypatch.setattr(opik, "Opik", lambda **kwargs: client)        # the command line's client: this one
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--page-size", "4", "--replace",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "ConnectError" in err and len(err.strip().splitlines()) == 1
    assert _writers() == []


def _request(k: int, n: int = 1) -> list[list[dict]]:
    return [[{"id": f"{k}-{j}", "k": k}] for j in range(n)]


def test_the_writer_sends_in_order_and_raises_its_failure_in_the_scoring_thread():
    sent: list[int] = []

    def send(request, stopping):
        time.sleep(0.005)
        if request[0]["k"] == 5:
            raise RuntimeError("refused for good")
        sent.append(request[0]["k"])

    with ScoreWriter(send, depth=2) as writer:
        assert sum(writer.put(_request(k)) for k in range(4)) == 4
        writer.wait()
        assert sent == [0, 1, 2, 3]
    sent.clear()
    with pytest.raises(RuntimeError, match="refused for good"):
        with ScoreWriter(send, depth=1) as writer:
            for k in range(4, 60):
                writer.put(_request(k))
    assert sent == [4] and _writers() == []               # nothing after the failure went out


def test_an_error_in_the_scoring_thread_sends_what_was_queued_and_ctrl_c_does_not_wait():
    sent: list[int] = []
    with pytest.raises(KeyError):
        with ScoreWriter(lambda r, stopping: sent.append(r[0]["k"])) as writer:
            writer.put(_request(7) + _request(8))
            raise KeyError("stop")
    assert sent == [7] and _writers() == []               # one request: both entities fit in it
    release = threading.Event()
    slow_sent: list[int] = []

    def slow(request, stopping):
        release.wait(10)
        slow_sent.append(request[0]["k"])

    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with ScoreWriter(slow, depth=4) as writer:
            for k in range(4):
                writer.put([[{"id": str(k), "k": k}] * 1000])
            raise KeyboardInterrupt
    assert time.monotonic() - start < 2                    # not waited for the request in flight
    release.set()
    assert _writers_left() == [] and len(slow_sent) <= 1        # the one in flight at most; the queued ones dropped


@pytest.fixture
def cloud_rate_limit(monkeypatch):
    """429s as Opik Cloud sends them: ``RateLimit-Reset`` (seconds), and ``Retry-After: 0`` so that
    the SDK's own three tries come at once."""
    import http.server

    plain = http.server.BaseHTTPRequestHandler.send_response

    def with_reset(self, code, message=None):
        plain(self, code, message)
        if code == 429:
            self.send_header("RateLimit-Reset", "1")
            self.send_header("Retry-After", "0")

    monkeypatch.setattr(http.server.BaseHTTPRequestHandler, "send_response", with_reset)


def test_a_rate_limited_request_is_sent_again_after_the_reset(server, client, cloud_rate_limit, caplog):
    trace = client.trace(name="t", project_name=PROJECT)
    client.flush()
    server.fail_next("PUT", r"/traces/feedback-scores$", 429, times=3)        # the SDK's three tries spent
    start = time.monotonic()
    sender(client, "traces", PROJECT)([{"id": trace.id, "name": "bleu", "value": 0.5, "reason": "r"}])
    assert server.trace_scores(trace.id) == {"bleu": 0.5} and time.monotonic() - start >= 1
    assert len(_put_bodies(server)) == 4 and not [r for r in caplog.records if r.levelname == "ERROR"]


def test_a_refused_key_stops_the_run(server, client):
    log_project(client)
    server.fail_next("PUT", r"/traces/feedback-scores$", 401)
    with pytest.raises(OpikServerError, match="401.*API key"):
        score_traces(PROJECT, [BLEU(track=False)], client=client, page_size=4, progress=False)
    assert _writers() == []


class _Client:
    rest_client = None


def test_each_score_keeps_its_own_project(monkeypatch):
    bodies = []
    monkeypatch.setattr(writing, "json_put", lambda rest_client, path: lambda payload: bodies.append(payload["scores"]))
    sender(_Client(), "traces", "default-project")([{"id": "a", "name": "s", "value": 1.0, "project_name": "other"},
                                                   {"id": "b", "name": "s", "value": 0.0}])
    assert [s["project_name"] for s in bodies[0]] == ["other", "default-project"]
    assert [sorted(s) for s in bodies[0]] == [sorted(["id", "name", "value", "reason", "source", "project_name",
                                                      "category_name"])] * 2


def test_scoring_stops_at_the_next_page_once_the_writer_failed():
    failed = threading.Event()

    def send(request, stopping):
        failed.set()
        raise RuntimeError("the server is gone")

    puts = 0
    with pytest.raises(RuntimeError, match="gone"):
        with ScoreWriter(send) as writer:
            writer.put(_request(0))
            failed.wait(5)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:       # each put a page scored after the failure
                puts += 1
                writer.put(_request(puts))
                time.sleep(0.01)
    assert 1 <= puts < 50 and _writers() == []


def test_a_429_without_a_readable_reset_is_left_to_the_read_back(monkeypatch, caplog):
    from opik.rest_api.core.api_error import ApiError

    def limited(payload):
        raise ApiError(status_code=429, headers={"RateLimit-Reset": "soon"}, body="slow down")

    monkeypatch.setattr(writing, "json_put", lambda rest_client, path: limited)
    sender(_Client(), "traces", "p")([{"id": "a", "name": "s", "value": 1.0}])
    assert any("HTTP 429" in r.getMessage() for r in caplog.records)


def test_ctrl_c_drops_a_request_waiting_out_the_rate_limit(monkeypatch):
    from opik.rest_api.core.api_error import ApiError

    tries: list[float] = []

    def limited(payload):
        tries.append(time.monotonic())
        raise ApiError(status_code=429, headers={"RateLimit-Reset": "2"}, body="slow down")

    monkeypatch.setattr(writing, "json_put", lambda rest_client, path: limited)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with ScoreWriter(sender(_Client(), "traces", "p")) as writer:
            writer.put([[{"id": "a", "name": "s", "value": 1.0}]])
            while not tries:
                time.sleep(0.01)
            raise KeyboardInterrupt
    assert _writers_left(1) == [] and time.monotonic() - start < 1.5     # not the 2 s reset
    time.sleep(2.5)
    assert len(tries) == 1                                          # never sent again after the run


def test_ctrl_c_while_draining_after_an_error_stops_the_writer():
    release = threading.Event()
    sent: list[int] = []

    def slow(request, stopping):
        release.wait(10)
        sent.append(request[0]["k"])

    def interrupted_join(timeout=None):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with ScoreWriter(slow, depth=4) as writer:
            for k in range(3):
                writer.put(_request(k))
            writer._thread.join = interrupted_join      # Ctrl-C arrives during the drain's wait
            raise KeyError("stop")
    release.set()
    assert _writers_left() == [] and len(sent) <= 1            # the one in flight at most; the queued ones dropped


@pytest.mark.parametrize("status", [500, 503])
def test_a_failing_server_after_the_retries_stops_the_run_with_one_line(server, client, monkeypatch, capsys, status):
    from opik.rest_api.core.api_error import ApiError

    log_project(client)
    calls: list = []
    monkeypatch.setattr(writing, "json_put", _failing_from_the_second(
        ApiError(status_code=status, headers={}, body="Service Unavailable"), calls))
    with pytest.raises(OpikServerError, match=str(status)):
        score_traces(PROJECT, [BLEU(track=False)], client=client, page_size=4, progress=False)
    assert len(calls) == 2 and len(_put_bodies(server)) == 1          # the first page's scores, then it stopped
    assert _writers() == []
    import opik
    monkeypatch.setattr(opik, "Opik", lambda **kwargs: client)
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--page-size", "4", "--replace",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and str(status) in err and len(err.strip().splitlines()) == 1, err
    assert _writers() == []

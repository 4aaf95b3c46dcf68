"""Choosing where results go: the local store when no server is configured; a configured server
that does not answer fails fast with a clear message; one that answers its health check is used."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from opik_metrics.experiments import opik_server
from opik_metrics.experiments.opik_server import OpikServerUnavailable, choose_backend, configured_by


def _config(url="http://127.0.0.1:9/api", fields=(), api_key=None, file_exists=False):
    return SimpleNamespace(url_override=url, model_fields_set=set(fields), api_key=api_key,
                           config_file_exists=file_exists, config_file_fullpath="/home/u/.opik.config")


@pytest.fixture
def ping_server():
    """A stand-in Opik health endpoint on 127.0.0.1 (answers until the test ends)."""
    answers = {"body": {"healthy": True}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps(answers["body"]).encode()
            self.send_response(200 if self.path.endswith("/is-alive/ping") else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/api/", answers
    httpd.shutdown()
    httpd.server_close()


def test_what_counts_as_configured():
    assert configured_by(_config()) is None
    assert "OPIK_URL_OVERRIDE" in configured_by(_config(fields={"url_override"}))
    assert "OPIK_API_KEY" in configured_by(_config(api_key="k"))
    assert ".opik.config" in configured_by(_config(file_exists=True))


def test_nothing_configured_means_the_local_store(monkeypatch):
    monkeypatch.setattr(opik_server, "_opik_config", lambda: _config())
    assert choose_backend("auto").kind == "local"
    assert choose_backend("local").kind == "local"


def test_configured_but_down_fails_fast_with_advice(monkeypatch):
    monkeypatch.setattr(opik_server, "_opik_config", lambda: _config(fields={"url_override"}))
    with pytest.raises(OpikServerUnavailable, match=r"http://127.0.0.1:9/api \(configured by OPIK_URL_OVERRIDE"
                       r".*not reachable.*pass backend=\"local\"") as raised:
        choose_backend("auto")          # a Python call: the advice is the Python argument, not a flag
    assert "--backend" not in str(raised.value)
    monkeypatch.setattr(opik_server, "_opik_config", lambda: _config())
    with pytest.raises(OpikServerUnavailable, match="not reachable") as raised:
        choose_backend("opik")          # asked for explicitly, nothing configured: the default URL is tried
    assert "no server is configured" in str(raised.value) and "configured by" not in str(raised.value)


@pytest.mark.parametrize("advice, says", [(opik_server.CLI_LOCAL_ADVICE, "or pass --backend local"),
                                          (opik_server.PUSH_ADVICE, "then push again"),
                                          (opik_server.PUBLISH_ADVICE, "then publish again")])
def test_the_advice_is_in_the_callers_words(monkeypatch, advice, says):
    monkeypatch.setattr(opik_server, "_opik_config", lambda: _config(fields={"url_override"}))
    with pytest.raises(OpikServerUnavailable) as raised:
        choose_backend("opik", local_advice=advice)
    message = str(raised.value)
    assert f"`opik configure`), {says}" in message and message.count("\n") == 0
    assert ("backend" in message) == (advice is opik_server.CLI_LOCAL_ADVICE)


def test_a_server_that_answers_is_used(monkeypatch, ping_server):
    url, answers = ping_server
    monkeypatch.setattr(opik_server, "_opik_config", lambda: _config(url=url, fields={"url_override"}))
    chosen = choose_backend("auto")
    assert (chosen.kind, chosen.url) == ("opik", url)
    answers["body"] = {"healthy": False}
    with pytest.raises(OpikServerUnavailable, match="instead of a healthy Opik backend"):
        choose_backend("opik")


def test_the_real_environment_in_tests_points_at_a_closed_port():
    # tests/conftest.py sets OPIK_URL_OVERRIDE to a closed port: asking for Opik must fail at once.
    with pytest.raises(OpikServerUnavailable, match="not reachable"):
        choose_backend("auto")

"""A hub model without a network: detected in seconds, not after transformers' ~30 s of retries
(issue 56, case 11). Every endpoint here is on 127.0.0.1: a closed port, a server that never
answers, a server that answers."""
from __future__ import annotations

import http.server
import shutil
import socket
import threading
import time

import pytest

from opik_metrics.neural.models import hub_access
from opik_metrics.neural.models.encoders import load_encoder
from opik_metrics.neural.models.hub_access import HubUnreachableError
from opik_metrics.neural.models.registry import ModelNotAvailableError, resolve_model


@pytest.fixture
def hub_online_mode(monkeypatch, tmp_path):
    """Offline mode off, an empty hub cache of its own, and no remembered probe."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(hub_access, "_probes", {})

    def point_at(endpoint: str) -> None:
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", endpoint)
    return point_at


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_server():
    """A socket that takes connections and never answers: a network that drops the replies."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


@pytest.fixture
def answering_server():
    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 - the http.server name
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_uncached_hub_model_with_the_hub_refusing_fails_at_once_naming_hf_hub_offline(hub_online_mode):
    hub_online_mode(f"http://127.0.0.1:{_closed_port()}")
    started = time.monotonic()
    with pytest.raises(HubUnreachableError) as caught:
        load_encoder("someone/not-cached-model", 2)
    assert time.monotonic() - started < 3
    message = str(caught.value)
    assert "'someone/not-cached-model'" in message and "HF_HUB_OFFLINE=1" in message
    assert "\n" not in message
    assert isinstance(caught.value, ModelNotAvailableError)      # the CLI's one-line exit 2


def test_a_hub_that_never_answers_is_given_up_within_the_probe_timeout(hub_online_mode, silent_server):
    hub_online_mode(silent_server)
    started = time.monotonic()
    with pytest.raises(HubUnreachableError, match="did not answer"):
        resolve_model("someone/not-cached-model")
    assert time.monotonic() - started < sum(hub_access.HUB_PROBE_TIMEOUT) + 2


def test_one_probe_serves_the_loads_of_one_run(hub_online_mode, silent_server):
    hub_online_mode(silent_server)
    with pytest.raises(HubUnreachableError):
        resolve_model("someone/first")
    started = time.monotonic()
    with pytest.raises(HubUnreachableError):
        resolve_model("someone/second")
    assert time.monotonic() - started < 0.5


def test_a_cached_model_loads_from_its_snapshot_when_the_hub_does_not_answer(hub_online_mode, tiny_bert,
                                                                            tmp_path):
    import huggingface_hub.constants

    hub_online_mode(f"http://127.0.0.1:{_closed_port()}")
    repo = tmp_path / "hub" / "models--someone--tiny-bert"
    snapshot = repo / "snapshots" / "0123abcd"
    shutil.copytree(tiny_bert, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    assert huggingface_hub.constants.HF_HUB_CACHE == str(tmp_path / "hub")

    resolved = resolve_model("someone/tiny-bert")
    assert resolved.source == str(snapshot) and resolved.hub_id == "someone/tiny-bert"
    assert resolved.kind == "hub"
    encoder = load_encoder("someone/tiny-bert", 2)
    assert encoder.num_layers == 2 and encoder.resolved.name == "someone/tiny-bert"


def test_a_hub_that_answers_gets_the_id_as_given(hub_online_mode, answering_server):
    hub_online_mode(answering_server)
    assert resolve_model("someone/any-model").source == "someone/any-model"


def test_offline_mode_asks_nothing(hub_online_mode, silent_server, monkeypatch):
    """With HF_HUB_OFFLINE=1 transformers reads only its cache: no probe, no wait."""
    hub_online_mode(silent_server)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    assert resolve_model("someone/any-model").source == "someone/any-model"
    assert time.monotonic() - started < 0.5


def test_transformers_offline_also_asks_nothing(hub_online_mode, silent_server, monkeypatch):
    hub_online_mode(silent_server)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    started = time.monotonic()
    assert resolve_model("someone/any-model").source == "someone/any-model"
    assert time.monotonic() - started < 0.5

"""What ``traces score`` checks before it scores, each a one-line usage error (exit 2) in its own
words: a project the server lacks, a window that selects nothing (``--since`` not before
``--until``, a reversed ``--compare-window``), no server (found before any metric or model loads);
a date of year 1 goes out zero-padded, as the server reads it."""
from __future__ import annotations

import json
import socket
import time

import pytest

from opik_metrics.cli import traces as traces_command
from opik_metrics.cli.main import main
from tests.traces.conftest import PROJECT, log_project


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_project_the_server_lacks_is_a_usage_error(server, client, capsys):
    log_project(client, 2)
    code = main(["traces", "score", "--project", "no-such-project", "-m", "bleu", "--no-progress"])
    err = _one_line(capsys)
    assert code == 2 and "project 'no-such-project' does not exist on the Opik server at" in err
    assert not any(p.endswith("/feedback-scores") for _, p, _ in server.requests)


@pytest.mark.parametrize("args, said", [
    (["--since", "2026-11-09", "--until", "2026-11-02"], "--since / --until: the start '2026-11-09' is not before"),
    (["--since", "2026-11-09", "--until", "2026-11-09"], "is not before the end '2026-11-09'"),
    (["--compare-window", "2026-11-09/2026-11-02"], "--compare-window 2026-11-09/2026-11-02: the start"),
])
def test_a_window_that_selects_nothing_is_a_usage_error(args, said, capsys):
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--no-progress", *args])
    err = _one_line(capsys)
    assert code == 2 and said in err


def test_a_date_of_year_one_is_sent_zero_padded(server, client, capsys):
    log_project(client, 3)
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--since", "0001-01-01", "--no-progress",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["selected"] == 3 and server.invalid == []
    searched = [f["value"] for m, p, body in server.requests if p.endswith("/traces/search")
                for f in body["filters"] if f["field"] == "start_time"]
    assert searched and all(v.startswith("0001-01-01T00:00:00") for v in searched)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_no_server_fails_before_any_metric_loads_in_its_own_words(monkeypatch, capsys):
    monkeypatch.setenv("OPIK_URL_OVERRIDE", f"http://127.0.0.1:{_closed_port()}/api")
    built = []
    monkeypatch.setattr(traces_command, "build_metrics", lambda *a, **k: built.append(a) or [])
    started = time.monotonic()
    code = main(["traces", "score", "--project", PROJECT, "-m", "bertscore", "--no-progress"])
    err = _one_line(capsys)
    assert code == 2 and built == [] and time.monotonic() - started < 20
    assert "is not reachable" in err and "run the same command again: nothing was read, scored or sent" in err
    assert "push" not in err and "local store" not in err


def test_score_traces_without_a_server_says_what_to_do_in_its_own_words(monkeypatch):
    from opik_metrics import BLEU
    from opik_metrics.experiments.opik_server import OpikServerUnavailable
    from opik_metrics.traces import score_traces

    monkeypatch.setenv("OPIK_URL_OVERRIDE", f"http://127.0.0.1:{_closed_port()}/api")
    with pytest.raises(OpikServerUnavailable) as failed:
        score_traces(PROJECT, [BLEU(track=False)], progress=False)
    assert "then run the same command again: nothing was read, scored or sent." in str(failed.value)
    assert "push" not in str(failed.value) and "local store" not in str(failed.value)

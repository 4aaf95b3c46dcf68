"""A server that does not page (it ignores the cursor and serves the first page again) stops
``traces score`` at once with one line and exit 2, for traces and for spans, and a read stops at
its page cap: no paging loop runs without end, no score is sent twice."""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from opik_metrics.cli.main import main
from opik_metrics.experiments.opik_server import OpikServerError
from opik_metrics.traces.reading import Selection, pages
from tests.traces.conftest import PROJECT, log_project


def _searches(server) -> int:
    return sum(1 for m, p, _ in server.requests if m == "POST" and p.endswith(("/traces/search", "/spans/search")))


def _sent(server, kind: str) -> Counter:
    return Counter((s["id"], s["name"]) for m, p, body in server.requests
                   if m == "PUT" and p.endswith(f"/{kind}/feedback-scores") for s in body["scores"])


def _cli(args: list[str], seconds: float = 60) -> tuple[int | None, float]:
    """``main(args)`` in a thread given ``seconds`` (a loop without end fails the test, not the run)."""
    outcome: dict[str, int] = {}
    started = time.monotonic()
    thread = threading.Thread(target=lambda: outcome.setdefault("code", main(args)), daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome.get("code"), time.monotonic() - started


def test_a_server_that_ignores_the_cursor_stops_the_run_with_exit_2(server, client, capsys):
    log_project(client)
    server.ignore_cursor = True
    code, seconds = _cli(["traces", "score", "--project", PROJECT, "-m", "bleu", "--page-size", "5",
                          "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and seconds < 30, (code, seconds)
    assert "does not page" in err and "at page 2" in err and len(err.strip().splitlines()) == 1
    assert _searches(server) <= 3
    assert max(_sent(server, "traces").values()) == 1


def test_spans_from_a_server_that_ignores_the_cursor_stop_too(server, client, capsys):
    for k in range(12):
        trace = client.trace(name="caption", project_name=PROJECT)
        trace.span(name="caption", output={"output": f"a cat on a mat {k}"},
                   metadata={"reference": f"a cat sits on the mat {k}"})
    client.flush()
    server.ignore_cursor = True
    code, seconds = _cli(["traces", "score", "--project", PROJECT, "--spans", "-m", "bleu", "--page-size", "4",
                          "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and seconds < 30, (code, seconds)
    assert "project 'captions''s spans" in err and "does not page" in err
    assert max(_sent(server, "spans").values()) == 1


def test_a_read_stops_at_its_page_cap(server, client):
    log_project(client, 10)
    selection = Selection(PROJECT)
    assert sum(len(p) for p in pages(client, selection, 2, max_pages=6)) == 10     # 5 full pages, then an empty one
    with pytest.raises(OpikServerError, match=r"at page 5: that is the cap \(5 pages of 2\)"):
        list(pages(client, selection, 2, max_pages=5))

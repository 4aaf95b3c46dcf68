"""Two runs on one project with one metric configuration: the second stops at once with one line
naming the first (exit 2 from the command line) and no score is sent twice; it may wait for the
first ($OPIK_METRICS_LOCK_WAIT); runs of other metrics go on side by side."""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from opik_metrics import BLEU, ROUGE
from opik_metrics.cli.main import main
from opik_metrics.experiments.opik_server import client_url
from opik_metrics.traces import score_traces
from opik_metrics.traces.lease import ScoringLocked, scoring_lease
from opik_metrics.traces.marks import signature_of
from tests.traces.conftest import PROJECT, log_project


class SlowBLEU(BLEU):
    def score_batch(self, *args, **kwargs):
        time.sleep(0.3)
        return super().score_batch(*args, **kwargs)


def _sent(server) -> Counter:
    return Counter((s["id"], s["name"]) for m, p, body in server.requests
                   if m == "PUT" and p.endswith("/traces/feedback-scores") for s in body["scores"])


def test_a_second_run_stops_and_no_score_is_sent_twice(server, client):
    log_project(client)
    outcome: dict = {}
    first = threading.Thread(target=lambda: outcome.setdefault(
        "report", score_traces(PROJECT, [SlowBLEU(track=False)], client=client, page_size=2, progress=False)))
    first.start()
    deadline = time.monotonic() + 30
    while not any(p.endswith("/traces/search") for _, p, _ in server.requests) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        with pytest.raises(ScoringLocked, match=r"another run \(pid \d+ on .*\) is scoring project 'captions''s "
                                                r"traces on http://127\.0\.0\.1:\d+/api with bleu"):
            score_traces(PROJECT, [BLEU(track=False)], client=client, progress=False)
        other = score_traces(PROJECT, [ROUGE(track=False)], client=client, progress=False)   # another metric goes on
        assert other.complete and other.scored == 17
    finally:
        first.join(60)
    assert outcome["report"].complete and outcome["report"].scored == 17
    assert max(_sent(server).values()) == 1


def test_the_command_line_says_who_holds_it_in_one_line(server, client, capsys):
    log_project(client, 4)
    with scoring_lease(client_url(client), PROJECT, "traces", {"bleu": signature_of(BLEU(track=False))}):
        code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "both would send every score" in err
    assert not any(p.endswith("/feedback-scores") for _, p, _ in server.requests)
    assert main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--no-progress"]) == 0   # freed


def test_a_run_may_wait_for_the_lease(monkeypatch):
    monkeypatch.setenv("OPIK_METRICS_LOCK_WAIT", "10")
    taken, release = threading.Event(), threading.Event()

    def hold():
        with scoring_lease("http://x/api", "p", "traces", {"m": "s"}):
            taken.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(10)
    threading.Timer(0.5, release.set).start()
    started = time.monotonic()
    with scoring_lease("http://x/api", "p", "traces", {"m": "s"}):
        assert time.monotonic() - started >= 0.4
    holder.join(10)
    with pytest.raises(ScoringLocked, match=r"waited 0\.2 s"):
        with scoring_lease("http://x/api", "p", "traces", {"m": "s"}):
            with scoring_lease("http://x/api", "p", "traces", {"m": "s"}, wait=0.2):
                pass

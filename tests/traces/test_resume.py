"""A run killed with SIGKILL mid-way, then run again, scores each trace once: the rerun skips what
arrived (its scores carry the metric's mark) and sends the rest; no score is sent twice."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from opik_metrics import BLEU
from opik_metrics.traces import score_traces
from tests.traces.conftest import PROJECT, log_project

ROOT = Path(__file__).resolve().parents[2]
SLOW_RUN = f"""
import time
from opik_metrics import BLEU
from opik_metrics.traces import score_traces

class SlowBLEU(BLEU):
    def score_batch(self, *args, **kwargs):
        time.sleep(0.4)
        return super().score_batch(*args, **kwargs)

score_traces({PROJECT!r}, [SlowBLEU(track=False)], page_size=2, progress=False)
"""


def test_a_killed_run_resumes_without_duplicates(server, client):
    logged = log_project(client)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPIK_URL_OVERRIDE": server.url}
    child = subprocess.Popen([sys.executable, "-c", SLOW_RUN], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not server.feedback_scores and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        assert server.feedback_scores, child.stderr.read().decode() if child.poll() is not None else "no score in 60 s"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    before = len(server.feedback_scores)
    assert 0 < before < 17
    rerun = score_traces(PROJECT, [BLEU(track=False)], client=client, progress=False)
    assert rerun.complete and rerun.skipped["bleu"] == before and rerun.sent_scores == 17 - before
    sent = Counter((s["id"], s["name"]) for m, p, body in server.requests if m == "PUT"
                   and p.endswith("/traces/feedback-scores") for s in body["scores"])
    assert set(sent.values()) == {1} and len(sent) == 17
    assert {tid for (_, tid) in server.feedback_scores} <= set(logged)

"""The pack's worker processes: the start method the policy picks, and no worker, forkserver or
resource tracker left behind when the process that made the pools is killed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil

from opik_metrics.core import worker_pools

OWNER = textwrap.dedent("""
    import json, os, sys, time
    import psutil
    from opik_metrics.core.worker_pools import WorkerPool

    kept = WorkerPool(2, builds_models=False, kept=True)        # as score_batch keeps one
    kept.submit(os.getpid).result()
    run = WorkerPool(2, builds_models=True, kept=False)          # as a file run of model metrics
    busy = [run.submit(time.sleep, 120) for _ in range(2)]       # both workers in the middle of a task
    time.sleep(1.0)
    methods = [kept.method, run.method]
    print(json.dumps({"methods": methods, "children": [p.pid for p in psutil.Process().children(recursive=True)]}),
          flush=True)
    time.sleep(120)
""")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_nothing_outlives_a_killed_owner():
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        started = json.loads(owner.stdout.readline())
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert started["methods"] == ["fork", "forkserver"]
    children = started["children"]
    assert len(children) >= 5             # four workers, the forkserver (and the resource tracker)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not all(map(_gone, children)):
        time.sleep(0.2)
    left = [(pid, " ".join(psutil.Process(pid).cmdline())) for pid in children if not _gone(pid)]
    for pid, _ in left:
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_forking_waits_for_a_process_without_other_threads(monkeypatch):
    monkeypatch.setattr(worker_pools, "no_other_threads", lambda: True)
    assert worker_pools.start_method(builds_models=False) == "fork"
    assert worker_pools.start_method(builds_models=True) == "forkserver"      # a model is never forked
    monkeypatch.setattr(worker_pools, "no_other_threads", lambda: False)
    assert worker_pools.start_method(builds_models=False) == "forkserver"


def test_a_thread_of_the_caller_counts_but_a_pools_own_do_not():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    before = worker_pools.no_other_threads()
    other.start()
    try:
        assert not worker_pools.no_other_threads()
    finally:
        stop.set()
        other.join()
    with worker_pools.WorkerPool(1, builds_models=False, kept=False) as pool:
        assert pool.submit(os.getpid).result() != os.getpid()
        time.sleep(0.1)
        assert worker_pools.no_other_threads() == before

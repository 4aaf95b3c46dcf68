"""The pack's worker processes: the start method decided in one place (explicit, or picked by the
policy), and no worker, forkserver or resource tracker left behind when the process that made the
pools is killed."""
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

import pytest

from opik_metrics.execution import worker_pools
from opik_metrics.execution.context import ScoringContext, other_threads_than_ours

OWNER = textwrap.dedent("""
    import json, os, sys, time
    import psutil
    from opik_metrics.execution.worker_pools import WorkerPool, choose_start_method

    kept = WorkerPool(2, start_method=choose_start_method(None, builds_models=False), kept=True)   # score_batch's
    kept.submit(os.getpid).result()
    run = WorkerPool(2, start_method=choose_start_method(None, builds_models=True, own_threads=kept.threads),
                     kept=False)                                 # as a file run of model metrics
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


def test_the_start_method_is_explicit_or_chosen_in_one_place():
    assert worker_pools.choose_start_method("spawn", builds_models=False) == "spawn"
    assert worker_pools.choose_start_method("fork", builds_models=True) == "fork"      # asked for: given
    for bad in ("threads", "", "Fork"):
        with pytest.raises(ValueError, match="start_method must be one of fork, forkserver, spawn"):
            worker_pools.choose_start_method(bad, builds_models=False)
    alone = threading.active_count() == 1       # other tests may leave threads behind
    if alone:
        assert worker_pools.choose_start_method(None, builds_models=False) == "fork"
    assert worker_pools.choose_start_method(None, builds_models=True) == "forkserver"    # a model is never forked
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert worker_pools.choose_start_method(None, builds_models=False) == "forkserver"
        mine = threading.active_count() - 1       # a caller's own pool threads may be discounted
        assert worker_pools.choose_start_method(None, builds_models=False, own_threads=mine) == "fork"
    finally:
        stop.set()
        other.join()


def test_a_thread_of_the_caller_counts_but_the_contexts_pools_do_not():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    before = other_threads_than_ours()
    other.start()
    try:
        assert other_threads_than_ours()
    finally:
        stop.set()
        other.join()
    with ScoringContext() as context:
        pool = context.pool(1)
        assert pool.submit(os.getpid).result() != os.getpid()
        time.sleep(0.1)
        assert pool.threads > 0 and context.threads() == pool.threads
        assert other_threads_than_ours() == before
        assert context.pool(1) is pool                     # kept for the block's later batches
    with pytest.raises(RuntimeError, match="after shutdown"):           # the block's end stopped it
        pool.submit(os.getpid)

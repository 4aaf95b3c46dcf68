"""The test run's own clean-up (tests/process_sweep.py): a process carrying this run's mark, or
the mark of a run whose pytest process is gone, is found and ended; others are left alone."""
from __future__ import annotations

import os
import subprocess
import sys

import psutil

from tests.process_sweep import RUN_MARK, end, marked_processes

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def _dead_pid() -> int:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert not psutil.pid_exists(gone.pid)
    return gone.pid


def _start(mark: str | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != RUN_MARK}
    if mark is not None:
        env[RUN_MARK] = mark
    return subprocess.Popen(SLEEPER, env=env)


def test_a_process_of_a_run_that_was_killed_is_found_and_ended():
    orphan, unmarked = _start(str(_dead_pid())), _start(None)
    try:
        found = {p.pid for p in marked_processes(owner_alive=False)}
        assert orphan.pid in found and unmarked.pid not in found
        assert end([psutil.Process(orphan.pid)], grace_s=5) == 1
        assert orphan.wait(timeout=10) is not None
        assert unmarked.poll() is None
    finally:
        for process in (orphan, unmarked):
            process.kill()
            process.wait()


def test_a_process_of_this_run_is_found_and_one_of_a_live_run_is_not_taken_for_a_dead_one():
    ours = _start(os.environ[RUN_MARK])
    try:
        assert ours.pid in {p.pid for p in marked_processes()}
        assert ours.pid not in {p.pid for p in marked_processes(owner_alive=False)}
    finally:
        ours.kill()
        ours.wait()

"""Processes a test run leaves behind (a Ray cluster whose test process was killed: its agents
outlive the raylet for a minute or more) are ended by the run that started them, or by the next
run if that one was killed too. A run marks every process it starts through one environment
variable holding the pid of the pytest process that set it; only that process sweeps."""
from __future__ import annotations

import os

import psutil

RUN_MARK = "OPIK_METRICS_TEST_RUN"


def mark_this_run() -> bool:
    """Set the mark unless an outer run set it (a pytest run inside a test): True when this process owns it."""
    if RUN_MARK in os.environ:
        return False
    os.environ[RUN_MARK] = str(os.getpid())
    return True


def marked_processes(owner_alive: bool | None = None) -> list[psutil.Process]:
    """Processes of this user carrying a run mark: this run's (``owner_alive`` None), or those whose
    run's pytest process is gone (``owner_alive`` False)."""
    found = []
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:
            mark = _run_mark_of(process)
        except (psutil.Error, OSError):
            continue
        if mark is None or not mark.isdigit():
            continue
        if owner_alive is None and mark == os.environ.get(RUN_MARK):
            found.append(process)
        elif owner_alive is False and not psutil.pid_exists(int(mark)):
            found.append(process)
    return found


def _run_mark_of(process: psutil.Process) -> str | None:
    """The process's run mark. On Linux read from /proc whole: a process that renamed itself
    (setproctitle, as Ray's agents do) zeroes the start of its environment block, and
    psutil.Process.environ stops at the first empty entry."""
    proc = f"/proc/{process.pid}/environ"
    if not os.path.exists(proc):
        return process.environ().get(RUN_MARK)
    with open(proc, "rb") as block:
        entries = block.read().split(b"\0")
    prefix = RUN_MARK.encode() + b"="
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix):].decode(errors="replace")
    return None


def end(processes: list[psutil.Process], grace_s: float = 3.0) -> int:
    """Terminate ``processes``, then kill what is left after ``grace_s``; how many there were."""
    for process in processes:
        try:
            process.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass
    return len(processes)

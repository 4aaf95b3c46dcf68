"""Leases: one process at a time runs an experiment. A lease row names its holder (pid, host,
machine), a heartbeat thread renews it, and one whose holder died or stopped renewing it is free."""
from __future__ import annotations

import math
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path

from opik_metrics.core.processes import read_proc

LOCK_WAIT_ENV = "OPIK_METRICS_LOCK_WAIT"   # seconds a run waits for another run of the same experiment
LEASE_SECONDS = 60.0                        # a lease not renewed for this long is free
BUSY_SECONDS = 30.0                         # how long one statement waits for another writer's commit


def machine_id() -> str:
    """Where a pid means the same process: host name, boot id and pid namespace."""
    namespace = ""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        pass
    return f"{socket.gethostname()}|{read_proc('/proc/sys/kernel/random/boot_id')}|{namespace}"


HOST = socket.gethostname()
MACHINE = machine_id()


class Heartbeat(threading.Thread):
    """Renews one lease every quarter of its length, on a connection of its own."""

    def __init__(self, path: Path, name: str, token: str, seconds: float) -> None:
        super().__init__(daemon=True, name=f"opik-metrics-lease:{name}")
        self.path, self.experiment, self.token, self.seconds = path, name, token, seconds
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            db = sqlite3.connect(self.path, timeout=max(1.0, self.seconds / 2), check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            while not self._stopping.wait(max(0.05, self.seconds / 4)):
                try:
                    with db:
                        now = time.time()
                        cur = db.execute("UPDATE experiment_leases SET renewed_at = ?, expires_at = ? "
                                         "WHERE experiment = ? AND token = ?",
                                         (now, now + self.seconds, self.experiment, self.token))
                    if cur.rowcount == 0:
                        return      # taken over: the next save of the run says so
                except sqlite3.Error:
                    continue        # busy: the next beat tries again
        finally:
            db.close()

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive() and self is not threading.current_thread():
            self.join(timeout=BUSY_SECONDS)


def lock_wait_seconds(value: float | None) -> float:
    """Seconds to wait for another run of the same experiment: ``value``, else $OPIK_METRICS_LOCK_WAIT, else 0."""
    source = "lock_wait"
    if value is None:
        text = os.environ.get(LOCK_WAIT_ENV, "").strip()
        if not text:
            return 0.0
        source = f"${LOCK_WAIT_ENV}"
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{source}: expected a number of seconds, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ValueError(f"{source}: expected a number of seconds >= 0, got {value!r}")
    return float(value)

"""Whether a process of this machine is running, for the store's leases and the workers' watch."""
from __future__ import annotations

import os


def read_proc(path: str) -> str:
    """A small text file of /proc (or any), stripped; "" where it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` (on this machine) is running; a zombie is not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # PermissionError included: it exists, under another user
        return True
    stat = read_proc(f"/proc/{pid}/stat")
    return not (stat and stat.rpartition(")")[2].split()[:1] == ["Z"])

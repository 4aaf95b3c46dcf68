"""One run at a time scores a project's traces (spans, threads) with one metric configuration: a
lease per (server, project, entity, signature), held as a file lock (``flock``) in the lease folder,
so the system frees it when its holder ends, ``kill -9`` included. Another run waits for it up to
``$OPIK_METRICS_LOCK_WAIT`` seconds (default 0, as for the local store) and then stops with one line
naming the holder: two runs would each send every score. The locks are this machine's: runs on two
machines are not kept apart."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Iterator, Mapping

from opik_metrics.experiments.store.leases import LOCK_WAIT_ENV, lock_wait_seconds

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, no lease
    fcntl = None  # type: ignore[assignment]

LEASE_DIR_ENV = "OPIK_METRICS_LEASE_DIR"


class ScoringLocked(RuntimeError):
    """Another run holds the lease on what this one would score: one line naming it, exit 2."""


def lease_dir() -> Path:
    """``$OPIK_METRICS_LEASE_DIR``, else ``$XDG_CACHE_HOME/opik-metrics/leases`` (``~/.cache/...``)."""
    explicit = os.environ.get(LEASE_DIR_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache").expanduser() / "opik-metrics" / "leases"


@contextlib.contextmanager
def scoring_lease(url: str | None, project_name: str, entity: str, signatures: Mapping[str, str],
                  wait: float | None = None) -> Iterator[None]:
    """Hold the lease of every signature (``signatures``: metric name -> its signature; in a fixed
    order) for the block, or raise ScoringLocked once ``wait`` seconds (default
    ``$OPIK_METRICS_LOCK_WAIT``) pass with one of them held elsewhere."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    seconds = lock_wait_seconds(wait)
    folder = lease_dir()
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with contextlib.ExitStack() as held:
        for signature, name in sorted({s: n for n, s in signatures.items()}.items()):
            what = {"server": url, "project": project_name, "entity": entity, "signature": signature}
            key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]
            held.enter_context(_locked(folder / f"{key}.lock", {**what, "metric": name}, seconds, started))
        yield


@contextlib.contextmanager
def _locked(path: Path, what: dict, wait: float, started: float) -> Iterator[None]:
    with open(path, "a+", encoding="utf-8") as file:
        while True:
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - started >= wait:
                    raise ScoringLocked(_message(path, what, wait)) from None
                time.sleep(0.1)
        _write_holder(file, what)
        try:
            yield
        finally:
            fcntl.flock(file.fileno(), fcntl.LOCK_UN)


def _write_holder(file: IO[str], what: dict) -> None:
    file.seek(0)
    file.truncate()
    file.write(json.dumps({**what, "pid": os.getpid(), "host": socket.gethostname(),
                           "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}))
    file.flush()


def _message(path: Path, what: dict, wait: float) -> str:
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        by = f"pid {holder['pid']} on {holder['host']}, since {holder['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        by = "its holder is being written"
    waited = f" (waited {wait:g} s)" if wait > 0 else ""
    where = f" on {what['server']}" if what["server"] else ""
    return (f"another run ({by}) is scoring project {what['project']!r}'s {what['entity']}{where} with "
            f"{what['metric']} ({what['signature']}){waited}: both would send every score; run the same command again once it ends "
            f"(it skips what that run scored), or set {LOCK_WAIT_ENV}=SECONDS to wait for it; lease {path}")

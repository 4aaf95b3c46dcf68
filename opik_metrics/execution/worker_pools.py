"""The pack's worker processes: one pool class and the one place its start method is decided.

- Start method: an explicit parameter. Left to us (None), ``choose_start_method`` picks fork
  where forking is safe and cheap (the workers build no model, and this process runs no Python
  thread but the caller's and those of pools the caller owns: ``__main__`` is not imported
  again), else forkserver, so that nothing of this process (a lock another thread holds, a
  loaded model, torch's thread pools) is inherited.
- Every worker starts with the collector on (a fork inherits a paused one) and leaves within a
  second of the death of the process that made the pool (kill -9 included).
- Ctrl-C belongs to the parent: workers of a pool kept between calls ignore it, so that an idle
  pool survives an interrupted call; workers of a pool made for one run stop with it.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Callable, Iterator

from opik_metrics.core.processes import pid_alive

START_METHODS = ("fork", "forkserver", "spawn")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def no_other_threads(own_threads: int = 0) -> bool:
    """Whether this process runs no Python thread but the calling one and ``own_threads`` that the
    caller's pools run (see ``WorkerPool.threads``)."""
    return threading.active_count() - own_threads == 1


def choose_start_method(requested: str | None, *, builds_models: bool, own_threads: int = 0) -> str:
    """``requested`` when given (checked), else "fork" where forking is safe and cheap (see the
    module docstring), else "forkserver"."""
    if requested is not None:
        if requested not in START_METHODS or requested not in multiprocessing.get_all_start_methods():
            usable = [m for m in START_METHODS if m in multiprocessing.get_all_start_methods()]
            raise ValueError(f"start_method must be one of {', '.join(usable)} (or None: chosen for you), "
                             f"got {requested!r}")
        return requested
    if os.name == "posix" and not builds_models and no_other_threads(own_threads):
        return "fork"
    return "forkserver"


def in_a_worker() -> bool:
    """Whether this process is a pool's worker, a daemon or a child still importing its main module:
    a place where a pool of its own would only fight over the same cores."""
    process = multiprocessing.current_process()
    return process.daemon or process.name != "MainProcess" or multiprocessing.parent_process() is not None


class WorkerPool:
    """A ``ProcessPoolExecutor`` of ``workers`` processes started by ``start_method`` (see
    ``choose_start_method``). ``initializer(*initargs)`` runs in each worker after the pool's own
    start; ``kept``: the pool outlives one call (its workers ignore Ctrl-C)."""

    def __init__(self, workers: int, *, start_method: str, kept: bool,
                 initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> None:
        self.method = choose_start_method(start_method, builds_models=True)
        self.owner = os.getpid()
        self._before: set[threading.Thread] | None = set(threading.enumerate())
        self._threads: frozenset[threading.Thread] = frozenset()
        self.executor = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context(self.method), initializer=_start_worker,
            initargs=(os.getpid(), kept, initializer, initargs))

    @property
    def threads(self) -> int:
        """Threads this pool runs in this process (its manager and queue feeder), once it has started."""
        return sum(1 for t in self._threads if t.is_alive())

    def submit(self, function: Callable, *args: Any) -> Future:
        """``executor.submit``. The threads the pool starts in this process are noted when its first
        task is done (they all run by then)."""
        future = self.executor.submit(function, *args)
        if self._before is not None:
            before, self._before = self._before, None
            future.add_done_callback(lambda _: self._note_threads(before))
        return future

    def _note_threads(self, before: set[threading.Thread]) -> None:
        self._threads = frozenset(set(threading.enumerate()) - before)

    def map(self, function: Callable, items: Any) -> Iterator[Any]:
        """``function`` of each item, in order."""
        self.submit(_nothing)
        return self.executor.map(function, items)

    def close(self, *, wait: bool) -> None:
        """Stop the pool: what has not started is cancelled; ``wait`` for the workers to exit."""
        self._threads = frozenset()
        self.executor.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        self.close(wait=kind is None)


def _nothing() -> None:
    """A task that starts the pool's threads and workers."""


def _start_worker(owner: int, kept: bool, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    gc.enable()
    if kept:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_leave_with, args=(owner,), name="opik-metrics-owner-watch", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


def _leave_with(owner: int) -> None:
    """Exit once the process that made the pool is gone: a worker whose owner died would otherwise
    wait on its task queue forever (and keep a forkserver and resource tracker alive)."""
    parent = os.getppid()
    while True:
        time.sleep(1.0)
        if os.getppid() != parent or not pid_alive(owner):
            os._exit(0)

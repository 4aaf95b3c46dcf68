"""The one policy for the pack's worker processes, used by ``score_batch``'s kept pool and by the
file engine's pools alike.

- Start method: fork while this process runs no Python thread but the caller's and our pools'
  own, and the workers build no model (fast; ``__main__`` is not imported again); otherwise
  forkserver, so that nothing of this process (a lock another thread holds, a loaded model,
  torch's thread pools) is inherited.
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

_pool_threads: dict[int, frozenset[threading.Thread]] = {}   # by id of a pool: the threads it started here


def _forget_pools() -> None:
    """In a forked child: the parent's pools are not ours (their threads did not come along)."""
    _pool_threads.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_threads() -> int:
    """Threads our pools run in this process (each pool's manager and queue feeder threads)."""
    return sum(1 for threads in list(_pool_threads.values()) for t in threads if t.is_alive())


def no_other_threads() -> bool:
    """Whether this process runs no Python thread but the calling one and our pools'."""
    return threading.active_count() - pool_threads() == 1


def start_method(builds_models: bool) -> str:
    """"fork" where forking is safe and cheap (see the module docstring), else "forkserver"."""
    if os.name == "posix" and not builds_models and no_other_threads():
        return "fork"
    return "forkserver"


def in_a_worker() -> bool:
    """Whether this process is a pool's worker, a daemon or a child still importing its main module:
    a place where a pool of its own would only fight over the same cores."""
    process = multiprocessing.current_process()
    return process.daemon or process.name != "MainProcess" or multiprocessing.parent_process() is not None


class WorkerPool:
    """A ``ProcessPoolExecutor`` started by the policy above. ``initializer(*initargs)`` runs in each
    worker after the policy's own start; ``kept``: the pool outlives one call (its workers ignore
    Ctrl-C)."""

    def __init__(self, workers: int, *, builds_models: bool, kept: bool,
                 initializer: Callable[..., None] | None = None, initargs: tuple = ()) -> None:
        self.method = start_method(builds_models)
        self._before: set[threading.Thread] | None = set(threading.enumerate())
        self.executor = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context(self.method), initializer=_start_worker,
            initargs=(os.getpid(), kept, initializer, initargs))

    def submit(self, function: Callable, *args: Any) -> Future:
        """``executor.submit``. The threads the pool starts in this process are noted when its first
        task is done (they all run by then)."""
        future = self.executor.submit(function, *args)
        if self._before is not None:
            before, self._before = self._before, None
            future.add_done_callback(lambda _: _pool_threads.__setitem__(
                id(self), frozenset(set(threading.enumerate()) - before)))
        return future

    def map(self, function: Callable, items: Any) -> Iterator[Any]:
        """``function`` of each item, in order."""
        self.submit(_nothing)
        return self.executor.map(function, items)

    def close(self, *, wait: bool) -> None:
        """Stop the pool: what has not started is cancelled; ``wait`` for the workers to exit."""
        _pool_threads.pop(id(self), None)
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

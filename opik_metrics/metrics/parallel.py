"""``score_batch`` on the machine's cores for large batches: worker processes run the metric's
kernel (a picklable recipe of its engine) on slices of the batch and hand back compact values;
this process builds the ScoreResults from them, in order. The same kernel code computes the
serial path's numbers, so both are identical. Text metrics are Python-bound: processes, not
threads, use the cores."""
from __future__ import annotations

import gc
import hashlib
import math
import multiprocessing
import operator
import os
import pickle
import signal
import threading
import time
import warnings
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence

#: Below this many items a batch stays in this process: a slice's round trip would cost more.
PARALLEL_MIN_ITEMS = 20_000
#: Slices per worker and the smallest slice (round-trip cost). Small slices keep this process, which
#: builds every result, from waiting long for the first slice and the workers from idling while it
#: builds the last.
SLICES_PER_WORKER = 16
MIN_SLICE = 2_000

_pools: dict[int, tuple[ProcessPoolExecutor, str]] = {}   # by size: the pool and its start method (see _forget_pools)
_pool_threads: dict[int, frozenset[threading.Thread]] = {}  # by size: the threads each pool started here
_pools_lock = threading.Lock()
_in_worker = False
_kernels: dict[str, Callable] = {}


class StayInProcess(Exception):
    """The batch is scored in this process instead (why: the message); raised before any slice
    has been handed back, so the caller starts over serially and nothing is mixed."""


def _forget_pools() -> None:
    """In a forked child: the parent's pools are not ours (their threads did not come along)."""
    _pools.clear()
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
    """Threads our pools run in this process (each executor's manager and queue feeder threads),
    as found when the pool handed back its first slice."""
    return sum(1 for threads in _pool_threads.values() for t in threads if t.is_alive())


def no_other_threads() -> bool:
    """Whether this process runs no Python thread but the calling one and our pools'."""
    return threading.active_count() - pool_threads() == 1


def _can_fork() -> bool:
    """Forking is safe while this process runs no Python thread but ours (no lock some other
    thread holds can be inherited), and it starts workers without importing ``__main__`` again."""
    return os.name == "posix" and no_other_threads()


def _in_a_child_process() -> bool:
    process = multiprocessing.current_process()
    return (_in_worker or process.daemon or process.name != "MainProcess"
            or multiprocessing.parent_process() is not None)


def check_workers(workers: Any) -> int | None:
    """``workers`` as an int (None stays None), or a ValueError naming it."""
    if workers is None:
        return None
    try:
        count = operator.index(workers)
    except TypeError:
        count = 0
    if isinstance(workers, bool) or count < 1:
        raise ValueError(f"workers must be a positive integer or None (every core for large batches), "
                         f"got {workers!r}")
    return count


def resolve_workers(workers: int | None, items: int) -> int:
    """Processes for a batch of ``items``: ``workers`` when given; else every core for a batch of
    at least ``PARALLEL_MIN_ITEMS`` when workers can be forked, one otherwise (a process with
    threads would need the forkserver, which imports an unguarded script again). Always one in
    a child process (a pool's worker, a daemon, a process still importing its main module):
    nested pools would only fight over the same cores."""
    count = check_workers(workers)
    if _in_a_child_process():
        return 1
    if count is None:
        return available_cores() if items >= PARALLEL_MIN_ITEMS and (_pools or _can_fork()) else 1
    return count


def _start_worker() -> None:
    global _in_worker
    _in_worker = True
    gc.enable()       # a forked worker inherits a paused collector from the batch that started it
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle; an idle pool survives it
    parent = os.getppid()

    def leave_with_the_parent() -> None:
        """A kept pool outlives batches, not its process: a worker whose parent died (kill -9,
        ``os._exit``) would wait on the task queue forever."""
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=leave_with_the_parent, name="opik-metrics-parent-watch", daemon=True).start()


def _executor(workers: int) -> tuple[ProcessPoolExecutor, str]:
    """The pool of ``workers`` processes and its start method, kept for later batches (a broken one
    is dropped by ``run_kernel``). Forked when this process runs no other thread (fast, no
    main-module import); otherwise forkserver, since forking a process with threads can inherit a
    lock some thread holds."""
    with _pools_lock:
        if workers not in _pools:
            method = "fork" if _can_fork() else "forkserver"
            _pools[workers] = (ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                                                   initializer=_start_worker), method)
        return _pools[workers]


def _drop(pool: ProcessPoolExecutor) -> None:
    with _pools_lock:
        for size, (kept, _) in list(_pools.items()):
            if kept is pool:
                del _pools[size]
                _pool_threads.pop(size, None)
    pool.shutdown(wait=False, cancel_futures=True)


def _run(key: str, blob: bytes, outputs: list, references: list) -> Any:
    kernel = _kernels.get(key)
    if kernel is None:
        if len(_kernels) >= 8:
            _kernels.clear()
        kernel = _kernels[key] = pickle.loads(blob)
    return kernel(outputs, references)


def slices(items: int, workers: int) -> list[tuple[int, int]]:
    """``(start, stop)`` ranges covering ``items``: about ``SLICES_PER_WORKER`` per worker."""
    size = max(MIN_SLICE, math.ceil(items / (workers * SLICES_PER_WORKER)))
    return [(start, min(items, start + size)) for start in range(0, items, size)]


def run_kernel(kernel: Callable, outputs: Sequence[str], references: Sequence[Any],
               workers: int) -> Iterator[tuple[int, int, Any]]:
    """``(start, stop, values)`` for each slice, in order, as the workers finish them. Raises
    ``StayInProcess`` when processes would not help (one slice), when the kernel names code of a
    ``__main__`` that forkserver workers cannot import, or when a worker died (the pool is
    replaced for the next batch): the caller then scores the whole batch in its own process."""
    ranges = slices(len(outputs), workers)
    if len(ranges) < 2:
        raise StayInProcess("one slice")
    blob = pickle.dumps(kernel)
    key = hashlib.sha1(blob).hexdigest()
    size = min(workers, len(ranges))
    before = set(threading.enumerate()) if size not in _pool_threads else None
    pool, method = _executor(size)
    if method != "fork" and b"__main__" in blob:
        raise StayInProcess("the kernel names code of __main__, which forkserver workers cannot import")
    ahead = 2 * min(workers, len(ranges))      # slices in flight: the input is not copied all at once
    futures: list[Future] = []
    try:
        for a, b in ranges[:ahead]:
            futures.append(pool.submit(_run, key, blob, list(outputs[a:b]), list(references[a:b])))
        for k, (start, stop) in enumerate(ranges):
            values = futures[k].result()
            futures[k] = None  # type: ignore[call-overload]   # its values are handed on, not kept here
            if before is not None:              # the pool's threads run by now: the ones new since it started
                _pool_threads[size] = frozenset(set(threading.enumerate()) - before)
                before = None
            if k + ahead < len(ranges):
                a, b = ranges[k + ahead]
                futures.append(pool.submit(_run, key, blob, list(outputs[a:b]), list(references[a:b])))
            yield start, stop, values
    except BrokenProcessPool:
        _drop(pool)
        warnings.warn("a scoring worker process died; this batch is scored again in this process", stacklevel=3)
        raise StayInProcess("a worker process died") from None
    finally:
        for future in futures:
            if future is not None:
                future.cancel()

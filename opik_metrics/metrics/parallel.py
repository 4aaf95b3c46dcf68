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
import os
import pickle
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Callable, Iterator, Sequence

#: Below this many items a batch stays in this process: a slice's round trip would cost more.
PARALLEL_MIN_ITEMS = 20_000
#: Slices per worker (balance) and the smallest slice (round-trip cost).
SLICES_PER_WORKER = 4
MIN_SLICE = 2_000

_pool: ProcessPoolExecutor | None = None
_pool_workers = 0
_pool_lock = threading.Lock()
_in_worker = False
_kernels: dict[str, Callable] = {}


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _can_fork() -> bool:
    """Forking is safe while this process runs one thread (no lock held by another thread can be
    inherited) and it starts workers at once, without importing the main module again."""
    return os.name == "posix" and threading.active_count() == 1


def resolve_workers(workers: int | None, items: int) -> int:
    """Processes for a batch of ``items``: ``workers`` when given; else every core for a batch of
    at least ``PARALLEL_MIN_ITEMS`` when workers can be forked, one otherwise (a process with
    threads would need the forkserver, which imports an unguarded script again). Always one
    inside a worker, or while a spawned process is still importing its main module."""
    if workers is not None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive integer or None (every core for large batches), "
                             f"got {workers!r}")
    if _in_worker or getattr(multiprocessing.current_process(), "_inheriting", False):
        return 1
    if workers is None:
        return available_cores() if items >= PARALLEL_MIN_ITEMS and _can_fork() else 1
    return workers


def _start_worker() -> None:
    global _in_worker
    _in_worker = True
    gc.enable()       # a forked worker inherits a paused collector from the batch that started it


def _executor(workers: int) -> ProcessPoolExecutor:
    """One pool, kept for later batches (started again when a batch wants another size). Forked
    when this process runs a single thread (fast, no main-module import); otherwise forkserver,
    since forking a process with threads can inherit a lock some thread holds."""
    global _pool, _pool_workers
    with _pool_lock:
        if _pool is None or _pool_workers != workers:
            if _pool is not None:
                _pool.shutdown(wait=False, cancel_futures=True)
            method = "fork" if _can_fork() else "forkserver"
            _pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                                        initializer=_start_worker)
            _pool_workers = workers
        return _pool


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
    """``(start, stop, values)`` for each slice, in order, as the workers finish them."""
    blob = pickle.dumps(kernel)
    key = hashlib.sha1(blob).hexdigest()
    pool = _executor(workers)
    ranges = slices(len(outputs), workers)
    futures: list[Future] = [pool.submit(_run, key, blob, list(outputs[a:b]), list(references[a:b]))
                             for a, b in ranges]
    try:
        for (start, stop), future in zip(ranges, futures):
            yield start, stop, future.result()
    finally:
        for future in futures:
            future.cancel()

"""``score_batch`` on the machine's cores for large batches: worker processes run the metric's
kernel (a picklable recipe of its engine) on slices of the batch and hand back compact values;
this process builds the ScoreResults from them, in order. The same kernel code computes the
serial path's numbers, so both are identical. Text metrics are Python-bound: processes, not
threads, use the cores."""
from __future__ import annotations

import ctypes
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
#: builds the last (200,000 short pairs: 4 slices a worker gave 1.2-1.3x on 2 cores, 16 gave 1.3-1.5x).
SLICES_PER_WORKER = 16
MIN_SLICE = 2_000

_pools: dict[int, ProcessPoolExecutor] = {}     # by size, this process's own (see _forget_pools)
_pools_lock = threading.Lock()
_in_worker = False
_kernels: dict[str, Callable] = {}


class StayInProcess(Exception):
    """The batch is scored in this process instead (why: the message); raised before any slice
    has been handed back, so the caller starts over serially and nothing is mixed."""


def _forget_pools() -> None:
    """In a forked child: the parent's pools are not ours (their threads did not come along)."""
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_threads() -> int:
    """Threads our pools run in this process: each executor's manager thread and its call
    queue's feeder thread."""
    threads = [t for pool in _pools.values()
               for t in (getattr(pool, "_executor_manager_thread", None),
                         getattr(getattr(pool, "_call_queue", None), "_thread", None))]
    return sum(1 for t in threads if t is not None and t.is_alive())


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
            or getattr(process, "_inheriting", False))


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


# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_memory() -> None:
    """In a worker (our process, not the user's): keep the memory a chunk's arrays free for the next
    chunk instead of handing it back to the system and faulting it in again, which was a fifth of
    ROUGE's array kernel on realistic pairs. Only where the C library is glibc; elsewhere a no-op."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return
    # arrays up to 32 MB (glibc's largest on 64-bit) from the heap, not a fresh mapping each; then the
    # heap not shrunk below 128 MB of free memory after each chunk (an idle worker keeps about that
    # much). The second only if the first was taken: alone it would pin the mapping threshold at
    # 128 KB, every array mapped and faulted in anew.
    if mallopt(_M_MMAP_THRESHOLD, 32 << 20):
        mallopt(_M_TRIM_THRESHOLD, 128 << 20)


def _start_worker() -> None:
    global _in_worker
    _in_worker = True
    _keep_freed_memory()
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


#: The pipe that brings the workers' values back, where the system lets us size it (the default
#: largest, /proc/sys/fs/pipe-max-size, for an unprivileged process on Linux): a slice's values
#: (450 KB for 6,250 pairs of ROUGE-1/2/L) then fit in one write. It counts against the user's
#: pipe quota (64 MB by default), 1 MB a pool.
PIPE_BYTES = 1 << 20


def _widen_result_pipe(pool: ProcessPoolExecutor) -> None:
    """Let a worker hand back a slice's values in one write and go on to its next slice. With a
    64 KB pipe it waited while the pool's reader thread, which shares the GIL with this process
    building results, took them 64 KB at a time: gaps of 15-30 ms a slice, measured. Reaches into
    the executor's result queue (no public way to size it); where that or the system says no,
    nothing changes."""
    try:
        import fcntl
        set_size = fcntl.F_SETPIPE_SZ
    except (ImportError, AttributeError):
        return
    try:
        fcntl.fcntl(pool._result_queue._reader.fileno(), set_size, PIPE_BYTES)  # type: ignore[attr-defined]
    except (AttributeError, OSError, TypeError, ValueError):
        pass


def _executor(workers: int) -> tuple[ProcessPoolExecutor, str]:
    """The pool of ``workers`` processes, kept for later batches; a broken one is replaced. Forked
    when this process runs no other thread (fast, no main-module import); otherwise forkserver,
    since forking a process with threads can inherit a lock some thread holds."""
    with _pools_lock:
        pool = _pools.get(workers)
        if pool is None or getattr(pool, "_broken", False):
            method = "fork" if _can_fork() else "forkserver"
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method),
                                       initializer=_start_worker)
            _widen_result_pipe(pool)
            pool._opik_metrics_method = method  # type: ignore[attr-defined]
            _pools[workers] = pool
        return pool, pool._opik_metrics_method  # type: ignore[attr-defined]


def _drop(pool: ProcessPoolExecutor) -> None:
    with _pools_lock:
        for size, kept in list(_pools.items()):
            if kept is pool:
                del _pools[size]
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
    pool, method = _executor(min(workers, len(ranges)))
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

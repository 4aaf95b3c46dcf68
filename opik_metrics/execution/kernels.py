"""``score_batch`` on the machine's cores for large batches: worker processes run the metric's
kernel (a picklable recipe of its engine) on slices of the batch and hand back compact values;
this process builds the ScoreResults from them, in order. The same kernel code computes the
serial path's numbers, so both are identical. Text metrics are Python-bound: processes, not
threads, use the cores. The processes are the current ``ScoringContext``'s, or started for the
one batch outside any."""
from __future__ import annotations

import hashlib
import math
import operator
import pickle
import warnings
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Protocol, Sequence

from opik_metrics.execution.context import ScoringContext, current_context
from opik_metrics.execution.worker_pools import available_cores, choose_start_method, in_a_worker

#: Below this many items a batch stays in this process: a slice's round trip would cost more.
PARALLEL_MIN_ITEMS = 20_000
#: Slices per worker and the smallest slice (round-trip cost). Small slices keep this process, which
#: builds every result, from waiting long for the first slice and the workers from idling while it
#: builds the last.
SLICES_PER_WORKER = 16
MIN_SLICE = 2_000

_kernels: dict[str, Callable] = {}      # in a worker process: the kernels it has unpickled, by their pickle's hash

__all__ = ["PARALLEL_MIN_ITEMS", "Kernel", "StayInProcess", "available_cores", "check_workers", "resolve_workers",
           "run_kernel", "slices"]


class Kernel(Protocol):
    """What worker processes run on a slice of a batch: a picklable recipe of a metric's engine whose
    values this process turns into results (``PackMetric._results_from_kernel``)."""

    def __call__(self, outputs: list[str], references: list[list[str]]) -> Any: ...


class StayInProcess(Exception):
    """The batch is scored in this process instead (why: the message); raised before any slice
    has been handed back, so the caller starts over serially and nothing is mixed."""


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
    if in_a_worker():
        return 1
    if count is None:
        if items < PARALLEL_MIN_ITEMS:
            return 1
        context = current_context()
        if context is not None:
            return available_cores() if context.has_pools() or context.would_fork() else 1
        return available_cores() if choose_start_method(None, builds_models=False) == "fork" else 1
    return count


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


def run_kernel(kernel: Kernel, outputs: Sequence[str], references: Sequence[Any],
               workers: int) -> Iterator[tuple[int, int, Any]]:
    """``(start, stop, values)`` for each slice, in order, as the workers finish them, on the
    current ``ScoringContext``'s pool (or one started for this batch). Raises ``StayInProcess``
    when processes would not help (one slice), when the kernel names code of a ``__main__`` that
    forkserver workers cannot import, or when a worker died (the context drops the pool, the next
    batch starts another): the caller then scores the whole batch in its own process."""
    ranges = slices(len(outputs), workers)
    if len(ranges) < 2:
        raise StayInProcess("one slice")
    context = current_context()
    if context is not None:
        yield from _run_slices(context, kernel, outputs, references, workers, ranges)
        return
    with ScoringContext() as context:                 # this batch's own pool, stopped when it ends
        yield from _run_slices(context, kernel, outputs, references, workers, ranges)


def _run_slices(context: ScoringContext, kernel: Kernel, outputs: Sequence[str], references: Sequence[Any],
                workers: int, ranges: list[tuple[int, int]]) -> Iterator[tuple[int, int, Any]]:
    blob = pickle.dumps(kernel)
    key = hashlib.sha1(blob).hexdigest()
    pool = context.pool(min(workers, len(ranges)))
    if pool.method != "fork" and b"__main__" in blob:
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
        context.drop(pool)
        warnings.warn("a scoring worker process died; this batch is scored again in this process", stacklevel=3)
        raise StayInProcess("a worker process died") from None
    finally:
        for future in futures:
            if future is not None:
                future.cancel()

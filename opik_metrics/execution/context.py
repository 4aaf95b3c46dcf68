"""A scoring context: the worker processes that large ``score_batch`` calls run on, owned by a
``with`` block. Inside one, the pools are started on first need and kept for later batches;
they stop when the block ends. Outside any, a large batch starts its pool for that call only.
Nothing is kept in the process between contexts, so nothing has to be forgotten after a fork: a
process forked inside a context does not see it (its pools are its parent's)."""
from __future__ import annotations

import threading
from contextvars import ContextVar, Token
from typing import Any

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opik_metrics.execution.worker_pools import WorkerPool

# worker_pools (multiprocessing, concurrent.futures) is imported when a pool is wanted: the metrics'
# speed helpers ask this module whether they are on, and need nothing more
_current: ContextVar["ScoringContext | None"] = ContextVar("opik_metrics_scoring_context", default=None)


class ScoringContext:
    """Owns the kernel pools of ``score_batch`` (one per worker count) for a ``with`` block, in the
    thread that enters it (a context variable: threads started inside the block start outside it).

    Args:
        start_method: how its workers start: "fork", "forkserver" or "spawn"; None: fork where
            this process runs no other thread, else forkserver (``choose_start_method``).
        speed_helpers: False takes the plain reference path inside the block: no collector pause,
            ScoreResults built by keywords, a metadata dict of its own for each result. The numbers
            are the same either way (a test runs both); only the time differs.

    Examples:
        >>> from opik_metrics import ROUGE
        >>> from opik_metrics.execution import ScoringContext
        >>> with ScoringContext():        # several large batches on one pool
        ...     scores = [ROUGE(track=False).score_batch(["a b"], ["a c"])[0][2].value for _ in range(2)]
        >>> scores
        [0.5, 0.5]
    """

    def __init__(self, start_method: str | None = None, *, speed_helpers: bool = True) -> None:
        if start_method is not None:
            from opik_metrics.execution.worker_pools import choose_start_method

            choose_start_method(start_method, builds_models=False)       # checked now, not at the first batch
        self.start_method = start_method
        self.speed_helpers = bool(speed_helpers)
        self._pools: dict[int, WorkerPool] = {}
        self._lock = threading.Lock()
        self._token: Token | None = None
        self._owner: int | None = None

    # -- the with block -------------------------------------------------------------------------
    def __enter__(self) -> "ScoringContext":
        import os

        if self._token is not None:
            raise RuntimeError("this ScoringContext is already entered; make another one")
        self._owner = os.getpid()
        self._token = _current.set(self)
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        self.close(wait=kind is None)

    def owned_here(self) -> bool:
        """Whether this process entered the context (a forked child did not: the pools are not its own)."""
        import os

        return self._owner == os.getpid()

    # -- its pools --------------------------------------------------------------------------------
    def pool(self, workers: int) -> WorkerPool:
        """The kept pool of ``workers`` processes, started now if it is not there yet."""
        from opik_metrics.execution.worker_pools import WorkerPool, choose_start_method

        with self._lock:
            pool = self._pools.get(workers)
            if pool is None:
                method = choose_start_method(self.start_method, builds_models=False, own_threads=self.threads())
                pool = self._pools[workers] = WorkerPool(workers, start_method=method, kept=True)
            return pool

    def has_pools(self) -> bool:
        return bool(self._pools)

    def would_fork(self) -> bool:
        """Whether a pool started now would fork (what lets a large batch use every core unasked)."""
        from opik_metrics.execution.worker_pools import choose_start_method

        return choose_start_method(self.start_method, builds_models=False, own_threads=self.threads()) == "fork"

    def drop(self, pool: WorkerPool) -> None:
        """Stop ``pool`` (a worker died): the next batch starts a fresh one."""
        with self._lock:
            for size, kept in list(self._pools.items()):
                if kept is pool:
                    del self._pools[size]
        pool.close(wait=False)

    def threads(self) -> int:
        """Threads this context's pools run in this process."""
        return sum(pool.threads for pool in list(self._pools.values()))

    def close(self, *, wait: bool = True) -> None:
        """Stop every pool (``wait``: until their workers have exited)."""
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close(wait=wait)


def current_context() -> ScoringContext | None:
    """The context of the innermost ``with ScoringContext()`` around this call, in this process."""
    context = _current.get()
    return context if context is not None and context.owned_here() else None


def speed_helpers_on() -> bool:
    """Whether the speed helpers (collector pause, positional results, shared metadata) are on:
    always, but inside ``with ScoringContext(speed_helpers=False)``."""
    context = current_context()
    return context is None or context.speed_helpers


def other_threads_than_ours() -> bool:
    """Whether a Python thread runs here besides the caller and the current context's pools."""
    context = current_context()
    return threading.active_count() - (context.threads() if context is not None else 0) != 1

"""Gather calls that arrive together from several threads (opik.evaluate's workers) into one
batched call: the first caller waits a few ms for company, runs the batch, hands out results.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_QUEUED, _TAKEN, _DONE = 0, 1, 2


class _Slot(Generic[T, R]):
    __slots__ = ("item", "state", "result", "error")

    def __init__(self, item: T) -> None:
        self.item = item
        self.state = _QUEUED
        self.result: R | None = None
        self.error: BaseException | None = None


class MicroBatcher(Generic[T, R]):
    """``submit(item)`` returns ``fn([.., item, ..])``'s entry for it; concurrent submits share calls
    (one batch runs at a time; a lone caller never waits; a failed batch is retried item by item)."""

    def __init__(self, fn: Callable[[list[T]], Sequence[R]], max_batch: int = 64,
                 max_wait_s: float = 0.005) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0, got {max_wait_s}")
        self._fn = fn
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self._cond = threading.Condition()
        self._queue: list[_Slot[T, R]] = []
        self._leading = False
        self._active = 0        # threads inside submit()
        self._running = False   # a batch is being computed
        self.batches = 0        # statistics, for tests and tuning
        self.items = 0

    def submit(self, item: T) -> R:
        slot: _Slot[T, R] = _Slot(item)
        with self._cond:
            self._active += 1
            self._queue.append(slot)
            self._cond.notify_all()
            try:
                while slot.state != _DONE:
                    if slot.state == _QUEUED and not self._leading:
                        self._lead()
                    else:
                        self._cond.wait()
            finally:
                self._active -= 1
        if slot.error is not None:
            raise slot.error
        return slot.result  # type: ignore[return-value]

    def _lead(self) -> None:
        """Called with the lock held: wait for the running batch, collect, run unlocked, publish."""
        self._leading = True
        while self._running:  # one batch at a time: arrivals meanwhile form the next batch
            self._cond.wait()
        if self._active > 1 and self.max_wait_s > 0:  # others are calling: give stragglers a moment
            deadline = time.monotonic() + self.max_wait_s
            while len(self._queue) < self.max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        batch = self._queue[:self.max_batch]
        del self._queue[:self.max_batch]
        for s in batch:
            s.state = _TAKEN
        self._running = True
        self._leading = False
        self._cond.notify_all()  # the next queued caller becomes leader and waits for this batch
        self._cond.release()
        try:
            self._run(batch)
        finally:
            self._cond.acquire()
            for s in batch:
                s.state = _DONE
            self._running = False
            self.batches += 1
            self.items += len(batch)
            self._cond.notify_all()

    def _run(self, batch: list[_Slot[T, R]]) -> None:
        try:
            results = list(self._fn([s.item for s in batch]))
            if len(results) != len(batch):
                raise RuntimeError(f"batched call returned {len(results)} results for {len(batch)} items")
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
                return
            for s in batch:  # isolate the failing item(s)
                raise_into(s, self._fn)
            return
        for s, r in zip(batch, results):
            s.result = r


def raise_into(slot: _Slot, fn: Callable) -> None:
    """Run one item alone, storing its result or its exception on the slot."""
    try:
        slot.result = list(fn([slot.item]))[0]
    except Exception as exc:  # handed back to the caller that submitted the item
        slot.error = exc

"""Pages read by a thread of their own one page ahead of the scoring: the next page's search runs
on the server while this one is scored (waiting for search answers was a fifth of a run). The
reader's error is raised where the page it failed on would have come; when the caller stops early
the reader stops after the request it is in (not waited for)."""
from __future__ import annotations

import queue
import threading
from typing import Generator, Iterator, TypeVar, cast

T = TypeVar("T")
_POLL_SECONDS = 0.1


def read_ahead(source: Iterator[T], depth: int = 1) -> Generator[T, None, None]:
    """``source``'s items in order, at most ``depth`` read (or being read) beyond the one the
    caller holds: a reader takes a slot before each read, the caller frees it when it takes the item."""
    box: queue.Queue[tuple[T | None, BaseException | None, bool]] = queue.Queue()    # bounded by the slots
    slots = threading.Semaphore(depth)
    stop = threading.Event()

    def take_slot() -> bool:
        while not stop.is_set():
            if slots.acquire(timeout=_POLL_SECONDS):
                return True
        return False

    def run() -> None:
        try:
            while take_slot():
                try:
                    item = next(source)
                except StopIteration:
                    box.put((None, None, True))
                    return
                box.put((item, None, False))
        except BaseException as exc:        # raised in the caller's thread, in order
            box.put((None, exc, True))

    thread = threading.Thread(target=run, name="opik-metrics-page-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, error, done = box.get()
            if error is not None:
                raise error
            if done:
                return
            slots.release()
            yield cast(T, item)
    finally:
        stop.set()

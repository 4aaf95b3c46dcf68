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
    """``source``'s items in order, read up to ``depth`` items ahead of the caller."""
    box: queue.Queue[tuple[T | None, BaseException | None, bool]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def hand(item: T | None, error: BaseException | None = None, done: bool = False) -> bool:
        while not stop.is_set():
            try:
                box.put((item, error, done), timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in source:
                if not hand(item):
                    return
        except BaseException as exc:        # raised in the caller's thread, in order
            hand(None, exc, done=True)
            return
        hand(None, done=True)

    thread = threading.Thread(target=run, name="opik-metrics-page-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, error, done = box.get()
            if error is not None:
                raise error
            if done:
                return
            yield cast(T, item)
    finally:
        stop.set()

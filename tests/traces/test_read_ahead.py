"""Pages read one ahead of the scoring (traces/read_ahead.py): in order, the reader's error raised
where its page would have come, and the reader stops when the caller does."""
from __future__ import annotations

import threading
import time
from contextlib import closing

import pytest

from opik_metrics.traces.read_ahead import read_ahead


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "opik-metrics-page-reader"]


def test_items_come_in_order_and_the_reader_is_ahead_by_exactly_one():
    read: list[int] = []

    def source():
        for k in range(5):
            read.append(k)
            yield [k]

    got = []
    for page in read_ahead(source()):
        deadline = time.monotonic() + 5
        while len(read) < min(5, page[0] + 2) and time.monotonic() < deadline:
            time.sleep(0.01)        # the next page is read meanwhile
        time.sleep(0.05)
        got.append(page[0])
        assert len(read) == min(5, page[0] + 2)          # this page and the next: never two ahead
    assert got == [0, 1, 2, 3, 4]


def test_the_error_comes_after_the_pages_before_it():
    def source():
        yield [1]
        yield [2]
        raise ValueError("page 3 refused")

    got = []
    with pytest.raises(ValueError, match="page 3 refused"):
        for page in read_ahead(source()):
            got.append(page[0])
    assert got == [1, 2]


def test_a_caller_that_stops_stops_the_reader():
    read: list[int] = []

    def endless():
        k = 0
        while True:
            read.append(k)
            yield [k]
            k += 1

    with closing(read_ahead(endless())) as ahead:
        for page in ahead:
            if page[0] == 2:
                break
    deadline = time.monotonic() + 5
    while _readers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _readers() == [] and 3 <= len(read) <= 4      # pages 0-2, and at most the one it was ahead by

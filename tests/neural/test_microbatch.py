"""MicroBatcher: concurrent submits are gathered into shared calls; each caller gets its own
result (or its own error), in any interleaving."""
from __future__ import annotations

import threading
import time

import pytest

from opik_metrics.metric_kit.microbatch import MicroBatcher


def _slow_square(calls: list[list[int]]):
    def fn(items: list[int]) -> list[int]:
        calls.append(list(items))
        time.sleep(0.05)  # long enough that other threads queue meanwhile
        return [x * x for x in items]
    return fn


def _run_threads(batcher: MicroBatcher, values: list[int]) -> dict[int, object]:
    out: dict[int, object] = {}
    barrier = threading.Barrier(len(values))

    def worker(v: int) -> None:
        barrier.wait()
        try:
            out[v] = batcher.submit(v)
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion
            out[v] = exc

    threads = [threading.Thread(target=worker, args=(v,)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return out


def test_single_caller_gets_its_result_in_a_batch_of_one():
    calls: list[list[int]] = []
    batcher = MicroBatcher(_slow_square(calls), max_batch=8, max_wait_s=0.005)
    assert [batcher.submit(v) for v in (2, 3)] == [4, 9]
    assert calls == [[2], [3]]


def test_concurrent_calls_share_batches_and_keep_their_own_results():
    calls: list[list[int]] = []
    batcher = MicroBatcher(_slow_square(calls), max_batch=4, max_wait_s=0.02)
    values = list(range(1, 13))
    out = _run_threads(batcher, values)
    assert out == {v: v * v for v in values}
    assert sorted(x for c in calls for x in c) == values       # every item computed exactly once
    assert max(len(c) for c in calls) <= 4                      # max_batch respected
    assert len(calls) < len(values)                             # and calls were gathered


def test_a_failing_item_fails_only_its_caller():
    def fn(items: list[int]) -> list[int]:
        time.sleep(0.02)
        if 13 in items:
            raise ValueError("item 13 is unlucky")
        return [x + 1 for x in items]

    batcher = MicroBatcher(fn, max_batch=8, max_wait_s=0.02)
    out = _run_threads(batcher, [11, 12, 13, 14])
    assert isinstance(out[13], ValueError) and "unlucky" in str(out[13])
    assert {k: v for k, v in out.items() if k != 13} == {11: 12, 12: 13, 14: 15}


def test_wrong_result_count_is_an_error():
    batcher = MicroBatcher(lambda items: [], max_batch=2)
    with pytest.raises(RuntimeError, match="0 results for 1 items"):
        batcher.submit(1)


def test_bad_settings():
    with pytest.raises(ValueError):
        MicroBatcher(lambda x: x, max_batch=0)
    with pytest.raises(ValueError):
        MicroBatcher(lambda x: x, max_wait_s=-1)

"""The merge's and the reader's fast paths (issue 58) give what the value-by-value checks give:
statistics of plain finite floats summed at once, any other row (ints, NaN, infinity, a sum that
overflows, a short row) through the checks; the garbage collector left as it was found."""
from __future__ import annotations

import gc
import math

import pytest

from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord, no_gc
from opik_metrics.compare.statistics.trials import _plain_floats, merge_trials


def _trials(*statistics: object) -> ExperimentRecords:
    items = [ItemRecord(key="a", position=k, input={}, output={"output": "x"}, scores={"s": 0.1 * (k + 1)},
                        metadata={"s": {"statistics": row, "n": 1}}) for k, row in enumerate(statistics)]
    return ExperimentRecords(name="e", source="test", dataset="d", status="finished", config={}, items=items)


def test_plain_floats_sum_at_once() -> None:
    merged = merge_trials(_trials([1.0, 2.5], [3.0, 4.0], [0.5, 0.25])).items[0]
    assert merged.metadata["s"] == {"statistics": [4.5, 6.75], "n": 1}
    assert merged.scores["s"] == (0.1 + 0.2 + 0.30000000000000004) / 3


@pytest.mark.parametrize("rows, expected", [
    (([1, 2], [3.0, 4.0], [1, 2]), [5.0, 8.0]),                 # ints are numbers too: summed, through the checks
    (([1.0, 2.0], [1.0, math.nan], [3.0, 4.0]), [1.0, math.nan]),   # a damaged row is kept as the item's
    (([1.0, 2.0], [1.0, math.inf], [3.0, 4.0]), [1.0, math.inf]),
    (([1e308, 1.0], [1e308, 1.0], [1.0, 1.0]), [math.inf, 3.0]),    # finite values whose sum overflows: summed
    (([1.0, 2.0], [3.0], [1.0, 2.0]), [3.0]),                   # the shorter row is the damaged one
])
def test_other_rows_take_the_checks(rows: tuple, expected: list) -> None:
    got = merge_trials(_trials(*rows)).items[0].metadata["s"]["statistics"]
    assert len(got) == len(expected)
    assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(got, expected))


def test_plain_floats() -> None:
    assert _plain_floats([[1.0, 2.0], [0.0]])
    assert not _plain_floats([[1.0, 2]])
    assert not _plain_floats([[1.0, math.nan]])
    assert not _plain_floats([[1e308], [1e308]])
    assert not _plain_floats([[True, 1.0]])


def test_no_gc_restores_the_collector() -> None:
    assert gc.isenabled()
    with no_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with no_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

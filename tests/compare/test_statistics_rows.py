"""The comparison reads a corpus score's statistics rows in one pass (``_statistics_rows``, numpy
checking plain rows at once): a usable row is kept, a scored item that records none is counted,
and every row a damaged or hand-edited store or record file could hold is refused, naming the
experiment, the item and the field, exactly where the one-row test ``statistics_damage`` says so."""
from __future__ import annotations

import math

import numpy as np
import pytest

from opik_metrics.compare.analysis import _statistics_rows, statistics_damage
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.core.facts import CorpusFacts, ScoreFacts

GOOD = [[1, 2, 3], [1.5, 2.0, 3], [0, 0, 0], [np.float64(1.0), 2, 3], [2**60, 1, 0],
        [1e308, 1e308, 1e308], [-0.0, 5, 6]]
DAMAGED = [([1, math.inf, 3], "hold b (value 2 of 3) = inf, not a finite number"),
           ([1, math.nan, 3], "hold b (value 2 of 3) = NaN, not a finite number"),
           ([1, -math.inf, 3], "hold b (value 2 of 3) = -inf, not a finite number"),
           ([True, 2, 3], "hold a (value 1 of 3) = True, not a number"),
           ([1, "2", 3], "hold b (value 2 of 3) = '2', not a number"),
           ([1, None, 3], "hold b (value 2 of 3) = None, not a number"),
           ([1, 2], "have 2 value(s), not 3 (a, b, c)"),
           ([1, 2, 3, 4], "have 4 value(s), not 3 (a, b, c)"),
           ("1 2 3", "are '1 2 3', not a list of 3 numbers"),
           ([np.float64("nan"), 2, 3], "hold a (value 1 of 3) = NaN, not a finite number"),
           ([], "have 0 value(s), not 3 (a, b, c)"),
           ([np.int64(4), 2, 3], "hold a (value 1 of 3) = np.int64(4), not a number")]   # no reader gives one
CORPUS = CorpusFacts(score=ScoreFacts(name="corpus_bleu"), carrier="bleu", fields=("a", "b", "c"),
                     formula="opik_metrics.core.statistics:mean_formula")


def _item(key: str, position: int, row) -> ItemRecord:
    item = ItemRecord(key=key, position=position, input={}, output={"output": "x"})
    item.scores["bleu"] = 0.5
    if row is not None:
        item.metadata["bleu"] = {"statistics": row}
    return item


def _experiment(items: list[ItemRecord]) -> ExperimentRecords:
    return ExperimentRecords(name="e.jsonl", source="test", dataset="d", status="completed", config={}, items=items)


def test_usable_rows_are_kept_and_scored_items_without_statistics_are_counted():
    items = [_item(f"k{k}", k, row) for k, row in enumerate(GOOD)]
    items.append(_item("no-statistics", 50, None))
    items.append(ItemRecord(key="failed", position=99, input={}, output=None, failed=True, scores={"bleu": 0.5},
                            metadata={"bleu": {"statistics": "damaged but failed: never read"}}))
    items.append(ItemRecord(key="no-score", position=100, input={}, output={}, metadata={"bleu": {"statistics": "x"}}))
    rows, missing = _statistics_rows(CORPUS, items, _experiment(items))
    assert rows == {f"k{k}": row for k, row in enumerate(GOOD)}
    assert missing == {"no-statistics"}
    assert all(statistics_damage(CORPUS, row) is None for row in GOOD)


@pytest.mark.parametrize("row, words", DAMAGED)
def test_a_damaged_row_is_a_data_error_naming_the_experiment_the_item_and_the_field(row, words):
    items = [_item(f"k{k}", k, good) for k, good in enumerate(GOOD)]
    items.insert(3, _item("r7", 6, row))
    assert statistics_damage(CORPUS, row) == words
    with pytest.raises(ValueError) as raised:
        _statistics_rows(CORPUS, items, _experiment(items))
    assert str(raised.value) == (f"e.jsonl: item r7 (row 7): the statistics of bleu (for corpus_bleu) {words}; "
                                 "the record was edited or damaged (score it again)")

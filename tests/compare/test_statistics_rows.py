"""The comparison reads a corpus score's statistics rows in one pass (``_statistics_rows``, numpy
checking plain rows at once): the same rows, kept and refused, as the one-row test ``_stats_row``
on rows a damaged or hand-edited store or record file could hold."""
from __future__ import annotations

import math

import numpy as np

from opik_metrics.compare.analysis import _stats_row, _statistics_rows
from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.core.facts import CorpusFacts, ScoreFacts

ROWS = [[1, 2, 3], [1.5, 2.0, 3], [0, 0, 0], [1, math.inf, 3], [1, math.nan, 3], [1, -math.inf, 3], [True, 2, 3],
        [1, "2", 3], [1, None, 3], [1, 2], [1, 2, 3, 4], "1 2 3", None, [np.float64(1.0), 2, 3], [np.int64(4), 2, 3],
        [np.float64("nan"), 2, 3], [2**60, 1, 0], [1e308, 1e308, 1e308], [-0.0, 5, 6], []]


def _items() -> list[ItemRecord]:
    items = []
    for k, row in enumerate(ROWS):
        item = ItemRecord(key=f"k{k}", position=k, input={}, output={"output": "x"})
        item.scores["bleu"] = 0.5
        item.metadata["bleu"] = {"statistics": row}
        items.append(item)
    items.append(ItemRecord(key="failed", position=99, input={}, output=None, failed=True,
                            scores={"bleu": 0.5}, metadata={"bleu": {"statistics": [1, 2, 3]}}))
    items.append(ItemRecord(key="no-score", position=100, input={}, output={}, metadata={"bleu": {"statistics": [1, 2, 3]}}))
    return items


def test_the_one_pass_keeps_and_refuses_exactly_what_the_one_row_test_does():
    corpus = CorpusFacts(score=ScoreFacts(name="corpus_bleu"), carrier="bleu", fields=("a", "b", "c"),
                         formula="opik_metrics.core.statistics:mean_formula")
    items = _items()
    expected = {item.key: row for item in items if (row := _stats_row(corpus, item)) is not None}
    experiment = ExperimentRecords(name="e", source="test", dataset="d", status="completed", config={}, items=items)
    assert _statistics_rows(corpus, items, experiment) == expected
    assert set(expected) == {"k0", "k1", "k2", "k13", "k16", "k17", "k18"}     # the check is not vacuous

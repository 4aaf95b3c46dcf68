"""ExperimentRecords built by hand, for comparisons whose every number can be worked out."""
from __future__ import annotations

from typing import Sequence

from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord


def experiment(name: str, scores: dict[str, Sequence[float | None]], failed: Sequence[int] = (),
               config: dict | None = None, dataset: str = "d") -> ExperimentRecords:
    """Item k has score s[k] for each score name (None: that score failed); ``failed`` items have no output."""
    n = len(next(iter(scores.values())))
    items = []
    for k in range(n):
        item = ItemRecord(key=f"k{k}", position=k, input={"reference": f"reference {k}"},
                          output=None if k in failed else {"output": f"{name} output {k}"})
        if k in failed:
            item.failed, item.stage, item.reason = True, "task", f"RuntimeError: {name} failed on {k}"
        else:
            for score, values in scores.items():
                if values[k] is None:
                    item.score_failures[score] = "ValueError: bad input"
                else:
                    item.scores[score] = float(values[k])
        items.append(item)
    return ExperimentRecords(name=name, source="hand-made", dataset=dataset, status="finished",
                             config=config or {"model": name}, items=items)

"""How a run reads an entity and makes its corpus scores (traces/scoring.py): fields the SDK's model
lacks but the server sent are read, and a suite's corpus scores (a list from ``from_statistics``)
each land in the summary."""
from __future__ import annotations

from opik.rest_api.types.trace_public import TracePublic

from opik_metrics.core.statistics import Statistics
from opik_metrics.traces.fields import TraceFields
from opik_metrics.traces.reading import Selection
from opik_metrics.traces.scoring import TraceScoreReport, _row, _Run


def test_a_row_holds_the_models_fields_and_what_the_server_sent_beyond_them():
    trace = TracePublic(id="t1", start_time="2026-11-20T00:00:00Z", output={"output": "a cat"},
                        metadata={"reference": "the cat"}, first_message={"input": "hi"})
    row, scores = _row(trace)
    assert row["id"] == "t1" and row["output"] == {"output": "a cat"} and row["metadata"] == {"reference": "the cat"}
    assert row["first_message"] == {"input": "hi"}            # not a TracePublic field: the model keeps it as extra
    assert row["last_message"] is None and row["input"] is None and scores == []


class _Result:
    def __init__(self, name, value, failed=False):
        self.name, self.value, self.scoring_failed = name, value, failed


class _Suite:
    """A metric whose corpus statistics make several corpus scores, as COCOCaption's do."""
    name = "suite"

    def from_statistics(self, total):
        n = total.values[0]
        return [_Result("corpus_a", n / 2), _Result("corpus_b", n * 2), _Result("corpus_c", 0.0, failed=True)]


class _One:
    name = "one"

    def from_statistics(self, total):
        return _Result("corpus_one", total.values[0] + 1)


def test_every_corpus_score_of_a_suite_is_kept_and_a_failed_one_left_out():
    run = _Run([], TraceFields.parse(None), Selection("p"), False, TraceScoreReport("p"))
    run.metrics = [_Suite(), _One()]
    run.totals = {"suite": Statistics(("n",), (6.0,)), "one": Statistics(("n",), (2.0,))}
    run.counted = {"suite": 3, "one": 2}
    values, counts = run.corpus()
    assert values == {"corpus_a": 3.0, "corpus_b": 12.0, "corpus_one": 3.0}
    assert counts == {"corpus_a": 3, "corpus_b": 3, "corpus_one": 2}

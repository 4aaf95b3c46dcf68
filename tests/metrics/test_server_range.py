"""A score an Opik server cannot store (not finite, or beyond +-999,999,999.999999999: the range of
FeedbackScore in apps/opik-backend, and the Decimal(18, 9) of experiment scores) is marked failed,
its value kept in the metadata, so that Opik's SDK does not send it and lose a whole batch."""
from __future__ import annotations

import math

import pytest
from _opik import ScoreResult

from opik_metrics.experiments.experiment_scorers import run_experiment_scorers
from opik_metrics.scoring import Scorer, as_results
from opik_metrics.metric_kit.server_range import mark_unstorable, shown, storable, unsent, value_of


@pytest.mark.parametrize("value, expected", [
    (0.0, True), (-3.5, True), (999_999_999.0, True), (999_999_999.9999998, True), (-999_999_999.9999998, True),
    (1e9, False), (-1e9, False), (999_999_999.999999999, False),   # the float nearest the limit is 1e9 itself
    (1e12, False), (math.inf, False), (-math.inf, False), (math.nan, False), (None, False), ("0.5", True),
    (10 ** 400, False)])
def test_storable_is_the_servers_range_as_json_writes_the_value(value, expected):
    assert storable(value) is expected


def test_an_unstorable_result_is_failed_with_its_value_and_reason_kept():
    kept = ScoreResult(name="ok", value=0.5)
    huge = ScoreResult(name="ppl", value=1e12, reason="text unlike the training data", metadata={"n_tokens": 3})
    infinite = ScoreResult(name="inf", value=math.inf)
    not_a_number = ScoreResult(name="nan", value=math.nan)
    already = ScoreResult(name="failed", value=0.0, reason="ValueError: x", scoring_failed=True)
    mark_unstorable([kept, huge, infinite, not_a_number, already])
    assert (kept.value, kept.scoring_failed, kept.reason, kept.metadata) == (0.5, False, None, None)
    assert huge.scoring_failed and huge.value == 0.0 and huge.metadata == {"n_tokens": 3, "unsent_value": 1e12}
    assert huge.reason.startswith("text unlike the training data; 1000000000000.0 is not a score an Opik server")
    assert infinite.metadata == {"unsent_value": "inf"} and not_a_number.metadata == {"unsent_value": "nan"}
    assert (already.reason, already.metadata) == ("ValueError: x", None)
    assert [unsent(r) for r in (kept, huge, infinite, already)] == [False, True, True, False]
    assert value_of(huge) == 1e12 and math.isinf(value_of(infinite)) and value_of(kept) == 0.5
    assert shown(-math.inf) == "-inf" and shown(2.5) == 2.5


def test_a_users_metric_in_the_runner_is_checked_too():
    """``opik_metrics.evaluate`` scores a user's own metric through its ``Scorer`` (and its
    experiment scorers through ``run_experiment_scorers``): the same rule holds for them."""
    class Huge:
        name = "huge"

        def score(self, output, **ignored):
            return ScoreResult(name="huge", value=float(len(output)) * 1e9)

    (item_a,), (item_b,) = Scorer([Huge()]).results([{"output": ""}, {"output": "ab"}])
    assert (item_a[1].value, item_a[1].scoring_failed) == (0.0, False)
    assert item_b[1].scoring_failed and item_b[1].metadata == {"unsent_value": 2e9}
    (corpus,) = run_experiment_scorers([lambda results: ScoreResult(name="corpus", value=math.nan)], [])
    assert corpus.scoring_failed and corpus.metadata == {"unsent_value": "nan"}
    assert as_results("not a result") == ["not a result"]      # left for Opik to refuse as it does

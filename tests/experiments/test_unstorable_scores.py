"""2,500 items through ``opik.evaluate`` (and 1,200 through ``opik_metrics.evaluate``) against the stand-in with
the real server's rules (tests/opik_server_rules.py): three items score inf, NaN or 1e12. The SDK
sends feedback scores of many traces in one batch, which the server validates whole, so one such
value would lose up to 1,000 other items' scores; marked failed instead, every other score arrives.
The metrics do not track (no span per score): the SDK's own work on 2,500 items is most of the time."""
from __future__ import annotations

import math

import opik
import pytest
from opik.evaluation.metrics import base_metric, score_result

from opik_metrics import BLEU, evaluate
from opik_metrics.core import ScoreFacts, Signature
from opik_metrics.metric_kit.base import ReferenceFreeMetric, ScoreResult
from tests.opik_rest_server import OpikRestServer

N = 2500
BAD = {17: math.inf, 734: math.nan, 1190: 1e12}      # item -> what the metric gives there
N_OWN = 1200            # a user's metric through opik_metrics.evaluate: past one batch of 1,000 scores


def _rows(n: int = N) -> list[dict]:
    return [{"text": f"item {k} of the set", "reference": f"item {k} of a set", "k": k} for k in range(n)]


class Surprisal(ReferenceFreeMetric):
    """A metric of the pack with no bound on its score (as perplexity): 1.5 but on the BAD items."""

    def __init__(self, name: str = "surprisal", track: bool = True) -> None:
        self.signature = Signature({"metric": "surprisal"})
        super().__init__(name=name, track=track)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, higher_is_better=False, bounds=(0.0, None))]

    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        return [[ScoreResult(name=self.name, value=BAD.get(int(o.split()[1]), 1.5))] for o in outputs]


class UsersOwn(base_metric.BaseMetric):
    """A user's own Opik metric, unaware of the server's range."""

    def __init__(self) -> None:
        super().__init__(name="users_own", track=False)

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        return score_result.ScoreResult(name="users_own", value=BAD.get(int(output.split()[1]), 2.0))


def _arrived(server: OpikRestServer, experiment: str) -> dict[int, dict[str, float]]:
    """Item k -> the feedback scores the server holds on its trace."""
    exp = server.experiment_named(experiment)
    out = {}
    for item in server.experiment_items[exp["id"]]:
        k = int(server.traces[item["trace_id"]]["input"]["text"].split()[1])
        out[k] = server.trace_scores(item["trace_id"])
    return out


def _check(server: OpikRestServer, experiment: str, metric: str, n: int = N) -> None:
    arrived = _arrived(server, experiment)
    assert sorted(arrived) == list(range(n))
    assert [k for k in range(n) if metric not in arrived[k]] == sorted(BAD)
    assert all(arrived[k][metric] == (1.5 if metric == "surprisal" else 2.0) for k in range(n) if k not in BAD)
    assert all("bleu" in arrived[k] for k in range(n))
    assert not [r for r in server.invalid if "feedback-scores" in r], server.invalid[:3]


@pytest.mark.xdist_group("opik_http")
def test_opik_evaluate_with_the_packs_metrics_loses_no_other_score(monkeypatch):
    with OpikRestServer() as server:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        server.add_dataset("numbers", _rows())
        client = opik.Opik()
        result = opik.evaluate(dataset=client.get_dataset("numbers"), task=lambda item: {"output": item["text"]},
                               scoring_metrics=[BLEU(track=False), Surprisal(track=False)], experiment_name="packs", task_threads=4,
                               verbose=0)
        opik.flush_tracker()
        client.flush()
        _check(server, "packs", "surprisal")
    by_item = {int(t.test_case.task_output["output"].split()[1]): t.score_results for t in result.test_results}
    (inf,) = [r for r in by_item[17] if r.name == "surprisal"]
    assert inf.scoring_failed and inf.metadata["unsent_value"] == "inf" and inf.value == 0.0


@pytest.mark.xdist_group("opik_http")
def test_opik_metrics_evaluate_with_a_users_metric_loses_no_other_score(monkeypatch):
    with OpikRestServer() as server:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        summary = evaluate(dataset=_rows(N_OWN), task=lambda item: {"output": item["text"]},
                           scoring_metrics=[BLEU(track=False), UsersOwn()], experiment_name="users", dataset_name="numbers",
                           verbose=0, task_threads=4)
        opik.flush_tracker()
        _check(server, "users", "users_own", N_OWN)
    assert summary.backend == "opik" and summary.items == N_OWN
    assert summary.scores["users_own"] == 2.0          # the mean of what arrived: the three are failed


def test_against_a_real_opik_server_no_other_score_is_lost():
    """The same on a real server, when one is configured (skipped otherwise): 2,500 items with the
    three that no server stores, through ``opik_metrics.evaluate`` with the pack's metric."""
    import uuid

    from opik_metrics.experiments.opik_server import OpikServerUnavailable, choose_backend

    try:
        choose_backend("opik", timeout=2.0)
    except OpikServerUnavailable as exc:
        pytest.skip(f"no Opik server: {exc}")
    name = f"opik-metrics-unstorable-{uuid.uuid4().hex[:8]}"
    evaluate(dataset=_rows(), task=lambda item: {"output": item["text"]},
             scoring_metrics=[BLEU(track=False), Surprisal(track=False)], experiment_name=name,
             dataset_name=name, verbose=0, task_threads=4, backend="opik")
    opik.flush_tracker()
    experiment = next(e for e in opik.Opik().get_experiments_by_name(name) if e.name == name)
    arrived = {int(row.evaluation_task_output["output"].split()[1]): {s["name"] for s in row.feedback_scores or []}
               for row in experiment.get_items(max_results=2 * N)}
    assert sorted(arrived) == list(range(N))
    assert [k for k in range(N) if "surprisal" not in arrived[k]] == sorted(BAD)
    assert all("bleu" in arrived[k] for k in range(N))

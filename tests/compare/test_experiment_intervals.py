"""``interval_scores``: experiment scores that carry each score's uncertainty, from ``opik.evaluate``
itself (run for real, over HTTP to tests/opik_rest_server.py) and from the local runner; the same
intervals as the comparison report, the corpus score equal to sacrebleu's, failures left out."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import opik
import pytest
import sacrebleu
from opik.evaluation.metrics.score_result import ScoreResult

from opik_metrics import BLEU
from opik_metrics.compare.analysis import compare_experiments
from opik_metrics.compare.publishing.experiment_intervals import interval_scores
from opik_metrics.compare.reading.sources import load_experiments
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.systems import answer_with, items_for
from tests.compare.test_publish_opik import GOOD, POOR, REFS, Latency
from tests.opik_rest_server import OpikRestServer


def test_opik_evaluate_logs_mean_interval_and_corpus_score_per_metric(monkeypatch):
    rows = [{"reference": r, "pred": p} for r, p in zip(REFS, GOOD)]
    with OpikRestServer() as server:          # traces and scores go to it too, under its rules
        server.add_dataset("captions", rows)
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        client = opik.Opik()
        metrics = [BLEU(), Latency()]
        opik.evaluate(dataset=client.get_dataset("captions"), task=lambda item: {"output": item["pred"]},
                      scoring_metrics=metrics, experiment_scoring_functions=interval_scores(metrics),
                      experiment_name="good", task_threads=1, verbose=0)
        data = next(e for e in opik.Opik().get_experiments_by_name("good") if e.name == "good").get_experiment_data()
        assert server.invalid == [] and server.unexpected == []
    scores = {s.name: s.value for s in data.experiment_scores}
    bleu = [sacrebleu.sentence_bleu(p, [r]).score / 100 for r, p in zip(REFS, GOOD)]
    # the server keeps experiment scores at 9 decimals (tests/opik_server_rules.py): half a unit of the 9th
    assert scores["bleu.mean"] == pytest.approx(np.mean(bleu), abs=5e-10)
    assert scores["corpus_bleu"] == pytest.approx(sacrebleu.corpus_bleu(GOOD, [REFS]).score / 100, abs=5e-10)
    assert all(round(v, 9) == v for v in scores.values())
    latency = [10.0 * len(p.split()) + len(p) % 3 for p in GOOD]
    assert scores["latency.mean"] == pytest.approx(np.mean(latency))
    for name in ("bleu", "corpus_bleu", "latency"):
        value = scores[f"{name}.mean"] if f"{name}.mean" in scores else scores[name]
        assert scores[f"{name}.ci_low"] <= value <= scores[f"{name}.ci_high"]


def test_the_intervals_are_the_comparison_reports(tmp_path):
    path = tmp_path / "store.sqlite"
    metrics = [BLEU(), Latency()]
    for name, outputs in (("poor", POOR), ("good", GOOD)):
        run_experiment(name, items_for(REFS), answer_with(outputs), metrics, dataset_name="shared",
                       scorers=interval_scores(metrics), store=path, progress=False)
    with ExperimentStore(path) as store:
        comparison = compare_experiments(load_experiments(["poor", "good"], store=store))
        logged = {name: store.info(name).experiment_scores for name in ("poor", "good")}
    for score in ("bleu", "corpus_bleu", "latency"):
        for name in ("poor", "good"):
            entry = comparison.scores[score][name]
            assert logged[name][f"{score}.ci_low"] == pytest.approx(entry.low, abs=1e-12)
            assert logged[name][f"{score}.ci_high"] == pytest.approx(entry.high, abs=1e-12)


def _result(value, failed=False):
    return SimpleNamespace(score_results=[ScoreResult(name="latency", value=value, scoring_failed=failed)])


def test_failed_and_non_finite_items_are_left_out_and_counted():
    (score,) = interval_scores([Latency()], resamples=200, seed=1)
    results = score([_result(1.0), _result(0.0, failed=True), _result(3.0), _result(float("inf")), _result(2.0)])
    by_name = {r.name: r for r in results}
    assert by_name["latency.mean"].value == 2.0
    assert "3 items" in by_name["latency.mean"].reason and "2 item(s) left out" in by_name["latency.mean"].reason
    assert score([_result(0.0, failed=True)]) == []


def test_another_confidence_is_in_the_names_and_bad_settings_fail_at_once():
    (score,) = interval_scores([Latency()], confidence=0.9)
    assert {r.name for r in score([_result(1.0), _result(2.0)])} == {"latency.mean", "latency.ci90_low",
                                                                      "latency.ci90_high"}
    with pytest.raises(ValueError, match="confidence"):
        interval_scores([Latency()], confidence=95)
    with pytest.raises(ValueError, match="resamples"):
        interval_scores([Latency()], resamples=0)

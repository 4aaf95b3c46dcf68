"""``opik_metrics.evaluate``: ``opik.evaluate``'s call with or without a server. No server
configured: the local store, resumable; a server that answers: ``opik.evaluate`` through the real
SDK over HTTP (tests/opik_rest_server.py); a configured server that does not answer: one line."""
from __future__ import annotations

import socket
import time

import opik
import pytest
import sacrebleu

from opik_metrics import BLEU, ROUGE, evaluate
from opik_metrics.experiments.opik_server import OpikServerUnavailable
from opik_metrics.experiments.store import ExperimentStore
from tests.opik_rest_server import OpikRestServer

ITEMS = [{"input": "A dog runs along the beach.", "reference": "a dog running on the beach"},
         {"input": "Two cats asleep on a sofa.", "reference": "two cats sleeping on a couch"},
         {"input": "A red bus in the city.", "reference": ["a red bus on a city street", "a bus in town"]}]


def task(item):
    return {"output": item["input"].lower().rstrip(".")}


def _corpus_bleu(items):
    outputs = [task(i)["output"] for i in items]
    refs = [i["reference"] if isinstance(i["reference"], list) else [i["reference"]] for i in items]
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(max(map(len, refs)))]
    return sacrebleu.corpus_bleu(outputs, streams).score / 100


def test_with_no_server_configured_it_runs_in_the_local_store_and_resumes(tmp_path, monkeypatch):
    monkeypatch.delenv("OPIK_URL_OVERRIDE", raising=False)
    monkeypatch.setenv("OPIK_METRICS_STORE", str(tmp_path / "default.sqlite"))
    summary = evaluate(dataset=ITEMS, task=task, scoring_metrics=[ROUGE(), BLEU()], experiment_name="first",
                       verbose=0)
    assert (summary.backend, summary.location, summary.items, summary.failed_items) == \
        ("local", str(tmp_path / "default.sqlite"), 3, 0)
    assert summary.experiment_scores["corpus_bleu"] == pytest.approx(_corpus_bleu(ITEMS), abs=1e-12)
    again = evaluate(dataset=ITEMS, task=task, scoring_metrics=[ROUGE(), BLEU()], experiment_name="first", verbose=0)
    assert again.resumed_items == 3 and again.scores == summary.scores
    with ExperimentStore(tmp_path / "default.sqlite") as store:
        assert store.info("first").dataset == "dataset" and store.info("first").items == 3


def test_store_and_nb_samples_and_a_default_name(tmp_path):
    summary = evaluate(dataset=ITEMS, task=task, scoring_metrics=[BLEU()], nb_samples=2, dataset_name="captions",
                       store=tmp_path / "runs.sqlite", verbose=0)       # a store means local, server or not
    assert summary.backend == "local" and summary.items == 2 and summary.name.startswith("captions-20")
    with pytest.raises(ValueError, match="nb_samples"):
        evaluate(dataset=ITEMS, task=task, nb_samples=0, store=tmp_path / "runs.sqlite")
    with pytest.raises(ValueError, match="dataset: expected a list of items"):
        evaluate(dataset="items.jsonl", task=task, store=tmp_path / "runs.sqlite")


def test_a_configured_server_that_does_not_answer_is_one_line_within_seconds(monkeypatch):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()                                     # accepts connections, never answers
    monkeypatch.setenv("OPIK_URL_OVERRIDE", f"http://127.0.0.1:{listener.getsockname()[1]}/api")
    started = time.monotonic()
    with pytest.raises(OpikServerUnavailable, match="did not answer within 3 s"):
        evaluate(dataset=ITEMS, task=task, scoring_metrics=[BLEU()], experiment_name="x", verbose=0)
    assert time.monotonic() - started < 30                # a hang would be stopped by the timeout, not pass
    listener.close()


def test_with_a_server_it_runs_opik_evaluate_there(monkeypatch):
    with OpikRestServer() as server:          # traces and scores go to it too, under its rules
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        summary = evaluate(dataset=ITEMS, task=task, scoring_metrics=[BLEU()], experiment_name="on-server",
                           dataset_name="captions", experiment_config={"model": "lowercase"}, verbose=0)
        experiment = next(e for e in opik.Opik().get_experiments_by_name("on-server") if e.name == "on-server")
        data = experiment.get_experiment_data()
        assert server.invalid == [] and server.unexpected == []
    assert summary.backend == "opik" and summary.items == 3 and summary.failed_items == 0
    assert data.metadata["model"] == "lowercase" and "bleu" in data.metadata["metrics"]
    assert {s.name: s.value for s in data.experiment_scores}["corpus_bleu"] == pytest.approx(_corpus_bleu(ITEMS))
    (dataset_id,) = server.datasets
    assert [row["data"] for row in server.dataset_items[dataset_id]] == ITEMS

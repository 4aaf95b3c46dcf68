"""``experiments push`` reads back what the server kept, through the real SDK over HTTP to the REST
stand-in (tests/opik_rest_server.py: a feedback-score batch with one bad value refused whole, as the
backend does): what is missing is named in one line and the command exits 3; the same command then
sends only that, under the same ids, and marks the experiment pushed once everything is there."""
from __future__ import annotations

import json
import re
import sqlite3
import uuid

import pytest
from opik.api_objects import opik_client

from opik_metrics import BLEU
from opik_metrics.cli.main import main
from opik_metrics.experiments import push
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.spans import traced
from opik_metrics.experiments.store import ExperimentStore
from tests.experiments.toy import ITEMS, EchoTask, FragileMetric
from tests.opik_rest_server import OpikRestServer

SCORES = re.compile(r"/traces/feedback-scores$")
TRACES = re.compile(r"/traces(/batch)?$")
SPANS = re.compile(r"/spans(/batch)?$")
EXPERIMENT_ITEMS = re.compile(r"/experiments/items$")
EXPERIMENTS = re.compile(r"/experiments$")


@traced("answer")
def answer(text: str) -> str:
    return text


class TracedEcho(EchoTask):
    """The toy task with one span per call, so pushed traces carry spans."""

    def __call__(self, item: dict) -> dict:
        return {"output": answer(super().__call__(item)["output"])}


@pytest.fixture
def stored(tmp_path):
    """6 items: 4 scored (bleu on each, the fragile metric's `length` on 3: it fails on one), 2 failed."""
    path = tmp_path / "store.sqlite"
    run_experiment("toy", ITEMS, TracedEcho(), [BLEU(), FragileMetric()], dataset_name="toy-data", store=path,
                   progress=False)
    return path


@pytest.fixture
def server(monkeypatch):
    with OpikRestServer() as srv:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", srv.url)
        # the stand-in shows writes at once, but on a loaded machine the SDK's background batches may
        # still be on their way after flush: the read-back's own wait (READBACK_SECONDS) covers them
        opik_client.reset_global_client()
        try:
            yield srv
        finally:
            opik_client.reset_global_client()
        assert srv.invalid == [] and srv.unexpected == []


def _push(capsys, store, *extra):
    code = main(["experiments", "push", "toy", "--store", str(store), "--no-progress", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _sent(server, start, pattern):
    """The bodies of the writes matching ``pattern`` since request ``start``."""
    return [body for method, path, body in server.requests[start:]
            if method in ("POST", "PUT", "PATCH") and pattern.search(path)]


def _stored(store):
    """Each scored item's scores as the server should hold them (to its 9 decimals): input -> {name: value}."""
    with ExperimentStore(store) as s:
        return {json.dumps(i.input, sort_keys=True): {n: pytest.approx(x.value, abs=1e-9)
                                                      for n, x in i.scores.items() if not x.failed}
                for i in s.items(s.info("toy").id, ["scored"])}


def _on_server(server):
    """(the experiment, input -> {score name: value} of each of its items' traces)."""
    (experiment,) = server.experiments.values()
    items = server.experiment_items[experiment["id"]]
    dataset = {row["id"]: row["data"] for row in server.dataset_items[experiment["dataset_id"]]}
    return experiment, {json.dumps(dataset[i["dataset_item_id"]], sort_keys=True): server.trace_scores(i["trace_id"])
                        for i in items}


def _pushed_at(store):
    with ExperimentStore(store, create=False) as s:
        return s.info("toy").pushed_at


def test_a_whole_push_reads_back_all_there_and_a_rerun_sends_nothing(server, stored, capsys):
    code, out, err = _push(capsys, stored)
    assert code == 0, err
    assert "read back: all 4 items and 7 feedback scores there (this push sent 4 traces and 7 feedback scores)" in out
    experiment, scores = _on_server(server)
    assert scores == _stored(stored) and len(server.traces) == 4
    assert all(len(spans) == 1 and spans[0]["name"] == "answer" for spans in server.spans.values())
    assert [s["name"] for s in experiment["experiment_scores"]] == ["corpus_bleu"]
    assert _pushed_at(stored) is not None
    start = len(server.requests)
    code, out, err = _push(capsys, stored)
    assert code == 0 and "this push sent nothing" in out, err
    for pattern in (SCORES, TRACES, SPANS, EXPERIMENT_ITEMS, EXPERIMENTS):
        assert _sent(server, start, pattern) == [], pattern
    assert len(server.experiments) == 1 and len(server.experiment_items[experiment["id"]]) == 4


def test_a_refused_score_batch_is_named_and_the_rerun_sends_only_those_scores(server, stored, capsys):
    server.fail_next("PUT", SCORES.pattern, 422)               # the batch of every item's scores, refused whole
    code, out, err = _push(capsys, stored, "--project", "Default Project")
    (line,) = [x for x in err.splitlines() if x.startswith("opik-metrics: error:")]
    assert code == 3 and "Traceback" not in err
    assert f"Opik server at {server.url} did not keep all of experiment 'toy'" in line
    assert "the server kept 4 of 4 items; 7 of 7 feedback scores missing; scores missing: bleu (4), length (3)" in line
    assert f"run `opik-metrics experiments push toy --store {stored} --project 'Default Project'` to send" in line
    assert _pushed_at(stored) is None
    assert all(s == {} for s in _on_server(server)[1].values())

    start = len(server.requests)
    code, out, err = _push(capsys, stored, "--project", "Default Project", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["complete"] and report["resumed"], err
    assert (report["traces"], report["sent_scores"], report["kept_scores"]) == (0, 7, 7)
    (batch,) = _sent(server, start, SCORES)
    assert sorted(s["name"] for s in batch["scores"]) == ["bleu"] * 4 + ["length"] * 3
    for pattern in (TRACES, SPANS, EXPERIMENT_ITEMS, EXPERIMENTS):
        assert _sent(server, start, pattern) == [], pattern
    assert _on_server(server)[1] == _stored(stored) and _pushed_at(stored) is not None


def test_only_the_scores_still_missing_are_sent(server, stored, capsys):
    code, _, _ = _push(capsys, stored)
    assert code == 0
    experiment, _ = _on_server(server)
    first, second = (i["trace_id"] for i in server.experiment_items[experiment["id"]][:2])
    lost = {(first, "bleu")} | {(second, name) for name in server.trace_scores(second)}
    del server.feedback_scores[("trace", first)]["bleu"]                      # lost on the server since
    del server.feedback_scores[("trace", second)]
    start = len(server.requests)
    code, out, err = _push(capsys, stored, "--format", "json")
    assert code == 0 and json.loads(out)["resumed"] and json.loads(out)["sent_scores"] == len(lost), err
    (batch,) = _sent(server, start, SCORES)
    assert sorted((s["id"], s["name"]) for s in batch["scores"]) == sorted(lost)
    assert _on_server(server)[1] == _stored(stored)


def test_a_lost_trace_batch_is_named_and_the_rerun_pushes_just_those_items(server, stored, capsys):
    server.fail_next("POST", TRACES.pattern, 422)
    code, _, err = _push(capsys, stored)
    (line,) = [x for x in err.splitlines() if x.startswith("opik-metrics: error:")]
    assert code == 3 and "the server kept 0 of 4 items; 7 of 7 feedback scores missing" in line, err
    assert "items without their trace or experiment item: 0, 1, 4, 5" in line
    experiment, _ = _on_server(server)
    assert len(server.experiment_items[experiment["id"]]) == 4 and server.traces == {}

    start = len(server.requests)
    code, out, err = _push(capsys, stored)
    assert code == 0 and "this push sent 4 traces and 7 feedback scores" in out, err
    assert _sent(server, start, EXPERIMENT_ITEMS) == [] and _sent(server, start, EXPERIMENTS) == []
    assert len(server.experiments) == 1 and len(server.experiment_items[experiment["id"]]) == 4
    assert len(server.traces) == 4 and _on_server(server)[1] == _stored(stored)
    # the spans were sent twice under the same ids: each is there once
    assert sorted(len(spans) for spans in server.spans.values()) == [1, 1, 1, 1]


def test_a_lost_experiment_item_batch_is_sent_again_once(server, stored, capsys):
    server.fail_next("POST", EXPERIMENT_ITEMS.pattern, 422)
    code, _, err = _push(capsys, stored)
    assert code == 3 and "the server kept 0 of 4 items" in err
    start = len(server.requests)
    code, _, err = _push(capsys, stored)
    assert code == 0, err
    (batch,) = _sent(server, start, EXPERIMENT_ITEMS)
    assert len(batch["experiment_items"]) == 4
    experiment, scores = _on_server(server)
    assert len(server.experiment_items[experiment["id"]]) == 4 and len(server.traces) == 4
    assert scores == _stored(stored)
    assert sorted(len(spans) for spans in server.spans.values()) == [1, 1, 1, 1]


def test_refused_experiment_scores_are_logged_by_the_rerun_keeping_others(server, stored, capsys):
    server.fail_next("PATCH", r"/experiments/[^/]+$", 422)
    code, _, err = _push(capsys, stored)
    assert code == 3 and "experiment scores missing: corpus_bleu" in err
    experiment, _ = _on_server(server)
    experiment["experiment_scores"] = [{"name": "human_rating", "value": 0.7}]    # someone else's, since
    code, _, err = _push(capsys, stored)
    assert code == 0, err
    assert sorted(s["name"] for s in experiment["experiment_scores"]) == ["corpus_bleu", "human_rating"]


def test_a_score_batch_failing_with_5xx_after_the_sdks_retries(server, stored, capsys):
    server.fail_next("PUT", SCORES.pattern, 500, times=3)     # the SDK's three tries, about 11 s
    code, _, err = _push(capsys, stored)
    assert code == 3 and "7 of 7 feedback scores missing" in err
    code, _, err = _push(capsys, stored)
    assert code == 0 and _on_server(server)[1] == _stored(stored), err


def test_span_ids_derive_from_the_trace_id():
    from opik.id_helpers import generate_id

    trace_id = generate_id()
    ids = [push.span_id(trace_id, k) for k in range(3)]
    assert ids == [push.span_id(trace_id, k) for k in range(3)] and len(set(ids)) == 3
    assert all(uuid.UUID(i).version == 7 and uuid.UUID(i).bytes[:6] == uuid.UUID(trace_id).bytes[:6] for i in ids)


def test_a_store_made_before_the_push_tables_gets_them_when_written(server, stored, capsys):
    with sqlite3.connect(stored) as db:
        db.execute("DROP TABLE pushed_traces")
        db.execute("DROP TABLE pushes")
    db.close()
    code, out, _ = _cli_list(capsys, stored)
    assert code == 0 and json.loads(out)[0]["name"] == "toy"              # read-only: nothing added
    with sqlite3.connect(stored) as db:
        assert not db.execute("SELECT name FROM sqlite_master WHERE name = 'pushes'").fetchall()
    db.close()
    code, _, err = _push(capsys, stored)
    assert code == 0, err
    with sqlite3.connect(stored) as db:
        assert db.execute("SELECT COUNT(*) FROM pushed_traces").fetchone()[0] == 4
    db.close()


def _cli_list(capsys, store):
    code = main(["experiments", "list", "--store", str(store), "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, err


def test_an_experiment_whose_creation_was_refused_is_created_by_the_rerun_under_its_noted_id(server, stored, capsys):
    server.fail_next("POST", EXPERIMENTS.pattern, 422)
    code, _, err = _push(capsys, stored)
    (line,) = [x for x in err.splitlines() if x.startswith("opik-metrics: error:")]
    assert code == 2 and f"Opik server at {server.url} refused finding or creating the experiment 'toy'" in line
    assert server.experiments == {} and server.traces == {}
    code, _, err = _push(capsys, stored)
    assert code == 0, err
    with ExperimentStore(stored) as s:
        record = s.push_record(s.info("toy").id, push.push_target(server.url, None, "toy-data", "toy"))
    (experiment,) = server.experiments.values()
    assert record is not None and experiment["id"] == record.remote_id and len(record.traces) == 4
    assert len(server.experiment_items[experiment["id"]]) == 4 and _on_server(server)[1] == _stored(stored)
    server.unexpected.clear()        # the rerun asked for the noted experiment first: 404, as the backend answers


def test_a_score_the_server_holds_with_another_value_is_called_changed_not_missing(server, stored, capsys):
    code, _, _ = _push(capsys, stored)
    assert code == 0
    experiment, _ = _on_server(server)
    first = server.experiment_items[experiment["id"]][0]["trace_id"]
    server.feedback_scores[("trace", first)]["bleu"]["value"] = 0.123       # someone changed it since
    server.fail_next("PUT", SCORES.pattern, 422)                            # and the re-send is refused
    code, _, err = _push(capsys, stored)
    (line,) = [x for x in err.splitlines() if x.startswith("opik-metrics: error:")]
    assert code == 3
    assert "the server kept 4 of 4 items; 0 of 7 feedback scores missing, 1 with another value than the store's" in line
    assert "scores changed on the server: bleu (1)" in line and "scores missing:" not in line

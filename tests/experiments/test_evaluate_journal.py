"""``opik_metrics.evaluate`` on a server keeps the run in the local store as it goes and reads back
what the server kept, as ``experiments push`` does (issue 48): a server that answers 204 but keeps
no traces, or refuses a feedback-score batch with 422, no longer ends in a normal summary with the
results nowhere; ``ResultsMissing`` names what is missing, and ``experiments push NAME`` sends it."""
from __future__ import annotations

import pytest

from opik_metrics import BLEU, ResultsMissing, evaluate
from opik_metrics.cli.main import main
from opik_metrics.experiments.store import ExperimentStore
from tests.experiments.test_push_readback import SCORES, TRACES, _on_server, _sent, server  # noqa: F401 (fixture)
from tests.experiments.toy import ITEMS, EchoTask, FragileMetric


RUN = [item for item in ITEMS if item["answer"] != "RAISE"]     # a task that raises stops opik.evaluate itself


def _run(path):
    return evaluate(RUN, EchoTask(), [BLEU(), FragileMetric()], experiment_name="toy", dataset_name="toy-data",
                    backend="opik", store=str(path), verbose=0)


def _journaled(path):
    """input -> {score: value} of the stored experiment's scored items, its failed items, and its push."""
    with ExperimentStore(path, create=False) as store:
        info = store.info("toy")
        scored = {json_key(i.input): {n: pytest.approx(s.value, abs=1e-9) for n, s in i.scores.items() if not s.failed}
                  for i in store.items(info.id, ["scored"])}
        failed = sorted((i.input["question"], i.failure_stage) for i in store.items(info.id, ["failed"]))
        return scored, failed, info.pushed_at


def json_key(value):
    import json

    return json.dumps(value, sort_keys=True)


def test_a_whole_run_is_journaled_read_back_and_marked_pushed(server, tmp_path, capsys):  # noqa: F811
    summary = _run(tmp_path / "store.sqlite")
    assert summary.backend == "opik" and summary.missing is None
    assert summary.journal == f"opik-metrics experiments push toy --store {tmp_path / 'store.sqlite'}"
    scored, failed, pushed_at = _journaled(tmp_path / "store.sqlite")
    experiment, on_server = _on_server(server)
    assert scored == on_server and len(scored) == 4                 # what the server holds, value for value
    assert failed == [("q2", "fetch")] and pushed_at is not None
    start = len(server.requests)
    assert main(["experiments", "push", "toy", "--store", str(tmp_path / "store.sqlite"), "--no-progress"]) == 0
    assert "this push sent nothing" in capsys.readouterr().out
    assert len(server.experiments) == 1 and _sent(server, start, TRACES) == []


@pytest.mark.parametrize("fault, words", [
    (("PUT", SCORES.pattern, 422), "the server kept 4 of 4 items; 7 of 7 feedback scores missing"),
    (("POST", TRACES.pattern, 422), "the server kept 0 of 4 items"),
])
def test_what_the_server_lost_is_named_and_push_sends_it(server, tmp_path, capsys, fault, words):  # noqa: F811
    path = tmp_path / "store.sqlite"
    server.fail_next(*fault)
    with pytest.raises(ResultsMissing) as caught:
        _run(path)
    message = str(caught.value)
    assert message.startswith("experiment 'toy' on the Opik server is incomplete: ") and words in message
    assert f"`opik-metrics experiments push toy --store {path}` sends what is missing" in message
    assert caught.value.summary.scores and caught.value.summary.missing
    scored, _, pushed_at = _journaled(path)
    assert len(scored) == 4 and pushed_at is None                  # every result kept, not marked pushed
    assert main(["experiments", "push", "toy", "--store", str(path), "--no-progress"]) == 0, capsys.readouterr().err
    experiment, on_server = _on_server(server)
    assert len(server.experiments) == 1 and on_server == scored     # completed in place: no second experiment
    assert _journaled(path)[2] is not None


def test_a_run_that_stops_keeps_what_its_task_returned(server, tmp_path):  # noqa: F811
    """A task raising stops opik.evaluate itself: the outputs returned before it stay in the store,
    the failure with its reason, and the run is marked interrupted."""
    path = tmp_path / "store.sqlite"
    with pytest.raises(RuntimeError, match="model exploded"):
        evaluate(ITEMS, EchoTask(), [BLEU()], experiment_name="toy", dataset_name="toy-data", backend="opik",
                 store=str(path), verbose=0)
    with ExperimentStore(path, create=False) as store:
        info = store.info("toy")
        outputs = {i.input["question"]: i.output for i in store.items(info.id, ["output"])}
        failed = {i.input["question"]: (i.failure_stage, i.failure) for i in store.items(info.id, ["failed"])}
    assert info.status == "interrupted"
    assert outputs["q0"] == {"output": "the cat sat on the mat"} and outputs["q1"] == {"output": "a dog in the park"}
    assert failed["q3"] == ("task", "RuntimeError: model exploded") and failed["q2"][0] == "fetch"


def test_a_second_run_of_the_same_name_gets_a_journal_of_its_own(server, tmp_path):  # noqa: F811
    """Each server run is a new experiment there: the second run's journal replaces the first's and
    reads back its own experiment (not the first one's, which made a false ResultsMissing)."""
    path = tmp_path / "store.sqlite"
    first, second = _run(path), _run(path)
    assert first.missing is None and second.missing is None and len(server.experiments) == 2
    with ExperimentStore(path, create=False) as store:
        assert store.names() == ["toy"]
        record = store.push_record(store.info("toy").id, next(iter(_targets(store))))
    assert record is not None and record.remote_id == [e["id"] for e in server.experiments.values()][-1]


def test_a_local_experiment_of_the_same_name_is_kept(server, tmp_path):  # noqa: F811
    path = tmp_path / "store.sqlite"
    evaluate(RUN, EchoTask(), [BLEU()], experiment_name="toy", dataset_name="toy-data", store=str(path), verbose=0)
    server.fail_next("PUT", SCORES.pattern, 422)
    with pytest.raises(ResultsMissing) as caught:
        _run(path)
    with ExperimentStore(path, create=False) as store:
        names = store.names()
        local = store.info("toy")
    journal = next(n for n in names if n.startswith("toy (Opik run "))
    assert sorted(names) == ["toy", journal] and "journal_of" not in local.config and local.pushed_at is None
    assert f"opik-metrics experiments push '{journal}' --store {path} --as toy" in str(caught.value)
    assert main(["experiments", "push", journal, "--store", str(path), "--as", "toy", "--no-progress"]) == 0
    assert len(server.experiments) == 1


def _targets(store):
    import sqlite3

    with sqlite3.connect(store.path) as db:
        return [row[0] for row in db.execute("SELECT target FROM pushes")]


def test_a_run_whose_name_another_process_is_journaling_takes_a_journal_of_its_own(server, tmp_path):  # noqa: F811
    """Two server runs of one name at once (two CI jobs sharing the default store) both run: the
    second journals under a name of its own instead of stopping on the first one's lease."""
    path = tmp_path / "store.sqlite"
    with ExperimentStore(path) as other:              # another writer holds the name's lease meanwhile
        other.begin("toy", "toy-data", {"journal_of": "opik.evaluate on elsewhere"}, [("k", {"question": "q"})])
        summary = _run(path)
    assert summary.missing is None and summary.journal.startswith("opik-metrics experiments push 'toy (Opik run ")
    assert summary.journal.endswith(" --as toy")

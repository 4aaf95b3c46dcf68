"""The local SQLite store: experiments, items, outputs, scores with reasons, resume rules."""
import sqlite3

import pytest

from opik_metrics.experiments.store import (ExperimentNotFound, ExperimentStore, StoredScore, StoreError,
                                            default_store_path)

ITEMS = [("k0", {"image_url": "http://x/0.jpg", "reference": "a cat"}),
         ("k1", {"image_url": "http://x/1.jpg", "reference": "a dog"}),
         ("k2", {"image_url": "http://x/2.jpg", "reference": "a cow"})]
CONFIG = {"model": "tiny", "num_beams": 5, "runtime": {"device": "cpu"}}


@pytest.fixture
def store(tmp_path):
    with ExperimentStore(tmp_path / "nested" / "store.sqlite") as db:
        yield db


def _scores(value):
    return [StoredScore("rouge1_f1", "rouge", value, False, None, {"signature": "rouge-sig"}),
            StoredScore("bleu", "bleu", None, True, "ValueError: bad input", {})]


def test_items_outputs_scores_and_listing(store):
    exp_id, done = store.begin("exp", "cc-val", CONFIG, ITEMS)
    assert done == 0
    store.save_output(exp_id, "k0", {"output": "a cat"}, [{"name": "generate_caption"}], 0.5)
    store.save_scores(exp_id, "k0", _scores(1.0), 0.01)
    store.save_output(exp_id, "k1", {"output": "a bird"}, None, 0.25)
    store.save_scores(exp_id, "k1", _scores(0.5), 0.01)
    store.save_failure(exp_id, "k2", "fetch", "HTTP 404 Not Found")
    store.save_experiment_scores(exp_id, [StoredScore("corpus_bleu", "", 0.3, False, None, {})])
    store.finish(exp_id, "finished", 2.0)

    info = store.info("exp")
    assert (info.items, info.scored_items, info.failed_items, info.status) == (3, 2, 1, "finished")
    assert info.scores == {"rouge1_f1": 0.75}          # the failed bleu scores are not averaged
    assert store.infos()[0].listing() == {
        "name": "exp", "items": 3, "failed_items": 1, "created_at": info.created_at, "config": CONFIG,
        "scores": {"rouge1_f1": 0.75, "corpus_bleu": 0.3}, "status": "finished", "dataset": "cc-val"}

    items = store.items(exp_id)
    assert [i.status for i in items] == ["scored", "scored", "failed"]
    assert items[0].output == {"output": "a cat"} and items[0].trace == [{"name": "generate_caption"}]
    assert items[0].scores["bleu"].failed and items[0].scores["bleu"].reason == "ValueError: bad input"
    assert items[0].scores["bleu"].value is None
    assert items[0].scores["rouge1_f1"].metadata == {"signature": "rouge-sig"}
    assert (items[2].failure_stage, items[2].failure) == ("fetch", "HTTP 404 Not Found")
    assert items[1].task_seconds == 0.25


def test_resume_keeps_finished_items_and_refuses_a_changed_config(store):
    exp_id, _ = store.begin("exp", "cc-val", CONFIG, ITEMS)
    store.save_output(exp_id, "k0", {"output": "a cat"}, None, 0.1)
    store.save_scores(exp_id, "k0", _scores(1.0), 0.01)
    store.save_output(exp_id, "k1", {"output": "half done"}, None, 0.1)   # output, not yet scored
    store.finish(exp_id, "interrupted", 1.0)

    resumed = {**CONFIG, "runtime": {"device": "cuda"}}                  # runtime may change
    again, done = store.begin("exp", "cc-val", resumed, ITEMS)
    assert (again, done) == (exp_id, 1)
    assert [i.key for i in store.items(exp_id, ["pending", "output"])] == ["k1", "k2"]
    assert store.info("exp").runs == 2

    with pytest.raises(StoreError, match=r"different config \(changed: num_beams\).*--overwrite"):
        store.begin("exp", "cc-val", {**CONFIG, "num_beams": 3}, ITEMS)
    with pytest.raises(StoreError, match="ran on dataset 'cc-val'"):
        store.begin("exp", "other", CONFIG, ITEMS)
    fresh, done = store.begin("exp", "cc-val", {**CONFIG, "num_beams": 3}, ITEMS, overwrite=True)
    assert done == 0 and store.info("exp").runs == 1


def test_missing_experiment_names_the_stored_ones(store):
    with pytest.raises(ExperimentNotFound, match="the store is empty"):
        store.info("nope")
    store.begin("exp", "cc-val", CONFIG, ITEMS)
    with pytest.raises(ExperimentNotFound, match="stored: exp"):
        store.info("nope")


def test_a_file_that_is_not_a_store_is_a_clear_error(tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not a database, just text " * 100)
    with pytest.raises(StoreError, match="is it an opik-metrics store"):
        ExperimentStore(bogus)


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "future.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="schema version 99"):
        ExperimentStore(path)


def test_default_path_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPIK_METRICS_STORE", str(tmp_path / "env.sqlite"))
    assert default_store_path() == tmp_path / "env.sqlite"
    monkeypatch.delenv("OPIK_METRICS_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_store_path() == tmp_path / "data" / "opik-metrics" / "experiments.sqlite"


def test_reading_commands_do_not_create_a_store(tmp_path):
    from opik_metrics.experiments.store import StoreNotFound

    with pytest.raises(StoreNotFound, match="no experiment store at .*absent.sqlite"):
        ExperimentStore(tmp_path / "absent.sqlite", create=False)
    assert not (tmp_path / "absent.sqlite").exists()

"""Experiments read back for comparison: from the local store (failed, interrupted and unscored
items) and from Opik through its SDK's objects, stood in by what Opik's own emulator recorded,
with the same report either way."""
import uuid
from types import SimpleNamespace

import opik
import pytest
from opik.api_objects.experiment.experiment_item import ExperimentItemContent
from opik.rest_api.types.experiment_public import ExperimentPublic
from opik.rest_api.types.experiment_score_public import ExperimentScorePublic

from opik_metrics import BLEU, ROUGE
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import from_opik, from_store, load_experiments
from opik_metrics.experiments.store import ExperimentNotFound, ExperimentStore
from tests.compare.systems import answer_with, items_for, store_with
from tests.experiments.toy import FragileMetric

REFS = ["a dog runs on the beach", "two cats sleep on a sofa", "a red bus in the city", "a man rides a bike",
        "snow on the mountain road", "children play in the park", "a boat at sunset", "a plate of pasta"]
SYSTEMS = {
    "sys-a": ["a dog running on a beach", "two cats sleeping on the sofa", "a red bus in a city", "a man on a bike",
              "a snowy mountain road", "kids playing in a park", "a boat on the water at sunset", "pasta on a plate"],
    "sys-b": ["a dog", "cats", "a bus", "a man rides a bike", "snow", "children play in the park", "a boat",
              "food"],
}


def test_store_records_carry_outputs_scores_metadata_and_failures(tmp_path):
    systems = {"s": ["a dog runs", "!fail", "a red bus in the city"]}
    path = store_with(tmp_path / "store.sqlite", REFS[:3], systems, metrics=[ROUGE(), BLEU(), FragileMetric()])
    with ExperimentStore(path) as store:
        record = from_store(store, "s")
    assert record.source == f"local store {path}" and record.dataset == "shared" and record.config["model"] == "s"
    first, failed, third = record.items
    assert first.text() == "a dog runs" and first.scores["bleu"] >= 0 and first.metadata["bleu"]["sys_len"] == 3
    assert failed.failed and failed.stage == "task" and "crashed" in failed.reason and not failed.scores
    assert "corpus_bleu" in record.experiment_scores and "signature" in record.experiment_score_metadata["corpus_bleu"]
    assert [i.position for i in record.items] == [0, 1, 2]


def test_an_interrupted_item_counts_as_failed_with_advice(tmp_path):
    path = store_with(tmp_path / "store.sqlite", REFS[:2], {"s": SYSTEMS["sys-a"][:2]})
    with ExperimentStore(path) as store:
        info = store.info("s")
        store._db.execute("UPDATE experiment_items SET status = 'pending' WHERE position = 1")
        store._db.commit()
        record = from_store(store, info.name)
    assert record.items[1].failed and record.items[1].stage == "unfinished"
    assert "re-run it to resume" in record.items[1].reason


def test_a_missing_experiment_names_the_stored_ones(tmp_path):
    path = store_with(tmp_path / "store.sqlite", REFS[:2], {"s": SYSTEMS["sys-a"][:2]})
    with ExperimentStore(path) as store, pytest.raises(ExperimentNotFound, match="stored: s"):
        load_experiments(["nope"], store=store)
    with pytest.raises(ValueError, match="exactly one source"):
        load_experiments(["s"])


class _FakeExperiment:
    """What ``opik.Opik().get_experiments_by_name`` lists, over recorded experiment items."""

    def __init__(self, name, config, contents, scores):
        self.name, self.dataset_name, self.id = name, "shared", f"id-of-{name}"   # the SDK's Experiment has its id
        self._data = ExperimentPublic(name=name, dataset_name="shared", metadata=config, status="completed",
                                      experiment_scores=[ExperimentScorePublic(name=k, value=v)
                                                         for k, v in scores.items()])
        self._contents = contents

    def get_experiment_data(self):
        return self._data

    def get_items(self, max_results=10000):
        return list(reversed(self._contents))        # the server's order is not the dataset's


class _FakeOpik:
    config = SimpleNamespace(url_override="http://opik.test/api")

    def __init__(self, experiments, traces=()):
        self._experiments = experiments
        self._traces = {tree.id: tree for tree in traces}

    def get_experiments_by_name(self, name, project_name=None):
        return [e for n, e in self._experiments.items() if name.lower() in n.lower()]   # Opik matches substrings

    def search_spans(self, project_name=None, trace_id=None, truncate=True, **ignored):
        """The spans of one trace, as the SDK lists them (flat), from what the emulator recorded."""
        found, todo = [], list(self._traces[trace_id].spans)
        while todo:
            span = todo.pop()
            found.append(SimpleNamespace(name=span.name, output=span.output))
            todo.extend(span.spans)
        return found


def _record_on_opik(emulator, name, config):
    """Run one system with opik.evaluate_on_dict_items; its traces become experiment items."""
    before = len(emulator.trace_trees)
    metrics = [ROUGE(), BLEU()]
    result = opik.evaluate_on_dict_items(items=items_for(REFS), task=answer_with(SYSTEMS[name]),
                                         scoring_metrics=metrics, scoring_threads=1)
    corpus = metrics[1].experiment_score(result.test_results)
    opik.flush_tracker()
    contents = [ExperimentItemContent(id=str(uuid.uuid4()), dataset_item_id=tree.input["id"], trace_id=tree.id,
                                      dataset_item_data=dict(tree.input), evaluation_task_output=tree.output,
                                      feedback_scores=[{"name": f.name, "value": f.value, "reason": f.reason,
                                                        "category_name": None} for f in tree.feedback_scores])
                for tree in emulator.trace_trees[before:]]
    assert len(contents) == len(REFS)
    return _FakeExperiment(name, config, contents, {corpus.name: corpus.value}), emulator.trace_trees[before:]


def test_the_same_comparison_from_opik_as_from_the_store(tmp_path, fake_opik_backend):
    path = store_with(tmp_path / "store.sqlite", REFS, SYSTEMS)
    settings = CompareSettings(resamples=300, seed=11)
    with ExperimentStore(path) as store:
        local = compare_experiments(load_experiments(list(SYSTEMS), store=store), settings)
        configs = {name: store.info(name).config for name in SYSTEMS}
    recorded = {name: _record_on_opik(fake_opik_backend, name, configs[name]) for name in SYSTEMS}
    client = _FakeOpik({name: experiment for name, (experiment, _) in recorded.items()},
                       [tree for _, trees in recorded.values() for tree in trees])
    remote_runs = load_experiments(list(SYSTEMS), client=client)
    remote = compare_experiments(remote_runs, settings)

    assert remote.source == "Opik server at http://opik.test/api"
    assert remote_runs[0].items[0].input == {"line": 1, "reference": REFS[0]}   # the item id is not content
    assert [m.name for m in remote.metrics] == [m.name for m in local.metrics]
    assert "corpus_bleu" in {m.name for m in remote.metrics}    # statistics read from the metric spans
    for metric in local.metrics:
        name = metric.name
        for system in SYSTEMS:
            mine, theirs = local.scores[name][system], remote.scores[name][system]
            for field in ("value", "low", "high", "n", "failed"):
                assert getattr(theirs, field) == pytest.approx(getattr(mine, field), abs=1e-12), (name, system, field)
        mine, theirs = local.pairs[0].metrics[name], remote.pairs[0].metrics[name]
        for field in ("delta", "delta_low", "delta_high", "p_value", "wins", "ties", "losses"):
            assert getattr(theirs, field) == pytest.approx(getattr(mine, field), abs=1e-12), (name, field)
        assert [d.position for d in theirs.largest_differences] == \
            [d.position for d in mine.largest_differences]
    assert not any("recomputed from item statistics is" in note for note in remote.notes)


def test_an_opik_item_without_output_is_a_failed_item():
    content = ExperimentItemContent(id="1", dataset_item_id="d1", trace_id="t1", dataset_item_data={"reference": "r"},
                                    evaluation_task_output=None, feedback_scores=[])
    record = from_opik(_FakeOpik({"x": _FakeExperiment("x", {"failed_items": 2}, [content], {})}), "x")
    (item,) = record.items
    assert item.failed and item.stage == "task" and record.failed_elsewhere == 2

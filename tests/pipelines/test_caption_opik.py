"""The captioning task inside Opik, with the backend stood in by the opik wheel's local emulator:
traces with the generate_caption span, the image attached, model and settings in metadata, and
feedback scores equal to the local store's; a stored experiment pushed later; a real server
when one is configured."""
import uuid

import opik
import pytest

from opik_metrics import BLEU, ROUGE
from opik_metrics.experiments.opik_server import OpikServerUnavailable, choose_backend
from opik_metrics.experiments.push import push_experiment
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.pipelines.captioning.captioner import BlipCaptioner
from opik_metrics.pipelines.captioning.conceptual_captions import read_tsv
from opik_metrics.images import ImageFetcher
from opik_metrics.pipelines.captioning.task import CaptionTask
from tests.pipelines.caption_fixtures import (FAST_GENERATION, GOOD, caption_tsv, image_server,  # noqa: F401
                                              one_thread, tiny_blip)


def _task(tmp_path, tiny_blip):  # noqa: F811
    captioner = BlipCaptioner(str(tiny_blip), generation=FAST_GENERATION, batch_size=2)
    return CaptionTask(captioner, ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0),  # slow route: 1.5 s
                       progress=False)


def _good_items(caption_tsv):  # noqa: F811
    return [row.as_item() for row in read_tsv(str(caption_tsv)) if row.caption in {c for c, _ in GOOD.values()}]


def _local_scores(tmp_path, task, items):
    path = tmp_path / "store.sqlite"
    run_experiment("local", items, task, [ROUGE(), BLEU()], dataset_name="cc", store=path, progress=False)
    with ExperimentStore(path) as store:
        return {i.input["image_url"]: {n: s.value for n, s in i.scores.items()}
                for i in store.items(store.info("local").id)}, path


def test_traces_spans_attachments_and_scores_match_the_local_store(tmp_path, caption_tsv, tiny_blip,  # noqa: F811
                                                                    one_thread, fake_opik_backend):
    items = _good_items(caption_tsv)
    task = _task(tmp_path, tiny_blip)
    assert task.prepare(items) == {}
    result = opik.evaluate_on_dict_items(items=items, task=task, scoring_metrics=[ROUGE(), BLEU()])
    opik.flush_tracker()

    by_url = {tr.test_case.dataset_item_content["image_url"]: {s.name: s.value for s in tr.score_results}
              for tr in result.test_results}
    local, _ = _local_scores(tmp_path, _task(tmp_path, tiny_blip), items)
    assert by_url == local                                       # same metrics, same values on both paths

    captions = [s for tree in fake_opik_backend.trace_trees for s in _walk(tree.spans)
                if s.name == "generate_caption"]
    assert len(captions) == len(items)
    for span in captions:
        assert span.metadata["model"] == str(tiny_blip) and span.metadata["num_beams"] == 2
        assert span.metadata["max_length"] == 16 and span.metadata["early_stopping"] is True
        assert span.input["image_url"] in by_url and span.output["caption"]
        (attachment,) = span.attachments
        assert attachment.file_name.endswith(".jpg")
    logged = {fs.name for tree in fake_opik_backend.trace_trees for fs in tree.feedback_scores}
    assert {"rouge1_f1", "rougeL_f1", "bleu"} <= logged


def _walk(spans):
    for span in spans:
        yield span
        yield from _walk(span.spans)


class FakeDataset:
    """Opik's dataset REST calls (not emulated) stood in: items get ids, deduplicated by content."""

    def __init__(self, name):
        self.name, self.rows = name, []

    def insert(self, items):
        for item in items:
            if not any({k: r[k] for k in item} == item for r in self.rows):
                self.rows.append({"id": str(uuid.uuid4()), **item})

    def get_items(self):
        return list(self.rows)


class FakeExperiment:
    def __init__(self, **kwargs):
        self.kwargs, self.refs, self.scores = kwargs, [], []

    def insert(self, experiment_items_references):
        self.refs.extend(experiment_items_references)

    def log_experiment_scores(self, score_results):
        self.scores.extend(score_results)


class HalfEmulatedClient:
    """Traces, spans, attachments and feedback scores go to the emulated backend through a real
    Opik client; datasets and experiments (REST only) to the fakes above."""

    def __init__(self):
        self.real = opik.Opik()
        self.datasets, self.experiments = {}, []

    def get_or_create_dataset(self, name):
        return self.datasets.setdefault(name, FakeDataset(name))

    def create_experiment(self, **kwargs):
        self.experiments.append(FakeExperiment(**kwargs))
        return self.experiments[-1]

    def trace(self, **kwargs):
        return self.real.trace(**kwargs)

    def log_traces_feedback_scores(self, **kwargs):
        return self.real.log_traces_feedback_scores(**kwargs)

    def flush(self):
        return self.real.flush()


def test_push_uploads_dataset_experiment_traces_and_scores(tmp_path, caption_tsv, tiny_blip,  # noqa: F811
                                                           one_thread, fake_opik_backend):
    items = _good_items(caption_tsv)
    local, path = _local_scores(tmp_path, _task(tmp_path, tiny_blip), items)
    client = HalfEmulatedClient()
    with ExperimentStore(path) as store:
        report = push_experiment(store, "local", client=client, progress=False)
        assert store.info("local").pushed_at is not None
    assert (report.traces, report.dataset, report.skipped_items) == (len(items), "cc", 0)

    (experiment,) = client.experiments
    assert experiment.kwargs["name"] == "local" and experiment.kwargs["experiment_config"]["metrics"]
    assert [s.name for s in experiment.scores] == ["corpus_bleu"]
    assert len(client.datasets["cc"].rows) == len(items)

    client.flush()
    traces = {t.id: t for t in fake_opik_backend.trace_trees}
    assert {ref.trace_id for ref in experiment.refs} == set(traces)
    for trace in traces.values():
        url = trace.input["image_url"]
        assert {fs.name: fs.value for fs in trace.feedback_scores} == local[url]
        (span,) = trace.spans
        assert span.name == "generate_caption" and span.metadata["model"] == str(tiny_blip)
        assert [a.file_name.endswith(".jpg") for a in span.attachments] == [True]


def test_opik_runner_wiring(tmp_path, caption_tsv, tiny_blip, one_thread, fake_opik_backend,  # noqa: F811
                            monkeypatch):
    """run_on_opik up to opik.evaluate (which needs REST): failed items stay out of the dataset, the
    experiment covers exactly this run's items, and the config says what was left out and why."""
    from types import SimpleNamespace

    from opik_metrics.experiments import opik_runner
    from opik_metrics.experiments.experiment_config import experiment_config
    from opik_metrics.scoring import as_results

    seen = {}

    def evaluate(dataset, task, scoring_metrics, dataset_item_ids, experiment_scoring_functions, **kwargs):
        seen.update(kwargs, dataset_item_ids=dataset_item_ids)
        rows = [{k: v for k, v in r.items() if k != "id"} for r in dataset.get_items() if r["id"] in dataset_item_ids]
        result = opik.evaluate_on_dict_items(items=rows, task=task, scoring_metrics=scoring_metrics)
        corpus = [r for f in experiment_scoring_functions for r in as_results(f(result.test_results))]
        return SimpleNamespace(test_results=result.test_results, experiment_scores=corpus,
                               experiment_url="http://opik.local/experiments/1")

    monkeypatch.setattr(opik_runner.opik, "evaluate", evaluate)
    client = HalfEmulatedClient()
    client.get_or_create_dataset("cc").insert([{"image_url": "http://old/run.jpg", "reference": "x", "source_row": 1}])
    items = [row.as_item() for row in read_tsv(str(caption_tsv))]
    metrics = [ROUGE(), BLEU()]
    summary = opik_runner.run_on_opik("blip", items, _task(tmp_path, tiny_blip), metrics, dataset_name="cc",
                                      config=experiment_config({"model": "tiny"}, metrics),
                                      scorers=[metrics[1].experiment_score], client=client, progress=False)
    assert (summary.backend, summary.items, summary.failed_items) == ("opik", 14, 9)
    assert summary.location == "http://opik.local/experiments/1"
    assert len(seen["dataset_item_ids"]) == 5 and len(client.datasets["cc"].rows) == 6   # old item kept, not run
    config = seen["experiment_config"]
    assert config["failed_items"] == 9 and config["failure_reasons"]["fetch: HTTP 404 Not Found"] == 1
    assert config["model"] == "tiny" and set(config["metrics"]) == {"rouge", "bleu"}
    assert seen["experiment_name"] == "blip" and "corpus_bleu" in summary.experiment_scores
    assert 0.0 <= summary.scores["rouge1_f1"] <= 1.0


@pytest.mark.opik_server
def test_against_a_real_opik_server(tmp_path, caption_tsv, tiny_blip, one_thread):  # noqa: F811
    try:
        choose_backend("opik", timeout=2.0)
    except OpikServerUnavailable as exc:
        pytest.skip(f"no Opik server: {exc}")
    items = _good_items(caption_tsv)[:3]
    name = f"opik-metrics-test-{uuid.uuid4().hex[:8]}"
    summary = run_experiment(name, items, _task(tmp_path, tiny_blip), [ROUGE(), BLEU()], dataset_name=name,
                             config={"model": str(tiny_blip)}, backend="opik", progress=False)
    assert summary.backend == "opik" and summary.failed_items == 0
    assert "rouge1_f1" in summary.scores and "corpus_bleu" in summary.experiment_scores
    _, path = _local_scores(tmp_path, _task(tmp_path, tiny_blip), items)
    with ExperimentStore(path) as store:
        report = push_experiment(store, "local", experiment_name=name + "-pushed", dataset_name=name,
                                 progress=False)
    assert report.traces == 3

"""The runner on the local store: failures recorded per item with their reason, corpus scores,
an interrupted run keeps what it finished and a re-run resumes from there."""
import pytest
import sacrebleu

from opik_metrics import BLEU, ROUGE
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.store import ExperimentStore, StoreError
from tests.experiments.toy import ITEMS, EchoTask, FragileMetric


def _run(store, task, name="toy", **kw):
    return run_experiment(name, ITEMS, task, [ROUGE(), BLEU(), FragileMetric()], dataset_name="toy-data",
                          config={"model": "echo"}, store=store, chunk_size=2, progress=False, **kw)


def test_every_item_lands_with_its_outcome(tmp_path):
    path = tmp_path / "store.sqlite"
    summary = _run(path, EchoTask())
    assert (summary.backend, summary.items, summary.failed_items) == ("local", 6, 2)
    assert {(f["stage"], f["reason"]) for f in summary.failures} == {
        ("fetch", "HTTP 404 Not Found"), ("task", "RuntimeError: model exploded")}

    with ExperimentStore(path) as store:
        info = store.info("toy")
        items = {i.input["question"]: i for i in store.items(info.id)}
    assert info.status == "finished" and info.config["model"] == "echo"
    assert set(info.config["metrics"]) == {"rouge", "bleu", "fragile"}
    assert info.config["metrics"]["bleu"]["signature"]["fields"]["tok"] == "13a" and info.config["versions"]["opik"] != "n/a"
    bad = items["q4"].scores
    assert bad["fragile"].failed and bad["fragile"].reason == "ValueError: cannot score this output"
    assert not bad["bleu"].failed and bad["rouge1_f1"].value == 0.0
    assert items["q1"].scores["length"].value == 5.0
    assert items["q0"].scores["bleu"].value == pytest.approx(1.0)

    scored = [items[q] for q in ("q0", "q1", "q4", "q5")]
    want = sacrebleu.corpus_bleu([i.output["output"] for i in scored], [[i.input["reference"] for i in scored]])
    assert info.experiment_scores["corpus_bleu"] == pytest.approx(want.score / 100)
    assert summary.experiment_scores == info.experiment_scores
    assert summary.scores["rouge1_f1"] == pytest.approx(sum(i.scores["rouge1_f1"].value for i in scored) / 4)


def test_interrupted_run_keeps_finished_items_and_resumes(tmp_path):
    path = tmp_path / "store.sqlite"
    first = EchoTask(interrupt_after=2)
    with pytest.raises(KeyboardInterrupt):
        _run(path, first)
    with ExperimentStore(path) as store:
        info = store.info("toy")
        done = {i.input["question"]: i.status for i in store.items(info.id)}
    assert info.status == "interrupted"
    assert done["q0"] == "scored" and done["q1"] == "scored"     # the first chunk was committed
    assert done["q2"] == "failed"                                # prepare failed it before the Ctrl-C
    assert done["q4"] == done["q5"] == "pending"

    second = EchoTask()
    summary = _run(path, second)
    assert second.calls == ["q3", "q4", "q5"]                    # nothing finished is run again
    assert summary.resumed_items == 3 and summary.items == 6 and summary.failed_items == 2
    fresh = _run(tmp_path / "fresh.sqlite", EchoTask())
    assert summary.scores == pytest.approx(fresh.scores)
    assert summary.experiment_scores == pytest.approx(fresh.experiment_scores)

    third = EchoTask()
    _run(path, third, retry_failed=True)
    assert third.calls == ["q3"] and third.prepared == ["q2", "q3"]


def test_a_changed_config_does_not_resume_silently(tmp_path):
    path = tmp_path / "store.sqlite"
    _run(path, EchoTask())
    with pytest.raises(StoreError, match="different config"):
        run_experiment("toy", ITEMS, EchoTask(), [ROUGE()], dataset_name="toy-data", config={"model": "other"},
                       store=path, progress=False)


def test_non_dict_output_is_a_task_failure(tmp_path):
    summary = run_experiment("odd", ITEMS[:1], lambda item: "just a string", [ROUGE()], dataset_name="d",
                             store=tmp_path / "s.sqlite", progress=False)
    assert summary.failures[0]["reason"] == "TypeError: the task must return a dict, got str"


@pytest.mark.parametrize("kwargs, message", [
    ({"items": ["not a dict"]}, "item 0: expected a dict"),
    ({"name": " "}, "experiment name: expected a non-empty string"),
    ({"metrics": [object()]}, "metric 0: expected an Opik metric"),
    ({"backend": "cloud"}, "backend must be one of auto, local, opik"),
])
def test_bad_arguments_are_named(tmp_path, kwargs, message):
    args = {"name": "e", "items": ITEMS, "task": EchoTask(), "metrics": [ROUGE()], **kwargs}
    with pytest.raises(ValueError, match=message):
        run_experiment(args.pop("name"), args.pop("items"), args.pop("task"), args.pop("metrics"),
                       dataset_name="d", store=tmp_path / "s.sqlite", progress=False, **args)


def test_batch_scoring_honours_a_metrics_text_field():
    """A metric with ``text_field`` scores that input, in the batched path as item by item."""
    from opik_metrics.scoring import Scorer

    class Length:
        name = "length"
        text_field = "text"

        def score(self, output=None, **inputs):
            from opik.evaluation.metrics.score_result import ScoreResult
            return [ScoreResult(name="length", value=len(inputs[self.text_field]))]

        def score_batch(self, outputs, references=None):
            from opik.evaluation.metrics.score_result import ScoreResult
            return [[ScoreResult(name="length", value=len(o))] for o in outputs]

    inputs = [{"output": "x", "text": "four"}, {"output": "yy", "text": "sixsix"}]
    got = [[r.value for _, r in item] for item in Scorer([Length()]).results(inputs)]
    assert got == [[4], [6]]


def test_experiment_scorers_see_stored_scores_as_opik_would_hand_them_over():
    """A non-finite value comes back as the float it was (never a silent 0.0); a failed score or
    one stored without a value is Opik's failed score: 0.0 marked ``scoring_failed``."""
    import math

    from opik_metrics.experiments.local_runner import as_test_results
    from opik_metrics.experiments.store import StoredItem, StoredScore

    scores = {"ppl": StoredScore("ppl", "perplexity", None, False, "overflow", {}, non_finite="inf"),
              "nan": StoredScore("nan", "m", None, False, None, {}, non_finite="nan"),
              "bleu": StoredScore("bleu", "bleu", None, True, "ValueError: bad input", {}),
              "gap": StoredScore("gap", "m", None, False, None, {}),
              "ok": StoredScore("ok", "m", 0.25, False, None, {"k": 1})}
    item = StoredItem("k1", 0, {"question": "q"}, "scored", output={"output": "o"}, scores=scores)
    (result,) = as_test_results([item])
    got = {r.name: r for r in result.score_results}
    assert math.isinf(got["ppl"].value) and got["ppl"].value > 0 and not got["ppl"].scoring_failed
    assert math.isnan(got["nan"].value) and not got["nan"].scoring_failed
    assert (got["bleu"].value, got["bleu"].scoring_failed, got["bleu"].reason) == (0.0, True, "ValueError: bad input")
    assert (got["gap"].value, got["gap"].scoring_failed) == (0.0, True) and "no value" in got["gap"].reason
    assert (got["ok"].value, got["ok"].scoring_failed, got["ok"].metadata) == (0.25, False, {"k": 1})

"""``opik_metrics.evaluate`` takes every argument of ``opik.evaluate`` (compared with the installed
opik's signature, so a new Opik argument cannot slip by), with its meaning: on a server passed to
``opik.evaluate`` (here ``trial_count=3`` against the REST stand-in, then compared item by item),
in the local store carried out (the scoring key mapping, item ids, the name prefix, tags and
prompts; trials in test_local_trials.py) or refused in one line that names the argument and says why."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import numpy as np
import opik
import pytest
import sacrebleu

from opik_metrics import BLEU, evaluate, evaluate_experiment
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import load_compared
from opik_metrics.experiments.opik_arguments import LocalArgumentRefused
from opik_metrics.experiments.store import ExperimentStore
from tests.opik_rest_server import OpikRestServer

OURS_ONLY = {"dataset_name", "store", "backend", "overwrite", "replace", "journal"}
OWN_DEFAULTS = {"task_threads": 1,            # one model shared by the scoring threads: 1, not Opik's 16
                "error_tolerance": None}      # None: Opik's default (METRIC_ERRORS), without importing opik


@pytest.mark.parametrize("ours, theirs", [(evaluate, opik.evaluate), (evaluate_experiment, opik.evaluate_experiment)],
                         ids=["evaluate", "evaluate_experiment"])
def test_the_signature_has_every_argument_of_opiks_in_its_order_with_its_default(ours, theirs):
    mine = inspect.signature(ours).parameters
    opiks = inspect.signature(theirs).parameters
    assert [n for n in mine if n in opiks] == list(opiks)
    assert set(mine) - set(opiks) <= OURS_ONLY
    for name, parameter in opiks.items():
        expected = OWN_DEFAULTS.get(name, parameter.default) if ours is evaluate else parameter.default
        assert mine[name].default == expected, name
        if parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and ours is evaluate:
            assert mine[name].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, name


ITEMS = [{"id": "a", "question": "le chat", "gold": "the cat sat on a mat"},
         {"id": "b", "question": "un chien", "gold": "a dog is running"},
         {"id": "c", "question": "la maison", "gold": "the house is red"}]
ANSWERS = {"le chat": "the cat sat on the mat", "un chien": "a dog runs", "la maison": "the red house"}


def _answer(item: dict) -> dict:
    return {"answer": ANSWERS[item["question"]]}


@pytest.mark.parametrize("argument, value", [
    ("scoring_functions", [lambda item, output: 1.0]), ("dataset_sampler", object()),
    ("dataset_filter_string", 'tags contains "x"'), ("blueprint_id", "bp-1")])
def test_what_only_a_server_does_is_refused_locally_in_one_line(tmp_path, argument, value):
    with pytest.raises(LocalArgumentRefused, match=rf"^{argument}=.* is not supported in the local store: "):
        evaluate(ITEMS, _answer, [BLEU(track=False)], experiment_name="x", store=tmp_path / "s.sqlite", verbose=0,
                 **{argument: value})
    assert not (tmp_path / "s.sqlite").exists() or not ExperimentStore(tmp_path / "s.sqlite").names()


def test_the_scoring_key_mapping_item_ids_prefix_tags_and_prompts_in_the_local_store(tmp_path):
    path = tmp_path / "s.sqlite"
    prompt = SimpleNamespace(name="translate", commit="abc123", prompt="Translate: {{question}}")
    summary = evaluate(ITEMS, _answer, [BLEU(track=False)], experiment_name_prefix="fr-en", verbose=0,
                       scoring_key_mapping={"output": "answer", "reference": lambda inputs: inputs["gold"]},
                       dataset_item_ids=["a", "b"], experiment_tags=["nightly"], prompt=prompt, store=path,
                       error_tolerance=20)
    assert summary.name.startswith("fr-en-") and summary.items == 2 and summary.failed_items == 0
    outputs, golds = [ANSWERS["le chat"], ANSWERS["un chien"]], [ITEMS[0]["gold"], ITEMS[1]["gold"]]
    assert summary.scores["bleu"] == pytest.approx(np.mean([sacrebleu.sentence_bleu(o, [g]).score / 100
                                                            for o, g in zip(outputs, golds)]), abs=1e-12)
    assert summary.experiment_scores["corpus_bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(outputs, [golds]).score / 100, abs=1e-12)     # the experiment scorer saw the mapping
    with ExperimentStore(path) as store:
        config = store.info(summary.name).config
    assert config["tags"] == ["nightly"]
    assert config["prompts"] == [{"name": "translate", "commit": "abc123", "prompt": "Translate: {{question}}"}]
    assert config["scoring_key_mapping"]["output"] == "answer"
    assert config["scoring_key_mapping"]["reference"].startswith("<function ")


def test_a_mapping_to_a_key_that_is_not_there_warns_as_opik_does(tmp_path):
    with pytest.warns(UserWarning, match=r"scoring_key_mapping 'reference': 'nothing' is not a key of item 1"):
        summary = evaluate(ITEMS[:1], _answer, [BLEU(track=False)], experiment_name="m", verbose=0,
                           scoring_key_mapping={"output": "answer", "reference": "nothing"},
                           store=tmp_path / "s.sqlite")
    assert summary.failed_items == 0 and "bleu" not in summary.scores     # BLEU says what it lacked, per item


def test_unknown_item_ids_and_error_tolerances_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"dataset_item_ids: no item of the dataset has the id 'z'"):
        evaluate(ITEMS, _answer, [], dataset_item_ids=["a", "z"], store=tmp_path / "s.sqlite", verbose=0)
    with pytest.raises(ValueError, match=r"error_tolerance: expected opik.ErrorTolerance"):
        evaluate(ITEMS, _answer, [], error_tolerance=15, store=tmp_path / "s.sqlite", verbose=0)


def test_trials_on_a_server_run_as_opik_runs_them_and_compare_by_item(monkeypatch):
    rng = np.random.default_rng(3)
    refs = [f"the {w} sat on the mat near the door" for w in ("cat", "dog", "bird", "fox", "cow", "owl")]
    noisy = {"good": 0.1, "poor": 0.5}

    def system(name):
        def task(item):            # a nondeterministic captioner: each trial drops words at random
            words = item["reference"].split()
            kept = [w for w in words if rng.random() > noisy[name]] or words[:1]
            return {"output": " ".join(kept)}
        return task

    with OpikRestServer() as server:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        for name in ("poor", "good"):
            summary = evaluate([{"reference": r} for r in refs], system(name), [BLEU()], experiment_name=name,
                               trial_count=3, dataset_name="trials", verbose=0, backend="opik")
            assert summary.trials == 3 and summary.items == 6 and summary.failed_items == 0
        experiments, _ = load_compared(["poor", "good"], opik=True)
        assert server.invalid == [] and server.unexpected == []
    assert [len(e.items) for e in experiments] == [18, 18]              # a trace and an experiment item per trial
    comparison = compare_experiments(experiments, CompareSettings(resamples=300))
    entry = comparison.pairs[0].metrics["bleu"]
    assert entry.n == 6 and comparison.scores["corpus_bleu"]["good"].n == 6
    assert any("poor: 6 items, 18 trials in all (3 per item)" in note for note in comparison.notes)

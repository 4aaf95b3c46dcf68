"""The distillation pipeline end to end on a tiny teacher (--quick, no Opik server): a student
is distilled, saved, reloaded, and both experiments land in the JSON results file."""
import json
import math

import pytest
import torch

from opik_metrics.neural.causal_lm import load_causal_lm
from pipelines import distillation
from pipelines.distillation_data import HELDOUT_TEXTS, TRAIN_TEXTS, heldout_items
from pipelines.distillation_experiments import choose_runner
from tests.neural.lm_fixtures import build_llama, one_torch_thread  # noqa: F401


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("distil")
    teacher = build_llama(root / "teacher", seed=5, layers=2)
    out = root / "run"
    argv = ["--quick", "--teacher", str(teacher), "--student-layers", "1", "--out", str(out),
            "--no-bertscore", "--no-progress"]
    assert distillation.main(argv) == 0
    return teacher, out, json.loads((out / "distillation_results.json").read_text())


def test_results_file_has_both_experiments_with_every_score(run):
    teacher, out, results = run
    assert results["config"]["backend"] == "local" and "not reachable" in results["config"]["backend_reason"]
    assert results["config"]["quick"] and results["config"]["student_layers"] == 1
    assert [e["name"] for e in results["experiments"]] == ["distillation-teacher", "distillation-student"]
    for exp in results["experiments"]:
        assert len(exp["items"]) == 3 and exp["config"]["role"] in exp["name"]
        for item in exp["items"]:
            assert {"perplexity", "kl_divergence", "rouge1_f1", "rougeL_f1"} <= set(item["scores"])
            assert all(v is not None and math.isfinite(v) for v in item["scores"].values())
            assert isinstance(item["output"]["output"], str)
        assert set(exp["experiment_scores"]) == {"corpus_perplexity", "corpus_kl_divergence"}
    teacher_exp, student_exp = results["experiments"]
    assert teacher_exp["experiment_scores"]["corpus_kl_divergence"] == pytest.approx(0.0, abs=1e-9)
    assert student_exp["experiment_scores"]["corpus_kl_divergence"] > 0


def test_training_history_is_recorded(run):
    _, _, results = run
    steps = results["training"]
    assert [s["step"] for s in steps] == list(range(4))
    for s in steps:
        assert math.isfinite(s["loss"]) and s["tokens"] > 0
        assert s["loss"] == pytest.approx(0.5 * s["task_loss"] + 0.5 * 4.0 * s["kd_loss"], rel=1e-5)


def test_student_scores_equal_a_direct_computation(run):
    """The saved student reloads through from_pretrained; its logged perplexity is exp(loss)."""
    _, out, results = run
    student = load_causal_lm(str(out / "student"), device="cpu")
    assert student.model.config.num_hidden_layers == 1
    for item in results["experiments"][1]["items"]:
        text = item["input"]["text"]
        ids = [student.tokenizer.bos_token_id] + student.tokenizer(text, add_special_tokens=False).input_ids
        x = torch.tensor([ids])
        with torch.no_grad():
            want = math.exp(student.model(input_ids=x, labels=x).loss.item())
        assert item["scores"]["perplexity"] == pytest.approx(want, rel=1e-5)


def test_student_starts_as_the_teachers_first_layers(tmp_path):
    from pipelines.distillation_student import truncated_student

    teacher = load_causal_lm(str(build_llama(tmp_path / "t", seed=6, layers=3)), device="cpu")
    student = truncated_student(teacher, 2)
    t_state, s_state = teacher.model.state_dict(), student.state_dict()
    assert set(s_state) < set(t_state) and not any(".layers.2." in k for k in s_state)
    for k, v in s_state.items():
        torch.testing.assert_close(v, t_state[k], rtol=0, atol=0)
    with pytest.raises(ValueError, match="student layers must be in \\[1, 2\\]"):
        truncated_student(teacher, 3)


def test_text_set_and_backend_choice(monkeypatch):
    assert len(TRAIN_TEXTS) >= 24 and len(HELDOUT_TEXTS) >= 10 and not set(TRAIN_TEXTS) & set(HELDOUT_TEXTS)
    for item in heldout_items():
        assert f"{item['prompt']} {item['reference']}" == item["text"]
    runner, why = choose_runner("local")
    assert runner.backend == "local"
    monkeypatch.setenv("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")  # nothing listens there
    assert choose_runner("auto")[0].backend == "local"
    with pytest.raises(RuntimeError, match="--backend opik but Opik server at .* not reachable"):
        choose_runner("opik")


def test_bad_options_give_one_clear_line(tmp_path, capsys):
    assert distillation.main(["--teacher", str(tmp_path / "missing"), "--out", str(tmp_path), "--backend",
                              "local", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("distillation: error: model path") and "does not exist" in err


def test_opik_runner_hands_the_experiment_to_opik_evaluate(monkeypatch):
    """With a server, the experiment goes through opik.evaluate (stood in here: no server)."""
    from types import SimpleNamespace

    import opik

    from opik_metrics.metrics.rouge import ROUGE
    from pipelines.distillation_experiments import LocalRunner, OpikRunner

    calls = {}

    class Client:
        def __init__(self, project_name=None):
            calls["project"] = project_name

        def get_or_create_dataset(self, name):
            calls["dataset"] = name
            return SimpleNamespace(insert=lambda items: calls.setdefault("inserted", items))

    def evaluate(dataset, task, scoring_metrics, experiment_name, experiment_scoring_functions, **kwargs):
        calls.update(kwargs, name=experiment_name, scorers=experiment_scoring_functions)
        local = LocalRunner().run(experiment_name, calls["inserted"], task, scoring_metrics, {})
        results = [SimpleNamespace(test_case=SimpleNamespace(
            dataset_item_id=it["id"], dataset_item_content=it["input"], task_output=it["output"]),
            score_results=[opik.evaluation.metrics.score_result.ScoreResult(name=k, value=v)
                           for k, v in it["scores"].items()]) for it in local.items]
        return SimpleNamespace(test_results=results)

    monkeypatch.setattr(opik, "Opik", Client)
    monkeypatch.setattr(opik, "evaluate", evaluate)
    items = [{"prompt": "a", "reference": "the cat sat", "text": "a the cat sat"}]
    corpus_n = lambda results: opik.evaluation.metrics.score_result.ScoreResult("n_items", len(results))  # noqa: E731
    record = OpikRunner("proj").run("exp", items, lambda item: {"output": "the cat"}, [ROUGE(track=False)],
                                    {"role": "student"}, [corpus_n])
    assert calls["project"] == "proj" and calls["inserted"] == items and calls["name"] == "exp"
    assert calls["experiment_config"] == {"role": "student"} and calls["task_threads"] == 1
    assert calls["scorers"] == [corpus_n]
    assert record.backend == "opik" and record.experiment_scores == {"n_items": 1}
    assert record.items[0]["scores"]["rouge1_recall"] == pytest.approx(2 / 3)

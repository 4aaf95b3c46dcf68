"""The distillation pipeline end to end on a tiny teacher (--quick, local store): a student is
distilled, saved, reloaded, and both experiments land in the experiment store."""
import json
import math

import pytest
import torch

from opik_metrics.experiments.opik_server import OpikServerUnavailable, choose_backend
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.neural.models.causal_lm import load_causal_lm
from opik_metrics.pipelines.distillation import command as distillation
from opik_metrics.pipelines.distillation.data import HELDOUT_TEXTS, TRAIN_TEXTS, heldout_items
from tests.neural.lm_fixtures import build_llama, one_torch_thread  # noqa: F401

NAMES = ["distillation-teacher", "distillation-student"]


def _read(store_path):
    with ExperimentStore(store_path, create=False) as store:
        return {name: (store.info(name), store.items(store.info(name).id)) for name in store.names()}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("distil")
    teacher = build_llama(root / "teacher", seed=5, layers=2)
    out, store = root / "run", root / "exp.sqlite"
    argv = ["--quick", "--teacher", str(teacher), "--student-layers", "1", "--out", str(out),
            "--store", str(store), "--no-bertscore", "--no-progress"]
    assert distillation.main(argv) == 0
    return teacher, out, store, _read(store)


def test_store_has_both_experiments_with_every_score(run):
    teacher, out, store, results = run
    assert list(results) == NAMES
    for name, (info, items) in results.items():
        assert info.config["role"] in name and info.status == "finished"
        assert info.config["runtime"]["backend"] == "local" and info.config["runtime"]["backend_reason"]
        assert info.config["quick"] and info.config["student_layers"] == 1
        assert {"perplexity", "kl_divergence"} <= set(info.config["metrics"])
        assert len(items) == 3 and info.items == 3 and info.failed_items == 0
        for item in items:
            assert item.status == "scored"
            assert {"perplexity", "kl_divergence", "rouge1_f1", "rougeL_f1"} <= set(item.scores)
            assert all(s.value is not None and math.isfinite(s.value) for s in item.scores.values())
            assert isinstance(item.output["output"], str)
            assert [span["name"] for span in item.trace] == ["generate_continuation"]
        assert set(info.experiment_scores) == {"corpus_perplexity", "corpus_kl_divergence"}
    (teacher_info, _), (student_info, _) = results.values()
    assert teacher_info.experiment_scores["corpus_kl_divergence"] == pytest.approx(0.0, abs=1e-9)
    assert student_info.experiment_scores["corpus_kl_divergence"] > 0
    assert student_info.config["runtime"]["training_history"] == str(out / "training_history.json")
    assert "training_history" not in teacher_info.config["runtime"]


def test_a_second_run_replaces_the_experiments(run, tmp_path):
    teacher, out, store, results = run
    argv = ["--quick", "--teacher", str(teacher), "--student-layers", "1", "--steps", "2",
            "--out", str(tmp_path / "again"), "--store", str(store), "--no-bertscore", "--no-progress"]
    assert distillation.main(argv) == 0
    again = _read(store)
    assert list(again) == NAMES and all(len(items) == 3 for _, items in again.values())
    assert again["distillation-student"][0].config["train"]["steps"] == 2
    assert again["distillation-student"][0].runs == 1


def test_training_history_is_recorded(run):
    _, out, _, _ = run
    steps = json.loads((out / "training_history.json").read_text())
    assert [s["step"] for s in steps] == list(range(4))
    for s in steps:
        assert math.isfinite(s["loss"]) and s["tokens"] > 0
        assert s["loss"] == pytest.approx(0.5 * s["task_loss"] + 0.5 * 4.0 * s["kd_loss"], rel=1e-5)


def test_student_scores_equal_a_direct_computation(run):
    """The saved student reloads through from_pretrained; its logged perplexity is exp(loss)."""
    _, out, _, results = run
    student = load_causal_lm(str(out / "student"), device="cpu")
    assert student.model.config.num_hidden_layers == 1
    for item in results["distillation-student"][1]:
        text = item.input["text"]
        ids = [student.tokenizer.bos_token_id] + student.tokenizer(text, add_special_tokens=False).input_ids
        x = torch.tensor([ids])
        with torch.no_grad():
            want = math.exp(student.model(input_ids=x, labels=x).loss.item())
        assert item.scores["perplexity"].value == pytest.approx(want, rel=1e-5)


def test_student_starts_as_the_teachers_first_layers(tmp_path):
    from opik_metrics.pipelines.distillation.student import truncated_student

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
    assert choose_backend("local").kind == "local"
    monkeypatch.setenv("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")  # configured, nothing listens there
    for requested in ("auto", "opik"):
        with pytest.raises(OpikServerUnavailable, match="Opik server at .* not reachable"):
            choose_backend(requested)


def test_bad_options_give_one_clear_line(tmp_path, capsys):
    assert distillation.main(["--teacher", str(tmp_path / "missing"), "--out", str(tmp_path), "--backend",
                              "local", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("distillation: error: model path") and "does not exist" in err


def test_a_configured_server_that_is_down_fails_before_any_work(tmp_path, capsys):
    """tests/conftest.py configures a closed port: auto without --store must not fall back silently."""
    assert distillation.main(["--teacher", str(tmp_path / "missing"), "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("distillation: error: Opik server at") and "--backend local" in err

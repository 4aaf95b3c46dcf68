"""The DistillationKL metric: values against F.kl_div on each text run alone through both
models, reductions, corpus score, and bad input."""
import opik
import pytest
import torch
import torch.nn.functional as F

from opik_metrics.metrics.distillation import DistillationKL
from opik_metrics.core.inputs import MetricInputError
from opik_metrics.neural.models.causal_lm import load_causal_lm
from opik_metrics.neural.models.vocabulary import VocabularyMismatchError
from tests.neural.lm_fixtures import (build_llama, corpus, gpt2_dir, llama_dir, llama_student_dir,  # noqa: F401
                                      one_torch_thread)


def direct_kl(teacher, student, text, temperature=1.0):
    """Per-token KL(teacher_T || student_T) of one unpadded text, with F.kl_div."""
    ids = [teacher.tokenizer.bos_token_id] + teacher.tokenizer(text, add_special_tokens=False).input_ids
    x = torch.tensor([ids])
    with torch.no_grad():
        t = teacher.model(input_ids=x).logits[0, :-1].double() / temperature
        s = student.model(input_ids=x).logits[0, :-1].double() / temperature
    return F.kl_div(F.log_softmax(s, -1), F.log_softmax(t, -1), reduction="none", log_target=True).sum(-1)


@pytest.fixture(scope="module")
def models(llama_dir, llama_student_dir):
    return load_causal_lm(str(llama_dir), device="cpu"), load_causal_lm(str(llama_student_dir), device="cpu")


def test_score_is_mean_token_kl_with_metadata(models, llama_dir, llama_student_dir):
    teacher, student = models
    metric = DistillationKL(teacher=str(llama_dir), student=str(llama_student_dir), temperature=2.0, track=False)
    for text in corpus(4):
        (res,) = metric.score(output=text, reference="ignored")
        per_token = direct_kl(teacher, student, text, 2.0)
        assert res.name == "kl_divergence" and res.reason is None
        assert res.value == pytest.approx(float(per_token.mean()), rel=1e-5)
        meta = res.metadata
        assert meta["n_tokens"] == len(per_token) and meta["temperature"] == 2.0 and meta["top_k"] is None
        assert meta["teacher"] == str(llama_dir) and "kl:teacher||student" in meta["signature"]


def test_sum_reduction_and_corpus_value(models):
    teacher, student = models
    texts = corpus(3)
    total = DistillationKL(teacher=teacher, student=student, reduction="sum", track=False)
    mean = DistillationKL(teacher=teacher, student=student, track=False)
    direct = [direct_kl(teacher, student, t) for t in texts]
    for res, per_token in zip(total.score_batch(texts), direct):
        assert res[0].value == pytest.approx(float(per_token.sum()), rel=1e-5)
    corpus_res = mean.corpus_score(texts + [""])
    want = float(sum(d.sum() for d in direct) / sum(len(d) for d in direct))
    assert corpus_res.name == "corpus_kl_divergence" and corpus_res.value == pytest.approx(want, rel=1e-5)
    assert total.corpus_score(texts).value == pytest.approx(float(sum(d.sum() for d in direct)), rel=1e-5)


def test_in_opik_evaluation(fake_opik_backend, models):
    teacher, student = models
    metric = DistillationKL(teacher=teacher, student=student, top_k=5, reverse=True, text_field="text")
    texts = corpus(2)
    result = opik.evaluate_on_dict_items(items=[{"text": t} for t in texts],
                                         task=lambda item: {"output": "unused"}, scoring_metrics=[metric])
    assert all(not s.scoring_failed for tr in result.test_results for s in tr.score_results)
    corpus_res = metric.experiment_score(result.test_results)
    assert corpus_res.value == pytest.approx(metric.corpus_score(texts).value, rel=1e-6)


def test_empty_text_is_zero_with_a_reason(models):
    metric = DistillationKL(*models, track=False)
    (res,) = metric.score("")
    assert res.value == 0.0 and res.metadata["n_tokens"] == 0 and "no token" in res.reason


def test_bad_arguments_are_clear_errors(models, tmp_path):
    teacher, student = models
    for bad in (0, -2.0):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            DistillationKL(teacher, student, temperature=bad, track=False)
    with pytest.raises(ValueError, match="reduction must be one of"):
        DistillationKL(teacher, student, reduction="max", track=False)
    with pytest.raises(ValueError, match="top_k=5000 exceeds the vocabulary size"):
        DistillationKL(teacher, student, top_k=5000, track=False)
    other = str(build_llama(tmp_path / "other_vocab", tokenizer_seed=5))
    with pytest.raises(VocabularyMismatchError, match="do not share a tokenizer"):
        DistillationKL(teacher, other, track=False)
    with pytest.raises(MetricInputError, match="field 'output': expected a string, got None"):
        DistillationKL(teacher, student, track=False).score(None)


def test_gpt2_and_llama_with_the_same_tokenizer_are_compatible(models, gpt2_dir):
    """Different architectures are fine when the vocabulary is the same."""
    teacher, _ = models
    metric = DistillationKL(teacher, str(gpt2_dir), track=False)
    (res,) = metric.score("A quick test.")
    assert res.value > 0 and res.metadata["student"] == str(gpt2_dir)

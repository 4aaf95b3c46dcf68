"""Per-token KL of softened distributions against torch.nn.functional.kl_div and hand-worked
values; the teacher-student engine against a direct per-text computation."""
import math

import pytest
import torch
import torch.nn.functional as F

from opik_metrics.neural.models.causal_lm import load_causal_lm
from opik_metrics.neural.lm.distillation_loss import DistillationKLScorer, VocabularyMismatchError, token_kl
from opik_metrics.neural.lm.windows import plan_windows
from tests.neural.lm_fixtures import (build_gpt2, build_llama, corpus, llama_dir, llama_student_dir,  # noqa: F401
                                      one_torch_thread, short_gpt2_dir, short_gpt2_student_dir)


def oracle_kl(t_logits, s_logits, temperature, top_k=None, reverse=False):
    """KL per position with F.kl_div(input=log q, target=log p, log_target=True)."""
    t, s = t_logits.double() / temperature, s_logits.double() / temperature
    if top_k is not None:
        idx = torch.topk(t, top_k, dim=-1).indices
        t, s = torch.gather(t, -1, idx), torch.gather(s, -1, idx)
    log_t, log_s = F.log_softmax(t, -1), F.log_softmax(s, -1)
    if reverse:
        log_t, log_s = log_s, log_t
    return F.kl_div(log_s, log_t, reduction="none", log_target=True).sum(-1)


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("top_k", [None, 1, 7, 50])
@pytest.mark.parametrize("reverse", [False, True])
def test_token_kl_equals_torch_kl_div(temperature, top_k, reverse):
    gen = torch.Generator().manual_seed(int(temperature * 10) + (top_k or 0) + reverse)
    for shape in [(50,), (3, 50), (2, 9, 50)]:
        t = torch.randn(*shape, generator=gen) * 3
        s = t + torch.randn(*shape, generator=gen)  # a student close to the teacher...
        far = torch.randn(*shape, generator=gen) * 3  # ...and one far from it
        for student in (s, far):
            got = token_kl(t, student, temperature, top_k, reverse)
            want = oracle_kl(t, student, temperature, top_k, reverse)
            assert got.shape == shape[:-1]
            torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)
            assert (got >= -1e-6).all()


def test_hand_worked_two_token_vocabulary():
    # teacher p = (1/4, 3/4) from logits (0, ln 3); student q = (1/2, 1/2)
    t = torch.tensor([0.0, math.log(3)])
    s = torch.tensor([0.0, 0.0])
    assert token_kl(t, s).item() == pytest.approx(0.25 * math.log(0.5) + 0.75 * math.log(1.5), rel=1e-6)
    # reverse: KL(q || p) = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3)
    assert token_kl(t, s, reverse=True).item() == pytest.approx(0.5 * math.log(4 / 3), rel=1e-6)
    # T = 2: teacher logits (0, ln 3 / 2) give p = (1, sqrt 3) / (1 + sqrt 3)
    p0 = 1 / (1 + math.sqrt(3))
    want = p0 * math.log(2 * p0) + (1 - p0) * math.log(2 * (1 - p0))
    assert token_kl(t, s, temperature=2.0).item() == pytest.approx(want, rel=1e-6)
    assert token_kl(t, t).item() == pytest.approx(0.0, abs=1e-7)


def test_hand_worked_top_k_renormalises_over_the_teachers_top_tokens():
    # teacher (6, 3, 1)/10 -> top 2 renormalised: (2/3, 1/3); the student's mass on token 2 is
    # dropped and its (1, 2) on tokens 0, 1 renormalise to (1/3, 2/3): KL = (1/3) ln 2
    t = torch.tensor([math.log(6), math.log(3), math.log(1)])
    s = torch.tensor([0.0, math.log(2), 5.0])
    assert token_kl(t, s, top_k=2).item() == pytest.approx(math.log(2) / 3, rel=1e-6)
    assert token_kl(t, s, top_k=1).item() == pytest.approx(0.0, abs=1e-7)  # one token: both are 1


def test_masked_vocabulary_gives_zero_not_nan():
    """A -inf teacher logit is a token with no teacher mass: it adds 0, not NaN."""
    t = torch.tensor([0.0, -math.inf, 1.0])
    s = torch.tensor([0.5, 0.0, 1.0])
    p = [1 / (1 + math.e), 0.0, math.e / (1 + math.e)]
    z = math.exp(0.5) + 1 + math.e
    q = [math.exp(0.5) / z, 1 / z, math.e / z]
    want = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q) if pi > 0)
    assert token_kl(t, s).item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "2", True])
def test_bad_temperature_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        token_kl(torch.zeros(3), torch.zeros(3), temperature=bad)


def test_bad_top_k_is_a_clear_error():
    with pytest.raises(ValueError, match="exceeds the vocabulary size \\(3\\)"):
        token_kl(torch.zeros(3), torch.zeros(3), top_k=4)
    with pytest.raises(ValueError, match="positive integer"):
        token_kl(torch.zeros(3), torch.zeros(3), top_k=0)
    with pytest.raises(ValueError, match="same shape"):
        token_kl(torch.zeros(3), torch.zeros(4))


def direct_text_kl(teacher, student, text, temperature, top_k, reverse):
    """Each text alone, unpadded: KL at every position that predicts a text token."""
    ids = [teacher.tokenizer.bos_token_id] + teacher.tokenizer(text, add_special_tokens=False).input_ids
    x = torch.tensor([ids])
    with torch.no_grad():
        t = teacher.model(input_ids=x).logits[0, :-1]
        s = student.model(input_ids=x).logits[0, :-1]
    return oracle_kl(t, s, temperature, top_k, reverse), len(ids) - 1


@pytest.mark.parametrize("temperature,top_k,reverse", [(1.0, None, False), (2.0, None, True),
                                                       (0.7, 10, False), (3.0, 10, True)])
def test_engine_equals_direct_computation_per_text(llama_dir, llama_student_dir, temperature, top_k, reverse):
    teacher = load_causal_lm(str(llama_dir), device="cpu")
    student = load_causal_lm(str(llama_student_dir), device="cpu")
    texts = [t for t in corpus(8) if len(teacher.tokenizer(t).input_ids) < 127] + [""]
    scorer = DistillationKLScorer(teacher, student, temperature=temperature, top_k=top_k,
                                  reverse=reverse, batch_size=3)
    for text, res in zip(texts, scorer.score(texts)):
        per_token, n = direct_text_kl(teacher, student, text, temperature, top_k, reverse)
        assert res.n_tokens == n
        assert res.kl_sum == pytest.approx(float(per_token.sum()), rel=1e-5, abs=1e-7)
        assert res.kl_mean == pytest.approx(float(per_token.mean()) if n else 0.0, rel=1e-5, abs=1e-7)


def test_long_texts_use_sliding_windows(short_gpt2_dir, short_gpt2_student_dir):
    """Texts longer than the 16-token context: each window run alone, KL summed over the
    positions it scores, equals the engine's batched result."""
    teacher = load_causal_lm(str(short_gpt2_dir), device="cpu")
    student = load_causal_lm(str(short_gpt2_student_dir), device="cpu")
    texts = corpus(3)
    got = DistillationKLScorer(teacher, student, temperature=2.0, stride=6, batch_size=4).score(texts)
    for text, res in zip(texts, got):
        ids = [teacher.tokenizer.bos_token_id] + teacher.tokenizer(text, add_special_tokens=False).input_ids
        total = 0.0
        for w in plan_windows(len(ids), 16, 6):
            x = torch.tensor([ids[w.begin:w.end]])
            with torch.no_grad():
                t, s = teacher.model(input_ids=x).logits[0], student.model(input_ids=x).logits[0]
            pos = slice(w.score_from - w.begin - 1, w.end - w.begin - 1)  # logits that predict the scored targets
            total += float(oracle_kl(t[pos], s[pos], 2.0).sum())
        assert res.n_tokens == len(ids) - 1 and res.n_windows > 1
        assert res.kl_sum == pytest.approx(total, rel=1e-5)


def test_teacher_against_itself_is_zero(llama_dir):
    lm = load_causal_lm(str(llama_dir), device="cpu")
    for res in DistillationKLScorer(lm, lm, temperature=2.0).score(corpus(3)):
        assert res.n_tokens > 0 and abs(res.kl_mean) < 1e-6


def test_mismatched_vocabularies_are_refused(tmp_path, llama_dir):
    teacher = load_causal_lm(str(llama_dir), device="cpu")
    smaller = load_causal_lm(str(build_llama(tmp_path / "v500", vocab_size=500)), device="cpu")
    with pytest.raises(VocabularyMismatchError, match="1000 logits per token, the student 500"):
        DistillationKLScorer(teacher, smaller)
    other = load_causal_lm(str(build_llama(tmp_path / "other", tokenizer_seed=5)), device="cpu")
    with pytest.raises(VocabularyMismatchError, match="do not share a tokenizer"):
        DistillationKLScorer(teacher, other)
    nobos = load_causal_lm(str(build_gpt2(tmp_path / "nobos", with_bos=False)), device="cpu")
    with pytest.raises(VocabularyMismatchError, match="different start tokens"):
        DistillationKLScorer(teacher, nobos)

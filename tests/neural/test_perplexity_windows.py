"""Texts longer than the context: sliding windows (hand-worked plans) equal the strided loop of
the transformers perplexity guide; stride makes no difference when the text fits."""
import math

import pytest
import torch

from opik_metrics.neural.models.causal_lm import load_causal_lm
from opik_metrics.neural.lm.windows import Window, plan_windows
from opik_metrics.neural.lm.perplexity import PerplexityScorer
from tests.neural.lm_fixtures import corpus, gpt2_dir, one_torch_thread, short_gpt2_dir  # noqa: F401


def test_hand_worked_plans():
    assert plan_windows(0, 4, 2) == [] and plan_windows(1, 4, 2) == []
    assert plan_windows(4, 4, 2) == [Window(0, 4, 1)]          # fits: one window, stride unused
    assert plan_windows(10, None, None) == [Window(0, 10, 1)]  # no context limit
    # length 10, window 4, stride 2: targets 1..9 each scored exactly once
    assert plan_windows(10, 4, 2) == [Window(0, 4, 1), Window(2, 6, 4), Window(4, 8, 6), Window(6, 10, 8)]
    # no overlap: the first token of each later window has no context and is not scored
    assert plan_windows(10, 4, 4) == [Window(0, 4, 1), Window(4, 8, 5), Window(8, 10, 9)]
    assert plan_windows(5, 4, 3) == [Window(0, 4, 1), Window(3, 5, 4)]


@pytest.mark.parametrize("length,max_length,stride", [(n, m, s) for n in (5, 17, 40) for m in (4, 7, 16)
                                                      for s in (1, 3, m - 1) if s >= 1])
def test_every_target_scored_once_when_windows_overlap(length, max_length, stride):
    scored = [p for w in plan_windows(length, max_length, stride) for p in range(w.score_from, w.end)]
    assert scored == list(range(1, length))
    for w in plan_windows(length, max_length, stride):
        assert w.end - w.begin <= max_length and w.score_from - w.begin >= min(w.begin, max_length - stride) >= 0


def test_bad_stride_is_a_clear_error():
    for stride in (0, 5, 2.5, True):
        with pytest.raises(ValueError, match="stride must be an integer in \\[1, 4\\]"):
            plan_windows(10, 4, stride)


def guide_strided_nll(model, ids: list[int], max_length: int, stride: int) -> tuple[float, int]:
    """The strided loop of the transformers guide "Perplexity of fixed-length models", with the
    token count taken from the labels the model actually scores (the guide's ``num_valid - 1``
    undercounts by one in every window after the first)."""
    x = torch.tensor([ids])
    seq_len = x.size(1)
    nll_sum, n_tokens, prev_end = 0.0, 0, 0
    for begin in range(0, seq_len, stride):
        end = min(begin + max_length, seq_len)
        trg_len = end - prev_end
        input_ids = x[:, begin:end]
        target_ids = input_ids.clone()
        target_ids[:, :-trg_len] = -100
        n = int((target_ids[:, 1:] != -100).sum())
        if n:
            with torch.no_grad():
                loss = model(input_ids=input_ids, labels=target_ids).loss.item()
            nll_sum += loss * n
            n_tokens += n
        prev_end = end
        if end == seq_len:
            break
    return nll_sum, n_tokens


@pytest.mark.parametrize("stride", [16, 8, 5, 1])
def test_long_texts_equal_the_guides_strided_loop(short_gpt2_dir, stride):
    lm = load_causal_lm(str(short_gpt2_dir), device="cpu")
    assert lm.context_length == 16
    texts = corpus(8) if stride > 1 else corpus(2)
    got = PerplexityScorer(lm, stride=stride, batch_size=5).score(texts)
    for text, res in zip(texts, got):
        ids = [lm.tokenizer.bos_token_id] + lm.tokenizer(text, add_special_tokens=False).input_ids
        assert len(ids) > 16  # really longer than the context
        nll, n = guide_strided_nll(lm.model, ids, 16, stride)
        assert res.n_tokens == n
        assert res.nll_sum == pytest.approx(nll, rel=1e-5)
        assert res.perplexity == pytest.approx(math.exp(nll / n), rel=1e-5)
        assert res.n_windows > 1
        if stride < 16:
            assert n == res.text_tokens  # overlapping windows score every token


def test_stride_and_no_stride_equal_when_the_text_fits(gpt2_dir):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    texts = [t for t in corpus(20) if len(lm.tokenizer(t).input_ids) < 127]
    whole = PerplexityScorer(lm).score(texts)
    for stride in (1, 7, 128):
        strided = PerplexityScorer(lm, stride=stride).score(texts)
        assert [r.perplexity for r in strided] == [r.perplexity for r in whole]
    # a window just long enough for each text, with any stride, changes nothing either
    for text, res in zip(texts[:6], whole[:6]):
        need = res.n_tokens + 1
        fitted = PerplexityScorer(lm, max_length=need, stride=1).score([text])[0]
        assert fitted.n_windows == 1 and fitted.perplexity == pytest.approx(res.perplexity, rel=1e-5)


def test_max_length_beyond_context_is_refused(gpt2_dir):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    with pytest.raises(ValueError, match="exceeds the model's context length \\(128\\)"):
        PerplexityScorer(lm, max_length=129)
    with pytest.raises(ValueError, match="stride must be an integer in \\[1, 128\\]"):
        PerplexityScorer(lm, stride=200)

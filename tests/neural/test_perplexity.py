"""Perplexity engine against a direct computation from the model's own loss, on many texts;
batch invariance; hand-worked values from models whose probabilities we set."""
import math
import random

import pytest
import torch
from transformers import PretrainedConfig

from opik_metrics.neural.models.causal_lm import CausalLM, load_causal_lm
from opik_metrics.neural.lm.perplexity import PerplexityScorer, corpus_perplexity
from tests.neural.lm_fixtures import (build_tokenizer, corpus, gpt2_dir, llama_dir, nobos_llama_dir,  # noqa: F401
                                      one_torch_thread)

RTOL = 1e-5


def oracle_perplexity(lm: CausalLM, text: str, bos: bool = True) -> tuple[float, int]:
    """exp(model loss) of one unpadded text with BOS prepended: the definition, no batching."""
    ids = lm.tokenizer(text, add_special_tokens=False).input_ids
    ids = ([lm.tokenizer.bos_token_id] if bos else []) + ids
    x = torch.tensor([ids])
    with torch.no_grad():
        loss = lm.model(input_ids=x, labels=x).loss.item()
    return math.exp(loss), len(ids) - 1


@pytest.mark.parametrize("fixture", ["gpt2_dir", "llama_dir"])
def test_equals_exp_of_model_loss_on_many_texts(fixture, request):
    lm = load_causal_lm(str(request.getfixturevalue(fixture)), device="cpu")
    texts = [t for t in corpus(25) if len(lm.tokenizer(t).input_ids) < 127]  # fit the 128 context
    assert len(texts) > 40
    got = PerplexityScorer(lm, batch_size=7).score(texts)
    for text, res in zip(texts, got):
        want, n = oracle_perplexity(lm, text)
        assert res.n_tokens == n and res.n_windows == 1
        assert res.perplexity == pytest.approx(want, rel=RTOL)


def test_batch_invariance(llama_dir):
    lm = load_causal_lm(str(llama_dir), device="cpu")
    texts = corpus(20)
    alone = [PerplexityScorer(lm, batch_size=1).score([t])[0].perplexity for t in texts]
    rng = random.Random(0)
    order = list(range(len(texts)))
    rng.shuffle(order)
    for batch_size in (3, 16, 64):
        mixed = PerplexityScorer(lm, batch_size=batch_size).score([texts[i] for i in order])
        for k, i in enumerate(order):
            assert mixed[k].perplexity == pytest.approx(alone[i], rel=RTOL)


def test_no_bos_tokenizer_scores_from_the_second_token(nobos_llama_dir):
    lm = load_causal_lm(str(nobos_llama_dir), device="cpu")
    scorer = PerplexityScorer(lm)
    assert scorer.start_id is None and "bos:no" in scorer.signature
    texts = [t for t in corpus(10) if len(lm.tokenizer(t).input_ids) <= 128]
    for text, res in zip(texts, scorer.score(texts)):
        want, n = oracle_perplexity(lm, text, bos=False)
        assert res.n_tokens == n == res.text_tokens - 1
        assert res.perplexity == pytest.approx(want, rel=RTOL)
    with pytest.raises(ValueError, match="no BOS token"):
        PerplexityScorer(lm, add_start_token=True)


def test_add_start_token_false_matches_evaluate_option(gpt2_dir):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    texts = [t for t in corpus(5) if len(lm.tokenizer(t).input_ids) <= 128]
    for text, res in zip(texts, PerplexityScorer(lm, add_start_token=False).score(texts)):
        assert res.perplexity == pytest.approx(oracle_perplexity(lm, text, bos=False)[0], rel=RTOL)


def test_empty_text_is_one_with_zero_tokens(gpt2_dir):
    lm = load_causal_lm(str(gpt2_dir), device="cpu")
    res = PerplexityScorer(lm).score(["", "A dog."])
    assert (res[0].n_tokens, res[0].perplexity, res[0].mean_nll) == (0, 1.0, 0.0)
    assert res[1].n_tokens > 0 and math.isfinite(res[1].perplexity)


def test_uniform_model_has_perplexity_equal_to_vocabulary_size(tmp_path):
    """Hand-worked: zero logits give P = 1/V for every token, so PP = V whatever the text."""
    from tests.neural.lm_fixtures import build_gpt2

    lm = load_causal_lm(str(build_gpt2(tmp_path / "uniform", seed=9)), device="cpu")
    with torch.no_grad():
        lm.model.lm_head.weight.zero_()  # tied: zeroes the embeddings as well, logits are all 0
    got = PerplexityScorer(lm).score(["The dog.", "Some longer text, with 12 words in it!"])
    for res in got:
        assert res.perplexity == pytest.approx(lm.vocab_size, rel=1e-6)
        assert res.mean_nll == pytest.approx(math.log(lm.vocab_size), rel=1e-6)


class BigramLM(torch.nn.Module):
    """A causal LM whose next-token log-probs depend only on the current token: a lookup table."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = torch.nn.Parameter(table, requires_grad=False)
        self.config = PretrainedConfig(vocab_size=table.shape[0], max_position_embeddings=64)

    dtype = torch.float32

    def get_output_embeddings(self):
        return None

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        return type("Out", (), {"logits": self.table[input_ids]})()


def test_hand_worked_bigram_perplexity():
    """[BOS, a, b]: P(a | BOS) = 1/2, P(b | a) = 1/4, so PP = exp(-(ln 1/2 + ln 1/4) / 2) = sqrt(8)."""
    tok = build_tokenizer()
    a, b = tok(" the of", add_special_tokens=False).input_ids
    vocab, bos = len(tok), tok.bos_token_id
    table = torch.full((vocab, vocab), -1e9)
    table[bos, a], table[bos, b] = math.log(0.5), math.log(0.5)
    table[a, b], table[a, bos] = math.log(0.25), math.log(0.75)
    lm = CausalLM.from_objects(BigramLM(table), tok, name="bigram")
    (res,) = PerplexityScorer(lm).score([" the of"])
    assert res.n_tokens == 2
    assert res.perplexity == pytest.approx(math.sqrt(8), rel=1e-6)
    assert res.nll_sum == pytest.approx(math.log(2) + math.log(4), rel=1e-6)


def test_corpus_perplexity_is_token_weighted():
    from opik_metrics.neural.lm.perplexity import TextPerplexity

    items = [TextPerplexity(2 * math.log(2), 2, 2, 1), TextPerplexity(6 * math.log(8), 6, 6, 1),
             TextPerplexity(0.0, 0, 0, 0)]
    # (2 ln 2 + 6 ln 8) / 8 = 20 ln 2 / 8 = 2.5 ln 2 -> 2 ** 2.5; the mean of PPs would be 5
    assert corpus_perplexity(items) == pytest.approx(2 ** 2.5)
    assert corpus_perplexity(items[2:]) == 1.0

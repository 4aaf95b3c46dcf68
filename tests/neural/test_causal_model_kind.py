"""Perplexity and KL refuse models that are not trained causal LMs, at load time, with a clear
error: an encoder (BERT) and a causal LM whose head is missing from its checkpoint."""
import pytest
import torch

from opik_metrics.neural.models.causal_lm import clear_cache, load_causal_lm
from tests.neural.lm_fixtures import build_gpt2
from tests.neural.tiny_models import build_bert


def test_an_encoder_is_refused_before_its_weights_load(tmp_path, monkeypatch):
    import transformers
    folder = build_bert(tmp_path / "bert")
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: pytest.fail("the weights were loaded (and transformers reported on them)"))
    with pytest.raises(ValueError, match=r"is not a causal language model \(its checkpoint is a BertModel\)"):
        load_causal_lm(str(folder))


def test_a_causal_lm_without_its_head_is_refused(tmp_path):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=32, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(config)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("lm_head")}
    folder = tmp_path / "headless"
    model.save_pretrained(folder, state_dict=state)
    donor = build_gpt2(tmp_path / "donor")              # borrow a tokenizer
    for f in donor.iterdir():
        if "token" in f.name or f.name in ("vocab.json", "merges.txt"):
            (folder / f.name).write_bytes(f.read_bytes())
    clear_cache()
    with pytest.raises(ValueError, match="has no trained language-model head: lm_head is missing"):
        load_causal_lm(str(folder))


def test_a_real_causal_lm_loads(tmp_path):
    clear_cache()
    assert load_causal_lm(str(build_gpt2(tmp_path / "gpt2"))).vocab_size > 0

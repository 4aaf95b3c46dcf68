"""Tiny random causal LMs (GPT-2, Llama) with a byte-level BPE tokenizer, saved with
save_pretrained so tests load them through the real from_pretrained path; plus the packaged
SmolLM2, loaded once per session. Import the fixtures into a test module to use them (and
``one_torch_thread``, which is autouse once imported).
"""
from __future__ import annotations

import functools
from pathlib import Path

import pytest
import torch

from tests.corpus import realistic_pairs

SPECIALS = ["<bos>", "<eos>", "<pad>"]


def corpus(n: int = 60, seed: int = 3) -> list[str]:
    """Seeded English-like texts of 8 to ~100 words."""
    preds, refs = realistic_pairs(n, seed=seed)
    return preds + refs


@functools.lru_cache(maxsize=None)
def _tokenizer_json(vocab_size: int, seed: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus(200, seed=seed), trainer)
    return tok.to_str()


def build_tokenizer(with_bos: bool = True, vocab_size: int = 1000, seed: int = 11):
    """A PreTrainedTokenizerFast over byte-level BPE (every text tokenises, no unknowns);
    ``seed`` picks the training corpus, so another seed gives another vocabulary."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    specials = {"eos_token": "<eos>", "pad_token": "<pad>"}
    if with_bos:
        specials["bos_token"] = "<bos>"
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(_tokenizer_json(vocab_size, seed)), **specials)


def build_gpt2(folder: Path, seed: int = 0, n_positions: int = 128, layers: int = 2,
               with_bos: bool = True, hidden: int = 32) -> Path:
    """A random GPT-2 (hidden 32) saved with its tokenizer; ``n_positions`` is its context."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = build_tokenizer(with_bos)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tok), n_positions=n_positions, n_embd=hidden, n_layer=layers,
                        n_head=2, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return _save(GPT2LMHeadModel(config), tok, folder)


def build_llama(folder: Path, seed: int = 0, max_positions: int = 128, layers: int = 2,
                with_bos: bool = True, vocab_size: int = 1000, tokenizer_seed: int = 11) -> Path:
    """A random Llama (hidden 32, tied embeddings like SmolLM2) saved with its tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = build_tokenizer(with_bos, vocab_size, tokenizer_seed)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions,
                         tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    return _save(LlamaForCausalLM(config), tok, folder)


def _save(model, tok, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """One intra-op thread while a module runs: for tiny models OpenMP's overhead dwarfs the work
    (100x slower with 2 threads on 2 shared cores, measured); restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def gpt2_dir(tmp_path_factory) -> Path:
    return build_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture(scope="session")
def short_gpt2_dir(tmp_path_factory) -> Path:
    """Context of 16 tokens: most corpus texts need several windows."""
    return build_gpt2(tmp_path_factory.mktemp("gpt2_short"), seed=1, n_positions=16)


@pytest.fixture(scope="session")
def short_gpt2_student_dir(tmp_path_factory) -> Path:
    """Another 16-token-context GPT-2 with the same tokenizer (a student for windowed KL)."""
    return build_gpt2(tmp_path_factory.mktemp("gpt2_short_student"), seed=7, n_positions=16, layers=1)


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama"), seed=2)


@pytest.fixture(scope="session")
def llama_student_dir(tmp_path_factory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama_student"), seed=3, layers=1)


@pytest.fixture(scope="session")
def nobos_llama_dir(tmp_path_factory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama_nobos"), seed=4, with_bos=False)


@pytest.fixture(scope="session")
def smollm2():
    """The packaged SmolLM2-135M (GGUF, ~20 s to load), once per session."""
    from opik_metrics.neural.models.causal_lm import load_causal_lm

    return load_causal_lm("packaged:smollm2", device="cpu")

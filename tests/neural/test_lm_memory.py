"""Memory bounded by design (issue "Hardening", item 1): with a large vocabulary, perplexity and KL
make the logits chunk by chunk, so the peak memory of the logits path depends on the chunk size,
not on the text length, and the numbers equal the direct (unchunked) transformers computation.

Peak memory is measured on every tensor that torch creates while scoring (a TorchDispatchMode
that counts each new storage while it lives): the CPU allocator keeps no statistics of its own.
"""
from __future__ import annotations

import weakref
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from opik_metrics.neural.lm.chunks import (DEFAULT_MAX_MEMORY_MB, KL_BYTES_PER_LOGIT, LOGIT_WORK_MB,
                                           PERPLEXITY_BYTES_PER_LOGIT, MemoryBudgetError, chunk_positions, splits)
from opik_metrics.neural.lm.kl import DistillationKLScorer
from opik_metrics.neural.lm.perplexity import PerplexityScorer
from opik_metrics.neural.lm.windows import plan_windows
from opik_metrics.neural.models.causal_lm import CausalLM, load_causal_lm
from tests.neural.lm_fixtures import _save, build_tokenizer, corpus, one_torch_thread  # noqa: F401

VOCAB = 50_000
CONTEXT = 256
MB = 2 ** 20


class PeakMemory(TorchDispatchMode):
    """Bytes of the storages created under the mode and still alive: current, peak, largest one."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = self.peak = self.largest = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                storage = t.untyped_storage()
                key, size = storage.data_ptr(), storage.nbytes()
                if key and key not in self.live:
                    self.live[key] = size
                    self.current += size
                    self.peak = max(self.peak, self.current)
                    self.largest = max(self.largest, size)
                    weakref.finalize(t, self._free, key)
        return out


def build_big_vocab_gpt2(folder: Path, seed: int, layers: int) -> Path:
    """A random GPT-2 with a 50,000-entry head over the 1,000-token test tokenizer (a padded
    vocabulary, as many real checkpoints have): the logits are as wide as GPT-2's own."""
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = build_tokenizer(True)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=VOCAB, n_positions=CONTEXT, n_embd=32, n_layer=layers, n_head=2,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    return _save(GPT2LMHeadModel(config), tok, folder)


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    teacher = load_causal_lm(str(build_big_vocab_gpt2(tmp_path_factory.mktemp("big_t"), 0, 2)), device="cpu")
    student = load_causal_lm(str(build_big_vocab_gpt2(tmp_path_factory.mktemp("big_s"), 1, 1)), device="cpu")
    return teacher, student


def long_text(tokenizer, n_tokens: int) -> str:
    words = " ".join(corpus(200)).split()
    text, k = "", 50
    while len(tokenizer(text, add_special_tokens=False).input_ids) < n_tokens:
        text, k = " ".join(words[:k]), k + 50
    return text


def window_ids(lm, text, stride):
    ids = [lm.tokenizer.bos_token_id] + lm.tokenizer(text, add_special_tokens=False).input_ids
    for w in plan_windows(len(ids), CONTEXT, stride):
        yield ids[w.begin:w.end], w.score_from - w.begin


def direct_nll(lm, text, stride):
    """Full logits of each window straight from transformers, cross-entropy over all of them."""
    total = 0.0
    with torch.no_grad():
        for ids, score_from in window_ids(lm, text, stride):
            logits = lm.model(torch.tensor([ids])).logits[0]
            total += F.cross_entropy(logits[score_from - 1:-1].double(), torch.tensor(ids[score_from:]),
                                     reduction="sum").item()
    return total


def direct_kl(teacher, student, text, stride, temperature):
    total = 0.0
    with torch.no_grad():
        for ids, score_from in window_ids(teacher, text, stride):
            x = torch.tensor([ids])
            t = teacher.model(x).logits[0, score_from - 1:-1].double() / temperature
            s = student.model(x).logits[0, score_from - 1:-1].double() / temperature
            total += F.kl_div(F.log_softmax(s, -1), F.log_softmax(t, -1), reduction="sum", log_target=True).item()
    return total


def test_large_vocab_models_split_into_base_and_head(big):
    teacher, student = big
    assert teacher.vocab_size == VOCAB and splits(teacher.model) and splits(student.model)


def test_stated_chunk_keeps_smollm2_sized_logits_work_under_the_budget():
    for per_logit in (PERPLEXITY_BYTES_PER_LOGIT, KL_BYTES_PER_LOGIT):
        chunk = chunk_positions(49_152, per_logit)
        assert chunk >= 1 and chunk * 49_152 * per_logit <= LOGIT_WORK_MB * MB <= 512 * MB


@pytest.mark.parametrize("chunk", [7, 64])
def test_perplexity_peak_scales_with_chunk_not_text_length(big, chunk):
    lm = big[0]
    scorer = PerplexityScorer(lm, stride=CONTEXT // 2, batch_size=4)
    scorer.chunk = chunk
    bound = chunk * VOCAB * PERPLEXITY_BYTES_PER_LOGIT + 16 * MB   # logits work + tiny-model activations
    peaks = []
    for n_tokens in (300, 1200):
        text = long_text(lm.tokenizer, n_tokens)
        with PeakMemory() as mem:
            got = scorer.score([text])[0]
        assert got.n_windows > 1
        assert got.nll_sum == pytest.approx(direct_nll(lm, text, CONTEXT // 2), rel=1e-5)
        assert mem.largest <= chunk * VOCAB * 4 and mem.peak <= bound, (mem.largest, mem.peak, bound)
        peaks.append(mem.peak)
    assert peaks[1] <= 1.5 * peaks[0] + 4 * MB     # 4x the text, same logits work
    # the unchunked path held a whole batch of windows' logits: 4 x 256 x 50,000 float32 = 205 MB
    assert max(peaks) < 4 * CONTEXT * VOCAB * 4 / 4


@pytest.mark.parametrize("temperature,chunk", [(1.0, 5), (2.0, 48)])
def test_kl_peak_scales_with_chunk_not_text_length(big, temperature, chunk):
    teacher, student = big
    scorer = DistillationKLScorer(teacher, student, temperature=temperature, stride=CONTEXT // 2, batch_size=4)
    scorer.chunk = chunk
    bound = chunk * VOCAB * KL_BYTES_PER_LOGIT + 16 * MB
    peaks = []
    for n_tokens in (300, 1200):
        text = long_text(teacher.tokenizer, n_tokens)
        with PeakMemory() as mem:
            got = scorer.score([text])[0]
        assert got.n_windows > 1
        assert got.kl_sum == pytest.approx(direct_kl(teacher, student, text, CONTEXT // 2, temperature), rel=1e-5)
        assert mem.largest <= chunk * VOCAB * 8 and mem.peak <= bound, (mem.largest, mem.peak, bound)
        peaks.append(mem.peak)
    assert peaks[1] <= 1.5 * peaks[0] + 4 * MB


def test_chunk_boundaries_do_not_change_the_numbers(big):
    """Only float32 rounding of the head matmul (a different number of rows per call) differs."""
    teacher, student = big
    text = long_text(teacher.tokenizer, 400)
    values = []
    for chunk in (1, 13, 10_000):
        scorer = DistillationKLScorer(teacher, student, top_k=50, stride=CONTEXT // 2)
        scorer.chunk = chunk
        values.append(scorer.score([text])[0].kl_sum)
    assert values[0] == pytest.approx(values[2], rel=1e-6) and values[1] == pytest.approx(values[2], rel=1e-6)


def test_a_window_that_cannot_fit_the_budget_is_a_clear_error(big):
    lm = big[0]
    assert PerplexityScorer(lm).max_memory_mb == DEFAULT_MAX_MEMORY_MB
    with pytest.raises(ValueError, match="max_memory_mb"):
        PerplexityScorer(lm, max_memory_mb=10)
    # eager attention holds [heads, window, window] scores: a 256-token window of a model with
    # many heads needs more than a 280 MB budget once 256 MB of logits work is set aside
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=VOCAB, n_positions=CONTEXT, n_embd=64, n_layer=1, n_head=64)
    config._attn_implementation = "eager"
    wide = CausalLM.from_objects(GPT2LMHeadModel(config).eval(), lm.tokenizer)
    text = long_text(lm.tokenizer, 300)
    with pytest.raises(MemoryBudgetError, match="a window of 256 tokens needs about .* max_memory_mb=280"):
        PerplexityScorer(wide, max_memory_mb=280).score([text])
    with pytest.raises(MemoryBudgetError, match="max_length"):
        DistillationKLScorer(wide, wide, max_memory_mb=280).score([text])
    assert PerplexityScorer(wide, max_length=64, max_memory_mb=280).score([text])[0].n_windows > 1

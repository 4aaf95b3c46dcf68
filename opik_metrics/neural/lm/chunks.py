"""Memory bounded by design for the logits path of perplexity and KL.

A causal LM's logits are ``[tokens x vocab]``: for SmolLM2 (vocab 49,152) one 8,192-token window
is 1.6 GB in float32, and every float copy (log-softmax, float64 KL terms) is another 1.6-3.2 GB.
So the scorers never ask the model for full logits: they run the base model (hidden states,
``[tokens x hidden]``, small), keep the positions that are scored, and apply the LM head to
``chunk`` positions at a time, doing the log-softmax / cross-entropy / KL of that chunk before the
next. Logits work is then ``chunk x vocab x bytes_per_position`` whatever the text length.

Models whose logits are not just ``head(hidden)`` (soft-capping, logit scales) are detected with a
one-off check on a short prefix and fall back to full logits, still post-processed in chunks.

Budget (``max_memory_mb``, default :data:`DEFAULT_MAX_MEMORY_MB`): the forward activations of a batch
(estimated from the config) plus :data:`LOGIT_WORK_MB` of logits work. Batches are sized to fit;
a single window that cannot fit is a clear ``MemoryBudgetError`` before anything is allocated.
"""
from __future__ import annotations

import weakref
from typing import Any, Iterator, Sequence

import torch

from opik_metrics.neural.lm.batches import PaddedBatch

# Logits work at a time (one chunk of positions, all its float copies): the stated bound.
LOGIT_WORK_MB = 256
# Default whole budget: one batch's forward activations + the logits work.
DEFAULT_MAX_MEMORY_MB = 2048
# Bytes per position per vocabulary entry that a chunk holds at its peak (estimates, generous):
# perplexity: head output (model dtype) + float32 copy + log-softmax of cross_entropy;
# KL (float64): both models' chunks, two float64 copies, two log-softmaxes, exp, difference.
PERPLEXITY_BYTES_PER_LOGIT = 16
KL_BYTES_PER_LOGIT = 96

_MB = 2 ** 20


class MemoryBudgetError(ValueError):
    """A request that cannot fit the stated memory budget (rather than the kernel's OOM kill)."""


def validate_max_memory_mb(max_memory_mb: int | float | None) -> float:
    if max_memory_mb is None:
        return float(DEFAULT_MAX_MEMORY_MB)
    if isinstance(max_memory_mb, bool) or not isinstance(max_memory_mb, (int, float)) \
            or not max_memory_mb > LOGIT_WORK_MB:
        raise ValueError(f"max_memory_mb must be a number > {LOGIT_WORK_MB} (the logits work), got {max_memory_mb!r}")
    return float(max_memory_mb)


def chunk_positions(vocab_size: int, bytes_per_logit: int, work_mb: float = LOGIT_WORK_MB) -> int:
    """Positions per chunk so that ``chunk x vocab x bytes_per_logit`` stays within ``work_mb``."""
    return max(1, int(work_mb * _MB) // (max(1, vocab_size) * bytes_per_logit))


# ---------------------------------------------------------------- forward-activation estimate

def _cfg(config: Any, *names: str, default: int) -> int:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return default


def forward_bytes(model: Any, rows: int, width: int, full_logits: bool = False) -> int:
    """A generous estimate of the peak activation memory of one forward pass (no KV cache):
    one layer's working set per token, the quadratic attention scores unless the attention is a
    fused kernel, and, where the head cannot be split off, the full logits."""
    config = model.config
    hidden = _cfg(config, "hidden_size", "n_embd", "d_model", default=1024)
    inter = _cfg(config, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    heads = _cfg(config, "num_attention_heads", "n_head", default=max(1, hidden // 64))
    item = torch.empty((), dtype=model.dtype).element_size()
    tokens = rows * width
    per_token = (10 * hidden + 3 * inter) * item
    total = tokens * per_token
    impl = getattr(config, "_attn_implementation", None) or "eager"
    if impl == "eager":   # scores and their softmax, [rows, heads, width, width]
        total += 2 * rows * heads * width * width * item
    elif rows > 1:        # a padding mask materialised for sdpa: [rows, 1, width, width], bool + float
        total += rows * width * width * (1 + item)
    if full_logits:
        total += tokens * _vocab(model) * item
    return int(total)


def _vocab(model: Any) -> int:
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.vocab_size)


def max_batch_tokens(models: Sequence[Any], widths_fit: int, budget_mb: float) -> int:
    """Most padded tokens per batch (rows x width, for rows of ``widths_fit`` tokens) within the budget."""
    room = (budget_mb - LOGIT_WORK_MB) * _MB
    per_row = sum(forward_bytes(m, 2, widths_fit, not splits(m)) for m in models) / 2
    return max(widths_fit, int(room // max(1, per_row)) * widths_fit)


def check_fits(models: Sequence[Any], rows: int, width: int, budget_mb: float) -> None:
    """Raise MemoryBudgetError when one batch (at least one window) cannot fit the budget."""
    need = sum(forward_bytes(m, rows, width, not splits(m)) for m in models) + LOGIT_WORK_MB * _MB
    if need > budget_mb * _MB:
        raise MemoryBudgetError(
            f"a window of {width} tokens needs about {need / _MB:,.0f} MB (model forward plus {LOGIT_WORK_MB} MB of "
            f"logits work), over the budget of max_memory_mb={budget_mb:g}; pass a smaller max_length "
            f"(windows are scored with a sliding stride) or a larger max_memory_mb")


# ---------------------------------------------------------------- split model: base + head

_SPLITS: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


def _parts(model: Any) -> tuple[Any, Any] | None:
    base = getattr(model, "base_model", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if base is None or base is model or not isinstance(head, torch.nn.Linear):
        return None
    config = model.config
    if getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None) not in (None, 1, 1.0):
        return None
    return base, head


def splits(model: Any) -> bool:
    """Whether ``model(x).logits == head(base(x))`` (checked once per model on a short input)."""
    try:
        return _SPLITS[model]
    except (KeyError, TypeError):
        pass
    ok = False
    parts = _parts(model)
    if parts is not None:
        try:
            device = next(model.parameters()).device
            ids = (torch.arange(1, 9, device=device) * 7919 % max(2, _vocab(model))).unsqueeze(0)
            mask = torch.ones_like(ids)
            with torch.inference_mode():
                want = model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
                got = parts[1](_hidden(parts[0], ids, mask)).float()
            ok = got.shape == want.shape and bool(
                (got - want).abs().max() <= 1e-3 * (1.0 + want.abs().max()))
        except Exception:  # an unusual model: fall back to full logits
            ok = False
    try:
        _SPLITS[model] = ok
    except TypeError:
        pass
    return ok


def _hidden(base: Any, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = base(input_ids=ids, attention_mask=mask, use_cache=False)
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


class ScoredStates:
    """The states at a batch's scored positions (``batch.scored``, row-major): hidden states
    when the model splits (logits made chunk by chunk), else the model's logits."""

    def __init__(self, model: Any, batch: PaddedBatch) -> None:
        if splits(model):
            parts = _parts(model)
            assert parts is not None
            base, self.head = parts
            states = _hidden(base, batch.input_ids, batch.attention_mask)
        else:
            self.head = None
            states = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits
        # positions chosen on the host (batch.scored): selecting them never waits for the device
        self.states = states.reshape(-1, states.shape[-1]).index_select(0, batch.scored.to(states.device))
        del states
        self.labels = batch.scored_labels

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def logits(self, start: int, stop: int) -> torch.Tensor:
        """Logits of scored positions ``[start, stop)``: ``[stop - start, vocab]``, model dtype."""
        part = self.states[start:stop]
        return self.head(part) if self.head is not None else part


def spans(n: int, chunk: int) -> Iterator[tuple[int, int]]:
    """``[start, stop)`` of consecutive chunks covering ``range(n)``."""
    for start in range(0, n, chunk):
        yield start, min(n, start + chunk)

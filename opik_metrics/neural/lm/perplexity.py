"""Per-text perplexity of a causal LM, PP(x) = exp(-1/n sum_t log P(x_t | x_<t)), as ``evaluate``
computes it (start token prepended), with a sliding window for texts longer than the context.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from opik_metrics.core.signature import Signature
from opik_metrics.neural.models.causal_lm import CausalLM
from opik_metrics.neural.lm.formulas import perplexity_from_statistics, safe_exp
from opik_metrics.neural.lm.batches import IGNORE, PaddedBatch, pad_rows
from opik_metrics.neural.lm.chunks import (PERPLEXITY_BYTES_PER_LOGIT, ScoredStates, check_fits, chunk_positions,
                                           max_batch_tokens, spans, validate_max_memory_mb)
from opik_metrics.neural.lm.rows import encode_texts, resolve_start_token
from opik_metrics.neural.lm.scoring import (add_per_item, item_index, longest_row, resolve_max_length, resolve_stride,
                                            row_batches, rows_per_batch)


@dataclass(frozen=True)
class TextPerplexity:
    """Summed negative log-likelihood (nats) over the ``n_tokens`` scored tokens of one text."""

    nll_sum: float
    n_tokens: int
    text_tokens: int
    n_windows: int

    @property
    def mean_nll(self) -> float:
        """Mean NLL per scored token; 0 for a text with nothing to score (an empty sum)."""
        return self.nll_sum / self.n_tokens if self.n_tokens else 0.0

    @property
    def perplexity(self) -> float:
        """exp(mean NLL); 1.0 when nothing is scored (no surprise in an empty sequence)."""
        return safe_exp(self.mean_nll)


def corpus_perplexity(items: Sequence[TextPerplexity]) -> float:
    """Token-weighted perplexity of a corpus: exp(total NLL / total tokens)."""
    return perplexity_from_statistics((sum(i.nll_sum for i in items), sum(i.n_tokens for i in items)))


def token_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """NLL of each labelled position, 0 where ``labels == -100``; shape ``labels.shape``."""
    flat = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                           ignore_index=IGNORE, reduction="none")
    return flat.view(labels.shape)


def batch_nll(model, batch: PaddedBatch, chunk: int) -> torch.Tensor:
    """Summed NLL (float64) of each row of a padded batch, on the model's device; the logits are
    made and reduced ``chunk`` scored positions at a time (see chunks.py), never all at once."""
    states = ScoredStates(model, batch)
    device = states.states.device
    nll = torch.empty(len(states), dtype=torch.float32, device=device)
    labels = states.labels.to(device)
    for start, stop in spans(len(states), chunk):
        logits = states.logits(start, stop)
        nll[start:stop] = F.cross_entropy(logits.float(), labels[start:stop], reduction="none")
        del logits
    rows = batch.input_ids.shape[0]
    return torch.zeros(rows, dtype=torch.float64, device=device).index_add_(0, batch.row_of.to(device), nll.double())


CPU_BATCH_ROWS = 16      # rows per forward pass on CPU; on a GPU the memory budget alone sizes batches


class PerplexityScorer:
    """Scores texts with one causal LM; batching never changes a text's value."""

    def __init__(self, lm: CausalLM, add_start_token: bool | None = None, stride: int | None = None,
                 max_length: int | None = None, batch_size: int | None = None,
                 max_memory_mb: float | None = None) -> None:
        self.lm = lm
        self.start_id = resolve_start_token(lm.tokenizer, add_start_token)
        self.max_length = resolve_max_length(lm.context_length, max_length)
        self.stride = resolve_stride(stride, self.max_length)
        self.batch_size = rows_per_batch(batch_size, lm.device, CPU_BATCH_ROWS)
        self.max_memory_mb = validate_max_memory_mb(max_memory_mb)
        self.chunk = chunk_positions(lm.vocab_size, PERPLEXITY_BYTES_PER_LOGIT)
        self.max_tokens = max_batch_tokens([lm.model], self.max_length or 1024, self.max_memory_mb)

    @property
    def signature(self) -> Signature:
        bos = "yes" if self.start_id is not None else "no"
        return self.lm.signature.extended(bos=bos, window=self.max_length, stride=self.stride)

    def score(self, texts: Sequence[str], progress: bool | None = None) -> list[TextPerplexity]:
        """One TextPerplexity per text, in order."""
        enc = encode_texts(self.lm.tokenizer, texts, self.start_id, self.max_length, self.stride)
        count = [0] * len(texts)
        windows = [0] * len(texts)
        device = self.lm.device
        # summed on the device and read once at the end: the loop never waits for the device
        totals = torch.zeros(len(texts), dtype=torch.float64, device=device)
        if enc.rows:
            check_fits([self.lm.model], 1, longest_row(enc.rows), self.max_memory_mb)
        with torch.inference_mode():
            for rows in row_batches(enc.rows, self.batch_size, self.max_tokens, "perplexity", progress):
                batch = pad_rows(rows, device)
                totals.index_add_(0, item_index(rows, device), batch_nll(self.lm.model, batch, self.chunk))
                add_per_item(count, rows, [r.n_targets for r in rows])
                add_per_item(windows, rows, [1] * len(rows))
        nll = totals.tolist()
        return [TextPerplexity(nll[i], count[i], enc.text_tokens[i], windows[i]) for i in range(len(texts))]

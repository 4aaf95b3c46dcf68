"""The log-likelihood of a continuation given a prompt under a causal LM (GPTScore's form, Fu et al.
2023): the prompt's tokens are context only, the continuation's are scored; on the same batched,
memory-bounded path as perplexity (right padding, logits made in chunks, float32 log-softmax)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from opik_metrics.core import MetricInputError
from opik_metrics.neural.lm.batches import pad_rows
from opik_metrics.neural.lm.chunks import (PERPLEXITY_BYTES_PER_LOGIT, check_fits, chunk_positions, max_batch_tokens,
                                           validate_max_memory_mb)
from opik_metrics.neural.lm.perplexity import CPU_BATCH_ROWS, batch_nll
from opik_metrics.neural.lm.rows import Row
from opik_metrics.neural.lm.scoring import item_index, longest_row, row_batches, rows_per_batch
from opik_metrics.neural.models.causal_lm import CausalLM


@dataclass(frozen=True)
class Continuation:
    """Summed log-probability (nats, <= 0) of a continuation's ``n_tokens`` scored tokens given its prompt;
    ``prompt_cut`` / ``output_cut``: tokens dropped to fit the context (the prompt's oldest first)."""

    logprob_sum: float
    n_tokens: int
    prompt_cut: int
    output_cut: int

    @property
    def mean(self) -> float:
        return self.logprob_sum / self.n_tokens if self.n_tokens else 0.0


class ContinuationScorer:
    """Scores (prompt, continuation) pairs with one causal LM; batching never changes a value."""

    def __init__(self, lm: CausalLM, batch_size: int | None = None, max_memory_mb: float | None = None) -> None:
        self.lm = lm
        self.start_id = lm.bos_token_id
        self.context = lm.context_length
        self.batch_size = rows_per_batch(batch_size, lm.device, CPU_BATCH_ROWS)
        self.max_memory_mb = validate_max_memory_mb(max_memory_mb)
        self.chunk = chunk_positions(lm.vocab_size, PERPLEXITY_BYTES_PER_LOGIT)
        self.max_tokens = max_batch_tokens([lm.model], min(self.context or 1024, 1024), self.max_memory_mb)

    def rows(self, prompts: Sequence[str], continuations: Sequence[str]) -> tuple[list[Row], list[tuple[int, int]]]:
        """One row per pair with a continuation of at least one token: [BOS] + prompt + continuation,
        scored from the continuation's first token; and what each pair lost to the context limit
        (prompt tokens, continuation tokens)."""
        tok = self.lm.tokenizer
        p_ids = tok(list(prompts), add_special_tokens=False, verbose=False)["input_ids"]
        c_ids = tok(list(continuations), add_special_tokens=False, verbose=False)["input_ids"]
        head = [self.start_id] if self.start_id is not None else []
        rows, cuts = [], []
        for k, (p, c) in enumerate(zip(p_ids, c_ids)):
            if not c:             # nothing to score: an empty sum, no forward pass
                cuts.append((0, 0))
                continue
            p, c = list(p), list(c)
            cut_p = cut_c = 0
            if self.context is not None and len(head) + len(p) + len(c) > self.context:
                cut_c = max(0, len(c) - (self.context - 1))       # one place is left for context
                c = c[:len(c) - cut_c]
                keep = max(0, self.context - len(c) - len(head))  # the prompt's latest tokens
                cut_p = len(p) - min(len(p), keep)
                p = p[cut_p:]
            context = head + p
            if not context:
                raise MetricInputError(f"item {k}: the prompt has no token and the tokenizer has no BOS token, so "
                                       "the output's first token has nothing to be predicted from")
            rows.append(Row(k, context + list(c), len(context)))
            cuts.append((cut_p, cut_c))
        return rows, cuts

    def score(self, prompts: Sequence[str], continuations: Sequence[str], desc: str = "GPTScore",
              progress: bool | None = None) -> list[Continuation]:
        """One Continuation per pair, in order (an empty continuation: an empty sum, 0 tokens)."""
        rows, cuts = self.rows(prompts, continuations)
        device = self.lm.device
        if rows:
            check_fits([self.lm.model], 1, longest_row(rows), self.max_memory_mb)
        totals = torch.zeros(len(cuts), dtype=torch.float64, device=device)
        counts = [0] * len(cuts)
        for row in rows:
            counts[row.item] = row.n_targets
        with torch.inference_mode():
            for batch_rows in row_batches(rows, self.batch_size, self.max_tokens, desc, progress):
                batch = pad_rows(batch_rows, device)
                totals.index_add_(0, item_index(batch_rows, device), batch_nll(self.lm.model, batch, self.chunk))
        nll = totals.tolist()
        return [Continuation(-nll[k], counts[k], *cuts[k]) for k in range(len(cuts))]

"""Teacher-student KL per text: run each text through both models and sum the per-token KL of
their softened next-token distributions at every position that predicts a text token.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from opik_metrics.core.signature import Signature
from opik_metrics.neural.models.causal_lm import CausalLM
from opik_metrics.neural.lm.batches import PaddedBatch, pad_rows
from opik_metrics.neural.lm.rows import encode_texts, resolve_start_token
from opik_metrics.neural.lm.chunks import (KL_BYTES_PER_LOGIT, ScoredStates, check_fits, chunk_positions,
                                           max_batch_tokens, spans, validate_max_memory_mb)
from opik_metrics.neural.lm.scoring import (add_per_item, item_index, longest_row, resolve_max_length, resolve_stride,
                                            row_batches, rows_per_batch)
from opik_metrics.neural.lm.logit_kl import token_kl, validate_temperature, validate_top_k
from opik_metrics.neural.models.vocabulary import require_shared_vocabulary


@dataclass(frozen=True)
class TextKL:
    """Summed per-token KL (nats) over the ``n_tokens`` scored positions of one text."""

    kl_sum: float
    n_tokens: int
    text_tokens: int
    n_windows: int

    @property
    def kl_mean(self) -> float:
        """Mean KL per token; 0 for a text with nothing to score (an empty sum)."""
        return self.kl_sum / self.n_tokens if self.n_tokens else 0.0


def _min_context(a: int | None, b: int | None) -> int | None:
    known = [x for x in (a, b) if x is not None]
    return min(known) if known else None


CPU_BATCH_ROWS = 8       # rows per forward pass on CPU; on a GPU the memory budget alone sizes batches


class DistillationKLScorer:
    """KL(teacher_T || student_T) per token (or the reverse), over the full or top-k vocabulary."""

    def __init__(self, teacher: CausalLM, student: CausalLM, temperature: float = 1.0,
                 top_k: int | None = None, reverse: bool = False, add_start_token: bool | None = None,
                 stride: int | None = None, max_length: int | None = None, batch_size: int | None = None,
                 max_memory_mb: float | None = None) -> None:
        require_shared_vocabulary(teacher, student)
        self.teacher, self.student = teacher, student
        self.temperature = validate_temperature(temperature)
        self.top_k = validate_top_k(top_k, teacher.vocab_size)
        self.reverse = bool(reverse)
        self.start_id = resolve_start_token(teacher.tokenizer, add_start_token)
        context = _min_context(teacher.context_length, student.context_length)
        self.max_length = resolve_max_length(context, max_length)
        self.stride = resolve_stride(stride, self.max_length)
        self.batch_size = rows_per_batch(batch_size, teacher.device, CPU_BATCH_ROWS)
        self.max_memory_mb = validate_max_memory_mb(max_memory_mb)
        self.chunk = chunk_positions(teacher.vocab_size, KL_BYTES_PER_LOGIT)  # 2 models, float64 copies
        self.max_tokens = max_batch_tokens(self._models(), self.max_length or 1024, self.max_memory_mb)

    def _models(self) -> list:
        return [self.teacher.model] if self.student.model is self.teacher.model else [self.teacher.model,
                                                                                     self.student.model]

    @property
    def signature(self) -> Signature:
        direction = "student||teacher" if self.reverse else "teacher||student"
        return Signature({"teacher": self.teacher.signature, "student": self.student.signature, "kl": direction,
                          "T": f"{self.temperature:g}", "top_k": self.top_k or "all",
                          "bos": "yes" if self.start_id is not None else "no", "window": self.max_length,
                          "stride": self.stride}, formats={"teacher": "teacher:[{}]", "student": "student:[{}]"})

    def position_kl(self, batch: PaddedBatch) -> torch.Tensor:
        """KL at every labelled position of a padded batch, flattened in row-major order; logits
        are made and reduced ``self.chunk`` positions at a time (see chunks.py)."""
        teacher = ScoredStates(self.teacher.model, batch.on(self.teacher.device))
        student = ScoredStates(self.student.model, batch.on(self.student.device))
        out = torch.empty(len(teacher), dtype=torch.float64, device=teacher.states.device)
        for start, stop in spans(len(teacher), self.chunk):
            t = teacher.logits(start, stop)
            s = student.logits(start, stop).to(t.device)
            out[start:stop] = token_kl(t, s, self.temperature, self.top_k, self.reverse)
            del t, s
        return out

    def score(self, texts: Sequence[str], progress: bool | None = None) -> list[TextKL]:
        """One TextKL per text, in order."""
        enc = encode_texts(self.teacher.tokenizer, texts, self.start_id, self.max_length, self.stride)
        count = [0] * len(texts)
        windows = [0] * len(texts)
        device = self.teacher.device
        # summed on the device and read once at the end: the loop never waits for the device
        totals = torch.zeros(len(texts), dtype=torch.float64, device=device)
        if enc.rows:
            check_fits(self._models(), 1, longest_row(enc.rows), self.max_memory_mb)
        with torch.inference_mode():
            for rows in row_batches(enc.rows, self.batch_size, self.max_tokens, "distillation KL", progress):
                batch = pad_rows(rows, device)
                per_row = torch.zeros(len(rows), dtype=torch.float64, device=device).index_add_(
                    0, batch.row_of, self.position_kl(batch).double())
                totals.index_add_(0, item_index(rows, device), per_row)
                add_per_item(count, rows, [r.n_targets for r in rows])
                add_per_item(windows, rows, [1] * len(rows))
        kl = totals.tolist()
        return [TextKL(kl[i], count[i], enc.text_tokens[i], windows[i]) for i in range(len(texts))]


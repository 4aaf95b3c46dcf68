"""Batch model rows by length and right-pad them, so a row's result never depends on its
batch-mates: right padding under a causal mask leaves every real token's context unchanged
(left padding shifts positions, the fault behind ``evaluate``'s issue 636).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from opik_metrics.neural.lm.rows import Row

IGNORE = -100


@dataclass(frozen=True)
class PaddedBatch:
    """Right-padded rows; ``labels[b, t]`` is the token that position ``t`` must predict, or -100."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor

    @property
    def n_tokens(self) -> int:
        return int(self.attention_mask.sum())


def length_batches(lengths: Sequence[int], batch_size: int,
                   max_batch_tokens: int | None = None) -> list[list[int]]:
    """Indices grouped longest first, at most ``batch_size`` rows and ``max_batch_tokens`` padded tokens."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        too_many = len(current) == batch_size
        too_long = bool(max_batch_tokens and current and (len(current) + 1) * lengths[current[0]] > max_batch_tokens)
        if current and (too_many or too_long):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def pad_rows(rows: Sequence[Row], device: Any = "cpu") -> PaddedBatch:
    """Stack rows right-padded; padding gets id 0, attention 0 and label -100."""
    width = max(len(r.ids) for r in rows)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    for b, row in enumerate(rows):
        n = len(row.ids)
        ids[b, :n] = torch.tensor(row.ids, dtype=torch.long)
        mask[b, :n] = 1
        labels[b, row.score_from - 1:n - 1] = ids[b, row.score_from:n]
    return PaddedBatch(ids.to(device), mask.to(device), labels.to(device))


def forward_logits(model: Any, batch: PaddedBatch) -> torch.Tensor:
    """The model's logits for a padded batch, without building a KV cache."""
    return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits

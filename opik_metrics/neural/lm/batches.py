"""Batch model rows by length and right-pad them, so a row's result never depends on its
batch-mates: right padding under a causal mask leaves every real token's context unchanged
(left padding shifts positions, the fault behind ``evaluate``'s issue 636).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from opik_metrics.neural.lm.rows import Row
from opik_metrics.neural.models.host_copies import to_device

IGNORE = -100


@dataclass(frozen=True)
class PaddedBatch:
    """Right-padded rows; ``labels[b, t]`` is the token that position ``t`` must predict, or -100.
    ``scored`` (flat positions, row-major), ``scored_labels`` and ``row_of`` (each scored
    position's row) are worked out on the host, so that the device never has to be asked which
    positions are scored (a boolean mask's ``nonzero`` would wait for the device)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor
    scored: torch.Tensor
    scored_labels: torch.Tensor
    row_of: torch.Tensor

    @property
    def n_scored(self) -> int:
        return int(self.scored.shape[0])

    def on(self, device: Any) -> "PaddedBatch":
        """The same batch on ``device`` (a copy only where it is elsewhere)."""
        return PaddedBatch(*(to_device(t, device) if t.device.type == "cpu" else t.to(device)
                             for t in (self.input_ids, self.attention_mask, self.labels, self.scored,
                                       self.scored_labels, self.row_of)))


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
    flat = labels.view(-1)
    scored = (flat != IGNORE).nonzero()[:, 0]
    return PaddedBatch(ids, mask, labels, scored, flat[scored], scored // width).on(device)


def forward_logits(model: Any, batch: PaddedBatch) -> torch.Tensor:
    """The model's logits for a padded batch, without building a KV cache."""
    return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits

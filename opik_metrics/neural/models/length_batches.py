"""Sequences grouped into forward passes longest first, so that a batch pads little: at most a
count of sequences (the CPU default, where it was measured fastest) or as many as a budget of
padded tokens holds (the GPU default: a GPU is fed best by batches of about equal size in tokens)."""
from __future__ import annotations

from typing import Sequence

import torch

# Padded tokens per forward pass on a GPU unless the caller says otherwise: large enough to fill
# an H100 with short texts, small enough for roberta-large's activations on a 16 GB card.
GPU_BATCH_TOKENS = 16_384


def validate_count(value: int | None, name: str) -> int | None:
    """A positive integer, or None (no limit)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def token_budget(batch_tokens: int | None, device: torch.device) -> int | None:
    """The padded-token budget of a batch: ``batch_tokens`` when given, else GPU_BATCH_TOKENS on a
    GPU and none on a CPU (batches of a fixed count there)."""
    validate_count(batch_tokens, "batch_tokens")
    if batch_tokens is not None:
        return batch_tokens
    return GPU_BATCH_TOKENS if device.type == "cuda" else None


def length_batches(lengths: Sequence[int], batch_size: int | None,
                   max_batch_tokens: int | None = None) -> list[list[int]]:
    """Indices grouped longest first (equal lengths in input order): at most ``batch_size``
    sequences (None: no count limit) and ``max_batch_tokens`` padded tokens (None: no token
    limit); a sequence longer than the budget makes a batch of its own."""
    validate_count(batch_size, "batch_size")
    validate_count(max_batch_tokens, "max_batch_tokens")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        too_many = batch_size is not None and len(current) == batch_size
        too_long = (max_batch_tokens is not None and bool(current)
                    and (len(current) + 1) * lengths[current[0]] > max_batch_tokens)
        if current and (too_many or too_long):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches

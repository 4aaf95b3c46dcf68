"""Shared set-up for scoring texts with causal LMs: context window, stride, batch budget, progress."""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence, TypeVar

import torch
from tqdm.auto import tqdm

from opik_metrics.neural.lm.rows import Row
from opik_metrics.neural.models.host_copies import to_device
from opik_metrics.neural.models.length_batches import length_batches, validate_count
from opik_metrics.neural.lm.windows import validate_stride

# Logit elements per forward pass (float32: 1 GiB): the old sizing, kept for callers that take full
# logits (bench); the scorers now make logits chunk by chunk within a stated budget (chunks.py).
LOGIT_BUDGET = 2 ** 28

Number = TypeVar("Number", int, float)


def resolve_max_length(context: int | None, max_length: int | None) -> int | None:
    """The window length: the model's context, or a smaller ``max_length`` the caller asks for."""
    if max_length is None:
        return context
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise ValueError(f"max_length must be an integer >= 2, got {max_length!r}")
    if context is not None and max_length > context:
        raise ValueError(f"max_length={max_length} exceeds the model's context length ({context})")
    return max_length


def resolve_stride(stride: int | None, max_length: int | None) -> int | None:
    """Validated stride (``max_length // 2`` by default); None when the model has no context limit."""
    if max_length is None:
        if stride is not None:
            raise ValueError("stride needs a context length: the model reports none, pass max_length")
        return None
    return validate_stride(stride, max_length)


def rows_per_batch(batch_size: int | None, device: torch.device, cpu_default: int) -> int | None:
    """Rows per forward pass: ``batch_size`` when given; else ``cpu_default`` on CPU and no count
    limit on a GPU, where the memory budget's token limit alone fills each batch."""
    validate_count(batch_size, "batch_size")
    if batch_size is not None:
        return batch_size
    return None if device.type == "cuda" else cpu_default


def tokens_per_batch(vocab_size: int, budget: int = LOGIT_BUDGET) -> int:
    """Most padded tokens per forward pass so the logits stay within ``budget`` elements."""
    return max(1, budget // max(1, vocab_size))


def row_batches(rows: Sequence[Row], batch_size: int | None, max_tokens: int, desc: str,
                progress: bool | None) -> Iterator[list[Row]]:
    """Rows grouped longest first, with a tqdm bar (in tokens) when there is more than one batch."""
    groups = length_batches([len(r.ids) for r in rows], batch_size, max_tokens)
    show = len(groups) > 1 if progress is None else progress
    total = sum(len(r.ids) for r in rows)
    with tqdm(total=total, desc=desc, unit="tok", disable=not show, leave=False) as bar:
        for group in groups:
            batch = [rows[i] for i in group]
            yield batch
            bar.update(sum(len(r.ids) for r in batch))


def longest_row(rows: Sequence[Row]) -> int:
    """Tokens in the longest row (0 when there is none)."""
    return max((len(r.ids) for r in rows), default=0)


def item_index(rows: Sequence[Row], device: torch.device) -> torch.Tensor:
    """Each row's text index, on ``device``: where its summed values go."""
    return to_device(torch.tensor([r.item for r in rows], dtype=torch.long), device)


def add_per_item(totals: list[Number], rows: Iterable[Row], values: Iterable[Number]) -> None:
    """Accumulate per-row values into per-text totals."""
    for row, value in zip(rows, values):
        totals[row.item] += value

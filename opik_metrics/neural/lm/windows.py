"""Sliding windows over a token sequence longer than the model's context (the strided method of
the transformers perplexity guide), so long texts are scored whole rather than truncated.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """Tokens ``[begin, end)`` go through the model; targets at ``[score_from, end)`` are scored."""

    begin: int
    end: int
    score_from: int


def plan_windows(length: int, max_length: int | None, stride: int | None = None) -> list[Window]:
    """Windows covering a sequence of ``length`` tokens; position 0 is context only.

    Windows start every ``stride`` tokens and are ``max_length`` long; each target is scored once,
    in the first window that reaches it, so with ``stride < max_length`` every target keeps at
    least ``max_length - stride`` tokens of context. With ``stride == max_length`` (no overlap)
    the first token of each later window has no context and, as in the guide, is not scored.
    """
    if length < 2:
        return []
    if max_length is None or length <= max_length:
        return [Window(0, length, 1)]
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2 to score anything, got {max_length}")
    stride = validate_stride(stride, max_length)
    windows, prev_end = [], 0
    for begin in range(0, length, stride):
        end = min(begin + max_length, length)
        windows.append(Window(begin, end, max(prev_end, begin + 1)))
        prev_end = end
        if end == length:
            break
    return windows


def validate_stride(stride: int | None, max_length: int) -> int:
    """The stride to use: ``max_length // 2`` by default; 1 <= stride <= max_length."""
    if stride is None:
        return max(1, max_length // 2)
    if isinstance(stride, bool) or not isinstance(stride, int) or not 1 <= stride <= max_length:
        raise ValueError(f"stride must be an integer in [1, {max_length}] (the context length), got {stride!r}")
    return stride

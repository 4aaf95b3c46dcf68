"""KL divergence between temperature-softened next-token distributions, per position:
D_KL(T || S) = sum_i T_i log(T_i / S_i) over the vocabulary or the teacher's top-k tokens.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def validate_temperature(temperature: float) -> float:
    """A positive, finite temperature; softmax(z / T) is undefined for T <= 0."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    return float(temperature)


def validate_top_k(top_k: int | None, vocab_size: int | None = None) -> int | None:
    """None (full vocabulary) or an integer in [1, vocab_size]."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be None or a positive integer, got {top_k!r}")
    if vocab_size is not None and top_k > vocab_size:
        raise ValueError(f"top_k={top_k} exceeds the vocabulary size ({vocab_size})")
    return top_k


def softened_log_probs(teacher_logits: torch.Tensor, student_logits: torch.Tensor, temperature: float,
                       top_k: int | None = None, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """log softmax(z / T) of both, over the full vocabulary or the teacher's top-k (renormalised)."""
    if teacher_logits.shape != student_logits.shape:
        raise ValueError(f"teacher logits {tuple(teacher_logits.shape)} and student logits "
                         f"{tuple(student_logits.shape)} must have the same shape")
    temperature = validate_temperature(temperature)
    top_k = validate_top_k(top_k, teacher_logits.shape[-1])
    t = teacher_logits.to(dtype) / temperature
    s = student_logits.to(dtype) / temperature
    if top_k is not None and top_k < t.shape[-1]:
        idx = t.topk(top_k, dim=-1).indices
        t, s = t.gather(-1, idx), s.gather(-1, idx)
    return F.log_softmax(t, dim=-1), F.log_softmax(s, dim=-1)


def kl_from_log_probs(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """sum_i p_i (log p_i - log q_i) over the last axis; 0 * log 0 counts as 0, never NaN."""
    tiny = torch.finfo(log_p.dtype).min
    log_p, log_q = log_p.clamp(min=tiny), log_q.clamp(min=tiny)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1)


def token_kl(teacher_logits: torch.Tensor, student_logits: torch.Tensor, temperature: float = 1.0,
             top_k: int | None = None, reverse: bool = False, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Per-position KL(teacher_T || student_T), or KL(student_T || teacher_T) with ``reverse``.

    Computed in ``dtype``: float64 by default, since a small KL is a difference of nearly equal
    log-probabilities (float32 loses ~1e-5 of it); training losses may pass float32.
    """
    log_t, log_s = softened_log_probs(teacher_logits, student_logits, temperature, top_k, dtype)
    return kl_from_log_probs(log_s, log_t) if reverse else kl_from_log_probs(log_t, log_s)

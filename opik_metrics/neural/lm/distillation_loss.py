"""Knowledge distillation (Hinton et al.): the student's loss is alpha * task cross-entropy plus
(1 - alpha) * T^2 * KL(teacher_T || student_T); also exports the teacher-student KL engine.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from opik_metrics.neural.lm.kl import DistillationKLScorer, TextKL
from opik_metrics.neural.lm.batches import IGNORE
from opik_metrics.neural.lm.logit_kl import token_kl, validate_temperature
from opik_metrics.neural.models.vocabulary import VocabularyMismatchError, require_shared_vocabulary

__all__ = ["distillation_loss", "distillation_loss_parts", "DistillationLoss", "token_kl",
           "DistillationKLScorer", "TextKL", "VocabularyMismatchError", "require_shared_vocabulary"]


@dataclass(frozen=True)
class DistillationLoss:
    """The combined loss and its two parts (the KL part before the T^2 and (1 - alpha) factors)."""

    loss: torch.Tensor
    task_loss: torch.Tensor
    kd_loss: torch.Tensor
    n_tokens: int


def _validate_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
    return float(alpha)


def distillation_loss_parts(student_logits: torch.Tensor, teacher_logits: torch.Tensor,
                            labels: torch.Tensor, temperature: float = 2.0, alpha: float = 0.5,
                            *, shift: bool = False) -> DistillationLoss:
    """Like ``distillation_loss`` but also returns the task and KL parts."""
    temperature = validate_temperature(temperature)
    alpha = _validate_alpha(alpha)
    if shift:  # HF-style labels (= input ids): position t predicts token t + 1
        student_logits, teacher_logits, labels = student_logits[..., :-1, :], teacher_logits[..., :-1, :], labels[..., 1:]
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {tuple(student_logits.shape)} and teacher logits "
                         f"{tuple(teacher_logits.shape)} must have the same shape (same vocabulary?)")
    if labels.shape != student_logits.shape[:-1]:
        raise ValueError(f"labels {tuple(labels.shape)} must match the logits' leading dimensions "
                         f"{tuple(student_logits.shape[:-1])}")
    keep = labels != IGNORE
    n = int(keep.sum())
    if n == 0:  # every position is padding: nothing to learn, a zero loss still in the graph
        zero = student_logits.sum() * 0.0
        return DistillationLoss(zero, zero, zero, 0)
    student = student_logits[keep]
    teacher = teacher_logits[keep].detach()
    task = F.cross_entropy(student.float(), labels[keep])
    kd = token_kl(teacher, student, temperature, dtype=torch.float32).mean()
    loss = alpha * task + (1.0 - alpha) * temperature ** 2 * kd
    return DistillationLoss(loss, task, kd, n)


def distillation_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, labels: torch.Tensor,
                      temperature: float = 2.0, alpha: float = 0.5, *, shift: bool = False) -> torch.Tensor:
    """alpha * CE(student, labels) + (1 - alpha) * T^2 * KL(teacher_T || student_T), token means.

    ``logits[..., t, :]`` is scored against ``labels[..., t]``; positions with ``labels == -100``
    (padding) are left out of both terms. ``shift=True`` takes HF-style labels (the input ids)
    and drops the last logit and the first label. The teacher gets no gradient.

    Examples:
        >>> import math, torch
        >>> from opik_metrics import distillation_loss
        >>> student = torch.zeros(1, 2, 2)                                  # uniform over 2 tokens
        >>> teacher = torch.tensor([[[0.0, math.log(3)], [0.0, 0.0]]])      # (1/4, 3/4), then uniform
        >>> labels = torch.tensor([[1, -100]])                              # the second position is padding
        >>> loss = distillation_loss(student, teacher, labels, temperature=1.0, alpha=0.5)
        >>> kl = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)  # KL(teacher || student), by hand
        >>> abs(loss.item() - (0.5 * math.log(2) + 0.5 * kl)) < 1e-6
        True
        >>> round(loss.item(), 4)
        0.412
    """
    return distillation_loss_parts(student_logits, teacher_logits, labels, temperature, alpha, shift=shift).loss

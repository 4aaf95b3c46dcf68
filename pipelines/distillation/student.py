"""Build a student from the teacher's first layers and distil the teacher into it with
Hinton's loss (alpha * task CE + (1 - alpha) * T^2 * KL), on CPU, with a progress bar.
"""
from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Sequence

import opik
import torch
from tqdm.auto import tqdm

from opik_metrics.neural.models.causal_lm import CausalLM
from opik_metrics.neural.lm.distillation_loss import distillation_loss_parts
from opik_metrics.neural.lm.batches import pad_rows
from opik_metrics.neural.lm.rows import Row


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 40
    batch_size: int = 8
    lr: float = 5e-4
    temperature: float = 2.0
    alpha: float = 0.5
    max_tokens: int = 64
    seed: int = 0


def truncated_student(teacher: CausalLM, num_layers: int):
    """A copy of the teacher's architecture with only its first ``num_layers`` layers (weights
    copied from the teacher), so it shares the tokenizer and vocabulary by construction."""
    from transformers import AutoModelForCausalLM

    total = teacher.model.config.num_hidden_layers
    if not 1 <= num_layers < total:
        raise ValueError(f"student layers must be in [1, {total - 1}] (the teacher has {total}), got {num_layers}")
    config = copy.deepcopy(teacher.model.config)
    config.num_hidden_layers = num_layers
    if getattr(config, "layer_types", None):
        config.layer_types = config.layer_types[:num_layers]
    student = AutoModelForCausalLM.from_config(config, dtype=teacher.model.dtype)
    own = student.state_dict()
    copied = {k: v for k, v in teacher.model.state_dict().items() if k in own and own[k].shape == v.shape}
    student.load_state_dict(copied, strict=False)
    return student.to(teacher.device)


def _rows(tokenizer, texts: Sequence[str], max_tokens: int) -> list[Row]:
    bos = [tokenizer.bos_token_id] if tokenizer.bos_token is not None else []
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return [Row(i, (bos + list(x))[:max_tokens], 1) for i, x in enumerate(ids) if len(bos + list(x)) > 1]


@opik.track(name="distil_student", capture_input=False)
def train_student(teacher: CausalLM, student, texts: Sequence[str], cfg: TrainConfig,
                  progress: bool = True) -> list[dict[str, float]]:
    """Distil ``teacher`` into ``student`` on ``texts``; returns the loss parts of every step."""
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    rows = _rows(teacher.tokenizer, texts, cfg.max_tokens)
    optimizer = torch.optim.AdamW(student.parameters(), lr=cfg.lr)
    student.train()
    history, order = [], []
    bar = tqdm(range(cfg.steps), desc="distilling", unit="step", disable=not progress)
    for step in bar:
        if len(order) < cfg.batch_size:
            order += rng.sample(range(len(rows)), len(rows))
        picked, order = order[:cfg.batch_size], order[cfg.batch_size:]
        batch = pad_rows([rows[i] for i in picked], teacher.device)
        with torch.no_grad():
            t_logits = teacher.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                                     use_cache=False).logits
        s_logits = student(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False).logits
        parts = distillation_loss_parts(s_logits, t_logits, batch.labels, cfg.temperature, cfg.alpha)
        optimizer.zero_grad()
        parts.loss.backward()
        torch.nn.utils.clip_grad_norm_(student.parameters(), 1.0)
        optimizer.step()
        history.append({"step": step, "loss": parts.loss.item(), "task_loss": parts.task_loss.item(),
                        "kd_loss": parts.kd_loss.item(), "tokens": parts.n_tokens})
        bar.set_postfix(loss=f"{parts.loss.item():.3f}")
    student.eval()
    return history

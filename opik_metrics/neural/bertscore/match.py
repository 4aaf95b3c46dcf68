"""Greedy matching of unit token vectors: P, R are weighted means of each token's best cosine on
the other side, F their harmonic mean; padding never wins a max, so batching cannot change a pair.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence

from opik_metrics.neural.models.host_copies import to_device

_BELOW_COSINE = -2.0  # fills padded cells: below any cosine, so it is never a maximum


@dataclass(frozen=True)
class Side:
    """One text of a pair: unit vectors [n, d] (on the model's device) and weights [n] summing to
    1 (on the CPU: a chunk's weights go to the device in one copy)."""

    vectors: torch.Tensor
    weights: torch.Tensor


def similarity(candidate: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of unit vectors: [n_candidate, n_reference]."""
    return candidate @ reference.T


def f_measure(p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """2PR/(P+R), and 0 where P+R is 0 (bert_score's value there)."""
    total = p + r
    return torch.where(total != 0, 2 * p * r / torch.where(total != 0, total, torch.ones_like(total)),
                       torch.zeros_like(total))


def greedy_scores(candidates: Sequence[Side], references: Sequence[Side], chunk: int = 256) -> torch.Tensor:
    """P, R, F for each (candidate, reference) pair: a float64 CPU tensor [n_pairs, 3]. The
    chunks' P and R stay on the device until the last one: the loop never waits for it."""
    if len(candidates) != len(references):
        raise ValueError("greedy_scores needs as many candidates as references")
    rows = []
    with torch.inference_mode():
        for start in range(0, len(candidates), chunk):
            rows.append(_chunk(candidates[start:start + chunk], references[start:start + chunk]))
    if not rows:
        return torch.zeros((0, 3), dtype=torch.float64)
    p, r = torch.cat(rows, dim=1).double().cpu()
    return torch.stack([p, r, f_measure(p, r)], dim=1)


def _chunk(cands: Sequence[Side], refs: Sequence[Side]) -> torch.Tensor:
    """[2, n] P and R (float32) of a chunk of pairs, on the vectors' device."""
    c_vec = pad_sequence([c.vectors for c in cands], batch_first=True)
    r_vec = pad_sequence([r.vectors for r in refs], batch_first=True)
    device = c_vec.device
    c_w = to_device(pad_sequence([c.weights for c in cands], batch_first=True), device)
    r_w = to_device(pad_sequence([r.weights for r in refs], batch_first=True), device)
    c_ok = to_device(pad_sequence([torch.ones(len(c.weights), dtype=torch.bool) for c in cands], batch_first=True),
                     device)
    r_ok = to_device(pad_sequence([torch.ones(len(r.weights), dtype=torch.bool) for r in refs], batch_first=True),
                     device)
    sim = torch.bmm(c_vec, r_vec.transpose(1, 2))
    sim.masked_fill_(~(c_ok.unsqueeze(2) & r_ok.unsqueeze(1)), _BELOW_COSINE)
    p = (sim.max(dim=2).values * c_w).sum(dim=1)
    r = (sim.max(dim=1).values * r_w).sum(dim=1)
    return torch.stack([p, r])

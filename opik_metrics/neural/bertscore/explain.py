"""Why a pair got its BERTScore: the tokens, their cosine similarity matrix and the greedy
alignment (each token's best match), with the same weights the score used.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

import torch

from opik_metrics.neural.bertscore.match import f_measure, similarity


class ExplainableEngine(Protocol):
    """What ``explain_pair`` needs of a BERTScore engine (``BertScoreEngine`` has it)."""

    embedder: Any
    weights: Any
    baseline: Any
    signature: Any
    encoder: Any

    def side(self, text: str, emb: dict, memo: dict) -> tuple[Any, str | None]:
        """The text's vectors and normalised weights, or None and why it cannot be scored."""


@dataclass(frozen=True)
class Match:
    """A token's best counterpart on the other side: its index, text and cosine similarity."""

    index: int
    token: str
    similarity: float


@dataclass(frozen=True)
class Explanation:
    """Everything behind one (candidate, reference) score; similarity is [candidate][reference]."""

    candidate_tokens: list[str]
    reference_tokens: list[str]
    candidate_special: list[bool]
    reference_special: list[bool]
    similarity: list[list[float]]
    candidate_weights: list[float]       # normalised: they sum to 1
    reference_weights: list[float]
    candidate_matches: list[Match]       # precision side: best reference token per candidate token
    reference_matches: list[Match]       # recall side: best candidate token per reference token
    precision: float                     # raw (before rescaling), equal to the engine's score
    recall: float
    f1: float
    baseline_f1: float | None            # b for F when the engine rescales, else None
    signature: str
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain_pair(engine: ExplainableEngine, candidate: str, reference: str) -> Explanation:
    """Build the :class:`Explanation` of ``candidate`` against one ``reference`` (checked text)."""
    emb = engine.embedder.embed([candidate, reference])
    memo: dict = {}
    c_side, c_note = engine.side(candidate, emb, memo)
    r_side, r_note = engine.side(reference, emb, memo)
    for field_name, side, note in (("output", c_side, c_note), ("reference", r_side, r_note)):
        if side is None:
            raise ValueError(f"explain: {field_name} {note}; there are no tokens to align")
    c_ids = emb[candidate.strip()].tokens.ids
    r_ids = emb[reference.strip()].tokens.ids
    c_tok, r_tok = _token_texts(engine, c_ids), _token_texts(engine, r_ids)
    with torch.inference_mode():
        sim = similarity(c_side.vectors, r_side.vectors).double().cpu()
        c_w, r_w = c_side.weights.double().cpu(), r_side.weights.double().cpu()
        c_best, r_best = sim.max(dim=1), sim.max(dim=0)
        p = (c_best.values * c_w).sum()
        r = (r_best.values * r_w).sum()
        f = f_measure(p, r)
    specials = engine.weights.special_ids
    notes = tuple(f"{name} {n}" for name, n in (("output", c_note), ("reference", r_note)) if n)
    return Explanation(
        candidate_tokens=c_tok, reference_tokens=r_tok,
        candidate_special=[i in specials for i in c_ids], reference_special=[i in specials for i in r_ids],
        similarity=sim.tolist(), candidate_weights=c_w.tolist(), reference_weights=r_w.tolist(),
        candidate_matches=[Match(int(j), r_tok[int(j)], float(v)) for v, j in zip(*c_best)],
        reference_matches=[Match(int(i), c_tok[int(i)], float(v)) for v, i in zip(*r_best)],
        precision=float(p), recall=float(r), f1=float(f),
        baseline_f1=engine.baseline.f1 if engine.baseline else None,
        signature=engine.signature, notes=notes,
    )


def _token_texts(engine: ExplainableEngine, ids: tuple[int, ...]) -> list[str]:
    tok = engine.encoder.tokenizer
    with engine.encoder.tokenizer_lock:
        return [tok.decode([i]) for i in ids]

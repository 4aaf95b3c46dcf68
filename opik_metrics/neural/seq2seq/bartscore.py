"""BARTScore (Yuan, Neubig, Liu 2021) as its authors' code computes it (neulab/BARTScore ``bart_score.py``,
``SUM/score.py``, ``D2T/score.py``): the mean log-likelihood of a target given a conditioning text,
every target token counted (``<s>`` and ``</s>`` included), a value <= 0, higher is better.

Directions: faithfulness s->h (the output given the source), precision r->h (given the reference),
recall h->r (the reference given the output) and F = (P + R) / 2, the paper's; the code's ``harm_f``
= P*R / (P + R) is half the harmonic mean (both are negative, so it is also <= 0). Several references:
``mean`` averages P and R over them (``SUM/score.py``, every item the same count not required here);
``max`` takes the best P and the best R, and F of the reference whose (P + R) / 2 is best
(``D2T/score.py``). Prompts: on the encoder side ``x + ' ' + p + ','`` is appended to the conditioning
text, on the decoder side ``p + ', ' + y`` is put before the target; a list of prompts is averaged
(the paper's prompt ensemble).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from opik_metrics.core.signature import Signature
from opik_metrics.neural.seq2seq.likelihood import ConditionalLikelihood, encode

DIRECTIONS = ("faithfulness", "precision", "recall", "f")
MULTI_REFERENCE = ("mean", "max")
F_FORMULAS = ("mean", "harm_f")
PROMPT_SIDES = ("encoder", "decoder")


def encoder_prompt(text: str, prompt: str) -> str:
    """The conditioning text with a prompt after it (the reference code's ``suffix_prompt``)."""
    return text + " " + prompt + ","


def decoder_prompt(text: str, prompt: str) -> str:
    """The target with a prompt before it (the reference code's ``prefix_prompt``)."""
    return prompt + ", " + text


def f_score(precision: float, recall: float, formula: str) -> float:
    """F of a precision and a recall: their mean (the paper), or the code's ``harm_f`` P*R/(P+R)."""
    if formula == "mean":
        return (precision + recall) / 2
    total = precision + recall
    return precision * recall / total if total else 0.0


@dataclass(frozen=True)
class PairScore:
    """BARTScore of one (conditioning, target) pair: its mean log-likelihood (averaged over prompts)."""

    value: float
    n_tokens: int
    truncated: bool


@dataclass(frozen=True)
class ItemBartScore:
    """Every direction of one item that was asked for (None: not asked, or no input for it)."""

    faithfulness: float | None
    precision: float | None
    recall: float | None
    f: float | None
    best_reference: int | None
    n_references: int
    truncated: tuple[str, ...]         # the inputs that were cut at the model's limit ("source", "output", ...)


class BartScoreEngine:
    """Scores items in the asked directions; knows nothing of Opik."""

    def __init__(self, scorer: ConditionalLikelihood, directions: Sequence[str], prompts: Sequence[str] = (),
                 prompt_side: str = "encoder", multi_reference: str = "mean", f_formula: str = "mean") -> None:
        self.scorer = scorer
        self.directions = tuple(directions)
        self.prompts = tuple(prompts)
        self.prompt_side = prompt_side
        self.multi_reference = multi_reference
        self.f_formula = f_formula

    @property
    def needs_source(self) -> bool:
        return "faithfulness" in self.directions

    @property
    def needs_reference(self) -> bool:
        return any(d != "faithfulness" for d in self.directions)

    @property
    def signature(self) -> Signature:
        fields: dict[str, object] = {"direction": "+".join(self.directions), "prompt": "|".join(self.prompts) or "none"}
        if self.prompts:
            fields["prompt_side"] = self.prompt_side
        if self.needs_reference:
            fields.update(multi_ref=self.multi_reference, f=self.f_formula)
        fields["max_len"] = self.scorer.lm.max_length
        return self.scorer.lm.signature.extended(**fields)

    def pair_scores(self, conditions: Sequence[str], targets: Sequence[str], desc: str = "BARTScore",
                    progress: bool | None = None) -> list[PairScore]:
        """Score each (conditioning text, target) pair, every prompt applied and averaged."""
        variants = [(list(conditions), list(targets))] if not self.prompts else [
            ([encoder_prompt(c, p) for c in conditions], list(targets)) if self.prompt_side == "encoder"
            else (list(conditions), [decoder_prompt(t, p) for t in targets]) for p in self.prompts]
        n = len(conditions)
        sources, goals, spans = [], [], []
        for conds, tgts in variants:
            sources += conds
            goals += tgts
            spans.append(len(sources) - n)
        src, tgt = encode(self.scorer.lm, sources), encode(self.scorer.lm, goals)
        scored = self.scorer.score(list(zip(src.ids, tgt.ids)), desc=desc, progress=progress)
        out = []
        for k in range(n):
            rows = [start + k for start in spans]
            value = sum(scored[r].mean for r in rows) / len(rows)
            out.append(PairScore(value, scored[rows[0]].n_tokens,
                                 any(src.truncated[r] or tgt.truncated[r] for r in rows)))
        return out

    def score(self, outputs: Sequence[str], references: Sequence[Sequence[str]] | None = None,
              sources: Sequence[str] | None = None, progress: bool | None = None) -> list[ItemBartScore]:
        """One ItemBartScore per output; ``references[i]`` lists output i's references, ``sources[i]`` its source."""
        n = len(outputs)
        faith: list[PairScore | None] = [None] * n
        truncated: list[set[str]] = [set() for _ in range(n)]
        if "faithfulness" in self.directions:
            assert sources is not None, "faithfulness needs sources"
            faith = list(self.pair_scores(sources, outputs, "BARTScore s->h", progress))
            for k, s in enumerate(faith):
                if s is not None and s.truncated:
                    truncated[k].add("source or output")
        prec: list[list[PairScore]] = [[] for _ in range(n)]
        rec: list[list[PairScore]] = [[] for _ in range(n)]
        if self.needs_reference:
            assert references is not None, "precision and recall need references"
            flat = [(k, r) for k, refs in enumerate(references) for r in refs]
            hyps, refs = [outputs[k] for k, _ in flat], [r for _, r in flat]
            for (k, _), p in zip(flat, self.pair_scores(refs, hyps, "BARTScore r->h", progress)):
                prec[k].append(p)
            for (k, _), r in zip(flat, self.pair_scores(hyps, refs, "BARTScore h->r", progress)):
                rec[k].append(r)
            for k in range(n):
                if any(s.truncated for s in prec[k] + rec[k]):
                    truncated[k].add("output or reference")
        return [self._item(faith[k], prec[k], rec[k], tuple(sorted(truncated[k]))) for k in range(n)]

    def _item(self, faith: PairScore | None, prec: list[PairScore], rec: list[PairScore],
              truncated: tuple[str, ...]) -> ItemBartScore:
        faithfulness = faith.value if faith is not None else None
        if not prec:
            return ItemBartScore(faithfulness, None, None, None, None, 0, truncated)
        p_values, r_values = [p.value for p in prec], [r.value for r in rec]
        best = None
        if self.multi_reference == "mean":
            precision, recall = sum(p_values) / len(p_values), sum(r_values) / len(r_values)
            f = f_score(precision, recall, self.f_formula)
        else:
            per_ref = [f_score(p, r, self.f_formula) for p, r in zip(p_values, r_values)]
            best = max(range(len(per_ref)), key=per_ref.__getitem__)
            precision, recall, f = max(p_values), max(r_values), per_ref[best]
        return ItemBartScore(faithfulness, precision, recall, f, best, len(prec), truncated)

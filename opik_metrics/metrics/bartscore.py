"""BARTScore as an Opik metric: faithfulness (the output given its source, no reference needed),
precision, recall and F against references, as the authors' code computes them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from opik_metrics.core import ScoreFacts, ours
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.conditioned import ConditionedMetric
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.metric_kit.source_input import DEFAULT_SOURCE_FIELD

if TYPE_CHECKING:
    from opik_metrics.neural.seq2seq.bartscore import ItemBartScore

DIRECTIONS = ("faithfulness", "precision", "recall", "f")


def _directions(direction: str | Sequence[str]) -> tuple[str, ...]:
    asked = (direction,) if isinstance(direction, str) else tuple(direction)
    if not asked or any(d not in DIRECTIONS for d in asked):
        raise ValueError(f"direction: expected one or more of {', '.join(DIRECTIONS)}, got {direction!r}")
    return tuple(dict.fromkeys(asked))


def _prompts(prompt: str | Sequence[str] | None) -> tuple[str, ...]:
    if prompt is None:
        return ()
    prompts = (prompt,) if isinstance(prompt, str) else tuple(prompt)
    if not prompts or not all(isinstance(p, str) and p.strip() for p in prompts):
        raise ValueError(f"prompt: expected a non-empty text or a list of them, got {prompt!r}")
    return prompts


def _computed(value: float | None) -> float:
    assert value is not None, "a score emitted is a score computed"
    return value


class BARTScore(ConditionedMetric):
    """BARTScore (Yuan, Neubig and Liu, NeurIPS 2021): the mean log-likelihood of a text given another
    under BART, every token counted, as neulab/BARTScore's ``bart_score.py`` computes it (<= 0, higher is
    better).

    ``direction``: one or more of ``faithfulness`` (s->h: the output given the item's source; no
    reference), ``precision`` (r->h), ``recall`` (h->r) and ``f`` (emits precision and recall too;
    F = (P + R) / 2 as the paper defines it, or the code's ``harm_f`` P*R/(P + R), half the harmonic mean,
    with ``f_formula="harm_f"``). Results ``bartscore_faithfulness``, ``bartscore_precision``,
    ``bartscore_recall``, ``bartscore_f`` (a ``name`` other than ``bartscore`` prefixes them instead).

    Args:
        model: ``facebook/bart-large-cnn`` (the paper's BARTScore-CNN), ``facebook/bart-large``, any
            encoder-decoder (T5, mBART, Pegasus), a hub id or local folder.
        state_dict: a ``torch.save``'d state dict loaded over the model: the paper's ParaBank2
            ``bart.pth`` over bart-large-cnn gives BARTScore-CNN-Para.
        multi_reference: ``mean`` (P and R averaged over the references, ``SUM/score.py``) or ``max``
            (the best P, the best R, and F of the reference whose F is best, ``D2T/score.py``).
        prompt: a prompt or a list of prompts (averaged: the paper's ensemble); ``prompt_side``
            ``encoder`` appends ``" " + prompt + ","`` to the conditioning text, ``decoder`` puts
            ``prompt + ", "`` before the target.
        source_field: the scoring input that holds the source (Opik's dataset ``input``).
        max_length: tokens per text (the reference code's 1,024, at most the model's positions); longer
            texts are cut, as the reference code cuts them, and the reason says so.
        batch_size: pairs per forward pass (16 on CPU; on a GPU the token budget alone).
        batch_tokens: padded tokens per forward pass (16,384 on a GPU).
        max_memory_mb: the bound on a pass's logits, as the other model metrics'.
        device: "cpu", "cuda", ...; None: CUDA when present.
        dtype: the weights' dtype; the log-softmax is float32 whatever it is.

    Examples:
        >>> from opik_metrics import BARTScore
        >>> metric = BARTScore(direction="faithfulness")   # facebook/bart-large-cnn  # doctest: +SKIP
        >>> metric.score(output="This is fun.", input="This is interesting.")[0].value  # doctest: +SKIP
        -2.5106...

        F from a precision and a recall (no model: no BART weights ship on PyPI): the paper's mean,
        and the code's ``harm_f``, half their harmonic mean:

        >>> from opik_metrics.neural.seq2seq.bartscore import f_score
        >>> f_score(-2.0, -3.0, "mean"), f_score(-2.0, -3.0, "harm_f")
        (-2.5, -1.2)
    """

    card = MetricCard(
        "bartscore", "BARTScore: log-likelihood under BART, faithfulness (given the source) or P/R/F (references)",
        needs_reference=False, loads_model=True, extra="neural", group="bartscore options", options=(
            Option("--bartscore-model", "model", help="encoder-decoder model: hub id or local folder "
                   "(default %(default)s)"),
            Option("--bartscore-direction", "direction", choices=DIRECTIONS,
                   help="faithfulness (output given --source), precision, recall or f (default %(default)s)"),
            Option("--bartscore-weights", "state_dict", help="state dict over the model (the ParaBank2 bart.pth)"),
            Option("--bartscore-prompt", "prompt", help="a prompt (the paper's prompted BARTScore)"),
            Option("--bartscore-prompt-side", "prompt_side", choices=("encoder", "decoder"),
                   help="where the prompt goes: after the conditioning text (encoder, default) or before the target"),
            Option("--bartscore-multi-reference", "multi_reference", choices=("mean", "max"),
                   help="several references: P and R averaged (mean, default) or the best (max, D2T's rule)"),
            Option("--bartscore-f", "f_formula", choices=("mean", "harm_f"),
                   help="F: mean of P and R (the paper, default) or the code's harm_f P*R/(P+R)"),
            DEVICE, DTYPE,
        ))

    default_name = "bartscore"

    def __init__(
        self,
        model: str = "facebook/bart-large-cnn",
        direction: str | Sequence[str] = "f",
        state_dict: str | None = None,
        multi_reference: str = "mean",
        f_formula: str = "mean",
        prompt: str | Sequence[str] | None = None,
        prompt_side: str = "encoder",
        source_field: str = DEFAULT_SOURCE_FIELD,
        max_length: int | None = None,
        batch_size: int | None = None,
        batch_tokens: int | None = None,
        max_memory_mb: float | None = None,
        device: str | None = None,
        dtype: str | None = None,
        name: str = "bartscore",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        from opik_metrics.neural.models.seq2seq_lm import Seq2SeqLM, load_seq2seq_lm
        from opik_metrics.neural.seq2seq.bartscore import (F_FORMULAS, MULTI_REFERENCE, PROMPT_SIDES,
                                                           BartScoreEngine)
        from opik_metrics.neural.seq2seq.likelihood import ConditionalLikelihood

        self.directions = _directions(direction)
        for value, allowed, what in ((multi_reference, MULTI_REFERENCE, "multi_reference"),
                                     (f_formula, F_FORMULAS, "f_formula"), (prompt_side, PROMPT_SIDES, "prompt_side")):
            if value not in allowed:
                raise ValueError(f"{what}: expected one of {', '.join(allowed)}, got {value!r}")
        lm = model if isinstance(model, Seq2SeqLM) else load_seq2seq_lm(
            model, device=device, dtype=dtype, state_dict=state_dict, max_length=max_length)
        scorer = ConditionalLikelihood(lm, batch_size=batch_size, batch_tokens=batch_tokens,
                                       max_memory_mb=max_memory_mb)
        self.engine = BartScoreEngine(scorer, self.directions, _prompts(prompt), prompt_side, multi_reference,
                                      f_formula)
        self.model_name = lm.name
        self.signature = self.engine.signature.extended(**{"opik-metrics": ours()})
        self._set_source_field(source_field)
        super().__init__(name=name, track=track, project_name=project_name)

    @property
    def needs_source(self) -> bool:
        return self.engine.needs_source

    @property
    def needs_reference(self) -> bool:
        return self.engine.needs_reference

    # -- facts -------------------------------------------------------------------------------
    def _emitted(self) -> list[tuple[str, bool]]:
        """(direction, is a part) of every score emitted, in order."""
        out: list[tuple[str, bool]] = []
        for d in self.directions:
            if d == "f":
                out += [(p, p not in self.directions) for p in ("precision", "recall")]
            out.append((d, False))
        seen: dict[str, bool] = {}
        for d, part in out:
            seen[d] = seen.get(d, True) and part
        return list(seen.items())

    def _main_scores(self) -> list[str]:
        return [self._scored_name(f"bartscore_{d}") for d, part in self._emitted() if not part]

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self._scored_name(f"bartscore_{d}"), bounds=(None, 0.0), part=part)
                for d, part in self._emitted()]

    # -- scoring -----------------------------------------------------------------------------
    def _score(self, outputs: list[str], references: list[list[str]] | None, sources: list[str] | None,
               progress: bool | None) -> list[list[ScoreResult]]:
        scored = self.engine.score(outputs, references, sources, progress=progress)
        return [self._results(s) for s in scored]

    def _results(self, s: ItemBartScore) -> list[ScoreResult]:
        metadata = {"signature": self.signature, "model": self.model_name, "n_references": s.n_references}
        if s.best_reference is not None:
            metadata["best_reference"] = s.best_reference
        reason = (f"{' and '.join(s.truncated)} cut at the model's {self.engine.scorer.lm.max_length} tokens "
                  "(as the reference code cuts them)") if s.truncated else None
        values = {"faithfulness": s.faithfulness, "precision": s.precision, "recall": s.recall, "f": s.f}
        return [ScoreResult(name=self._scored_name(f"bartscore_{d}"), value=_computed(values[d]), reason=reason,
                            metadata=metadata) for d, _ in self._emitted()]

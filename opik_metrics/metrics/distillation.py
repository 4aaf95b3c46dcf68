"""Teacher-student KL divergence as an Opik metric: how far a student's next-token
distributions are from its teacher's on a text (not Opik's bag-of-words ``KLDivergence``).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from opik_metrics.core import CorpusFacts, ScoreFacts, Statistics, corpus_facts, ours
from opik_metrics.metric_kit.base import ReferenceFreeMetric, ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.neural.lm.formulas import KL_FIELDS, kl_from_statistics

if TYPE_CHECKING:
    from opik_metrics.neural.models.causal_lm import CausalLM
    from opik_metrics.neural.lm.kl import TextKL

REDUCTIONS = ("mean", "sum")


class DistillationKL(ReferenceFreeMetric):
    """KL(teacher_T || student_T) of softened next-token distributions over ``output``'s tokens.

    ``temperature`` softens both (softmax(z / T)); ``top_k`` keeps the teacher's k most likely
    tokens at each position and renormalises both distributions over them; ``reverse`` gives
    KL(student_T || teacher_T); ``reduction`` is the mean or the sum over tokens. Teacher and
    student must share a tokenizer and vocabulary. ``dtype`` loads both in half precision (the KL
    itself is computed in float64); ``batch_size``: rows per forward pass, 8 on CPU unless given, on
    a GPU as many as ``max_memory_mb`` holds. Lower is better; ``corpus_<name>`` is the
    token-weighted mean (or total) over texts.

    Examples:
        >>> from opik_metrics import DistillationKL
        >>> same = DistillationKL(teacher="packaged:smollm2", student="packaged:smollm2", temperature=2.0, track=False)
        >>> result = same.score("Paris is the capital of France.")[0]   # a student equal to its teacher
        >>> result.name, result.value, result.metadata["n_tokens"]
        ('kl_divergence', 0.0, 7)
        >>> DistillationKL(teacher="HuggingFaceTB/SmolLM2-360M-Instruct",   # from the hub  # doctest: +SKIP
        ...                student="HuggingFaceTB/SmolLM2-135M-Instruct")
    """

    card = MetricCard(
        "distillation_kl", "per-token KL(teacher_T || student_T) of two causal LMs", group="distillation KL options",
        needs_reference=False, loads_model=True, extra="neural", options=(
            Option("--teacher", "teacher", required=True, help="teacher causal LM (hub id, path or packaged:smollm2)"),
            Option("--student", "student", required=True, help="student causal LM sharing the teacher's vocabulary"),
            Option("--temperature", "temperature", kind=float,
                   help="softens both distributions, softmax(logits / T) (default %(default)g)"),
            Option("--top-k", "top_k", kind=int, help="truncate to the teacher's top k tokens, renormalised"),
            DEVICE, DTYPE,
        ))

    higher_is_better = False
    default_name = "kl_divergence"

    def __init__(
        self,
        teacher: str | CausalLM,
        student: str | CausalLM,
        temperature: float = 1.0,
        top_k: int | None = None,
        reverse: bool = False,
        reduction: str = "mean",
        add_start_token: bool | None = None,
        stride: int | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_memory_mb: float | None = None,
        text_field: str = "output",
        name: str = "kl_divergence",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        # torch: only when a metric is built
        from opik_metrics.neural.models.causal_lm import CausalLM, load_causal_lm
        from opik_metrics.neural.lm.kl import DistillationKLScorer
        t = teacher if isinstance(teacher, CausalLM) else load_causal_lm(teacher, device=device, dtype=dtype)
        s = student if isinstance(student, CausalLM) else load_causal_lm(student, device=device, dtype=dtype)
        self._scorer = DistillationKLScorer(t, s, temperature=temperature, top_k=top_k, reverse=reverse,
                                            add_start_token=add_start_token, stride=stride,
                                            max_length=max_length, batch_size=batch_size,
                                            max_memory_mb=max_memory_mb)
        self.reduction = reduction
        self.teacher_name, self.student_name = t.name, s.name
        self.signature = self._scorer.signature.extended(reduction=reduction, **{"opik-metrics": ours()})
        super().__init__(name=name, text_field=text_field, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, higher_is_better=False, bounds=(0.0, None))]

    def _corpus_facts(self) -> CorpusFacts:
        return corpus_facts(f"corpus_{self.name}", self.name, KL_FIELDS, kl_from_statistics,
                            {"reduction": self.reduction}, higher_is_better=False, bounds=(0.0, None))

    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        scored = self._scorer.score(outputs, progress=None if len(outputs) > 1 else False)
        return [[self._result(s)] for s in scored]

    def _metadata(self, **extra: Any) -> dict:
        return {**extra, "teacher": self.teacher_name, "student": self.student_name,
                "temperature": self._scorer.temperature, "top_k": self._scorer.top_k,
                "reverse": self._scorer.reverse, "reduction": self.reduction, "signature": self.signature}

    def _result(self, s: TextKL) -> ScoreResult:
        reason = None
        if s.n_tokens == 0:
            reason = ("text has no token to score: KL is 0.0 by convention (an empty sum) and the "
                      "text does not count in the corpus value")
        elif not math.isfinite(s.kl_sum):
            reason = (f"KL is {s.kl_sum} for this text: the teacher's or the student's outputs are not finite "
                      "(weights holding NaN or infinite values: a damaged checkpoint?)")
        return ScoreResult(name=self.name, value=kl_from_statistics((s.kl_sum, s.n_tokens), reduction=self.reduction),
                           reason=reason,
                           metadata=self._metadata(n_tokens=s.n_tokens, text_tokens=s.text_tokens, kl_sum=s.kl_sum,
                                                   kl_mean=s.kl_mean, n_windows=s.n_windows,
                                                   statistics=[s.kl_sum, s.n_tokens]))

    def from_statistics(self, total: Statistics) -> ScoreResult:
        """Token-weighted mean KL (or the total) of summed statistics."""
        result = super().from_statistics(total)
        assert result.metadata is not None
        result.metadata.update(self._metadata(n_tokens=int(total["n_tokens"]), kl_sum=total["kl_sum"]))
        return result

    def _corpus_reason(self, total: Statistics) -> str | None:
        if not total["n_tokens"]:
            return "no text has a token to score: corpus KL is 0.0 by convention"
        if not math.isfinite(total["kl_sum"]):
            return "some text's KL is not finite: the teacher's or the student's outputs hold NaN or infinite values"
        return None

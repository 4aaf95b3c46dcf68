"""Teacher-student KL divergence as an Opik metric: how far a student's next-token
distributions are from its teacher's on a text (not Opik's bag-of-words ``KLDivergence``).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..neural.causal_lm import CausalLM, load_causal_lm
from ..neural.kl_scorer import DistillationKLScorer, TextKL
from ..versions import ours
from .base import ScoreResult
from .inputs import MetricInputError, require_batch
from .reference_free import ReferenceFreeMetric

REDUCTIONS = ("mean", "sum")


class DistillationKL(ReferenceFreeMetric):
    """KL(teacher_T || student_T) of softened next-token distributions over ``output``'s tokens.

    ``temperature`` softens both (softmax(z / T)); ``top_k`` keeps the teacher's k most likely
    tokens at each position and renormalises both distributions over them; ``reverse`` gives
    KL(student_T || teacher_T); ``reduction`` is the mean or the sum over tokens. Teacher and
    student must share a tokenizer and vocabulary.
    """

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
        batch_size: int = 8,
        device: str | None = None,
        text_field: str = "output",
        name: str = "kl_divergence",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        if reduction not in REDUCTIONS:
            raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
        t = teacher if isinstance(teacher, CausalLM) else load_causal_lm(teacher, device=device)
        s = student if isinstance(student, CausalLM) else load_causal_lm(student, device=device)
        self._scorer = DistillationKLScorer(t, s, temperature=temperature, top_k=top_k, reverse=reverse,
                                            add_start_token=add_start_token, stride=stride,
                                            max_length=max_length, batch_size=batch_size)
        self.reduction = reduction
        self.teacher_name, self.student_name = t.name, s.name
        self.signature = f"{self._scorer.signature}|reduction:{reduction}|opik-metrics:{ours()}"
        super().__init__(name=name, text_field=text_field, track=track, project_name=project_name)

    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        scored = self._scorer.score(outputs, progress=None if len(outputs) > 1 else False)
        return [[self._result(s)] for s in scored]

    def _value(self, kl_sum: float, n_tokens: int) -> float:
        if self.reduction == "sum":
            return kl_sum
        return kl_sum / n_tokens if n_tokens else 0.0

    def _metadata(self, **extra: Any) -> dict:
        return {**extra, "teacher": self.teacher_name, "student": self.student_name,
                "temperature": self._scorer.temperature, "top_k": self._scorer.top_k,
                "reverse": self._scorer.reverse, "reduction": self.reduction, "signature": self.signature}

    def _result(self, s: TextKL) -> ScoreResult:
        reason = None
        if s.n_tokens == 0:
            reason = ("text has no token to score: KL is 0.0 by convention (an empty sum) and the "
                      "text does not count in the corpus value")
        return ScoreResult(name=self.name, value=self._value(s.kl_sum, s.n_tokens), reason=reason,
                           metadata=self._metadata(n_tokens=s.n_tokens, text_tokens=s.text_tokens,
                                                   kl_sum=s.kl_sum, kl_mean=s.kl_mean, n_windows=s.n_windows))

    def corpus_score(self, outputs: Sequence[str], references: Any = None) -> ScoreResult:
        """KL over all ``outputs`` together: token-weighted mean (or total sum); references ignored."""
        outs, _ = require_batch(outputs, None)
        if not outs:
            raise MetricInputError("corpus KL needs at least one text")
        return self.aggregate([r[0] for r in self._score_items(outs)])

    def experiment_score(self, test_results: Sequence[Any]) -> ScoreResult:
        """Corpus KL for ``opik.evaluate(experiment_scoring_functions=[...])``; reuses logged scores."""
        if not test_results:
            raise MetricInputError("corpus KL needs at least one test result")
        return self.aggregate(self.item_results(test_results))

    def aggregate(self, results: Sequence[ScoreResult]) -> ScoreResult:
        """Token-weighted mean KL (or the total, for ``reduction="sum"``) of per-item results."""
        n = sum(int(r.metadata["n_tokens"]) for r in results)
        total = sum(float(r.metadata["kl_sum"]) for r in results)
        reason = None if n else "no text has a token to score: corpus KL is 0.0 by convention"
        return ScoreResult(name=f"corpus_{self.name}", value=self._value(total, n), reason=reason,
                           metadata=self._metadata(n_tokens=n, n_items=len(results), kl_sum=total))

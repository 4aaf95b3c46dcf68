"""GPTScore's form on a causal LM as an Opik metric: the mean log-probability of the output's tokens
given a prompt built from the item's source and an aspect instruction."""
from __future__ import annotations

import hashlib
import string
from typing import TYPE_CHECKING

from opik_metrics.core import ScoreFacts, ours
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.conditioned import ConditionedMetric
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.metric_kit.source_input import DEFAULT_SOURCE_FIELD

if TYPE_CHECKING:
    from opik_metrics.neural.lm.continuation import Continuation

#: Aspect instructions for summaries, in the manner of the GPTScore paper's summarization prompts.
ASPECTS = {
    "consistency": "Generate a summary with consistent facts for the following text:",
    "relevance": "Generate a relevant summary with consistent details for the following text:",
    "fluency": "Generate a fluent and grammatical summary for the following text:",
    "coherence": "Generate a coherent summary for the following text:",
    "informativeness": "Generate an informative summary that captures the key points of the following text:",
}
DEFAULT_TEMPLATE = "{instruction} {source}\nTl;dr "


def _fields(template: str) -> set[str]:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ValueError(f"template: {exc} in {template!r}") from None
    unknown = names - {"instruction", "source"}
    if unknown:
        raise ValueError(f"template: unknown field(s) {sorted(unknown)}; it may use {{instruction}} and {{source}}")
    return names


class GPTScore(ConditionedMetric):
    """GPTScore (Fu et al., 2023) in its open-model form: GPTScore(h | d, a) = (1/m) sum_t log p(h_t | h_<t,
    T(d, a)), the mean log-probability of the output's m tokens given a prompt T built from the item's
    source d and an aspect instruction a, under a causal LM (<= 0, higher is better). The prompt's tokens are
    context only; the output is tokenised on its own and follows it (with the model's BOS first when it
    has one). Result ``gptscore`` (or the metric's ``name``); the corpus score is the mean over items.

    Args:
        model: a causal LM: hub id, local folder, .gguf file or ``packaged:smollm2`` (offline, the default).
        aspect: one of ``ASPECTS`` (summaries) or your own instruction text.
        template: the prompt, with ``{instruction}`` and ``{source}`` (``DEFAULT_TEMPLATE``); without
            ``{source}`` the metric reads no source.
        source_field: the scoring input that holds the source (Opik's dataset ``input``).
        batch_size: rows per forward pass, as ``Perplexity``.
        max_memory_mb: the memory budget of a pass, as ``Perplexity``.
        device: "cpu", "cuda", ...; None: CUDA when present.
        dtype: the weights' dtype, as ``Perplexity``.

    Prompts longer than the context lose their oldest tokens first (an output longer than the context
    keeps its first tokens); the reason says how many.

    Examples:
        >>> from opik_metrics import GPTScore
        >>> metric = GPTScore(track=False)   # SmolLM2-135M-Instruct, offline
        >>> source = "The cat sat on the mat all day."
        >>> result = metric.score(output="A cat sat on a mat.", input=source)[0]
        >>> result.name, round(result.value, 1), result.metadata["n_tokens"]
        ('gptscore', -3.1, 7)
        >>> round(metric.score(output="Stocks fell sharply.", input=source)[0].value, 1)   # not about the source
        -8.4
    """

    card = MetricCard(
        "gptscore", "GPTScore's form: mean log-probability of the output given a prompt from its source (causal LM)",
        needs_reference=False, loads_model=True, extra="neural", group="gptscore options", options=(
            Option("--gptscore-model", "model", help="causal LM: hub id, local path, .gguf file or packaged:smollm2 "
                   "(default)"),
            Option("--gptscore-aspect", "aspect", help=f"one of {', '.join(ASPECTS)} (default %(default)s) or "
                   "an instruction of your own"),
            Option("--gptscore-template", "template", help="the prompt, with {instruction} and {source}"),
            DEVICE, DTYPE,
        ))

    default_name = "gptscore"

    def __init__(
        self,
        model: str = "packaged:smollm2",
        aspect: str = "consistency",
        template: str = DEFAULT_TEMPLATE,
        source_field: str = DEFAULT_SOURCE_FIELD,
        batch_size: int | None = None,
        max_memory_mb: float | None = None,
        device: str | None = None,
        dtype: str | None = None,
        name: str = "gptscore",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        from opik_metrics.neural.lm.continuation import ContinuationScorer
        from opik_metrics.neural.models.causal_lm import CausalLM, load_causal_lm

        if not isinstance(aspect, str) or not aspect.strip():
            raise ValueError(f"aspect: expected one of {', '.join(ASPECTS)} or an instruction text, got {aspect!r}")
        if not isinstance(template, str):
            raise ValueError(f"template: expected a text, got {template!r}")
        self.instruction = ASPECTS.get(aspect, aspect)
        self.template = template
        self._reads_source = "source" in _fields(template)
        lm = model if isinstance(model, CausalLM) else load_causal_lm(model, device=device, dtype=dtype)
        self.scorer = ContinuationScorer(lm, batch_size=batch_size, max_memory_mb=max_memory_mb)
        self.model_name = lm.name
        prompt_digest = hashlib.sha1(f"{template}\x00{self.instruction}".encode()).hexdigest()[:10]
        self.signature = lm.signature.extended(aspect=aspect if aspect in ASPECTS else "custom", prompt=prompt_digest,
                                               bos="yes" if self.scorer.start_id is not None else "no",
                                               **{"opik-metrics": ours()})
        self._set_source_field(source_field)
        super().__init__(name=name, track=track, project_name=project_name)

    @property
    def needs_source(self) -> bool:
        return self._reads_source

    @property
    def needs_reference(self) -> bool:
        return False

    def prompt(self, source: str | None) -> str:
        """The prompt an output of this source follows."""
        return self.template.format(instruction=self.instruction, source=source or "")

    def _main_scores(self) -> list[str]:
        return [self.name]

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, bounds=(None, 0.0))]

    def _score(self, outputs: list[str], references: list[list[str]] | None, sources: list[str] | None,
               progress: bool | None) -> list[list[ScoreResult]]:
        prompts = [self.prompt(sources[k] if sources is not None else None) for k in range(len(outputs))]
        scored = self.scorer.score(prompts, outputs, progress=progress)
        return [[self._result(c)] for c in scored]

    def _result(self, c: Continuation) -> ScoreResult:
        reasons = []
        if not c.n_tokens:
            reasons.append("output has no token: GPTScore is 0.0 by convention (an empty sum of log-probabilities)")
        if c.prompt_cut:
            reasons.append(f"the prompt's first {c.prompt_cut} tokens were left out to fit the model's context")
        if c.output_cut:
            reasons.append(f"the output's last {c.output_cut} tokens were left out to fit the model's context")
        return ScoreResult(name=self.name, value=c.mean, reason="; ".join(reasons) or None,
                           metadata={"n_tokens": c.n_tokens, "logprob_sum": c.logprob_sum, "model": self.model_name,
                                     "signature": self.signature})

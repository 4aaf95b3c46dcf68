"""Perplexity as an Opik metric: per text, and token-weighted over a corpus or an experiment."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from opik_metrics.core import CorpusFacts, ScoreFacts, Statistics, corpus_facts, ours
from opik_metrics.metric_kit.base import ReferenceFreeMetric, ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.neural.lm.formulas import PERPLEXITY_FIELDS, perplexity_from_statistics

if TYPE_CHECKING:
    from opik_metrics.neural.models.causal_lm import CausalLM
    from opik_metrics.neural.lm.perplexity import TextPerplexity


class Perplexity(ReferenceFreeMetric):
    """Perplexity of ``output`` under a causal LM, as Hugging Face ``evaluate`` computes it.

    ``model``: hub id, local directory, ``.gguf`` file or ``packaged:smollm2`` (offline). The
    start token is prepended when the tokenizer has one (``add_start_token``); texts longer than
    the context are scored with a sliding window of ``max_length`` tokens moved by ``stride``.
    ``dtype``: the weights' dtype, "float32" (default), "bfloat16", or "float16" on a GPU; the
    log-softmax and the sums stay in float32 and float64 (the signature records the dtype).
    ``batch_size``: rows per forward pass, 16 on CPU unless given; on a GPU each batch is filled to
    what ``max_memory_mb`` holds. Lower is better, on a log scale. ``corpus_score``/``experiment_score`` give
    ``corpus_<name>`` = exp(total NLL / total tokens), not a mean of perplexities.

    Examples:
        >>> from opik_metrics import Perplexity
        >>> metric = Perplexity(model="packaged:smollm2", track=False)   # SmolLM2-135M-Instruct, offline
        >>> result = metric.score("Paris is the capital of France.")[0]
        >>> result.name, round(result.value), result.metadata["n_tokens"]
        ('perplexity', 175, 7)
        >>> Perplexity(model="gpt2")   # from the hub  # doctest: +SKIP
    """

    card = MetricCard(
        "perplexity", "perplexity of a causal LM per item, token-weighted corpus perplexity",
        group="perplexity options", needs_reference=False, loads_model=True, extra="neural", options=(
            Option("--perplexity-model", "model",
                   help="causal LM: hub id, local path, .gguf file or packaged:smollm2 (default)"),
            Option("--stride", "stride", kind=int, help="sliding-window stride for texts longer than the context"),
            DEVICE, DTYPE,
        ))

    higher_is_better = False
    default_name = "perplexity"

    def __init__(
        self,
        model: str | CausalLM = "packaged:smollm2",
        add_start_token: bool | None = None,
        stride: int | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_memory_mb: float | None = None,
        text_field: str = "output",
        name: str = "perplexity",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        # torch: only when a metric is built
        from opik_metrics.neural.models.causal_lm import CausalLM, load_causal_lm
        from opik_metrics.neural.lm.perplexity import PerplexityScorer
        lm = model if isinstance(model, CausalLM) else load_causal_lm(model, device=device, dtype=dtype)
        self._scorer = PerplexityScorer(lm, add_start_token=add_start_token, stride=stride,
                                        max_length=max_length, batch_size=batch_size,
                                        max_memory_mb=max_memory_mb)
        self.model_name = lm.name
        self.signature = self._scorer.signature.extended(**{"opik-metrics": ours()})
        super().__init__(name=name, text_field=text_field, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, higher_is_better=False, scale="log", bounds=(1.0, None))]

    def _corpus_facts(self) -> CorpusFacts:
        return corpus_facts(f"corpus_{self.name}", self.name, PERPLEXITY_FIELDS, perplexity_from_statistics,
                            higher_is_better=False, scale="log", bounds=(1.0, None))

    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        scored = self._scorer.score(outputs, progress=None if len(outputs) > 1 else False)
        return [[self._result(s)] for s in scored]

    def _result(self, s: TextPerplexity) -> ScoreResult:
        return ScoreResult(
            name=self.name, value=s.perplexity, reason=self._reason(s),
            metadata={"n_tokens": s.n_tokens, "text_tokens": s.text_tokens, "mean_nll": s.mean_nll,
                      "nll_sum": s.nll_sum, "n_windows": s.n_windows, "model": self.model_name,
                      "statistics": [s.nll_sum, s.n_tokens], "signature": self.signature},
        )

    def _reason(self, s: TextPerplexity) -> str | None:
        if s.n_tokens == 0 and s.text_tokens == 0:
            return ("text has no tokens: perplexity is 1.0 by convention (an empty sum of "
                    "log-likelihoods) and the text does not count in corpus perplexity")
        if s.n_tokens == 0:
            return (f"text has {s.text_tokens} token and no start token is prepended (the tokenizer "
                    "has no BOS), so no token is predicted: perplexity is 1.0 by convention")
        if math.isinf(s.perplexity):
            return f"mean NLL {s.mean_nll:.1f} nats overflows exp(): perplexity is infinite"
        if math.isnan(s.perplexity):
            return (f"the model's log-likelihoods are not numbers (NaN) for this text: its weights hold NaN or "
                    f"infinite values (a damaged checkpoint?); {self.model_name} cannot score it")
        return None

    def from_statistics(self, total: Statistics) -> ScoreResult:
        """exp(summed NLL / summed tokens), with the totals in the metadata."""
        result = super().from_statistics(total)
        nll, n = total["nll_sum"], int(total["n_tokens"])
        assert result.metadata is not None
        result.metadata.update(n_tokens=n, nll_sum=nll, mean_nll=nll / n if n else 0.0, model=self.model_name)
        return result

    def _corpus_reason(self, total: Statistics) -> str | None:
        if not total["n_tokens"]:
            return "no text has a token to score: corpus perplexity is 1.0 by convention"
        if math.isnan(total["nll_sum"]):
            return "some text's log-likelihoods are not numbers (NaN): the model's weights hold NaN or infinite values"
        return None

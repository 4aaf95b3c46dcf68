"""Perplexity as an Opik metric: per text, and token-weighted over a corpus or an experiment."""
from __future__ import annotations

import math
from typing import Any, Sequence

from ..neural.causal_lm import CausalLM, load_causal_lm
from ..neural.perplexity import PerplexityScorer, TextPerplexity
from ..versions import ours
from .base import ScoreResult
from .inputs import MetricInputError, require_batch
from .reference_free import ReferenceFreeMetric


class Perplexity(ReferenceFreeMetric):
    """Perplexity of ``output`` under a causal LM, as Hugging Face ``evaluate`` computes it.

    ``model``: hub id, local directory, ``.gguf`` file or ``packaged:smollm2`` (offline). The
    start token is prepended when the tokenizer has one (``add_start_token``); texts longer than
    the context are scored with a sliding window of ``max_length`` tokens moved by ``stride``.
    ``corpus_score``/``experiment_score`` give exp(total NLL / total tokens), not a mean of
    perplexities.
    """

    def __init__(
        self,
        model: str | CausalLM = "packaged:smollm2",
        add_start_token: bool | None = None,
        stride: int | None = None,
        max_length: int | None = None,
        batch_size: int = 16,
        device: str | None = None,
        text_field: str = "output",
        name: str = "perplexity",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        lm = model if isinstance(model, CausalLM) else load_causal_lm(model, device=device)
        self._scorer = PerplexityScorer(lm, add_start_token=add_start_token, stride=stride,
                                        max_length=max_length, batch_size=batch_size)
        self.model_name = lm.name
        self.signature = f"{self._scorer.signature}|opik-metrics:{ours()}"
        super().__init__(name=name, text_field=text_field, track=track, project_name=project_name)

    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        scored = self._scorer.score(outputs, progress=None if len(outputs) > 1 else False)
        return [[self._result(s)] for s in scored]

    def _result(self, s: TextPerplexity) -> ScoreResult:
        return ScoreResult(
            name=self.name, value=s.perplexity, reason=self._reason(s),
            metadata={"n_tokens": s.n_tokens, "text_tokens": s.text_tokens, "mean_nll": s.mean_nll,
                      "nll_sum": s.nll_sum, "n_windows": s.n_windows, "model": self.model_name,
                      "signature": self.signature},
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
        return None

    def corpus_score(self, outputs: Sequence[str], references: Any = None) -> ScoreResult:
        """Token-weighted perplexity of all ``outputs`` together (``references`` is ignored)."""
        outs, _ = require_batch(outputs, None)
        if not outs:
            raise MetricInputError("corpus perplexity needs at least one text")
        return self.aggregate([r[0] for r in self._score_items(outs)])

    def experiment_score(self, test_results: Sequence[Any]) -> ScoreResult:
        """Corpus perplexity for ``opik.evaluate(experiment_scoring_functions=[...])``; reuses the
        per-item scores Opik already holds and computes only the missing ones."""
        if not test_results:
            raise MetricInputError("corpus perplexity needs at least one test result")
        return self.aggregate(self.item_results(test_results))

    def aggregate(self, results: Sequence[ScoreResult]) -> ScoreResult:
        """exp(sum of NLL / sum of tokens) over per-item results of this metric."""
        n = sum(int(r.metadata["n_tokens"]) for r in results)
        nll = sum(float(r.metadata["nll_sum"]) for r in results)
        mean = nll / n if n else 0.0
        reason = None if n else "no text has a token to score: corpus perplexity is 1.0 by convention"
        value = math.exp(mean) if mean < 709 else math.inf
        return ScoreResult(name=f"corpus_{self.name}", value=value, reason=reason,
                           metadata={"n_tokens": n, "n_items": len(results), "nll_sum": nll,
                                     "mean_nll": mean, "model": self.model_name,
                                     "signature": self.signature})

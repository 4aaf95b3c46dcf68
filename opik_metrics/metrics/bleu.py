"""BLEU as an Opik metric: sentence BLEU per item, corpus BLEU per experiment."""
from __future__ import annotations

from typing import Any, Sequence

from ..text.bleu import BLEUResult, BLEUScorer
from .base import ReferenceMetric, ScoreResult
from .inputs import MetricInputError, require_batch, require_references, require_text
from .opik_results import scoring_inputs


class BLEU(ReferenceMetric):
    """BLEU in [0, 1] with sacrebleu's options and numbers (its score divided by 100).

    ``score`` gives sentence BLEU with ``sacrebleu.sentence_bleu``'s defaults; ``corpus_score``
    and ``experiment_score`` give corpus BLEU (statistics summed over items, as
    ``sacrebleu.corpus_bleu``), which is not the mean of sentence BLEUs.
    """

    def __init__(
        self,
        tokenize: str = "13a",
        smooth_method: str = "exp",
        smooth_value: float | None = None,
        effective_order: bool = True,
        lowercase: bool = False,
        weights: Sequence[float] | None = None,
        max_ngram_order: int = 4,
        corpus_smooth_method: str = "exp",
        corpus_effective_order: bool = False,
        name: str = "bleu",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        common = dict(tokenize=tokenize, lowercase=lowercase, smooth_value=smooth_value,
                      max_ngram_order=max_ngram_order, weights=weights)
        self._sentence = BLEUScorer(smooth_method=smooth_method, effective_order=effective_order, **common)
        self._corpus = BLEUScorer(smooth_method=corpus_smooth_method,
                                  effective_order=corpus_effective_order, **common)
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        results = []
        for output, refs in zip(outputs, references):
            res = self._sentence.sentence_score(output, refs)
            sig = self._sentence.signature(sentence=True, nrefs=len(refs))
            results.append([_result("bleu", res, sig, _empty_reason(output, res))])
        return results

    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[str | Sequence[str]]) -> ScoreResult:
        """Corpus BLEU over aligned outputs and references, as ``sacrebleu.corpus_bleu``."""
        outs, refs = require_batch(outputs, references)
        if not outs:
            raise MetricInputError("corpus BLEU needs at least one item")
        res = self._corpus.corpus_score(outs, refs)
        nrefs = {len(r) for r in refs}
        sig = self._corpus.signature(sentence=False, nrefs=nrefs.pop() if len(nrefs) == 1 else "var")
        reason = None if res.sys_len else "every output is empty: corpus BLEU is 0 by definition"
        return _result("corpus_bleu", res, sig, reason)

    def experiment_score(self, test_results: Sequence[Any]) -> ScoreResult:
        """Experiment-level corpus BLEU for ``opik.evaluate(experiment_scoring_functions=[...])``."""
        outputs, references = [], []
        for k, tr in enumerate(test_results):
            inputs = scoring_inputs(tr)
            outputs.append(require_text(inputs.get("output"), "output", k))
            references.append(require_references(inputs.get("reference"), "reference", k))
        return self.corpus_score(outputs, references)


def _empty_reason(output: str, res: BLEUResult) -> str | None:
    if res.sys_len == 0:
        return "output has no tokens: BLEU is 0 by definition"
    if res.ref_len == 0:
        return "reference has no tokens: BLEU is 0 by definition"
    return None


def _result(name: str, res: BLEUResult, signature: str, reason: str | None) -> ScoreResult:
    return ScoreResult(
        name=name,
        value=res.score,
        reason=reason,
        metadata={
            "precisions": list(res.precisions),
            "bp": res.bp,
            "sys_len": res.sys_len,
            "ref_len": res.ref_len,
            "counts": list(res.counts),
            "totals": list(res.totals),
            "signature": signature,
        },
    )

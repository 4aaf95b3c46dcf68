"""CIDEr-D as an Opik metric: pycocoevalcap's numbers without Java, per item and for the corpus,
with document frequencies fitted on the references of the whole set (a corpus context)."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from opik_metrics.core import CorpusFacts, MetricInputError, ScoreFacts, Statistics, corpus_facts, mean_formula
from opik_metrics.core.inputs import require_references
from opik_metrics.metrics.base import ReferenceMetric, ScoreResult
from opik_metrics.text.cider import CiderD, CiderItem, DocumentFrequency


def fit_references(engine: Any, df_references: Any) -> DocumentFrequency | None:
    """Document frequencies over ``df_references`` (one string or list of strings per image)."""
    if df_references is None:
        return None
    if isinstance(df_references, str) or not isinstance(df_references, Sequence) or not df_references:
        raise MetricInputError("df_references: expected a non-empty list with one reference (a string or a list "
                               "of strings) per image of the set")
    refs = [require_references(r, "df_references", k) for k, r in enumerate(df_references)]
    return engine.fit(refs)


class CIDEr(ReferenceMetric):
    """CIDEr-D (Vedantam et al. 2015) as pycocoevalcap's ``Cider`` computes it: n = 1..4, sigma 6,
    clipping, the length penalty, x10, after pycocoevalcap's PTB tokenisation (reproduced in
    Python: no Java). Per item ``cider``; the corpus score ``corpus_cider`` is the mean over items.

    CIDEr-D weighs n-grams by their document frequency over the references of the whole set.
    ``score_batch`` and ``corpus_score`` fit it on the references they are given (pycocoevalcap's
    behaviour, so the corpus value equals its ``compute_score``); ``score`` on one item cannot,
    so pass ``df_references`` (every reference of the dataset) to score items one at a time in
    ``opik.evaluate``. Without it, one item alone scores 0 and its reason says why, and
    ``experiment_score`` refits on all of the experiment's references.

    Args:
        df_references: references of the whole set (one string or list per image) to fit document
            frequencies on once; None fits on whatever is scored.
        n: the largest n-gram order. sigma: the length penalty's standard deviation.
        tokenize: ``"ptb"`` (pycocoevalcap's tokenisation) or ``"none"`` (already tokenised text).

    Example:
        >>> from opik_metrics import CIDEr
        >>> refs = [["a dog runs on the grass"], ["a cat sleeps on a bed"], ["two men ride horses"]]
        >>> metric = CIDEr(df_references=refs, track=False)
        >>> round(metric.score("a dog runs on grass", refs[0])[0].value, 4)
        6.2417
    """

    def __init__(self, df_references: Sequence[str | Sequence[str]] | None = None, n: int = 4,
                 sigma: float = 6.0, tokenize: str = "ptb", name: str = "cider", track: bool = True,
                 project_name: str | None = None) -> None:
        self.engine = CiderD(n=n, sigma=sigma, tokenize=tokenize)
        self.document_frequency = fit_references(self.engine, df_references)
        self.signature = self.engine.signature(self.document_frequency)
        self._warned = False
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, bounds=(0.0, 10.0))]

    def _corpus_facts(self) -> CorpusFacts:
        return corpus_facts(f"corpus_{self.name}", self.name, [self.name, "items"], mean_formula, {"field": 0},
                            bounds=(0.0, 10.0))

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        df = self.document_frequency
        if df is None:
            context = {"images": len(references), "fitted_on": "the references scored with it"}
            if len(references) == 1 and not self._warned:
                self._warned = True
                warnings.warn(f"{self.name}: CIDEr-D of a single item without df_references is 0 by definition; "
                              "pass df_references=<every reference of the dataset>", stacklevel=3)
        else:
            context = {"images": df.images, "fingerprint": df.fingerprint()}
        return [[self._result(item, len(refs), context)]
                for item, refs in zip(self.engine.score(outputs, references, df), references)]

    def _result(self, item: CiderItem, n_refs: int, context: dict) -> ScoreResult:
        return ScoreResult(name=self.name, value=item.value, reason=item.reason,
                           metadata={"statistics": [item.value, 1], "by_order": list(item.by_order),
                                     "n_references": n_refs, "document_frequency": context,
                                     "signature": self.signature})

    def experiment_score(self, test_results: Sequence[Any]) -> ScoreResult:
        """Corpus CIDEr-D of an ``opik.evaluate`` experiment: with ``df_references`` the logged item
        scores are reused; without, document frequencies are refitted on all of its references and
        every item is rescored (item scores made one at a time had no corpus to fit on)."""
        if self.document_frequency is not None:
            return super().experiment_score(test_results)
        if not test_results:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one test result")
        outputs, references = self._experiment_inputs(test_results, range(len(test_results)))
        return self.corpus_score(outputs, references)

    def _corpus_reason(self, total: Statistics) -> str | None:
        if self.document_frequency is None and total.values[-1] == 1:
            return "a corpus of one item: document frequencies fitted on 1 image make CIDEr-D 0 by definition"
        return None

"""CIDEr-D as an Opik metric: pycocoevalcap's numbers without Java, per item and for the corpus,
with document frequencies fitted on the references of the whole set (a corpus context)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from opik_metrics.core import CorpusFacts, ScoreFacts, Statistics, corpus_facts, mean_formula
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard
from opik_metrics.metric_kit.shared_options import CAPTION_TOKENIZE
from opik_metrics.metric_kit.corpus_context import DocumentFrequencyMetric

if TYPE_CHECKING:
    from opik_metrics.text.cider import CiderD, CiderItem


class CIDEr(DocumentFrequencyMetric):
    """CIDEr-D (Vedantam et al. 2015) as pycocoevalcap's ``Cider`` computes it: n = 1..4, sigma 6,
    clipping, the length penalty, x10, after pycocoevalcap's PTB tokenisation (reproduced in
    Python: no Java). Per item ``cider``; the corpus score ``corpus_cider`` is the mean over items.

    CIDEr-D weighs n-grams by their document frequency over the references of the whole set.
    ``score_batch`` and ``corpus_score`` fit it on the references they are given (pycocoevalcap's
    behaviour, so the corpus value equals its ``compute_score``); ``score`` on one item cannot,
    so pass ``df_references`` (every reference of the dataset) to score items one at a time in
    ``opik.evaluate``. Without it, one item alone scores 0 and its reason says why, and
    ``experiment_score`` refits on all of the experiment's references. The experiment runner and
    the CLI fit them on every reference of the set first (``fit_corpus``), then score in chunks.

    Args:
        df_references: references of the whole set (one string or list per image) to fit document
            frequencies on once; None fits on whatever is scored.
        n: the largest n-gram order. sigma: the length penalty's standard deviation.
        tokenize: ``"ptb"`` (pycocoevalcap's tokenisation) or ``"none"`` (already tokenised text).

    Examples:
        >>> from opik_metrics import CIDEr
        >>> refs = [["a dog runs on the grass"], ["a cat sleeps on a bed"], ["two men ride horses"]]
        >>> metric = CIDEr(df_references=refs, track=False)
        >>> round(metric.score("a dog runs on grass", refs[0])[0].value, 4)
        6.2417
    """

    card = MetricCard(
        "cider", "CIDEr-D per item and for the corpus (pycocoevalcap's numbers, no Java)",
        group="CIDEr-D and COCO caption options (document frequencies from all the references)",
        options=(CAPTION_TOKENIZE,), every_reference="df_references")
    default_name = "cider"

    def __init__(self, df_references: Sequence[str | Sequence[str]] | None = None, n: int = 4,
                 sigma: float = 6.0, tokenize: str = "ptb", name: str = "cider", track: bool = True,
                 project_name: str | None = None) -> None:
        # numpy: only when a metric is built
        from opik_metrics.text.cider import CiderD
        self.engine: CiderD = CiderD(n=n, sigma=sigma, tokenize=tokenize)
        super().__init__(df_references, name=name, track=track, project_name=project_name)

    def _score_facts(self) -> list[ScoreFacts]:
        from opik_metrics.text.cider import MAX_VALUE
        return [ScoreFacts(self.name, bounds=(0.0, MAX_VALUE))]

    def _corpus_facts(self) -> CorpusFacts:
        from opik_metrics.text.cider import MAX_VALUE
        return corpus_facts(f"corpus_{self.name}", self.name, [self.name, "items"], mean_formula, {"field": 0},
                            bounds=(0.0, MAX_VALUE))

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        context = self._context_for(references)
        return [[self._result(item, len(refs), context)]
                for item, refs in zip(self.engine.score(outputs, references, self.document_frequency), references)]

    def _result(self, item: CiderItem, n_refs: int, context: dict) -> ScoreResult:
        return ScoreResult(name=self.name, value=item.value, reason=item.reason,
                           metadata={"statistics": [item.value, 1], "by_order": list(item.by_order),
                                     "n_references": n_refs, "document_frequency": context,
                                     "signature": self.signature})

    def _statistics_refitted(self, outputs: list[str], references: list[list[str]],
                             logged: list[Statistics | None]) -> list[Statistics]:
        """CIDEr-D depends on the frequencies throughout: every item is scored again (cheap, no model)."""
        fields = self._require_corpus().fields
        return [Statistics(fields, (item.value, 1)) for item in self.engine.score(outputs, references)]

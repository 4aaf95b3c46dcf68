"""The COCO caption suite as an Opik metric: pycocoevalcap's BLEU-1..4, ROUGE_L and CIDEr under
its own keys, per item and for the corpus, with no Java."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from opik_metrics.core import CorpusFacts, MetricInputError, ScoreFacts, Statistics, corpus_facts
from opik_metrics.metrics.base import ScoreResult
from opik_metrics.metrics.card import MetricCard
from opik_metrics.metrics.shared_options import CAPTION_TOKENIZE
from opik_metrics.metrics.corpus_context import DocumentFrequencyMetric

if TYPE_CHECKING:
    from opik_metrics.text.coco import CocoItem, CocoSuite

CARRIER = "Bleu_4"        # the item result that holds the suite's statistics


def _bounds(key: str) -> tuple[float, float]:
    from opik_metrics.text.cider import MAX_VALUE
    return (0.0, MAX_VALUE) if key == "CIDEr" else (0.0, 1.0)


class COCOCaption(DocumentFrequencyMetric):
    """The numbers ``pycocoevalcap.eval.COCOEvalCap`` reports, under its keys ``Bleu_1``..``Bleu_4``,
    ``ROUGE_L`` and ``CIDEr`` (CIDEr-D), after its PTB tokenisation, equal to its ``Bleu(4)``,
    ``Rouge()`` and ``Cider()``. METEOR and SPICE are left out: they need Java (and SPICE a
    Stanford CoreNLP download).

    Per item: pycocoevalcap's per-image values. ``corpus_score`` returns one ScoreResult per key,
    named ``corpus_<key>`` (BLEU from summed counts, as pycocoevalcap's corpus BLEU, not a mean;
    ROUGE_L and CIDEr as means); ``coco_eval`` gives the same as a plain ``{key: value}`` dict.
    ``df_references`` fixes CIDEr's document frequencies for one-at-a-time scoring (see ``CIDEr``).
    A ``name`` other than ``coco`` prefixes every key.

    Examples:
        >>> from opik_metrics import COCOCaption
        >>> coco = COCOCaption(track=False)
        >>> sorted(coco.coco_eval(["a dog runs", "a cat sleeps"], [["a dog is running"], ["the cat sleeps"]]))
        ['Bleu_1', 'Bleu_2', 'Bleu_3', 'Bleu_4', 'CIDEr', 'ROUGE_L']
    """

    card = MetricCard(
        "coco", "COCO caption suite: Bleu_1..4, ROUGE_L, CIDEr (pycocoevalcap's keys)",
        options=(CAPTION_TOKENIZE,), every_reference="df_references")

    def __init__(self, df_references: Sequence[str | Sequence[str]] | None = None, tokenize: str = "ptb",
                 name: str = "coco", track: bool = True, project_name: str | None = None) -> None:
        # numpy: only when a metric is built
        from opik_metrics.text.coco import KEYS, CocoSuite
        self.engine: CocoSuite = CocoSuite(tokenize=tokenize)
        super().__init__(df_references, name=name, track=track, project_name=project_name)
        self._names = {key: self._scored_name(key) for key in KEYS}

    def _score_facts(self) -> list[ScoreFacts]:
        order = ("CIDEr", "Bleu_4", "Bleu_1", "Bleu_2", "Bleu_3", "ROUGE_L")
        return [ScoreFacts(self._scored_name(k), bounds=_bounds(k)) for k in order]

    def _corpus_facts(self) -> CorpusFacts:
        return self._corpus_of(CARRIER)

    def _more_corpus_facts(self) -> list[CorpusFacts]:
        """corpus Bleu_1..3 from the summed counts (scores of their own); ROUGE_L and CIDEr are means."""
        from opik_metrics.text.coco import KEYS
        return [self._corpus_of(key) for key in KEYS if key != CARRIER]

    def _corpus_of(self, key: str) -> CorpusFacts:
        from opik_metrics.text.coco import FIELDS, coco_from_statistics
        return corpus_facts(f"corpus_{self._scored_name(key)}", self._scored_name(CARRIER), FIELDS,
                            coco_from_statistics, {"key": key}, bounds=_bounds(key),
                            is_mean=not key.startswith("Bleu_"))

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        context = self._context_for(references)
        items = self.engine.score(outputs, references, self.document_frequency)
        return [self._results(item, len(refs), context) for item, refs in zip(items, references)]

    def _results(self, item: CocoItem, n_refs: int, context: dict) -> list[ScoreResult]:
        base = {"n_references": n_refs, "signature": self.signature}
        return [ScoreResult(name=self._names[key], value=value, reason=item.reasons.get(key),
                            metadata={**base, "statistics": list(item.statistics), "document_frequency": context}
                            if key == CARRIER else base)
                for key, value in item.values.items()]

    def from_statistics(self, total: Statistics) -> list[ScoreResult]:  # type: ignore[override]
        """Every corpus value from summed statistics, one ScoreResult per key (``corpus_<key>``)."""
        from opik_metrics.text.coco import FIELDS, KEYS, coco_from_statistics
        if total.fields != FIELDS:
            raise MetricInputError(f"{self.name}: statistics of fields {total.fields} are not this metric's")
        metadata = {"statistics": list(total.values), "signature": self.signature}
        one_image = self._corpus_reason(total)
        return [ScoreResult(name=f"corpus_{self._names[key]}", value=coco_from_statistics(total.values, key=key),
                            reason=one_image if key == "CIDEr" else None, metadata={**metadata, "key": key})
                for key in KEYS]

    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[Any] | None = None) -> list[ScoreResult]:
        """pycocoevalcap's corpus numbers: one ScoreResult per key, ``from_statistics(sum(statistics))``."""
        stats = self.statistics(outputs, references)
        if not stats:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        return self.from_statistics(sum(stats[1:], stats[0]))

    def coco_eval(self, outputs: Sequence[str], references: Sequence[Any]) -> dict[str, float]:
        """``{key: value}`` as ``COCOEvalCap.eval`` holds it (METEOR and SPICE left out)."""
        from opik_metrics.text.coco import KEYS
        return {key: r.value for key, r in zip(KEYS, self.corpus_score(outputs, references))}

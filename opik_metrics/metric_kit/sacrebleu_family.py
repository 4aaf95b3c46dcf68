"""What BLEU, chrF and TER share as sacrebleu's metrics: each result's signature names the item's
number of references (made once per count), a metric knows its own results by that signature, and
a corpus score's signature names the number of references when it is the same for every item."""
from __future__ import annotations

import abc
from typing import Any, Sequence, Union

from opik_metrics.core import Signature
from opik_metrics.metric_kit.base import ReferenceMetric, ScoreResult


class SacrebleuFamilyMetric(ReferenceMetric):
    """A reference metric with sacrebleu's signatures; subclasses say how one is made."""

    @abc.abstractmethod
    def _new_signature(self, nrefs: Union[int, str], sentence: bool) -> Signature:
        """sacrebleu's signature for ``nrefs`` references (``"var"`` when they vary), of a
        sentence score or of the corpus score."""

    def _item_signature(self, nrefs: Union[int, str], sentence: bool = True) -> Signature:
        """The signature a result carries (cached: every item of a batch shares it)."""
        cache = self.__dict__.setdefault("_signature_cache", {})
        key = (nrefs, sentence)
        if key not in cache:
            cache[key] = self._new_signature(nrefs, sentence)
        return cache[key]

    def _owns(self, result: ScoreResult) -> bool:
        """Made by this configuration: its signature is ours for the item's number of references."""
        meta = result.metadata or {}
        return (not result.scoring_failed and meta.get("n_references") is not None
                and meta.get("signature") == self._item_signature(meta["n_references"]))

    def corpus_score(self, outputs: Sequence[str], references: Sequence[Any] | None = None) -> ScoreResult:
        """The corpus score over aligned outputs and references, as sacrebleu's ``corpus_score``."""
        result = super().corpus_score(outputs, references)
        assert not isinstance(result, list) and references is not None
        return self._signed_for(result, references)

    def _signed_for(self, result: ScoreResult, references: Sequence[Any]) -> ScoreResult:
        """``result`` with the signature naming the number of references when it is fixed, as sacrebleu's."""
        nrefs = {len(r) if isinstance(r, (list, tuple)) else 1 for r in references}
        if len(nrefs) == 1:
            assert result.metadata is not None
            result.metadata["signature"] = self._item_signature(nrefs.pop(), sentence=False)
        return result

"""Metrics whose item scores depend on the whole set: CIDEr-D weighs n-grams by their document
frequency over the references of every image. The frequencies are given once (``df_references``)
or fitted in a first pass by whoever scores a set in chunks (``fit_corpus``); a call that has
neither fits on the references it scores, as pycocoevalcap does."""
from __future__ import annotations

import abc
import warnings
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from opik_metrics.core import MetricInputError, Signature, Statistics
from opik_metrics.core.inputs import require_references
from opik_metrics.metric_kit.base import ReferenceMetric, ScoreResult

if TYPE_CHECKING:
    from opik_metrics.text.cider import DocumentFrequency


class CorpusEngine(Protocol):
    """What ``DocumentFrequencyMetric`` needs of its engine."""

    def fit(self, references: Sequence[Sequence[str]]) -> DocumentFrequency: ...

    def signature(self, df: DocumentFrequency | None = None) -> Signature: ...


class DocumentFrequencyMetric(ReferenceMetric):
    """A reference metric with CIDEr-D's corpus context; subclasses set ``self.engine`` (with
    ``fit(references)`` and ``signature(df)``) before calling ``__init__``, which fits it."""

    engine: CorpusEngine

    def __init__(self, df_references: Any, name: str, track: bool = True, project_name: str | None = None) -> None:
        self.document_frequency = self._fit(df_references) if df_references is not None else None
        self._set_context()
        self._warned = False
        super().__init__(name=name, track=track, project_name=project_name)

    def _fit(self, references: Any) -> DocumentFrequency:
        if isinstance(references, str) or not isinstance(references, Sequence) or not references:
            raise MetricInputError("df_references: expected a non-empty list with one reference (a string or a "
                                   "list of strings) per image of the set")
        return self.engine.fit([require_references(r, "df_references", k) for k, r in enumerate(references)])

    def _set_context(self) -> None:
        df = self.document_frequency
        self.signature = self.engine.signature(df)
        self._context = ({"images": df.images, "fingerprint": df.fingerprint()} if df is not None
                         else {"fitted_on": "the references scored with it"})

    # -- the corpus context --------------------------------------------------------------------

    @property
    def corpus_pending(self) -> bool:
        """True until document frequencies are given or fitted for the whole set."""
        return self.document_frequency is None

    def fit_corpus(self, references: Sequence[Any]) -> None:
        """Fit document frequencies on every reference of the set (one string or list per image), once,
        so that scoring the set in chunks gives the numbers of one pass over it."""
        self.document_frequency = self._fit(references)
        self._set_context()
        self._restate_facts()         # the signature names the frequencies

    def _context_for(self, references: list[list[str]]) -> dict[str, Any]:
        """Metadata on the frequencies a call uses; warns once when one item alone makes them trivial."""
        if self.document_frequency is not None:
            return self._context
        if len(references) == 1 and not self._warned:
            self._warned = True
            warnings.warn(f"{self.name}: CIDEr-D of a single item without df_references is 0 by definition; pass "
                          "df_references=<every reference of the dataset>", stacklevel=4)
        return {**self._context, "images": len(references)}

    # -- the corpus score ------------------------------------------------------------------------

    def _experiment_corpus(self, test_results: Sequence[Any]) -> tuple[ScoreResult | list[ScoreResult] | None,
                                                                       list[str]]:
        """With document frequencies the logged item results are reused; without, they are fitted on
        all of the experiment's references, and only what depends on them is scored again (items
        scored one at a time had no corpus to fit on); the rest of each logged item's statistics is
        reused, so the value equals ``corpus_score`` over the same items."""
        if self.document_frequency is not None:
            return super()._experiment_corpus(test_results)
        items = self._experiment_items(test_results, range(len(test_results)))
        if not items.positions:
            return None, items.left_out
        logged = [self._logged_statistics(test_results[k]) for k in items.positions]
        stats = self._statistics_refitted(items.outputs, items.references, logged)
        return self.from_statistics(sum(stats[1:], stats[0])), items.left_out

    @abc.abstractmethod
    def _statistics_refitted(self, outputs: list[str], references: list[list[str]],
                             logged: list[Statistics | None]) -> list[Statistics]:
        """Each item's statistics under document frequencies fitted on ``references`` (every item's):
        ``logged`` holds the statistics logged for an item (None where none were), scored under other
        frequencies; keep what does not depend on them, score the rest."""

    def _corpus_reason(self, total: Statistics) -> str | None:
        if self.document_frequency is None and total.values[-1] == 1:
            return "a corpus of one item: document frequencies fitted on 1 image make CIDEr-D 0 by definition"
        return None


__all__ = ["DocumentFrequencyMetric", "ScoreResult"]

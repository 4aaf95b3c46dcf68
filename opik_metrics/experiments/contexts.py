"""The first pass over a set, before scoring it in chunks: the corpus contexts some metrics need."""
from __future__ import annotations

from typing import Any, Sequence


def fit_corpus_contexts(metrics: Sequence[Any], references: Sequence[Any]) -> None:
    """The first pass over a set: metrics whose item scores depend on the whole set (CIDEr-D's
    document frequencies) fit it on every reference, so that scoring in chunks gives the numbers
    of one pass over the set. ``references``: one entry per item (None where an item has none)."""
    given = [r for r in references if r is not None]
    for metric in metrics:
        if getattr(metric, "corpus_pending", False) and given:
            metric.fit_corpus(given)

"""CIDEr-D's corpus context: in how many images' reference sets each n-gram occurs, fitted on
the references of the whole set (pycocoevalcap fits on the set it scores). Summable, so that
workers can fit on shards and add their results."""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from opik_metrics.text.cider.ngrams import NGramCounts


@dataclass
class DocumentFrequency:
    """``counts[ngram]``: number of images whose references contain ``ngram``; ``images``: how
    many images were fitted. ``ref_len`` = log(images) is pycocoevalcap's log-corpus size."""

    counts: Counter = field(default_factory=Counter)
    images: int = 0

    @classmethod
    def fit(cls, references: Iterable[list[NGramCounts]]) -> "DocumentFrequency":
        """Fit on the n-gram counts of each image's references (one list of captions per image)."""
        counts: Counter = Counter()
        images = 0
        for refs in references:
            images += 1
            counts.update(set().union(*(order for ref in refs for order in ref)))
        return cls(counts, images)

    def __add__(self, other: "DocumentFrequency") -> "DocumentFrequency":
        if not isinstance(other, DocumentFrequency):
            return NotImplemented
        return DocumentFrequency(self.counts + other.counts, self.images + other.images)

    @property
    def ref_len(self) -> float:
        return math.log(float(self.images)) if self.images else 0.0

    def idf(self) -> dict[tuple, float]:
        """log(images) - log(max(1, df)) for every fitted n-gram (an unseen one weighs ``ref_len``)."""
        ref_len = self.ref_len
        return {g: ref_len - math.log(c) if c > 1 else ref_len for g, c in self.counts.items()}

    def fingerprint(self) -> str:
        """A short digest of the fitted counts, for signatures: equal contexts give equal digests."""
        digest = hashlib.blake2b(digest_size=6)
        digest.update(str(self.images).encode())
        for line in sorted("\x1f".join(g) + "\x1e" + str(c) for g, c in self.counts.items()):
            digest.update(line.encode("utf-8", "surrogatepass"))
            digest.update(b"\n")
        return digest.hexdigest()

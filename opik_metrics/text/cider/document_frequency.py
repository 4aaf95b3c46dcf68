"""CIDEr-D's corpus context: in how many images' reference sets each n-gram occurs, fitted on
the references of the whole set (pycocoevalcap fits on the set it scores). Summable, so that
workers can fit on shards and add their results; ``CiderD.fit`` makes one."""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class DocumentFrequency:
    """``counts[ngram]``: number of images whose references contain ``ngram``; ``images``: how
    many images were fitted. ``ref_len`` = log(images) is pycocoevalcap's log-corpus size."""

    counts: Counter = field(default_factory=Counter)
    images: int = 0

    def __add__(self, other: "DocumentFrequency") -> "DocumentFrequency":
        if not isinstance(other, DocumentFrequency):
            return NotImplemented
        return DocumentFrequency(self.counts + other.counts, self.images + other.images)

    @property
    def ref_len(self) -> float:
        return math.log(float(self.images)) if self.images else 0.0

    def fingerprint(self) -> str:
        """A short digest of the fitted counts, for signatures: equal contexts give equal digests."""
        digest = hashlib.blake2b(digest_size=6)
        digest.update(str(self.images).encode())
        for line in sorted("\x1f".join(g) + "\x1e" + str(c) for g, c in self.counts.items()):
            digest.update(line.encode("utf-8", "surrogatepass"))
            digest.update(b"\n")
        return digest.hexdigest()

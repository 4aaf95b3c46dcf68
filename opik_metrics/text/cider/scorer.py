"""CIDEr-D as pycocoevalcap's ``Cider`` computes it: tf-idf vectors of 1..4-grams (idf from the
fitted references), clipped cosine per order against each reference, a Gaussian length penalty
(sigma 6, on the bigram count, as its code does), mean over orders and references, times 10."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from opik_metrics.core import Signature
from opik_metrics.core.versions import ours as package_version
from opik_metrics.text.cider.arrays import NGramTable
from opik_metrics.text.cider.document_frequency import DocumentFrequency
from opik_metrics.text.tokenizers.captions import check_tokenize, tokenize_all

MAX_VALUE = 10.0     # cosines are at most 1 and the penalty at most 1: rounding can overshoot by 2e-15


@dataclass(frozen=True)
class CiderItem:
    """One caption's CIDEr-D, its value per n-gram order (each x10), and why when degenerate."""

    value: float
    by_order: tuple[float, ...]
    reason: str | None = None


class CiderD:
    """The CIDEr-D engine: ``fit`` document frequencies on references, ``score`` captions."""

    def __init__(self, n: int = 4, sigma: float = 6.0, tokenize: str = "ptb") -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n: expected a positive integer, got {n!r}")
        if not isinstance(sigma, (int, float)) or isinstance(sigma, bool) or not sigma > 0 or math.isinf(sigma):
            raise ValueError(f"sigma: expected a positive finite number, got {sigma!r}")
        self.n, self.sigma, self.tokenize = n, float(sigma), check_tokenize(tokenize)

    def fit(self, references: Sequence[Sequence[str]]) -> DocumentFrequency:
        """Document frequencies over the references of every image (one list per image)."""
        tokens = tokenize_all([r for refs in references for r in refs], self.tokenize)
        index = {text: k for k, text in enumerate(tokens)}
        table = NGramTable.build([tok.split() for tok in tokens.values()], self.n)
        frequency = table.document_frequency([[index[r] for r in refs] for refs in references])
        return DocumentFrequency(Counter({table.name(g): int(c) for g, c in enumerate(frequency) if c}),
                                 len(references))

    # -- scoring ---------------------------------------------------------------------------------

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              df: DocumentFrequency | None = None, tokens: dict[str, str] | None = None) -> list[CiderItem]:
        """CIDEr-D of each candidate against its references; ``df`` defaults to a fit on ``references``.
        ``tokens`` (raw text -> tokenised text, every text included) skips tokenising again."""
        if not candidates:
            return []
        if tokens is None:
            tokens = tokenize_all([*candidates, *(r for refs in references for r in refs)], self.tokenize)
        index = {text: k for k, text in enumerate(tokens)}
        table = NGramTable.build([tok.split() for tok in tokens.values()], self.n)
        ref_ids = [[index[r] for r in refs] for refs in references]
        if df is None:
            frequency, images = table.document_frequency(ref_ids), len(references)
        else:
            counts = df.counts
            frequency = np.fromiter((counts.get(table.name(g), 0) for g in range(table.grams)), dtype=np.float64,
                                    count=table.grams)
            images = df.images
        ref_len = math.log(float(images)) if images else 0.0
        idf = ref_len - np.log(np.maximum(frequency, 1.0))
        weight = table.count * idf[table.gram]                        # tf * idf, per entry
        order = table.order[table.gram]
        captions = len(index)
        squares = np.bincount(table.text * self.n + order, weight * weight, minlength=captions * self.n)
        norms = np.sqrt(squares).reshape(captions, self.n)
        length = np.maximum(table.lengths - 1, 0) if self.n > 1 else np.zeros(captions, dtype=np.int64)

        pair_item = np.repeat(np.arange(len(candidates), dtype=np.int64), [len(r) for r in ref_ids])
        pair_cand = np.fromiter((index[c] for c in candidates), dtype=np.int64, count=len(candidates))[pair_item]
        pair_ref = np.fromiter((r for refs in ref_ids for r in refs), dtype=np.int64, count=len(pair_item))
        dots = self._clipped_dots(table, weight, order, pair_cand, pair_ref)
        denominator = norms[pair_cand] * norms[pair_ref]
        dots = np.divide(dots, denominator, out=dots, where=denominator != 0)
        penalty = np.exp(-((length[pair_cand] - length[pair_ref]).astype(np.float64) ** 2) / (2 * self.sigma ** 2))
        per_order = np.stack([np.bincount(pair_item, dots[:, k] * penalty, minlength=len(candidates))
                              for k in range(self.n)], axis=1)
        n_refs = np.array([len(r) for r in ref_ids], dtype=np.float64)
        by_order = np.minimum(10.0 * per_order / n_refs[:, None], MAX_VALUE)
        values = np.minimum(per_order.sum(axis=1) / self.n / n_refs * 10.0, MAX_VALUE)
        context = _context_reason(images, fitted_here=df is None)
        return [CiderItem(float(values[i]), tuple(float(x) for x in by_order[i]),
                          context or _item_reason(table, index[c], ref_ids[i]))
                for i, c in enumerate(candidates)]

    def _clipped_dots(self, table: NGramTable, weight: np.ndarray, order: np.ndarray,
                      pair_cand: np.ndarray, pair_ref: np.ndarray) -> np.ndarray:
        """Per (pair, order): sum over shared n-grams of min(w_cand, w_ref) * w_ref (pycocoevalcap's clipping)."""
        grams = max(table.grams, 1)
        cand_entries, cand_pair = table.entries_of(pair_cand)
        ref_entries, ref_pair = table.entries_of(pair_ref)
        cand_keys = cand_pair * grams + table.gram[cand_entries]         # sorted: pairs in order, n-grams sorted
        ref_keys = ref_pair * grams + table.gram[ref_entries]
        dots = np.zeros(len(pair_cand) * self.n)
        if len(cand_keys) and len(ref_keys):
            at = np.minimum(np.searchsorted(ref_keys, cand_keys), len(ref_keys) - 1)
            shared = ref_keys[at] == cand_keys
            vh, vr = weight[cand_entries[shared]], weight[ref_entries[at[shared]]]
            slot = cand_pair[shared] * self.n + order[cand_entries[shared]]
            dots = np.bincount(slot, np.minimum(vh, vr) * vr, minlength=len(pair_cand) * self.n).astype(np.float64)
        return dots.reshape(len(pair_cand), self.n)

    def signature(self, df: DocumentFrequency | None = None) -> Signature:
        """``metric:cider-d|n:4|sigma:6|tok:ptb|df:<images>img-<digest>|opik_metrics:<version>`` (``df:own-references``
        when each call fits on the references it scores)."""
        fields = {"metric": "cider-d", "n": self.n, "sigma": f"{self.sigma:g}", "tok": self.tokenize}
        fields["df"] = "own-references" if df is None else f"{df.images}img-{df.fingerprint()}"
        fields["opik_metrics"] = package_version()
        return Signature(fields)


def _context_reason(images: int, fitted_here: bool) -> str | None:
    if images > 1:
        return None
    why = (f"document frequencies fitted on {images} image(s): every n-gram's idf is log(1/1) = 0, so "
           "CIDEr-D is 0 by definition")
    if fitted_here:
        return why + "; pass df_references (the references of the whole set) to score items one at a time"
    return why + "; df_references should hold the references of every image of the set"


def _item_reason(table: NGramTable, candidate: int, references: list[int]) -> str | None:
    if table.lengths[candidate] == 0:
        return "output has no tokens after tokenisation: CIDEr-D is 0 by definition"
    if not any(table.lengths[r] for r in references):
        return "every reference is empty after tokenisation: CIDEr-D is 0 by definition"
    return None

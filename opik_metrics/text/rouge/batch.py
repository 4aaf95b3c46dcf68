"""ROUGE of many items at once: texts become token ids, ROUGE-N and ROUGE-L are counted on arrays
(``arrays.py``), every other type, and any item with a text too long for the arrays, item by item
(``per_item.py``).

The counts are the per-item path's integers and the floats are made from them by the same
operations in the same order, so every value is identical to ``ItemScorer.values``.
"""
from __future__ import annotations

import itertools
from typing import Callable, Sequence

import numpy as np

from opik_metrics.text.rouge.arrays import LONGEST, Ragged, pair_counts
from opik_metrics.text.rouge.counts import FMeasure
from opik_metrics.text.rouge.per_item import ItemScorer, build_measure
from opik_metrics.text.rouge.types import LCS, NGRAM, RougeType
from opik_metrics.text.tokenizers.words import TEXT_SEPARATOR


CHUNK_PAIRS = 4096      # (prediction, reference) pairs tokenised and counted together: arrays of a few MB
ARRAY_KINDS = (NGRAM, LCS)


def _ratio(hits: np.ndarray, total: np.ndarray) -> np.ndarray:
    """hits / total, 0.0 where total is 0 (``counts.counts_to_values``)."""
    out = np.zeros(len(hits))
    np.divide(hits.astype(np.float64), total.astype(np.float64), out=out, where=total > 0)
    return out


def _fmeasure(precision: np.ndarray, recall: np.ndarray, alpha: float | None) -> np.ndarray:
    """``counts.FMeasure`` on arrays, operation for operation."""
    if alpha == 1:
        return precision.copy()
    if alpha == 0:
        return recall.copy()
    out = np.zeros(len(precision))
    if alpha is None:
        total = precision + recall
        np.divide(2 * precision * recall, total, out=out, where=total > 0)
    else:
        denominator = (1 - alpha) * precision + alpha * recall
        np.divide(precision * recall, denominator, out=out, where=denominator > 0)
    return out


class BatchScorer:
    """``values(predictions, references)``: P, R, F of each type for many items as one float64
    array, one row per item, in ``rouge_types`` order (identical to ``ItemScorer.values``)."""

    def __init__(self, rouge_types: Sequence[RougeType], tokenize: Callable[[str], list], fmeasure: FMeasure,
                 multi_reference: str, wlcs_weight: float) -> None:
        self._types = tuple(rouge_types)
        self._tokenize = tokenize
        self._alpha = fmeasure.alpha
        self._average = multi_reference == "average"
        self._mean = multi_reference == "mean"
        self._array_columns = [(column, t) for column, t in enumerate(self._types) if t.kind in ARRAY_KINDS]
        self._other_columns = [column for column, t in enumerate(self._types) if t.kind not in ARRAY_KINDS]

        def item_scorer(types: Sequence[RougeType]) -> ItemScorer:
            return ItemScorer([build_measure(t, wlcs_weight) for t in types], tokenize, fmeasure, multi_reference)

        self._every_type = item_scorer(self._types)
        self._other_types = item_scorer([self._types[column] for column in self._other_columns])

    def values(self, predictions: list, references: list) -> np.ndarray:
        """``references[i]``: a non-empty list of str (checked by the caller); at least one type
        asked for is ROUGE-N or ROUGE-L."""
        out = np.zeros((len(predictions), 3 * len(self._types)))
        ref_counts = np.fromiter(map(len, references), dtype=np.int64, count=len(references))
        # chunks of about CHUNK_PAIRS pairs (an item with many references counts for each), at least one item
        pairs = np.cumsum(ref_counts)
        start = 0
        while start < len(predictions):
            done = int(pairs[start - 1]) if start else 0
            stop = max(int(np.searchsorted(pairs, done + CHUNK_PAIRS, side="right")), start + 1)
            self._chunk(predictions[start:stop], references[start:stop], ref_counts[start:stop], out[start:stop])
            start = stop
        return out

    def _chunk(self, predictions: list, references: list, ref_counts: np.ndarray, out: np.ndarray) -> None:
        texts = list(predictions)
        for refs in references:
            texts += refs
        tokens = token_ids(self._tokenize, texts)
        items = len(predictions)
        # pair k: item item_of[k]'s prediction against one of its references, item after item
        item_of = np.repeat(np.arange(items), ref_counts)
        lengths = tokens.lengths
        too_long = np.zeros(items, dtype=bool)
        np.logical_or.at(too_long, item_of, lengths[items:] > LONGEST)
        too_long |= lengths[:items] > LONGEST
        pairs = np.flatnonzero(~too_long[item_of])
        if len(pairs):
            self._array_values(tokens, item_of[pairs], items + pairs, ref_counts, too_long, out)
        for k in np.flatnonzero(too_long).tolist():   # every type of these items, item by item
            out[k] = self._every_type.values(predictions[k], references[k])
        if self._other_columns:
            columns = [3 * c + part for c in self._other_columns for part in range(3)]
            for k in np.flatnonzero(~too_long).tolist():
                out[k, columns] = self._other_types.values(predictions[k], references[k])

    def _array_values(self, tokens: Ragged, item_of: np.ndarray, reference_texts: np.ndarray,
                      ref_counts: np.ndarray, too_long: np.ndarray, out: np.ndarray) -> None:
        """Fill the array types' columns of every item that is not too long."""
        prediction = tokens.take(item_of)
        reference = tokens.take(reference_texts)
        items = np.flatnonzero(~too_long)
        multi = ref_counts[items] > 1
        # pairs of one item are consecutive: its first pair's index in the kept pairs
        first = np.zeros(len(items), dtype=np.int64)
        np.cumsum(ref_counts[items][:-1], out=first[1:])
        orders = tuple(sorted({t.n for _, t in self._array_columns if t.kind == NGRAM}))
        counts = pair_counts(prediction, reference, orders, any(t.kind == LCS for _, t in self._array_columns))
        for column, rouge_type in self._array_columns:
            if rouge_type.kind == LCS:
                hits, predicted, referenced = counts["lcs"], prediction.lengths, reference.lengths
            else:
                n = rouge_type.n
                hits = counts[n]
                predicted = np.maximum(prediction.lengths - (n - 1), 0)
                referenced = np.maximum(reference.lengths - (n - 1), 0)
            if not multi.any():
                rows = self._values(hits, predicted, referenced)
            elif self._average:   # counts pooled over the references
                rows = self._values(np.add.reduceat(hits, first), np.add.reduceat(predicted, first),
                                    np.add.reduceat(referenced, first))
            elif self._mean:      # each reference's P, R, F, averaged
                rows = _means(self._values(hits, predicted, referenced), first, ref_counts[items])
            else:                                        # the reference with the highest F, the first on ties
                every = self._values(hits, predicted, referenced)
                best = np.maximum.reduceat(every[:, 2], first)
                owner = np.repeat(np.arange(len(items)), ref_counts[items])
                candidates = np.flatnonzero(every[:, 2] == best[owner])
                _, firsts = np.unique(owner[candidates], return_index=True)
                rows = every[candidates[firsts]]
            out[items, 3 * column:3 * column + 3] = rows

    def _values(self, hits: np.ndarray, predicted: np.ndarray, referenced: np.ndarray) -> np.ndarray:
        precision, recall = _ratio(hits, predicted), _ratio(hits, referenced)
        return np.stack([precision, recall, _fmeasure(precision, recall, self._alpha)], axis=1)


def _means(every: np.ndarray, first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per item, the mean of its consecutive rows of ``every`` (rows ``first[i]`` on, ``counts[i]``
    of them): added one reference after the other, then divided, as ``per_item.mean_values``."""
    total = every[first].copy()
    for k in range(1, int(counts.max())):
        more = np.flatnonzero(counts > k)
        total[more] += every[first[more] + k]
    return total / counts[:, None]


# -- texts as token ids -----------------------------------------------------------------------------
# Many texts as integer token ids for the array engine: equal tokens get equal ids within one call.
#
# rouge-score's tokeniser takes a fast path: all texts are lowercased and split in one pass
# (``DefaultTokenizer.ascii_of_many``); without stemmer or stopwords the words never become Python
# strings (a word of up to 8 bytes is its own id, a longer one is numbered through a dict),
# otherwise they go through the tokenizer's memo word by word in C loops. Any other tokenizer
# tokenises text by text, and its tokens are numbered the same way. Ids are exact: equal ids, equal
# tokens, never a hash.


_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _buffer_ids(buffer: bytes) -> np.ndarray:
    """Exact int64 ids of the space-separated words of ``buffer`` (bytes below 0x80): a word of at
    most 8 bytes is its bytes read as one little-endian integer (the separator is 0, no other word
    is); a longer word (a few in a hundred) gets a negative id, numbered through a dict."""
    size = len(buffer)
    data = np.frombuffer(buffer + bytes(16), dtype=np.uint8)
    edges = np.diff((data[:size] != 32).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    # every 8 bytes from every offset, as one integer each (a strided view: nothing is copied)
    eights = np.ndarray((size + 9,), dtype="<u8", buffer=data, strides=(1,))
    first = eights[starts] & _LOW_BYTES[np.minimum(lengths, 8)]
    ids = first.view(np.int64).copy()
    long = np.flatnonzero(lengths > 8)
    if long.size:                             # few words: numbered through a dict of their bytes
        at = starts[long]
        words = map(buffer.__getitem__, map(slice, at.tolist(), (at + lengths[long]).tolist()))
        # negative: apart from every short word's bytes
        ids[long] = -1 - np.fromiter(map(_Numbers().__getitem__, words), dtype=np.int64, count=long.size)
    return ids


class _Numbers(dict):
    """Token -> dense id (0, 1, 2, ...), in order of first sight."""

    def __missing__(self, token: str) -> int:
        number = self[token] = len(self)
        return number


class _WordIds(dict):
    """Word -> id: 0 for the text separator, -1 for a word the memo drops, else its token's id
    (words with one stem share it)."""

    def __init__(self, memo) -> None:
        super().__init__()
        self._memo = memo
        self._tokens: dict = {}

    def __missing__(self, word: str) -> int:
        if word == TEXT_SEPARATOR:
            number = 0
        else:
            token = self._memo[word]
            number = self._tokens.setdefault(token, len(self._tokens) + 1) if token else -1
        self[word] = number
        return number


def token_ids(tokenize: Callable[[str], list], texts: list) -> Ragged:
    """Each text's token ids (int64, any values: ``arrays`` renumbers them pair by pair)."""
    many = getattr(tokenize, "ascii_of_many", None)
    joined = many(texts) if many is not None and texts else None
    if joined is None:
        token_lists = list(map(tokenize, texts))
        numbers = _Numbers()
        ids = np.fromiter(map(numbers.__getitem__, itertools.chain.from_iterable(token_lists)), dtype=np.int64)
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(texts))
        return Ragged.of(ids, lengths)
    memo = getattr(tokenize, "word_memo", None)
    if memo is None:
        ids = _buffer_ids(joined)
    else:
        words = joined.decode("ascii").split()
        ids = np.fromiter(map(_WordIds(memo).__getitem__, words), dtype=np.int64, count=len(words))
    separators = ids == 0
    text_of = np.cumsum(separators)
    kept = ids != 0
    if memo is not None:
        kept &= ids > 0                      # -1: a word the memo drops
    lengths = np.bincount(text_of[kept], minlength=len(texts)).astype(np.int64)
    return Ragged.of(ids[kept], lengths)

"""chrF (Popović, 2015) and chrF++ (Popović, 2017), sentence and corpus level, with sacrebleu
2.6's numbers on a 0..1 scale (its scores divided by 100).

Text preparation is sacrebleu's (lowercasing, whitespace removal, its punctuation splitting for
word n-grams); the n-gram matching is re-implemented for speed in ``chrf.ngrams`` and the scores
follow sacrebleu's float operations step by step in ``chrf.formula``.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from opik_metrics.core import Signature, corpus_formula
from opik_metrics.core.statistics import whole_or_fraction
from opik_metrics.core.statistics_checks import above, first_violation, negative
from opik_metrics.core.versions import ours as package_version, package_version as version_of
from opik_metrics.text.chrf.formula import f_score, f_scores
from opik_metrics.text.chrf.ngrams import match_counts, small_match_counts
from opik_metrics.core.inputs import check_bool, check_text, corpus_lists, reference_list

References = Union[str, Sequence[Optional[str]]]

#: Below this many characters (all texts of a call together) n-grams are counted in plain Python:
#: numpy's fixed cost per call is then more than the counting.
SMALL_BATCH = 400

# sacrebleu's CHRF._PUNCTS (string.punctuation), for chrF++'s word splitting.
_PUNCTS = frozenset('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')


@dataclass(frozen=True)
class CHRFResult:
    """A chrF score in [0, 1] (sacrebleu's / 100) and the statistics it was computed from:
    per order (characters 1..char_order, then words 1..word_order) [hypothesis n-grams,
    reference n-grams, matches], of the best reference (the one sacrebleu picks)."""

    score: float
    statistics: tuple[int, ...]
    reference: int = 0          # index of the reference the statistics are of (corpus: 0; "mean": -1)
    #: ``multi_reference="mean"``: each reference's own chrF (the score is their mean, the statistics
    #: the mean of each reference's statistics); empty for the best-reference rule.
    per_reference: tuple[float, ...] = ()


#: Rules for several references: sacrebleu's (the reference of the highest chrF), or the mean of
#: the single-reference scores and statistics.
MULTI_REFERENCE_MODES = ("best", "mean")


class CHRFScorer:
    """Configured chrF / chrF++ (``word_order=2``): statistics, sentence and corpus scores, signature.

    ``multi_reference``: ``"best"`` (sacrebleu's: the statistics of the first reference with the
    highest chrF) or ``"mean"`` (an item's score is the mean of its single-reference chrFs, its
    statistics the mean of its single-reference statistics, fractions included)."""

    char_order: int
    word_order: int
    order: int
    beta: float
    lowercase: bool
    whitespace: bool
    eps_smoothing: bool
    multi_reference: str

    def __init__(self, *, char_order: int = 6, word_order: int = 0, beta: float = 2, lowercase: bool = False,
                 whitespace: bool = False, eps_smoothing: bool = False, multi_reference: str = "best") -> None:
        for option, value, least in (("char_order", char_order, 1), ("word_order", word_order, 0)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ValueError(f"{option} must be an int >= {least}, got {value!r}")
            if value < least:
                raise ValueError(f"{option} must be an int >= {least}, got {value!r}")
        if isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not math.isfinite(beta) or beta < 0:
            raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
        self.char_order = int(char_order)
        self.word_order = int(word_order)
        self.order = self.char_order + self.word_order
        self.beta = beta
        self.lowercase = check_bool(lowercase, "lowercase")
        self.whitespace = check_bool(whitespace, "whitespace")
        self.eps_smoothing = check_bool(eps_smoothing, "eps_smoothing")
        if multi_reference not in MULTI_REFERENCE_MODES:
            raise ValueError(f"multi_reference: expected one of {', '.join(MULTI_REFERENCE_MODES)}, "
                             f"got {multi_reference!r}")
        self.multi_reference = multi_reference

    # -- text preparation (sacrebleu's) ----------------------------------------------------------

    def _chars(self, text: str) -> str:
        if self.lowercase:
            text = text.lower()
        return text if self.whitespace else "".join(text.split())

    def _words(self, text: str) -> list[str]:
        """sacrebleu's ``_remove_punctuation``: one punctuation mark split off a word's end, else
        its start (so '(hi)' gives '(hi' and ')', sacrebleu issue #124)."""
        if self.lowercase:
            text = text.lower()
        words: list[str] = []
        for w in text.split():
            if len(w) == 1:
                words.append(w)
            elif w[-1] in _PUNCTS:
                words.append(w[:-1])
                words.append(w[-1])
            elif w[0] in _PUNCTS:
                words.append(w[0])
                words.append(w[1:])
            else:
                words.append(w)
        return words

    # -- statistics ----------------------------------------------------------------------------

    def row_statistics(self, hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Statistics of hypothesis i against reference i (rows x order x 3), sacrebleu's rule
        applied: an order the reference has no n-gram of counts no hypothesis n-gram either."""
        stats = self._rows(hypotheses, references)
        if isinstance(stats, list):
            stats = np.array(stats, dtype=np.int64).reshape(len(stats), self.order, 3)
        return stats

    def _rows(self, hypotheses: Sequence[str], references: Sequence[str]) -> Union[np.ndarray, list[list[int]]]:
        """``row_statistics``: a numpy array, or for a small call flat lists (3 * order numbers a row)."""
        chars_h = [self._chars(h) for h in hypotheses]
        chars_r = [self._chars(r) for r in references]
        if sum(map(len, chars_h)) + sum(map(len, chars_r)) < SMALL_BATCH:
            rows = small_match_counts(chars_h, chars_r, self.char_order)
            if self.word_order:
                words = small_match_counts([self._words(h) for h in hypotheses],
                                           [self._words(r) for r in references], self.word_order)
                for row, more in zip(rows, words):
                    row.extend(more)
            flat = []
            for row in rows:
                values: list[int] = []
                for count_h, count_r, matched in row:
                    values += (count_h if count_r else 0, count_r, matched)
                flat.append(values)
            return flat
        stats = match_counts(*_code_points(chars_h), *_code_points(chars_r), self.char_order)
        if self.word_order:
            vocabulary: dict[str, int] = {}
            words_h = _word_ids([self._words(h) for h in hypotheses], vocabulary)
            words_r = _word_ids([self._words(r) for r in references], vocabulary)
            stats = np.concatenate((stats, match_counts(*words_h, *words_r, self.word_order)), axis=1)
        stats[:, :, 0] = np.where(stats[:, :, 1] > 0, stats[:, :, 0], 0)
        return stats

    def batch(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[CHRFResult]:
        """Sentence chrF of many items at once; ``references[i]`` is the list of references of
        item i. With several, the statistics are those of the first reference with the highest
        chrF (sacrebleu's rule), or under ``multi_reference="mean"`` the mean of every reference's
        statistics, the score the mean of every reference's chrF."""
        hyps: list[str] = []
        refs: list[str] = []
        for hyp, item_refs in zip(hypotheses, references):
            for ref in item_refs:
                hyps.append(hyp)
                refs.append(ref)
        stats = self._rows(hyps, refs)
        order, beta, eps = self.order, self.beta, self.eps_smoothing
        if isinstance(stats, list):
            flat = stats
            percent = [f_score(row, order, beta, eps, percent=True) for row in flat]
            scores = [f_score(row, order, beta, eps) for row in flat]
        else:
            percent = f_scores(stats, beta, eps, percent=True).tolist()
            scores = f_scores(stats, beta, eps).tolist()
            flat = stats.reshape(len(refs), -1).tolist()
        results = []
        row = 0
        mean = self.multi_reference == "mean"
        for item_refs in references:
            if mean:
                n = len(item_refs)
                each = tuple(scores[row:row + n])
                statistics = tuple(whole_or_fraction(sum(column) / n) for column in zip(*flat[row:row + n]))
                results.append(CHRFResult(sum(each) / n, statistics, -1, each))
                row += n
                continue
            best = row
            for other in range(row + 1, row + len(item_refs)):
                if percent[other] > percent[best]:       # strictly better: ties keep the first
                    best = other
            results.append(CHRFResult(scores[best], tuple(flat[best]), best - row))
            row += len(item_refs)
        return results

    def stats(self, hypothesis: str, references: References) -> tuple[int, ...]:
        """Summable statistics of one hypothesis (those of its best reference)."""
        return self.sentence_score(hypothesis, references).statistics

    def sentence_score(self, hypothesis: str, references: References) -> CHRFResult:
        """Sentence chrF of one hypothesis against one or several references."""
        check_text(hypothesis, "hypothesis")
        return self.batch([hypothesis], [reference_list(references, "chrF")])[0]

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[References]) -> CHRFResult:
        """Corpus chrF: the best-reference statistics of every item summed, then one F (not a
        mean of sentence scores). ``references[i]`` holds the reference(s) of ``hypotheses[i]``."""
        hyps, refs = corpus_lists(hypotheses, references, "chrF")
        rows = [r.statistics for r in self.batch(hyps, refs)]
        if self.multi_reference == "mean":         # fractions: summed in order, as the statistics are
            return self.compute([sum(column) for column in zip(*rows)])
        total = np.array(rows, dtype=np.int64).sum(axis=0).tolist()
        return self.compute(total)

    def compute(self, statistics: Sequence[float]) -> CHRFResult:
        """chrF of (summed) statistics."""
        if len(statistics) != 3 * self.order:
            raise ValueError(f"chrF statistics of {self.order} orders have {3 * self.order} numbers, "
                             f"got {len(statistics)}")
        values = tuple(whole_or_fraction(v) for v in statistics)
        return CHRFResult(f_score(values, self.order, self.beta, self.eps_smoothing), values)

    def fields(self) -> tuple[str, ...]:
        return statistics_fields(self.char_order, self.word_order)

    def signature(self, nrefs: Union[int, str, None] = 1) -> Signature:
        """sacrebleu's chrF signature (``nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0``;
        ``nrefs`` left out when None), then ``|beta:B`` when beta is not 2 (sacrebleu names it only
        in the score's name, chrF<beta>), ``|opik_metrics:<version>`` and ``|multi:mean`` under the
        mean over references."""
        signature = chrf_signature(nrefs, self.lowercase, self.eps_smoothing, self.char_order, self.word_order,
                                   self.whitespace, self.beta)
        return signature if self.multi_reference == "best" else signature.extended(multi=self.multi_reference)

    @property
    def sacrebleu_name(self) -> str:
        """sacrebleu's name of the score: chrF2, chrF2++ ..."""
        return f"chrF{self.beta}" + "+" * self.word_order

    def __repr__(self) -> str:
        return (f"CHRFScorer(char_order={self.char_order}, word_order={self.word_order}, beta={self.beta!r}, "
                f"lowercase={self.lowercase}, whitespace={self.whitespace}, eps_smoothing={self.eps_smoothing}, "
                f"multi_reference={self.multi_reference!r})")


def chrf_signature(nrefs, lowercase: bool, eps_smoothing: bool, char_order: int, word_order: int,
                   whitespace: bool, beta: float) -> Signature:
    """The signature fields in sacrebleu's order, version last, then ours."""
    fields: dict = {} if nrefs is None else {"nrefs": str(nrefs)}
    fields.update({"case": "lc" if lowercase else "mixed", "eff": "no" if eps_smoothing else "yes",
                   "nc": str(char_order), "nw": str(word_order), "space": "yes" if whitespace else "no",
                   "version": version_of("sacrebleu")})
    if beta != 2:
        fields["beta"] = f"{beta:g}"
    fields["opik_metrics"] = package_version()
    return Signature(fields)


def statistics_fields(char_order: int = 6, word_order: int = 0) -> tuple[str, ...]:
    """Names of chrF's summable statistics, in sacrebleu's order."""
    names = []
    for kind, count in (("char", char_order), ("word", word_order)):
        for n in range(1, count + 1):
            names += [f"{kind}{n}_hyp", f"{kind}{n}_ref", f"{kind}{n}_match"]
    return tuple(names)


def _check_chrf(rows: Any, *, char_order: int = 6, word_order: int = 0, **_: Any) -> Optional[tuple[int, str]]:
    """Every chrF statistic is a count; an order's matches never exceed its hypothesis or reference n-grams."""
    names = statistics_fields(char_order, word_order)
    hyp, ref, match = range(0, len(names), 3), range(1, len(names), 3), range(2, len(names), 3)
    return first_violation(negative(rows, list(range(len(names))), names),
                           above(rows, list(match), list(hyp), "more matching n-grams than hypothesis n-grams"),
                           above(rows, list(match), list(ref), "more matching n-grams than reference n-grams"))


@corpus_formula(check=_check_chrf)
def chrf_from_statistics(values: Sequence[float], *, char_order: int = 6, word_order: int = 0, beta: float = 2,
                         eps_smoothing: bool = False) -> float:
    """Corpus chrF in [0, 1] of summed statistics (``statistics_fields`` order), as sacrebleu's
    ``CHRF._compute_f_score`` / 100."""
    order = char_order + word_order
    if len(values) != 3 * order:
        raise ValueError(f"chrF statistics of {order} orders have {3 * order} numbers, got {len(values)}")
    return f_score([whole_or_fraction(v) for v in values], order, beta, bool(eps_smoothing))


def _code_points(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's code points, concatenated, and the texts' lengths."""
    joined = "".join(texts)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64) + 1
    return codes, np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))


def _word_ids(texts: list[list[str]], vocabulary: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Every text's word ids (shared ``vocabulary``, ids from 1), concatenated, and word counts."""
    ids = []
    for words in texts:
        for word in words:
            code = vocabulary.get(word)
            if code is None:
                code = vocabulary[word] = len(vocabulary) + 1
            ids.append(code)
    return np.array(ids, dtype=np.int64), np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))



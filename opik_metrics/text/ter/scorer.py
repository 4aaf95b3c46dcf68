"""TER, translation edit rate (Snover et al., 2006), sentence and corpus level, with sacrebleu 2.6's
numbers on a 0..1 scale (its scores divided by 100; TER has no upper bound).

Tokenization is sacrebleu's own tercom tokenizer (reused: its regexes are cheap next to the edit
search); the edit search is re-implemented for speed in ``ter.edits``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

from opik_metrics.core import Signature, corpus_formula
from opik_metrics.core.statistics_checks import first_violation, negative
from opik_metrics.core.versions import ours as package_version, package_version as version_of
from opik_metrics.core.inputs import check_bool, check_text, corpus_lists, reference_list
from opik_metrics.text.ter.edits import translation_edit_rate

References = Union[str, Sequence[Optional[str]]]

#: Names of TER's summable statistics: the fewest edits over the references, their mean length.
STATISTICS_FIELDS = ("num_edits", "ref_length")

# sacrebleu caches its tokenizer's __call__ (lru_cache on the method, shared by every instance);
# the plain function is used here, so no cache outlives a call.
_TOKENIZE = TercomTokenizer.__call__.__wrapped__


@dataclass(frozen=True)
class TERResult:
    """TER = num_edits / ref_length (sacrebleu's score / 100), with sacrebleu's rule for an empty
    reference: 1 when there are edits, else 0."""

    score: float
    num_edits: int
    ref_length: float
    reference: int = 0          # index of the reference with the fewest edits (corpus: 0)
    hyp_length: int = 0         # words of the hypothesis (corpus: of every hypothesis)

    @property
    def statistics(self) -> tuple[int, float]:
        return (self.num_edits, self.ref_length)


class TERScorer:
    """Configured TER: tokenization, statistics, sentence and corpus scores, signature."""

    def __init__(self, *, normalized: bool = False, no_punct: bool = False, asian_support: bool = False,
                 case_sensitive: bool = False) -> None:
        self.normalized = check_bool(normalized, "normalized")
        self.no_punct = check_bool(no_punct, "no_punct")
        self.asian_support = check_bool(asian_support, "asian_support")
        self.case_sensitive = check_bool(case_sensitive, "case_sensitive")
        self._tokenizer = TercomTokenizer(normalized=self.normalized, no_punct=self.no_punct,
                                          asian_support=self.asian_support, case_sensitive=self.case_sensitive)
        self._plain = not (self.normalized or self.no_punct)

    def words(self, text: str) -> list[str]:
        """The words TER compares: sacrebleu's ``tokenizer(text.rstrip()).split()``."""
        if self._plain:     # the tokenizer only lowercases (unless case-sensitive) and splits
            return (text if self.case_sensitive else text.lower()).split()
        return _TOKENIZE(self._tokenizer, text.rstrip()).split()

    def _item(self, hyp_words: list[str], refs_words: list[list[str]]) -> tuple[int, float, int]:
        """sacrebleu's segment statistics: fewest edits (first reference on ties), mean reference length."""
        best_edits = int(1e16)
        best = 0
        ref_lengths = 0
        for j, ref_words in enumerate(refs_words):
            edits, ref_len = translation_edit_rate(hyp_words, ref_words)
            ref_lengths += ref_len
            if edits < best_edits:
                best_edits = edits
                best = j
        return best_edits, ref_lengths / len(refs_words), best

    def batch(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> list[TERResult]:
        """Sentence TER of many items; ``references[i]`` is the list of references of item i."""
        words = self.words
        results = []
        for hyp, refs in zip(hypotheses, references):
            hyp_words = words(hyp)
            edits, ref_length, best = self._item(hyp_words, [words(r) for r in refs])
            results.append(TERResult(ter_from_statistics((edits, ref_length)), edits, ref_length, best,
                                     len(hyp_words)))
        return results

    def stats(self, hypothesis: str, references: References) -> tuple[int, float]:
        """Summable statistics of one hypothesis: (fewest edits, mean reference length)."""
        return self.sentence_score(hypothesis, references).statistics

    def sentence_score(self, hypothesis: str, references: References) -> TERResult:
        """Sentence TER of one hypothesis against one or several references."""
        check_text(hypothesis, "hypothesis")
        return self.batch([hypothesis], [reference_list(references, "TER")])[0]

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[References]) -> TERResult:
        """Corpus TER: edits summed over items over reference lengths summed (not a mean of sentence
        TERs). ``references[i]`` holds the reference(s) of ``hypotheses[i]``."""
        hyps, refs = corpus_lists(hypotheses, references, "TER")
        edits, hyp_length = 0, 0
        length: float = 0
        for result in self.batch(hyps, refs):       # in item order, as sacrebleu's sum_of_lists
            edits += result.num_edits
            length += result.ref_length
            hyp_length += result.hyp_length
        total = self.compute((edits, length))
        return TERResult(total.score, total.num_edits, total.ref_length, 0, hyp_length)

    def compute(self, statistics: Sequence[float]) -> TERResult:
        """TER of (summed) statistics ``(num_edits, ref_length)``."""
        if len(statistics) != 2:
            raise ValueError(f"TER statistics are (num_edits, ref_length), got {len(statistics)} numbers")
        edits, length = statistics
        return TERResult(ter_from_statistics(statistics), int(edits), length)

    def signature(self, nrefs: Union[int, str, None] = 1) -> Signature:
        """sacrebleu's TER signature (``nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no|
        version:2.6.0``; ``nrefs`` left out when None), then ``|opik_metrics:<version>``."""
        fields: dict = {} if nrefs is None else {"nrefs": str(nrefs)}
        fields.update({"case": "mixed" if self.case_sensitive else "lc", "tok": self._tokenizer.signature(),
                       "norm": "yes" if self.normalized else "no", "punct": "no" if self.no_punct else "yes",
                       "asian": "yes" if self.asian_support else "no", "version": version_of("sacrebleu"),
                       "opik_metrics": package_version()})
        return Signature(fields)

    def __repr__(self) -> str:
        return (f"TERScorer(normalized={self.normalized}, no_punct={self.no_punct}, "
                f"asian_support={self.asian_support}, case_sensitive={self.case_sensitive})")


def _check_ter(rows: Any) -> Optional[tuple[int, str]]:
    """TER's edits and reference length are counts."""
    return first_violation(negative(rows, [0, 1], STATISTICS_FIELDS))


@corpus_formula(check=_check_ter)
def ter_from_statistics(values: Sequence[float]) -> float:
    """TER of summed statistics ``(num_edits, ref_length)``: edits / length; with no reference
    word, 1 when there are edits and 0 when not (sacrebleu's rule)."""
    if len(values) != 2:
        raise ValueError(f"TER statistics are (num_edits, ref_length), got {len(values)} numbers")
    edits, length = values
    if length > 0:
        return edits / length
    return 1.0 if edits > 0 else 0.0

"""ROUGE on rouge-score-rs, rouge-score's exact values computed in Rust on every core, for the
options it computes: rouge1..9, rougeL and rougeLsum (newline-split), stemmer on or off, the
default tokenizer, F1, and the best reference (any mode when each item has one reference).

Why: it is the package made for exactly this job, 3-10x our arrays on one core and without the
GIL (docs/speed.md); every other option stays on ``per_item``/``batch``, and so does everything
when it is not installed. Its values are checked bit for bit against ours and rouge-score's
(tests/text/test_rouge_compiled.py).
"""
from __future__ import annotations

import re
from itertools import chain
from typing import Any, Sequence

from opik_metrics.core.versions import Version, package_version

_COMPILED_TYPES = re.compile(r"rouge[1-9]|rougeL|rougeLsum")
DISTRIBUTION = "rouge-score-rs"


def compiled_version() -> Version | None:
    """rouge-score-rs's version when it is installed, else None."""
    version = package_version(DISTRIBUTION)
    return None if str(version) == "n/a" else version


class CompiledRouge:
    """``flat_values(predictions, references)``: P, R, F of each type for many items, item after
    item, from rouge-score-rs's ``score_batch`` (each (prediction, reference) pair once; with
    several references, the first with the highest F, as ``per_item._best``)."""

    def __init__(self, rouge_types: Sequence[str], use_stemmer: bool, multi_reference: str) -> None:
        import rouge_score_rs

        self.rouge_types = tuple(rouge_types)
        self._one_reference_only = multi_reference != "best"   # other modes: only items with one reference
        self._scorer: Any = rouge_score_rs.RougeScorer(list(self.rouge_types), use_stemmer=use_stemmer)

    @classmethod
    def of(cls, rouge_types: Sequence[str], *, use_stemmer: bool, remove_stopwords: bool, tokenizer: Any,
           alpha: float | None, multi_reference: str, rouge155: bool) -> "CompiledRouge | None":
        """The compiled scorer when rouge-score-rs is installed and computes these options, else None."""
        if rouge155 or remove_stopwords or alpha is not None or not (isinstance(tokenizer, str)
                                                                      and tokenizer == "default"):
            return None
        if not all(_COMPILED_TYPES.fullmatch(name) for name in rouge_types) or compiled_version() is None:
            return None
        try:
            return cls(rouge_types, use_stemmer, multi_reference)
        except ImportError:             # its metadata without a module that loads (a broken install): ours
            return None

    def handles(self, references: Sequence[Sequence[str]]) -> bool:
        """Whether these items' references are ones it scores: any, for the best reference; one
        each, for the modes that combine several."""
        return not self._one_reference_only or all(len(refs) == 1 for refs in references)

    def flat_values(self, predictions: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
        targets = [ref for refs in references for ref in refs]
        outputs = [p for p, refs in zip(predictions, references) for _ in refs]
        scored = self._scorer.score_batch(targets, outputs)
        if len(scored) == len(references):          # one reference each: its P, R, F (a Score is a tuple)
            types = self.rouge_types
            return list(chain.from_iterable(chain.from_iterable(map(item.__getitem__, types)) for item in scored))
        values: list[float] = []
        at = 0
        for refs in references:
            for name in self.rouge_types:
                best = scored[at][name]
                for k in range(1, len(refs)):
                    candidate = scored[at + k][name]
                    if candidate.fmeasure > best.fmeasure:
                        best = candidate
                values += (best.precision, best.recall, best.fmeasure)
            at += len(refs)
        return values

"""ROUGE type names ("rouge2", "rougeLsum", "rougeSU4", ...) parsed into what each one measures."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

NGRAM, LCS, SUMMARY_LCS, WEIGHTED_LCS, SKIP_BIGRAM = "ngram", "lcs", "summary_lcs", "wlcs", "skip"

VALID_FORMS = (
    "rouge1..rouge9 (n-grams), rougeL (LCS), rougeLsum (summary-level LCS over '\\n' lines), "
    "rougeW (weighted LCS), rougeS / rougeSU (skip-bigrams, unlimited gap), "
    "rougeS<d> / rougeSU<d> (at most d words between the pair, d >= 0)"
)

_NGRAM_NAME = re.compile(r"rouge([1-9])\Z")
_SKIP_NAME = re.compile(r"rouge(SU|S)(0|[1-9][0-9]*)?\Z")


@dataclass(frozen=True)
class RougeType:
    """One ROUGE variant: ``kind`` plus its parameter (n-gram order, or skip limit / unigram flag)."""

    name: str
    kind: str
    n: int = 0
    max_skip: Optional[int] = None  # skip-bigrams: words allowed between the pair; None = any
    with_unigrams: bool = False  # ROUGE-SU: unigrams pooled with the skip-bigrams


def parse_rouge_type(name: str) -> RougeType:
    """Parse a ROUGE type name; ValueError naming it and listing the valid forms if it is unknown."""
    if not isinstance(name, str):
        raise ValueError(f"unknown ROUGE type {name!r}; valid forms: {VALID_FORMS}")
    if name == "rougeL":
        return RougeType(name, LCS)
    if name == "rougeLsum":
        return RougeType(name, SUMMARY_LCS)
    if name == "rougeW":
        return RougeType(name, WEIGHTED_LCS)
    match = _NGRAM_NAME.match(name)
    if match:
        return RougeType(name, NGRAM, n=int(match.group(1)))
    match = _SKIP_NAME.match(name)
    if match:
        limit = match.group(2)
        return RougeType(name, SKIP_BIGRAM, n=2, max_skip=None if limit is None else int(limit),
                         with_unigrams=match.group(1) == "SU")
    raise ValueError(f"unknown ROUGE type {name!r}; valid forms: {VALID_FORMS}")

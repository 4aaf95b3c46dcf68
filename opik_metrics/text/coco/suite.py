"""The COCO caption suite as pycocoevalcap's ``COCOEvalCap`` reports it (BLEU-1..4, METEOR,
ROUGE_L, CIDEr; SPICE needs Java and a Stanford CoreNLP download, and is left out): one
tokenisation, then each scorer; per item and as corpus values from summed statistics."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from opik_metrics.core import Signature, corpus_formula, mean_formula
from opik_metrics.core.statistics_checks import first_violation, negative
from opik_metrics.core.versions import ours as package_version
from opik_metrics.text.cider import CiderD, DocumentFrequency
from opik_metrics.text.tokenizers.captions import tokenize_all
from opik_metrics.text.coco.bleu import (bleu_fields, bleu_statistics, bleu_values, check_coco_bleu,
                                        coco_bleu_from_statistics)
from opik_metrics.text.coco.rouge_l import coco_rouge_l
from opik_metrics.text.meteor import MeteorScorer, MeteorSearchLimit, MeteorSegment
from opik_metrics.text.meteor.corpus import FIELDS as METEOR_FIELDS, flat_statistics, meteor_from_statistics

KEYS = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr")   # pycocoevalcap's own keys
FIELDS = (*bleu_fields(4), *(f"METEOR_{f}" for f in METEOR_FIELDS), "ROUGE_L", "CIDEr", "items")
_METEOR_AT = FIELDS.index(f"METEOR_{METEOR_FIELDS[0]}")


@dataclass(frozen=True)
class CocoItem:
    """One caption's values under pycocoevalcap's keys, its summable statistics, and per key why
    a value is a defined one (an empty output, CIDEr-D without a corpus). ``failure`` says why the
    item could not be scored (its METEOR alignment is over the pack's bound on one segment's work):
    then its values and statistics are not scores and stand for nothing."""

    values: dict[str, float]
    statistics: tuple[float, ...]
    reasons: dict[str, str]
    failure: str | None = None


def _check_coco(rows: Any, **_: Any) -> Optional[tuple[int, str]]:
    """The BLEU part as pycocoevalcap's BLEU, METEOR's counts, and the item count."""
    meteor = list(range(_METEOR_AT, _METEOR_AT + len(METEOR_FIELDS)))
    return check_coco_bleu(rows) or first_violation(negative(rows, [*meteor, len(FIELDS) - 1],
                                                             [*METEOR_FIELDS, "items"]))


@corpus_formula(check=_check_coco)
def coco_from_statistics(values: Sequence[float], *, key: str = "Bleu_4") -> float:
    """The corpus value under ``key`` from summed ``FIELDS`` statistics: BLEU from the summed
    counts (pycocoevalcap's corpus BLEU), METEOR from its summed statistics (the jar's final
    score), ROUGE_L and CIDEr as means over items."""
    if key.startswith("Bleu_"):
        return coco_bleu_from_statistics(values, order=int(key[5:]))
    if key == "METEOR":
        return meteor_from_statistics(values[_METEOR_AT:_METEOR_AT + len(METEOR_FIELDS)])
    return mean_formula(values, field=FIELDS.index(key))


class CocoSuite:
    """Tokenise once (pycocoevalcap's PTB rules by default), then BLEU-1..4, METEOR (Meteor 1.5 on
    the tokenised captions, as pycocoevalcap sends them to the jar), ROUGE_L and CIDEr-D.

    ``meteor``: True reads Meteor's data from pycocoevalcap's installed copy, a path from there
    (see ``MeteorScorer``); False leaves METEOR out (its tables cost seconds and 600 MB)."""

    def __init__(self, tokenize: str = "ptb", meteor: Any = True) -> None:
        self.cider = CiderD(tokenize=tokenize)
        self.tokenize = tokenize
        self.meteor: MeteorScorer | None = None if meteor is False else MeteorScorer(None if meteor is True else meteor)
        self.keys = KEYS if self.meteor is not None else tuple(k for k in KEYS if k != "METEOR")

    def fit(self, references: Sequence[Sequence[str]]) -> DocumentFrequency:
        """CIDEr-D's document frequencies over the references of the whole set."""
        return self.cider.fit(references)

    def score(self, candidates: Sequence[str], references: Sequence[Sequence[str]],
              df: DocumentFrequency | None = None) -> list[CocoItem]:
        """Every key for each item; CIDEr's document frequencies default to a fit on ``references``.
        An item whose METEOR alignment is over the bound on one segment's work comes back with its
        ``failure``; the other items are scored."""
        tokens = tokenize_all([*candidates, *(r for refs in references for r in refs)], self.tokenize)
        ciders = self.cider.score(candidates, references, df, tokens=tokens)
        meteors: list[MeteorSegment | MeteorSearchLimit | None] = [None] * len(candidates)
        if self.meteor is not None:
            meteors = list(self.meteor.score_batch_or_limits([tokens[c] for c in candidates],
                                                             [[tokens[r] for r in refs] for refs in references]))
        items = []
        for cand, refs, cider, meteor in zip(candidates, references, ciders, meteors):
            if isinstance(meteor, MeteorSearchLimit):
                items.append(CocoItem({key: 0.0 for key in self.keys}, (0.0,) * len(FIELDS), {},
                                      failure=f"METEOR {meteor}"))
                continue
            c, rs = tokens[cand].split(), [tokens[r].split() for r in refs]
            bleu_stats = bleu_statistics(c, rs)
            rouge = coco_rouge_l(c, rs)
            values = dict(zip(KEYS[:4], bleu_values(bleu_stats)))
            if meteor is not None:
                values["METEOR"] = meteor.score
            values.update(ROUGE_L=rouge, CIDEr=cider.value)
            meteor_stats = flat_statistics(meteor.statistics) if meteor is not None else (0.0,) * len(METEOR_FIELDS)
            reasons = {} if c else {key: _empty_output_reason(key, values[key]) for key in values if key != "CIDEr"}
            if c and not any(rs):
                reasons["ROUGE_L"] = "no reference has tokens after tokenisation: ROUGE_L is 0 by definition"
                if meteor is not None:
                    reasons["METEOR"] = "no reference has tokens after tokenisation: METEOR is 0 by the jar's definition"
            if cider.reason:
                reasons["CIDEr"] = cider.reason
            items.append(CocoItem(values, (*bleu_stats, *meteor_stats, rouge, cider.value, 1), reasons))
        return items

    def signature(self, df: DocumentFrequency | None = None) -> Signature:
        """``metric:coco-caption|tok:ptb|bleu:closest,n4|rouge_l:beta1.2|cider:cider-d,n4,sigma6|df:...|keys:...|
        opik_metrics:<version>``."""
        cider = self.cider.signature(df).fields
        return Signature({"metric": "coco-caption", "tok": self.tokenize, "bleu": "closest,n4",
                          "meteor": "1.5,en,norm" if self.meteor is not None else "off",
                          "rouge_l": "beta1.2", "cider": "cider-d,n4,sigma6", "df": cider["df"],
                          "keys": ",".join(self.keys), "opik_metrics": package_version()})


def _empty_output_reason(key: str, value: float) -> str:
    """Why an output without tokens has the value it has (pycocoevalcap's ROUGE_L takes an empty
    caption for one empty token, so an empty output against an empty reference scores 1)."""
    if value == 0:
        return f"output has no tokens after tokenisation: {key} is 0 by definition"
    return (f"output and a reference have no tokens after tokenisation: pycocoevalcap's {key} takes both "
            f"for one empty token each, which match ({value:g})")

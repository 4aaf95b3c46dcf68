"""pycocoevalcap's scorers run the way COCOEvalCap runs them, on already tokenised captions."""
from __future__ import annotations

import contextlib
import io
import shutil
from functools import lru_cache

from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge


def _dicts(candidates, references):
    return {i: list(r) for i, r in enumerate(references)}, {i: [c] for i, c in enumerate(candidates)}


def oracle_cider(candidates, references):
    """(corpus, per-item) CIDEr-D of tokenised captions."""
    score, scores = Cider().compute_score(*_dicts(candidates, references))
    return float(score), [float(s) for s in scores]


@lru_cache(maxsize=None)
def _meteor():
    """pycocoevalcap's Meteor: one JVM (and one load of its paraphrase table) per test process."""
    from pycocoevalcap.meteor.meteor import Meteor
    return Meteor()


def oracle_coco(candidates, references):
    """{key: (corpus, per-item)} for Bleu_1..4, METEOR (where Java is), ROUGE_L and CIDEr of
    tokenised captions."""
    gts, res = _dicts(candidates, references)
    with contextlib.redirect_stdout(io.StringIO()):      # Bleu prints its counts
        bleu, bleus = Bleu(4).compute_score(gts, res)
    out = {f"Bleu_{k + 1}": (float(bleu[k]), [float(x) for x in bleus[k]]) for k in range(4)}
    if shutil.which("java"):
        meteor, meteors = _meteor().compute_score(gts, res)
        out["METEOR"] = (float(meteor), [float(x) for x in meteors])
    rouge, rouges = Rouge().compute_score(gts, res)
    out["ROUGE_L"] = (float(rouge), [float(x) for x in rouges])
    out["CIDEr"] = oracle_cider(candidates, references)
    return out


def simple_tokens(text: str) -> str:
    """A stand-in tokenisation for the pre-tokenised oracle runs: lower case, punctuation dropped."""
    for mark in ",.!?;:\"()":
        text = text.replace(mark, " ")
    return " ".join(text.lower().split())

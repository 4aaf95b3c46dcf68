"""Realistic prediction/reference pairs for benchmarks: seeded, no downloads.

Sentences are built from a Zipf-weighted English vocabulary with punctuation, numbers and
capitals; each reference is a paraphrase-like edit of its prediction (drops, swaps,
substitutions, insertions), so n-gram and LCS overlaps look like real system output.
"""
from __future__ import annotations

import random

_WORDS = (
    "the of and to a in is was that for on with as by it at from his her he she they this "
    "be are were which an or had not but have one their has been its new more also after first "
    "two who other year time people city government company market report said would could "
    "there when all than into only over such most some many these may up out about state "
    "between during three world school team system group number public under since while "
    "children family water policy model results study research data analysis students "
    "president minister police court health economy energy growth prices sales product "
    "quality service customers image caption picture dog cat man woman car street house "
    "running walking standing sitting looking playing holding wearing eating building "
    "beautiful large small young old red blue green white black happy quick brown lazy "
    "jumped enjoyed announced increased decreased reported expected described considered "
    "because however although therefore meanwhile according against without within through "
    "summary evaluation translation language generation reference candidate metric score"
).split()
_PUNCT = [",", ",", ".", ";", ":", "!", "?", "'s", "-", "(", ")", '"']


def _sentence(rng: random.Random, weights: list[float]) -> list[str]:
    n = rng.randint(8, 35)
    words = rng.choices(_WORDS, weights=weights, k=n)
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), str(rng.randint(1, 2030)))
    words[0] = words[0].capitalize()
    if rng.random() < 0.4:
        words.insert(rng.randrange(1, len(words)), rng.choice(_PUNCT))
    words.append(rng.choice([".", ".", ".", "!", "?"]))
    return words


def _edit(rng: random.Random, words: list[str], weights: list[float]) -> list[str]:
    out = list(words)
    for _ in range(rng.randint(1, max(2, len(out) // 3))):
        op = rng.random()
        i = rng.randrange(len(out))
        if op < 0.3 and len(out) > 3:
            del out[i]
        elif op < 0.55:
            out[i] = rng.choices(_WORDS, weights=weights, k=1)[0]
        elif op < 0.8:
            out.insert(i, rng.choices(_WORDS, weights=weights, k=1)[0])
        else:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
    return out


def _join(words: list[str]) -> str:
    text = " ".join(words)
    for p in (" ,", " .", " ;", " :", " !", " ?", " 's", " )"):
        text = text.replace(p, p.strip())
    return text.replace("( ", "(")


def realistic_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Return ``n`` (prediction, reference) string pairs; the same seed gives the same pairs."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) ** 0.7 for rank in range(len(_WORDS))]
    preds, refs = [], []
    for _ in range(n):
        sents = rng.randint(1, 3)
        pred_words: list[list[str]] = [_sentence(rng, weights) for _ in range(sents)]
        ref_words = [_edit(rng, s, weights) for s in pred_words]
        preds.append(" ".join(_join(s) for s in pred_words))
        refs.append(" ".join(_join(s) for s in ref_words))
    return preds, refs

"""Seeded inputs for the chrF and TER oracle tests: random text with mixed case, punctuation,
numbers, accents, Turkish dotted I (its lowercase is two characters), CJK, emoji, odd whitespace
(tabs, newlines, no-break and ideographic spaces), glued tokens, empty strings; plus realistic pairs."""
from __future__ import annotations

import random
import zlib

from tests.corpus import realistic_pairs

VOCAB = (
    "the The THE cat Cat a A on mat is , . ! ? ; : ' \" ( ) - 's can't 1,000 3.5 2030. (hi) [x] {y} "
    "&amp; &quot; &lt; <b> x-y e.g. U.S. École école straße STRASSE İstanbul naïve café Ωmega "
    "猫 在 垫子 上 我 爱 北京 。 ， 「引用」 ｈｅｌｌｏ ！ カタカナ ひらがな 😀 🐈‍⬛ € $ % — … ««»»"
).split()
SPACES = [" ", " ", " ", "", "  ", "\t", "\n", "\u00a0", "\u3000"]


def seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def random_text(rng: random.Random, max_tokens: int = 9) -> str:
    n = rng.randint(0, max_tokens)
    glue = rng.choice(SPACES)
    text = glue.join(rng.choice(VOCAB) for _ in range(n))
    return rng.choice(["", "", " "]) + text + rng.choice(["", "", " ", "\t", " \n"])


def items(seed_value: int, count: int, nrefs: int) -> tuple[list[str], list[list[str]]]:
    """Random and realistic hypotheses with ``nrefs`` references each (of different lengths),
    some of them copies or near copies of the hypothesis, some empty."""
    rng = random.Random(seed_value)
    preds, golds = realistic_pairs(count, seed=seed_value % 1000)
    hyps, refs = [], []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            hyp, ref = preds[i], golds[i]
        elif kind == 1:
            hyp, ref = random_text(rng), random_text(rng)
        elif kind == 2:
            hyp = random_text(rng)
            words = hyp.split()
            rng.shuffle(words)
            ref = " ".join(words[: max(0, len(words) - rng.randint(0, 2))])
        else:
            hyp, ref = " ".join(preds[i].split()[:rng.randint(0, 6)]), " ".join(golds[i].split()[:rng.randint(0, 6)])
        item = [ref]
        while len(item) < nrefs:
            item.append(random_text(rng, max_tokens=rng.choice([0, 3, 9, 30])))
        rng.shuffle(item)
        hyps.append(hyp)
        refs.append(item)
    return hyps, refs

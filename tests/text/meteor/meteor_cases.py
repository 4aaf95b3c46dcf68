"""Seeded caption segments for the Meteor tests: outputs and one to five references built so that
every module of the aligner has work (exact words, stems, WordNet synonyms, table paraphrases),
with function words, punctuation and case for the normaliser, repeats, one-word outputs and
non-ASCII text."""
from __future__ import annotations

import random
import zipfile
from functools import lru_cache

from tests.captions import EXTRAS, OBJECTS, SUBJECTS, VERBS

FUNCTION = ("the", "a", "of", "to", "in", "and", "on", "with", "is", "it", "that", "for", "an", "at", "by")
PUNCT = (".", ",", "!", "?", ";", ":", "'s", "\"", "(", ")", "--", "...", "-", "'")
NON_ASCII = ("café", "naïve", "Über", "façade", "Москва", "日本", "😀", "résumé", "ÉCOLE", "ΣΟΦΙΑ", "niño", "İstanbul",
             "“quoted”", "‘single’", "a–b", "Straße")
TRICKY = ("U.S.", "Mr. Smith", "No. 5", "e.g.", "3,000", "3.5", "1990's", "don't", "it's", "x-ray", "well-known",
          "Inc. profits", "a.m.", "St. Louis", "... and", "etc.")
INFLECT = ("s", "es", "ed", "ing", "er", "ly", "ies", "'s")


@lru_cache(maxsize=None)
def synonym_pairs(jar: str) -> tuple[tuple[str, str], ...]:
    """Pairs of one-word WordNet lemmas that share a synset (from the jar's english.synsets)."""
    lines = zipfile.ZipFile(jar).read("synonym/english.synsets").decode("ascii").split("\n")
    members: dict[str, list[str]] = {}
    for word, sets in zip(lines[0::2], lines[1::2]):
        if word.isalpha() and word.islower() and 3 <= len(word) <= 9:
            for s in sets.split():
                members.setdefault(s, []).append(word)
    pairs = [(g[0], g[1]) for g in members.values() if len(g) >= 2]
    return tuple(sorted(set(pairs)))


def paraphrase_pairs(tables, count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (phrase, paraphrase) pairs of one to four words from the loaded table."""
    rng = random.Random(seed)
    table = tables.paraphrases
    phrases = list(table.ids)
    pairs: list[tuple[str, str]] = []
    while len(pairs) < count:
        pid = rng.randrange(len(phrases))
        lo, hi = int(table.offsets[pid]), int(table.offsets[pid + 1])
        if hi == lo:
            continue
        source, target = phrases[pid], phrases[int(table.targets[rng.randrange(lo, hi)])]
        if source.count(" ") < 4 and target.count(" ") < 4 and "|" not in source + target:
            pairs.append((source, target))
    return pairs


def _inflect(rng: random.Random, word: str) -> str:
    suffix = rng.choice(INFLECT)
    if suffix in ("ed", "er", "ing") and word.endswith("e"):
        word = word[:-1]
    return word + suffix


def _words(rng: random.Random) -> list[str]:
    extra = rng.choice(EXTRAS).strip()
    text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {extra}"
    return text.split()


def _perturb(rng: random.Random, words: list[str], synonyms, paraphrases) -> list[str]:
    """Some edits of a reference: the output a captioner might write."""
    words = list(words)
    for _ in range(rng.randint(0, 4)):
        op = rng.random()
        k = rng.randrange(len(words)) if words else 0
        if not words:
            words.append(rng.choice(FUNCTION))
        elif op < 0.15:
            words[k] = _inflect(rng, words[k])
        elif op < 0.25:
            del words[k]
        elif op < 0.35:
            words.insert(k, rng.choice(FUNCTION))
        elif op < 0.45:
            words.insert(k, rng.choice(PUNCT))
        elif op < 0.55:
            words[k] = words[k].upper() if rng.random() < 0.5 else words[k].capitalize()
        elif op < 0.65:
            a, b = rng.choice(synonyms)
            words.insert(k, b if rng.random() < 0.5 else _inflect(rng, b))
        elif op < 0.75:
            i, j = sorted(rng.sample(range(len(words) + 1), 2)) if len(words) > 1 else (0, len(words))
            words = words[j:] + words[i:j] + words[:i]
        elif op < 0.82:
            words.insert(k, words[k])
        elif op < 0.88:
            words.insert(k, rng.choice(NON_ASCII))
        elif op < 0.94:
            words.insert(k, rng.choice(TRICKY))
        else:
            words.insert(k, rng.choice(paraphrases)[1])
    return words


def segments(count: int, seed: int, synonyms, paraphrases) -> tuple[list[str], list[list[str]]]:
    """``count`` outputs, each with one to five references."""
    rng = random.Random(seed)
    outputs, references = [], []
    for _ in range(count):
        base = _words(rng)
        refs = []
        for _ in range(rng.randint(1, 5)):
            ref = _perturb(rng, base, synonyms, paraphrases)
            if rng.random() < 0.5:                        # a synonym pair across output and reference
                a, b = rng.choice(synonyms)
                ref.insert(rng.randrange(len(ref) + 1), a)
                base = base + [b if rng.random() < 0.6 else _inflect(rng, b)]
            if rng.random() < 0.6:                        # a paraphrase pair across them
                src, tgt = rng.choice(paraphrases)
                ref.insert(rng.randrange(len(ref) + 1), src)
                base = base[:2] + [tgt] + base[2:]
            refs.append(" ".join(ref))
        roll = rng.random()
        if roll < 0.04:
            out = [rng.choice(base)]                       # one-word output
        elif roll < 0.06:
            out = []                                       # empty output
        elif roll < 0.08:
            out = list(refs[0].split())                    # identical to a reference
        else:
            out = _perturb(rng, base, synonyms, paraphrases)
        if rng.random() < 0.01:
            refs[rng.randrange(len(refs))] = ""           # an empty reference
        outputs.append(" ".join(out))
        references.append(refs)
    return outputs, references

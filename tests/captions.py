"""Seeded caption sets for the captioning metrics' tests and benchmarks: per image several
references and a candidate that shares some of their n-grams, as real captioners do."""
from __future__ import annotations

import random

SUBJECTS = ("a dog", "two dogs", "a man", "a woman", "a young child", "an old car", "a red bus", "the cat",
            "a group of people", "a brown horse", "some birds", "a small boat", "a plate of food", "a girl")
VERBS = ("is sitting on", "runs across", "stands next to", "is lying in", "walks along", "jumps over",
         "is parked near", "looks at", "plays with", "rides", "flies above", "floats on", "is eating")
OBJECTS = ("the grass", "a wooden bench", "the beach", "a busy street", "the snow", "a large field", "the water",
           "a table", "the sidewalk", "a green tree", "the fence", "a white wall", "the sky", "a pile of leaves")
EXTRAS = ("", "", "", " at night", " in the rain", " on a sunny day", " with a ball", " near a building",
          ", smiling", " while another watches", " in front of a house", ".", " .", " !")


def _caption(rng: random.Random, subject: str, verb: str, obj: str) -> str:
    words = f"{subject} {verb} {obj}{rng.choice(EXTRAS)}"
    if rng.random() < 0.2:
        words = words.capitalize()
    return words


def caption_sets(images: int, refs_per_image: int = 5, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """``images`` candidates and, for each, ``refs_per_image`` references of the same scene."""
    rng = random.Random(seed)
    candidates, references = [], []
    for _ in range(images):
        subject, verb, obj = rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)
        refs = []
        for _ in range(refs_per_image):
            s = subject if rng.random() < 0.7 else rng.choice(SUBJECTS)
            v = verb if rng.random() < 0.6 else rng.choice(VERBS)
            o = obj if rng.random() < 0.7 else rng.choice(OBJECTS)
            refs.append(_caption(rng, s, v, o))
        s = subject if rng.random() < 0.8 else rng.choice(SUBJECTS)
        v = verb if rng.random() < 0.5 else rng.choice(VERBS)
        candidates.append(_caption(rng, s, v, rng.choice(OBJECTS) if rng.random() < 0.3 else obj))
        references.append(refs)
    return candidates, references

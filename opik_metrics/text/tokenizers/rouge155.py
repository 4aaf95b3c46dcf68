"""The ROUGE-1.5.5 perl script's tokenisation, for ``RougeScorer(rouge155=True)``.

What the script does to each text (``readText`` / ``createNGram`` in ROUGE-1.5.5.pl), read as
bytes with no encoding layer:

1. lines are split on ``"\\n"`` only; empty lines are dropped (sentences for ROUGE-L and W);
2. ``tr/A-Z/a-z/``: only ASCII capitals are lowercased;
3. ``-`` is padded with spaces, then every byte other than ``[A-Za-z0-9-]`` becomes a space, so
   each byte of a non-ASCII character is a separator;
4. words are split on whitespace; a word is kept only when it starts with ``[a-z0-9$]``, which
   drops the lone ``-`` tokens of step 3 (``$`` is already gone);
5. with ``-s``, a word in the SMART list is dropped (before stemming);
6. with ``-m``, a word longer than 3 characters is stemmed.

So the tokens are the maximal ``[a-z0-9]`` runs of the ASCII-lowercased text. rouge-score lowercases
with Python's Unicode ``str.lower`` first, which differs on exactly two characters: KELVIN SIGN
(U+212A) and LATIN CAPITAL LETTER I WITH DOT ABOVE (U+0130) lowercase to ASCII ``k`` / ``i`` there,
while the script sees non-ASCII bytes (separators).

Stemming (step 6) is the script's ``-m``: WordNet 2.0's exception lists first (``went`` -> ``go``),
then the script's own Porter stemmer (``rouge155_stemmer``); ``stemmer="porter"`` leaves the
exception lists out, as a run whose exception database is empty.
"""
from __future__ import annotations

import re

from opik_metrics.text.tokenizers.stopwords import ENGLISH_STOPWORDS
from opik_metrics.text.tokenizers.rouge155_stemmer import Rouge155Stemmer
from opik_metrics.text.tokenizers.words import _longer_than_3, _WordMemo

# ASCII capitals map to lowercase, [a-z0-9] bytes stay, every other byte is a separator.
_SEPARATORS = bytes(
    c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256)
)
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def rouge155_words(text: str) -> list:
    """The script's words before stopwords and stemming: ``[a-z0-9]`` runs of the ASCII-lowercased text."""
    if text.isascii():
        return text.encode("ascii").translate(_SEPARATORS).decode("ascii").split()
    return [word.lower() for word in _ASCII_WORD.findall(text)]  # ASCII-only words: ASCII lower


class Rouge155Tokenizer:
    """ROUGE-1.5.5's tokens: ASCII lowercase, ``[a-z0-9]`` runs, SMART stopwords, ``-m`` stem if > 3 chars
    (``stemmer``: ``"wordnet+porter"``, the script's ``-m``, or ``"porter"``, without the exception lists)."""

    name = "rouge155"

    def __init__(self, use_stemmer: bool = False, remove_stopwords: bool = False, stemmer: str = "wordnet+porter"):
        self._memo = None
        stem = Rouge155Stemmer(stemmer)         # checks ``stemmer`` even when nothing is stemmed
        if use_stemmer or remove_stopwords:
            stopwords = ENGLISH_STOPWORDS if remove_stopwords else frozenset()
            self._memo = _WordMemo(stem if use_stemmer else None, stopwords, _longer_than_3, None)

    def __call__(self, text: str) -> list:
        words = rouge155_words(text)
        return words if self._memo is None else self._memo.normalise(words)

"""English sentences as nltk splits them: ``sent_tokenize`` when its English Punkt model is
installed, else Punkt with no trained abbreviations (it also splits after some, e.g. "Dr."), with
a warning the caller words; the name says which, for signatures."""
from __future__ import annotations

import warnings
from typing import Callable


def english_sentence_splitter(warning: str) -> tuple[Callable[[str], list[str]], str]:
    """``(split, name)``: nltk's ``sent_tokenize`` and ``"punkt-english"``, or untrained Punkt and
    ``"punkt-untrained"`` after warning ``warning`` (attributed to the caller's caller)."""
    import nltk

    for data in ("tokenizers/punkt_tab/english/", "tokenizers/punkt/english.pickle"):
        try:
            nltk.data.find(data)
            return nltk.sent_tokenize, "punkt-english"
        except LookupError:
            continue
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    warnings.warn(warning, stacklevel=3)
    return PunktSentenceTokenizer().tokenize, "punkt-untrained"

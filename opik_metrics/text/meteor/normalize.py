"""Meteor's ``-norm`` for English: Moses-style tokenisation with Meteor's additions (quotes and
dashes unified, dashes inside words split, dots of ``U.S.`` dropped), then lowercasing, giving the
same tokens as the jar. The character classes are Java's, written out: ``\\s``, ``\\p{Digit}`` and
``\\p{Lower}`` are ASCII-only there, so Python's Unicode-aware shorthands are never used."""
from __future__ import annotations

import re
from typing import Mapping

# Letters (Latin-1 and Latin Extended-A, Cyrillic and its supplements, phonetic extensions).
ALPHA = ("A-Za-z\u0160\u017d\u0161\u017e\u0178\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017e"
         "\u0400-\u04ff\u0500-\u0527\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f")
ALNUM = "0-9" + ALPHA
JAVA_SPACE = " \t\n\x0b\x0c\r"                   # Java's \s without UNICODE_CHARACTER_CLASS
TOKEN_DELIMITERS = " \t\n\r\x0c"                 # java.util.StringTokenizer's defaults
JAVA_TRIMMED = "".join(map(chr, range(0x21)))   # String.trim() drops every char <= U+0020

SEPARATE_SYMBOL = re.compile(f"([^{ALNUM}{JAVA_SPACE}.'`,\\-\u2018\u2019])")
MULTI_DOT = re.compile(r"\.(\.+)")
MULTI_DOT_NEXT = re.compile(r"DOTMULTI\.([^.])")
COMMA_WORDS = re.compile(r"([^0-9]),([^0-9])")
COMMA_AFTER_DIGIT = re.compile(r"([0-9]),([^0-9])")
COMMA_BEFORE_DIGIT = re.compile(r"([^0-9]),([0-9])")
SINGLE_QUOTES = re.compile("[`\u2018\u2019]")
DOUBLE_QUOTES = re.compile("[\u201c\u201d]|''")
INNER_DASH = re.compile(f"([{ALNUM}.])-([{ALNUM}])")
APOSTROPHE_NONE = re.compile(f"([^{ALPHA}])'([^{ALPHA}])")
APOSTROPHE_BEFORE = re.compile(f"([^{ALPHA}0-9])'([{ALPHA}])")
APOSTROPHE_AFTER = re.compile(f"([{ALPHA}])'([^{ALPHA}])")
APOSTROPHE_INSIDE = re.compile(f"([{ALPHA}])'([{ALPHA}])")
APOSTROPHE_YEARS = re.compile(r"([0-9])'(s)")
LETTER = re.compile(f"[{ALPHA}]")
WHITE = re.compile("[ \u2000-\u200a\u202f\u205f\u3000\u00a0]+")

#: Kinds of nonbreaking prefix (the word before a dot that does not end a sentence).
ANY_CONTEXT, BEFORE_NUMBER = 1, 2


def java_trim(text: str) -> str:
    """``String.trim()``: the jar trims every field of its input line this way."""
    return text.strip(JAVA_TRIMMED)


_TO_SPACE = str.maketrans({c: " " for c in TOKEN_DELIMITERS})


def java_tokens(text: str) -> list[str]:
    """Tokens as ``StringTokenizer`` splits them (space, tab, newline, carriage return, form feed)."""
    if "\t" in text or "\n" in text or "\r" in text or "\x0c" in text:
        text = text.translate(_TO_SPACE)
    return [t for t in text.split(" ") if t]


def parse_prefixes(text: str) -> dict[str, int]:
    """The nonbreaking-prefix list (``english.prefixes``): prefix -> ANY_CONTEXT or BEFORE_NUMBER."""
    prefixes: dict[str, int] = {}
    for line in text.split("\n"):
        fields = java_tokens(line.rstrip("\r"))
        if not fields or fields[0].startswith("#"):
            continue
        kind = BEFORE_NUMBER if len(fields) > 1 and fields[1] == "#NUMERIC_ONLY#" else ANY_CONTEXT
        prefixes[fields[0]] = kind
    return prefixes


def normalize(text: str, prefixes: Mapping[str, int]) -> str:
    """The normalised, lowercased line (tokens separated by single spaces), as the jar scores it."""
    line = SEPARATE_SYMBOL.sub(r" \1 ", f" {java_trim(text)} ")
    line = MULTI_DOT.sub(r" DOTMULTI\1", line)
    while "DOTMULTI." in line:
        line = MULTI_DOT_NEXT.sub(r"DOTDOTMULTI \1", line)
        line = line.replace("DOTMULTI.", "DOTDOTMULTI")
    line = COMMA_WORDS.sub(r"\1 , \2", line)
    line = COMMA_AFTER_DIGIT.sub(r"\1 , \2", line)
    line = COMMA_BEFORE_DIGIT.sub(r"\1 , \2", line)
    line = SINGLE_QUOTES.sub("'", line)
    line = DOUBLE_QUOTES.sub(' " ', line)
    line = line.replace("\u2013", "-").replace("--", "-")
    line = INNER_DASH.sub(r"\1 \2", line)
    line = APOSTROPHE_NONE.sub(r"\1 ' \2", line)
    line = APOSTROPHE_BEFORE.sub(r"\1 ' \2", line)
    line = APOSTROPHE_AFTER.sub(r"\1 ' \2", line)
    line = APOSTROPHE_INSIDE.sub(r"\1 '\2", line)
    line = APOSTROPHE_YEARS.sub(r"\1 '\2", line)
    line = _split_final_dots(java_tokens(line), prefixes)
    while "DOTDOTMULTI" in line:
        line = line.replace("DOTDOTMULTI", "DOTMULTI.")
    line = line.replace("DOTMULTI", ".")
    return java_lower(java_trim(WHITE.sub(" ", line)))


def _split_final_dots(words: list[str], prefixes: Mapping[str, int]) -> str:
    """Rejoin the words, detaching a final dot unless the word is an abbreviation."""
    out = []
    last = len(words) - 1
    for i, word in enumerate(words):
        if len(word) > 1 and word.endswith("."):
            stem = word[:-1]
            kind = prefixes.get(stem)
            following = words[i + 1][:1] if i < last else ""
            abbreviation = (kind == ANY_CONTEXT or "a" <= following <= "z"     # "Inc. profits" too
                            or kind == BEFORE_NUMBER and "0" <= following <= "9")
            if "." in stem and LETTER.search(stem):
                word = word.replace(".", "")                                  # U.S. -> US
            elif not abbreviation:
                word = stem + " ."
        out.append(word)
        out.append(" ")
    return "".join(out)


# Capitals whose lowercase came with Unicode 14: Python 3.11 lowers them, Java 17 (Unicode 13) does not.
NEWER_CAPITALS = re.compile("([\u2c2f\ua7c0\ua7d0\ua7d6\ua7d8\U00010570-\U0001057a\U0001057c-\U0001058a"
                            "\U0001058c-\U00010592\U00010594\U00010595])")


def java_lower(text: str) -> str:
    """``String.toLowerCase()`` as Java 17 lowers (checked on every code point): ``str.lower``, but
    for the capitals Java 17 does not know yet."""
    if text.isascii() or not NEWER_CAPITALS.search(text):
        return text.lower()
    parts = NEWER_CAPITALS.split(text)              # odd indexes: the capitals, kept
    return "".join(part if k % 2 else part.lower() for k, part in enumerate(parts))

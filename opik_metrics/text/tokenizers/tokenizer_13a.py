"""mteval-v13a tokenisation (BLEU's default), token for token identical to sacrebleu's Tokenizer13a.

Own code for speed: on Python 3.11 sacrebleu's four regex passes expand their templates in
Python for every match, half of sentence BLEU's time; here the punctuation pass is one
``str.translate`` and the period/comma/dash passes run only on the few tokens that need them.
"""
from __future__ import annotations

import re
from functools import lru_cache

# Characters mteval-v13a pads with spaces: { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
_PUNCTUATION = "{|}~[\\]^_` !\"#$%&()*+:;<=>?@/"
_PAD_TABLE = str.maketrans({c: f" {c} " for c in _PUNCTUATION})

# A whitespace-delimited token that contains a period, comma or dash needs the context rules.
_NEEDS_CONTEXT = re.compile(r"\S*[.,\-]\S*")
_PERIOD_COMMA_AFTER_NON_DIGIT = re.compile(r"([^0-9])([\.,])")
_PERIOD_COMMA_BEFORE_NON_DIGIT = re.compile(r"([\.,])([^0-9])")
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")


def _context_rules(match: re.Match) -> str:
    """mteval-v13a's period, comma and dash rules on one token, padded as in the whole line."""
    token = match.group()
    head, last = token[:-1], token[-1]
    if head and last in ".," and "." not in head and "," not in head and "-" not in head:
        return f" {head} {last} "  # the common case ("word." / "1990,"): the rules split off the end
    token = f" {token} "
    token = _PERIOD_COMMA_AFTER_NON_DIGIT.sub(r"\1 \2 ", token)
    token = _PERIOD_COMMA_BEFORE_NON_DIGIT.sub(r" \1 \2", token)
    return _DASH_AFTER_DIGIT.sub(r"\1 \2 ", token)


@lru_cache(maxsize=2**16)
def tokenize_13a(line: str) -> tuple[str, ...]:
    """The tokens sacrebleu's ``Tokenizer13a()(line).split()`` gives, as a tuple."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = line.translate(_PAD_TABLE)
    if "." in line or "," in line or "-" in line:
        line = _NEEDS_CONTEXT.sub(_context_rules, line)
    return tuple(line.split())

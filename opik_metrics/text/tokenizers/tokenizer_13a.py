"""mteval-v13a tokenisation (BLEU's default), token for token identical to sacrebleu's Tokenizer13a.

Own code for speed. sacrebleu pads punctuation with one regex, then runs three more over the
line (period and comma unless beside a digit, dash after a digit), each expanding its template in
Python for every match, then splits. Here one ``re.findall`` gives the tokens of almost every
line directly: a punctuation character, a run of other non-space characters (periods and commas
between two digits stay inside: "3.5", "1,000"), or a lone period or comma. Those are the exact
tokens whenever every other period or comma ends its run (is followed by space, punctuation or
the end) and no dash follows a digit; the pattern's last alternative, an empty match before any
other period or comma, flags the rest, which, with the lines where a digit is followed by a dash,
take the rule-by-rule path (``_tokenize_by_rules``): "U.S.", ".5", "a.b", "...", "1990-95".
"""
from __future__ import annotations

import re
from functools import lru_cache

# Characters mteval-v13a pads with spaces: { | } ~ [ \ ] ^ _ ` space ! " # $ % & ( ) * + : ; < = > ? @ /
_PUNCTUATION = "{|}~[\\]^_` !\"#$%&()*+:;<=>?@/"
_PUNCT = re.escape(_PUNCTUATION.replace(" ", ""))
_BREAK = re.escape(_PUNCTUATION) + r"\s"     # what ends a run of other characters

_TOKENS = re.compile(                                          # findall gives the group: the token
    r"\s*("                                                    # (spaces skipped in the same match)
    rf"[{_PUNCT}]"                                             # a punctuation character
    rf"|[^{_BREAK}.,]+(?:(?<=[0-9])[.,](?=[0-9])[^{_BREAK}.,]+)*"  # a run ("3.5", "e-mail", "it's")
    rf"|[.,](?![^{_BREAK}])"                                   # a period or comma that ends a run
    r"|(?=[.,]))"                                              # '' : any other period or comma
)
_DIGIT_DASH = re.compile(r"[0-9]-")

_PAD_TABLE = str.maketrans({c: f" {c} " for c in _PUNCTUATION})
# A whitespace-delimited token that contains a period, comma or dash needs the context rules.
_NEEDS_CONTEXT = re.compile(r"\S*[.,\-]\S*")
_PERIOD_COMMA_AFTER_NON_DIGIT = re.compile(r"([^0-9])([\.,])")
_PERIOD_COMMA_BEFORE_NON_DIGIT = re.compile(r"([\.,])([^0-9])")
_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")


@lru_cache(maxsize=2**16)
def tokenize_13a(line: str) -> tuple[str, ...]:
    """The tokens sacrebleu's ``Tokenizer13a()(line).split()`` gives, as a tuple."""
    if "<" in line:
        line = line.replace("<skipped>", "")
    if "\n" in line:
        line = line.replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    tokens = _TOKENS.findall(line)
    if "" in tokens or ("-" in line and _DIGIT_DASH.search(line)):
        return _tokenize_by_rules(line)
    return tuple(tokens)


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


def _tokenize_by_rules(line: str) -> tuple[str, ...]:
    """The rules one by one on a line with its markup already replaced: punctuation padded with
    ``str.translate``, then the period/comma/dash rules on just the tokens that hold one."""
    line = line.translate(_PAD_TABLE)
    if "." in line or "," in line or "-" in line:
        line = _NEEDS_CONTEXT.sub(_context_rules, line)
    return tuple(line.split())

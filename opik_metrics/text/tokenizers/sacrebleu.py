"""Tokenization for BLEU: sacrebleu's own tokenizer classes (one shared instance per name),
wrapped into a text -> tokens function that prepares text exactly as sacrebleu does."""
from __future__ import annotations

from typing import Callable, Sequence

from sacrebleu.metrics.bleu import BLEU as _SacreBLEU
from sacrebleu.tokenizers.tokenizer_base import BaseTokenizer

from opik_metrics.text.tokenizers.tokenizer_13a import tokenize_13a

#: Every tokenizer name sacrebleu knows; some need its optional extras (mecab, sentencepiece).
TOKENIZER_NAMES: tuple[str, ...] = tuple(_SacreBLEU.TOKENIZERS)

# Tokenizers whose output sacrebleu builds with ' '.join(line.split()): tokens are separated by
# exactly one space, so str.split(" ") (faster) gives the same tokens as str.split().
_SINGLE_SPACED = frozenset({"13a", "intl", "zh"})

_INSTANCES: dict[str, BaseTokenizer] = {}


def get_tokenizer(name: str) -> BaseTokenizer:
    """Return sacrebleu's tokenizer called ``name`` (one instance per name, so its cache is shared).

    Raises ValueError for a name sacrebleu does not know; sacrebleu's own error when an optional
    dependency of that tokenizer is missing.
    """
    tokenizer = _INSTANCES.get(name)
    if tokenizer is None:
        if name not in TOKENIZER_NAMES:
            raise ValueError(
                f"unknown BLEU tokenizer {name!r}; choose one of: {', '.join(TOKENIZER_NAMES)}"
            )
        # sacrebleu's public constructor resolves the name to its tokenizer class.
        tokenizer = _SacreBLEU(tokenize=name).tokenizer
        _INSTANCES[name] = tokenizer
    return tokenizer


def token_lister(name: str, lowercase: bool) -> Callable[[str], Sequence[str]]:
    """text -> tokens as sacrebleu's BLEU prepares a segment: lowercase (optionally), strip
    trailing whitespace, tokenize, split on whitespace."""
    if name == "13a":  # our own, token-identical and faster (see tokenizer_13a.py)
        if lowercase:
            return lambda text: tokenize_13a(text.lower().rstrip())
        return lambda text: tokenize_13a(text.rstrip())
    tokenize = get_tokenizer(name)
    if name in _SINGLE_SPACED and _is_single_spaced(tokenize):

        def tokens(text: str) -> list[str]:
            line = tokenize((text.lower() if lowercase else text).rstrip())
            return line.split(" ") if line else []

    else:

        def tokens(text: str) -> list[str]:
            return tokenize((text.lower() if lowercase else text).rstrip()).split()

    return tokens


def _is_single_spaced(tokenize: Callable[[str], str]) -> bool:
    """Check on awkward whitespace that this sacrebleu version still single-spaces its output."""
    out = tokenize(" a\tb \u3000 c\xa0d  e.\u2028f \r\ng\x0b")
    return out == " ".join(out.split())

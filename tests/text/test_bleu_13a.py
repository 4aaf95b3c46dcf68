"""Our 13a tokeniser gives sacrebleu's Tokenizer13a tokens exactly: exhaustively on short strings
over the characters its rules look at, and on random and realistic text."""
import itertools
import random

import pytest
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from tests.corpus import realistic_pairs
from opik_metrics.text.tokenizers.tokenizer_13a import tokenize_13a

ORACLE = Tokenizer13a()
RULE_CHARS = ["a", "1", ".", ",", "-", " ", "!", "'", "\t"]  # each class the regex rules tell apart


def same(text: str) -> bool:
    return list(tokenize_13a(text)) == ORACLE(text).split()


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5])
def test_every_short_string_over_the_rule_characters(length):
    bad = [s for s in map("".join, itertools.product(RULE_CHARS, repeat=length)) if not same(s)]
    assert bad == []


def test_random_strings_with_entities_unicode_spaces_and_markup():
    rng = random.Random(13)
    alphabet = RULE_CHARS + ["\xa0", "\u3000", "\x1c", "\x85", "\u2028", "&quot;", "&amp;", "&lt;",
                             "<skipped>", "-\n", "\n", "é", "日", "9", "/", "$", "(", "&", ";", "..."]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(20_000)]
    assert [t for t in texts if not same(t)] == []


def test_realistic_sentences():
    preds, refs = realistic_pairs(2000, seed=21)
    assert [t for t in preds + refs if not same(t)] == []


def test_hand_worked_examples():
    assert tokenize_13a("Hello, world. It's 3.5 - 4-5 items (approx.).") == (
        "Hello", ",", "world", ".", "It's", "3.5", "-", "4", "-", "5", "items", "(", "approx", ".", ")", ".")
    assert tokenize_13a("a &amp; b<skipped>") == ("a", "&", "b")


# --- fuzz: generated text with what 13a's rules and markup handling look at ------------------------

_FUZZ_PIECES = {
    "word": ["the", "Cat", "e-mail", "state-of-the-art", "it's", "naïve", "Straße", "日本語", "Привет",
             "café", "x", "A", "don't", "--", "-", "—", "–", "‐", "'", "’", "“", "”", "«", "»", "…"],
    "number": ["3.5", "1,000", "1,000.5", "0.5", "2024", "1990-1995", "1990-", "-5", "5-", "1--2",
               "3.", ".5", ",5", "5,", "1.2.3", "10,5,", "1-a", "a-1", "١٢٣", "٣.٥", "1e-5", "$5.00"],
    "dotted": ["U.S.", "U.S.A.", "e.g.", "a.b", "a,b", "...", "..", ".,", ",.", "a..", "a.,", ".a", ",a",
               "etc.", "No.1", "v1.2-beta", "a.-", "1.-", "-.5", ".-", ",-"],
    "punct": list("{|}~[\\]^_`!\"#$%&()*+:;<=>?@/.,-'") + ["?!", "!!", "(a)", "[1]", "<b>", "a/b"],
    "markup": ["&quot;", "&amp;", "&lt;", "&gt;", "&apos;", "&", "&amp;quot;", "&quot", "<skipped>",
               "<skip", "skipped>", "-\n", "\n", "\r\n", "a-\nb", "1-\n2"],
    "space": [" ", " ", " ", "  ", "\t", "\xa0", "\u3000", "\u2028", "\x1c", "\x85", "\u200b", ""],
}
_FUZZ_KINDS = ["word", "number", "dotted", "punct", "markup"]   # "space" goes between pieces
_FUZZ_WEIGHTS = [8, 3, 2, 3, 1]


def _fuzz_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 13, 21, 34])):
        kind = rng.choices(_FUZZ_KINDS, weights=_FUZZ_WEIGHTS)[0]
        parts.append(rng.choice(_FUZZ_PIECES[kind]))
        parts.append(rng.choice(_FUZZ_PIECES["space"]) if rng.random() < 0.8 else "")
    return "".join(parts)


def test_fuzz_generated_text_equals_sacrebleu_13a():
    """Thousands of generated lines (unicode, punctuation, dashes, numbers, entities, newlines,
    <skipped>), each also lowercased and stripped as BLEU prepares it, equal sacrebleu's tokens."""
    from opik_metrics.text.tokenizers.sacrebleu import token_lister

    rng = random.Random(2016)
    texts = [_fuzz_text(rng) for _ in range(6000)]
    assert [t for t in texts if not same(t)] == []
    for lowercase in (False, True):
        ours = token_lister("13a", lowercase)
        theirs = [ORACLE((t.lower() if lowercase else t).rstrip()).split() for t in texts]
        assert [t for t, o in zip(texts, theirs) if list(ours(t)) != o] == []


def test_fuzz_takes_both_paths():
    """The fuzz text reaches the one-regex path and the rule-by-rule path alike (else the test
    above would check only one of them)."""
    from opik_metrics.text.tokenizers import tokenizer_13a

    rng = random.Random(2016)
    texts = [_fuzz_text(rng) for _ in range(2000)]
    by_rules = []
    original = tokenizer_13a._tokenize_by_rules
    tokenizer_13a.tokenize_13a.cache_clear()
    tokenizer_13a._tokenize_by_rules = lambda line: by_rules.append(line) or original(line)
    try:
        for text in texts:
            tokenizer_13a.tokenize_13a(text)
    finally:
        tokenizer_13a._tokenize_by_rules = original
        tokenizer_13a.tokenize_13a.cache_clear()
    assert 0.2 * len(texts) < len(by_rules) < 0.9 * len(texts)


def test_fuzz_intl_tokens_equal_sacrebleu_v14_international():
    """The ``intl`` tokenizer is sacrebleu's own class; our wrapper around it changes no token."""
    pytest.importorskip("regex")
    from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

    from opik_metrics.text.tokenizers.sacrebleu import token_lister

    rng = random.Random(14)
    texts = [_fuzz_text(rng) for _ in range(2000)]
    oracle = TokenizerV14International()
    ours = token_lister("intl", False)
    assert [t for t in texts if list(ours(t)) != oracle(t.rstrip()).split()] == []

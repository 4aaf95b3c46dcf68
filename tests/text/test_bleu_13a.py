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

"""BLEUScorer against the oracle, sacrebleu 2.6.0: every option combination, many inputs."""
from __future__ import annotations

import itertools
import math
import random
import zlib

import pytest
from sacrebleu.metrics import BLEU

from tests.corpus import realistic_pairs
from opik_metrics.text.bleu.scorer import BLEUResult, BLEUScorer

TOKENIZERS = ["13a", "intl", "char", "zh", "none"]
SMOOTHINGS = [
    ("none", None),
    ("floor", None),
    ("floor", 0.3),
    ("add-k", None),
    ("add-k", 0.5),
    ("add-k", 2),
    ("exp", None),
]

# Mixed-case, punctuation, numbers, entities, accents, German, Turkish dotted I, Chinese, emoji.
_VOCAB = (
    "the The THE cat Cat a A on mat is , . ! ? ; : ' \" ( ) - 's can't 1,000 3.5 2030. "
    "&amp; &quot; <skipped> x-y e.g. U.S. École école straße STRASSE İstanbul naïve café "
    "猫 在 垫子 上 我 爱 北京 。 ， 😀 € $ %"
).split()


def _seed(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def _random_text(rng: random.Random, max_tokens: int = 9) -> str:
    n = rng.randint(0, max_tokens)
    glue = rng.choice([" ", " ", " ", "", "  "])  # "" glues tokens: the tokenizer must split them
    text = glue.join(rng.choice(_VOCAB) for _ in range(n))
    return text + rng.choice(["", "", " ", "\t", " \n"])  # trailing whitespace is stripped


def _items(seed: int, count: int, nrefs: int) -> tuple[list[str], list[list[str]]]:
    """Random and realistic hypotheses with ``nrefs`` references each (refs of different lengths)."""
    rng = random.Random(seed)
    preds, golds = realistic_pairs(count, seed=seed % 1000)
    hyps, refs = [], []
    for i in range(count):
        if i % 2:
            hyps.append(preds[i])
            item = [golds[i]]
        else:
            hyps.append(_random_text(rng))
            item = [_random_text(rng)]
        while len(item) < nrefs:
            item.append(_random_text(rng, max_tokens=rng.choice([3, 9, 30])))
        rng.shuffle(item)
        refs.append(item)
    return hyps, refs


def assert_same(oracle, ours: BLEUResult, smooth_method: str = "exp", smooth_value=None) -> None:
    """Our result equals sacrebleu's (its scale /100). sacrebleu's add-k adds k to its
    returned counts/totals of orders >= 2 (in place) when anything matched; ours are raw."""
    counts, totals = list(oracle.counts), list(oracle.totals)
    if smooth_method == "add-k" and counts[0] > 0:
        k = 1 if smooth_value is None else smooth_value
        counts = counts[:1] + [round(c - k, 9) for c in counts[1:]]
        totals = totals[:1] + [round(t - k, 9) for t in totals[1:]]
    assert list(ours.counts) == counts
    assert list(ours.totals) == totals
    assert ours.sys_len == oracle.sys_len
    assert ours.ref_len == oracle.ref_len
    assert ours.bp == pytest.approx(oracle.bp, rel=1e-15, abs=0)
    assert ours.score == pytest.approx(oracle.score / 100, rel=1e-12, abs=0)
    assert list(ours.precisions) == pytest.approx([p / 100 for p in oracle.precisions], rel=1e-12, abs=0)
    assert 0.0 <= ours.score <= 1.0


@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("smooth_method,smooth_value", SMOOTHINGS)
@pytest.mark.parametrize("effective_order", [False, True])
@pytest.mark.parametrize("nrefs", [1, 2, 3])
def test_every_option_combination(tokenize, lowercase, smooth_method, smooth_value, effective_order, nrefs):
    options = dict(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth_method,
                   smooth_value=smooth_value, effective_order=effective_order)
    oracle = BLEU(**options)
    ours = BLEUScorer(**options)
    hyps, refs = _items(_seed(tokenize, lowercase, smooth_method, smooth_value, effective_order, nrefs), 14, nrefs)
    for hyp, item_refs in zip(hyps, refs):
        assert_same(oracle.sentence_score(hyp, item_refs), ours.sentence_score(hyp, item_refs),
                    smooth_method, smooth_value)
    streams = [list(stream) for stream in zip(*refs)]  # sacrebleu wants reference streams
    assert_same(oracle.corpus_score(hyps, streams), ours.corpus_score(hyps, refs), smooth_method, smooth_value)


def test_sentence_defaults_on_hundreds_of_pairs():
    """Default sentence BLEU (effective order on, as sacrebleu.sentence_bleu) on many inputs."""
    oracle = BLEU(effective_order=True)
    ours = BLEUScorer()
    preds, golds = realistic_pairs(300, seed=7)
    rng = random.Random(11)
    pairs = list(zip(preds, golds)) + [(_random_text(rng), _random_text(rng)) for _ in range(300)]
    scores = []
    for hyp, ref in pairs:
        result = ours.sentence_score(hyp, [ref])
        assert_same(oracle.sentence_score(hyp, [ref]), result)
        assert ours.sentence_score(hyp, ref) == result  # a lone str is one reference
        scores.append(result.score)
    # The comparison is not vacuous: many non-zero, distinct scores.
    assert sum(s > 0 for s in scores) > 300
    assert len(set(scores)) > 250


def test_corpus_defaults_on_hundreds_of_pairs():
    preds, golds = realistic_pairs(400, seed=5)
    oracle = BLEU().corpus_score(preds, [golds])
    ours = BLEUScorer().corpus_score(preds, golds)  # a lone str per item is one reference
    assert_same(oracle, ours)
    assert 0.3 < ours.score < 0.9


def test_variable_number_of_references_per_item():
    """Items with 1..4 references; sacrebleu needs None padding in its streams for that."""
    rng = random.Random(3)
    preds, golds = realistic_pairs(60, seed=9)
    refs = [[gold] + [_random_text(rng, 20) for _ in range(rng.randint(0, 3))] for gold in golds]
    width = max(map(len, refs))
    streams = [[item[j] if j < len(item) else None for item in refs] for j in range(width)]
    assert_same(BLEU().corpus_score(preds, streams), BLEUScorer().corpus_score(preds, refs))
    # None entries are dropped as sacrebleu does, so padded items give the same result.
    padded = [item + [None] * (width - len(item)) for item in refs]
    assert BLEUScorer().corpus_score(preds, padded) == BLEUScorer().corpus_score(preds, refs)
    oracle = BLEU(effective_order=True)
    for hyp, item in zip(preds, padded):
        assert_same(oracle.sentence_score(hyp, item), BLEUScorer().sentence_score(hyp, item))


EDGE_CASES = [
    ("", ["the cat is on the mat"]),  # empty hypothesis
    ("   \t", ["the cat"]),  # whitespace-only hypothesis
    ("the", ["the cat is on the mat"]),  # 1 token
    ("the cat", ["the cat is on the mat"]),  # 2 tokens
    ("the cat sat", ["the cat sat on the mat"]),  # 3 tokens, shorter than 4
    ("dog runs fast today", ["the cat is on the mat"]),  # no match at all
    ("cat the", ["the cat"]),  # unigrams only
    ("the cat", [""]),  # empty reference string: length 0, kept as sacrebleu does
    ("the cat", ["", "the cat"]),
    ("a b c d e", ["a b c d", "a b c d e f"]),  # tie in length distance: shorter (4) wins
    ("a b c d e", ["a b c d e f", "a b c d"]),  # same, other order
    ("a b c", ["a", "a b c d e f g h", "x y z w v"]),  # three refs, different lengths
    ("the the the the the the the", ["the cat is on the mat"]),  # clipping
    ("the the the the", ["the the cat", "the the the dog"]),  # clipping by max over refs
    ("a a a a a a", ["a a a a a a"]),  # repeated n-grams of every order
    ("a b a b a b a", ["a b a b", "b a b a b a b a"]),
    ("Das ist ein Haus.", ["das ist ein haus ."]),
    ("École naïve, straße!", ["école naïve , straße !"]),
    ("我爱北京天安门。", ["我爱北京。", "北京天安门很大。"]),
    ("猫在垫子上", ["猫在垫子上面"]),
    ("hello 世界 test", ["hello 世界", "世界 test hello"]),
    ("1,000.5 dollars - 3-4 items", ["1,000.5 dollars-3-4 items"]),
    ("x &amp; y &lt;z&gt;", ["x & y <z>"]),
    ("a\tb\u3000c\xa0d  e\u2028f", ["a b c d e f", "a\tb c"]),  # odd whitespace inside
    ("x\r\ny-\nz  \x0b", ["x y z", "xyz"]),
]


@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("effective_order", [False, True])
@pytest.mark.parametrize("smooth_method", ["none", "floor", "add-k", "exp"])
def test_edge_cases(tokenize, lowercase, effective_order, smooth_method):
    options = dict(tokenize=tokenize, lowercase=lowercase, smooth_method=smooth_method,
                   effective_order=effective_order)
    oracle, ours = BLEU(**options), BLEUScorer(**options)
    for hyp, refs in EDGE_CASES:
        assert_same(oracle.sentence_score(hyp, refs), ours.sentence_score(hyp, refs), smooth_method)
    for hyp, refs in EDGE_CASES:
        if len(refs) == 1:  # sacrebleu's corpus_score needs the same number of refs per stream here
            assert_same(oracle.corpus_score([hyp], [refs]), ours.corpus_score([hyp], [refs]), smooth_method)


@pytest.mark.parametrize("max_ngram_order", [1, 2, 3, 5, 6])
@pytest.mark.parametrize("effective_order", [False, True])
def test_other_max_ngram_orders(max_ngram_order, effective_order):
    oracle = BLEU(max_ngram_order=max_ngram_order, effective_order=effective_order)
    ours = BLEUScorer(max_ngram_order=max_ngram_order, effective_order=effective_order)
    hyps, refs = _items(_seed("order", max_ngram_order, effective_order), 30, 2)
    for hyp, item_refs in zip(hyps, refs):
        result = ours.sentence_score(hyp, item_refs)
        assert len(result.counts) == max_ngram_order
        assert_same(oracle.sentence_score(hyp, item_refs), result)
    streams = [list(stream) for stream in zip(*refs)]
    assert_same(oracle.corpus_score(hyps, streams), ours.corpus_score(hyps, refs))


def test_explicit_uniform_weights_are_bit_identical():
    preds, golds = realistic_pairs(50, seed=21)
    oracle = BLEU(effective_order=True)
    for weights in [(0.25, 0.25, 0.25, 0.25), [0.25] * 4]:
        ours = BLEUScorer(weights=weights)
        for hyp, ref in zip(preds, golds):
            assert ours.sentence_score(hyp, [ref]).score == min(oracle.sentence_score(hyp, [ref]).score / 100, 1)


def test_scores_are_bit_identical_with_defaults():
    """Not just close: the same float operations in the same order as sacrebleu."""
    preds, golds = realistic_pairs(200, seed=13)
    oracle, ours = BLEU(effective_order=True), BLEUScorer()
    for hyp, ref in zip(preds, golds):
        expected = oracle.sentence_score(hyp, [ref])
        result = ours.sentence_score(hyp, [ref])
        assert result.score == min(expected.score / 100, 1.0)  # a perfect match is 100.00000000000004
        assert result.precisions == tuple(p / 100 for p in expected.precisions)
        assert result.bp == expected.bp
    corpus = BLEU().corpus_score(preds, [golds])
    assert BLEUScorer().corpus_score(preds, golds).score == min(corpus.score / 100, 1.0)


def test_stats_sum_to_corpus_statistics_of_the_oracle():
    """Per-item stats summed equal sacrebleu's corpus counts; compute() on them gives its score."""
    for nrefs in (1, 3):
        hyps, refs = _items(_seed("stats", nrefs), 40, nrefs)
        scorer = BLEUScorer(smooth_method="floor", smooth_value=0.2)
        total = sum(scorer.stats(h, r) for h, r in zip(hyps, refs))
        oracle = BLEU(smooth_method="floor", smooth_value=0.2).corpus_score(
            hyps, [list(s) for s in itertools.chain(zip(*refs))])
        assert list(total.correct) == oracle.counts
        assert list(total.total) == oracle.totals
        assert (total.sys_len, total.ref_len) == (oracle.sys_len, oracle.ref_len)
        assert_same(oracle, scorer.compute(total, sentence=False), "floor", 0.2)
        assert math.isfinite(scorer.compute(total, sentence=True).score)


@pytest.mark.parametrize("max_ngram_order", [1, 2, 4, 5])
def test_heavily_repeated_ngrams(max_ngram_order):
    """A 3-letter alphabet repeats n-grams of every order on both sides: exercises clipping by
    counts (not just presence) in the one-reference and the merged multi-reference paths."""
    rng = random.Random(max_ngram_order)
    oracle = BLEU(tokenize="none", max_ngram_order=max_ngram_order, effective_order=True)
    ours = BLEUScorer(tokenize="none", max_ngram_order=max_ngram_order)
    clipped = 0
    for _ in range(300):
        hyp = " ".join(rng.choices("abc", k=rng.randint(0, 14)))
        refs = [" ".join(rng.choices("abc", k=rng.randint(0, 14))) for _ in range(rng.randint(1, 3))]
        expected = oracle.sentence_score(hyp, refs)
        result = ours.sentence_score(hyp, refs)
        assert_same(expected, result)
        clipped += result.counts[0] < result.totals[0]
    assert clipped > 100  # clipping really happened

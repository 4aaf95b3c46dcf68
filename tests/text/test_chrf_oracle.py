"""CHRFScorer against the oracle, sacrebleu 2.6.0 (``sacrebleu.metrics.CHRF``): every option
combination, 1-3 references, hundreds of random, unicode and realistic pairs, sentence and corpus;
both counting paths (plain Python for small calls, numpy for batches) and their fallbacks."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from sacrebleu.metrics import CHRF

import opik_metrics.text.chrf.scorer as chrf_scorer
from opik_metrics.core.versions import ours
from opik_metrics.text.chrf import CHRFScorer, chrf_from_statistics
from opik_metrics.text.chrf.ngrams import match_counts, small_match_counts
from tests.corpus import realistic_pairs
from tests.text.chrf_ter_inputs import items, random_text, seed

TOL = 1e-9


def assert_same(oracle_score, ours_result) -> None:
    assert ours_result.score == pytest.approx(oracle_score.score / 100, rel=0, abs=TOL)
    assert 0.0 <= ours_result.score <= 1.0


def stats_of(oracle: CHRF, hyp: str, refs: list[str]) -> list[int]:
    """sacrebleu's own statistics of the item (those of its best reference)."""
    return list(oracle._extract_corpus_statistics([hyp], [[r] for r in refs])[0])


OPTIONS = list(itertools.product([0, 2], [6, 3], [2, 1, 3], [False, True], [False, True], [False, True]))


@pytest.mark.parametrize("word_order,char_order,beta,lowercase,whitespace,eps_smoothing", OPTIONS)
@pytest.mark.parametrize("nrefs", [1, 2, 3])
def test_every_option_combination(word_order, char_order, beta, lowercase, whitespace, eps_smoothing, nrefs):
    options = dict(word_order=word_order, char_order=char_order, beta=beta, lowercase=lowercase,
                   whitespace=whitespace, eps_smoothing=eps_smoothing)
    oracle = CHRF(**options)
    scorer = CHRFScorer(**options)
    hyps, refs = items(seed(*options.values(), nrefs), 16, nrefs)
    batch = scorer.batch(hyps, refs)                        # one call: the numpy path
    for hyp, item_refs, in_batch in zip(hyps, refs, batch):
        want = oracle.sentence_score(hyp, item_refs)
        single = scorer.sentence_score(hyp, item_refs)      # one short item: the plain-Python path
        assert_same(want, single)
        assert_same(want, in_batch)
        assert list(single.statistics) == list(in_batch.statistics) == stats_of(oracle, hyp, item_refs)
    streams = [list(stream) for stream in zip(*refs)]
    assert_same(oracle.corpus_score(hyps, streams), scorer.corpus_score(hyps, refs))


def test_hundreds_of_pairs_with_defaults_and_chrf_plus_plus():
    preds, golds = realistic_pairs(250, seed=7)
    rng = random.Random(11)
    pairs = list(zip(preds, golds)) + [(random_text(rng, 15), random_text(rng, 15)) for _ in range(250)]
    hyps = [h for h, _ in pairs]
    refs = [[r] for _, r in pairs]
    for word_order in (0, 2):
        oracle, scorer = CHRF(word_order=word_order), CHRFScorer(word_order=word_order)
        scores = []
        for (hyp, ref), result in zip(pairs, scorer.batch(hyps, refs)):
            want = oracle.sentence_score(hyp, [ref])
            assert_same(want, result)
            assert scorer.sentence_score(hyp, ref) == scorer.sentence_score(hyp, [ref])   # a lone str is one ref
            scores.append(result.score)
        assert sum(s > 0 for s in scores) > 300 and len(set(scores)) > 300      # not a vacuous comparison
        assert_same(oracle.corpus_score(hyps, [[r[0] for r in refs]]), scorer.corpus_score(hyps, refs))


def test_variable_number_of_references_and_none_padding():
    rng = random.Random(3)
    preds, golds = realistic_pairs(60, seed=9)
    refs = [[gold] + [random_text(rng, 20) for _ in range(rng.randint(0, 3))] for gold in golds]
    width = max(map(len, refs))
    streams = [[item[j] if j < len(item) else None for item in refs] for j in range(width)]
    assert_same(CHRF(word_order=2).corpus_score(preds, streams), CHRFScorer(word_order=2).corpus_score(preds, refs))
    padded = [item + [None] * (width - len(item)) for item in refs]
    oracle, scorer = CHRF(), CHRFScorer()
    for hyp, item in zip(preds, padded):
        assert_same(oracle.sentence_score(hyp, item), scorer.sentence_score(hyp, item))


def test_best_reference_is_the_first_of_the_highest():
    oracle, scorer = CHRF(), CHRFScorer()
    hyp, refs = "the cat sat", ["a dog ran", "the cat sat", "the cat sat"]
    result = scorer.sentence_score(hyp, refs)
    assert result.reference == 1 and result.score == 1.0
    assert list(result.statistics) == stats_of(oracle, hyp, refs)


EDGE_CASES = [
    ("", ["the cat"]), ("the cat", [""]), ("", [""]), ("   \t", [" "]), ("a", ["a"]), ("ab", ["ba"]),
    ("aaaaaaa", ["aa"]), ("İstanbul", ["istanbul"]), ("ＡＢＣ", ["ABC"]), ("😀😀", ["😀"]), ("(hi)", ["(hi)"]),
    ("a , b", ["a, b"]), ("hello world", ["", "hello  world", "hello world"]), ("x" * 300, ["x" * 299]),
    ("\x00a\x00", ["\x00a"]), ("a\u00a0b", ["a b"]), ("a\u200bb", ["ab"]),
]


@pytest.mark.parametrize("hyp,refs", EDGE_CASES)
@pytest.mark.parametrize("options", [{}, {"word_order": 2}, {"eps_smoothing": True, "word_order": 2},
                                     {"whitespace": True, "lowercase": True}, {"char_order": 1, "beta": 0}])
def test_edge_cases(hyp, refs, options):
    oracle, scorer = CHRF(**options), CHRFScorer(**options)
    want = oracle.sentence_score(hyp, refs)
    assert_same(want, scorer.sentence_score(hyp, refs))
    assert_same(want, scorer.batch([hyp] * 40, [refs] * 40)[-1])            # numpy path
    assert_same(oracle.corpus_score([hyp, "x"], [[refs[0], "y"]]), scorer.corpus_score([hyp, "x"], [refs[0], "y"]))


def test_eps_smoothing_gives_sacrebleus_tiny_values_for_empty_text():
    # no n-gram on either side: every order scores eps = 1e-16, so chrF is 1e-16 rather than 0
    for hyp, ref in (("", ""), ("ab", ""), ("", "abc")):
        want = CHRF(eps_smoothing=True).sentence_score(hyp, [ref]).score / 100
        got = CHRFScorer(eps_smoothing=True).sentence_score(hyp, ref).score
        assert got == pytest.approx(want, rel=1e-12) and 0 < got < 1e-15


@pytest.mark.parametrize("options", [{}, {"word_order": 2, "beta": 3, "eps_smoothing": True}])
def test_corpus_formula_equals_sacrebleus_compute_from_statistics(options):
    oracle, scorer = CHRF(**options), CHRFScorer(**options)
    hyps, refs = items(5, 40, 2)
    streams = [list(s) for s in zip(*refs)]
    stats = oracle._extract_corpus_statistics(hyps, streams)
    total = [sum(column) for column in zip(*stats)]
    assert [list(r.statistics) for r in scorer.batch(hyps, refs)] == [list(s) for s in stats]
    value = chrf_from_statistics(total, char_order=6, word_order=options.get("word_order", 0),
                                 beta=options.get("beta", 2), eps_smoothing=options.get("eps_smoothing", False))
    assert value == pytest.approx(oracle._compute_score_from_stats(total).score / 100, rel=0, abs=TOL)
    assert scorer.compute(total).score == value


# -- the counting paths agree, and their fallbacks -------------------------------------------------

def _wide_text(rng: random.Random, length: int) -> str:
    return "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(length))


@pytest.mark.parametrize("char_order,word_order", [(6, 2), (12, 3), (1, 1), (20, 0)])
def test_large_alphabets_split_the_rows_or_count_with_counters(char_order, word_order):
    # thousands of distinct CJK characters: the 64-bit keys cannot hold the whole batch, so rows
    # are split; with char_order 12 or 20 not even one row fits and Counters count it
    rng = random.Random(char_order)
    hyps, refs = [], []
    for i in range(30):
        base = _wide_text(rng, rng.randint(0, 120)) + " ".join(rng.choice(["a", "b", "c"]) for _ in range(5))
        other = list(base)
        for _ in range(rng.randint(0, 10)):
            if other:
                other[rng.randrange(len(other))] = _wide_text(rng, 1)
        hyps.append(base)
        refs.append(["".join(other), _wide_text(rng, 2000)] if i == 7 else ["".join(other)])
    oracle = CHRF(char_order=char_order, word_order=word_order)
    scorer = CHRFScorer(char_order=char_order, word_order=word_order)
    for hyp, item, result in zip(hyps, refs, scorer.batch(hyps, refs)):
        want = oracle.sentence_score(hyp, item)
        assert_same(want, result)
        assert list(result.statistics) == stats_of(oracle, hyp, item)


def test_numpy_and_python_paths_give_the_same_statistics(monkeypatch):
    hyps, refs = items(21, 120, 1)
    flat = [r[0] for r in refs]
    for options in ({}, {"word_order": 2, "whitespace": True}, {"char_order": 9, "lowercase": True}):
        scorer = CHRFScorer(**options)
        monkeypatch.setattr(chrf_scorer, "SMALL_BATCH", 0)
        vectorised = scorer.row_statistics(hyps, flat)
        monkeypatch.setattr(chrf_scorer, "SMALL_BATCH", 10 ** 9)
        plain = scorer.row_statistics(hyps, flat)
        assert isinstance(vectorised, np.ndarray) and np.array_equal(vectorised, plain)


def test_match_counts_on_integer_symbols_against_counters():
    rng = random.Random(4)
    rows = [([rng.randrange(1, 6) for _ in range(rng.randint(0, 25))],
             [rng.randrange(1, 6) for _ in range(rng.randint(0, 25))]) for _ in range(200)]
    hyp_codes = np.array([c for h, _ in rows for c in h], dtype=np.int64)
    ref_codes = np.array([c for _, r in rows for c in r], dtype=np.int64)
    got = match_counts(hyp_codes, np.array([len(h) for h, _ in rows]),
                       ref_codes, np.array([len(r) for _, r in rows]), 5)
    as_words = lambda symbols: [f"w{c}" for c in symbols]  # noqa: E731
    want = small_match_counts([as_words(h) for h, _ in rows], [as_words(r) for _, r in rows], 5)
    assert got.tolist() == want


# -- signatures -------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [{}, {"word_order": 2}, {"lowercase": True, "whitespace": True},
                                     {"eps_smoothing": True, "char_order": 4}])
def test_signature_is_sacrebleus_then_ours(options):
    oracle = CHRF(**options)
    oracle.corpus_score(["a b c"], [["a b c"], ["a b"]])            # sacrebleu learns nrefs from its input
    assert CHRFScorer(**options).signature(nrefs=2) == f"{oracle.get_signature().format()}|opik_metrics:{ours()}"


def test_signature_names_a_beta_other_than_2():
    assert CHRFScorer().signature(nrefs=1) == (
        f"nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0|opik_metrics:{ours()}")
    assert "|beta:3|" in CHRFScorer(beta=3).signature()      # sacrebleu names it only in chrF3
    assert CHRFScorer(beta=2, word_order=2).sacrebleu_name == "chrF2++"
    assert CHRFScorer().signature(nrefs=None).fields.get("nrefs") is None

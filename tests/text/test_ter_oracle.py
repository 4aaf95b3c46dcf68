"""TERScorer against the oracle, sacrebleu 2.6.0 (``sacrebleu.metrics.TER`` and its tercom port
``sacrebleu.metrics.lib_ter.translation_edit_rate``): every option combination, 1-3 references,
hundreds of random, unicode and realistic pairs, sentence and corpus; the edit search on random
word lists, with the exact beam edit distance forced, past the band's bound, with very different
lengths and up to the 1000-candidate limit."""
from __future__ import annotations

import itertools
import random

import pytest
from sacrebleu.metrics import TER, lib_ter

from opik_metrics.core.versions import ours
from opik_metrics.text.ter import TERScorer, edits, ter_from_statistics, translation_edit_rate
from tests.corpus import realistic_pairs
from tests.text.chrf_ter_inputs import items, random_text, seed

TOL = 1e-9
OPTION_NAMES = ("normalized", "no_punct", "asian_support", "case_sensitive")


def assert_same(oracle_score, ours_result) -> None:
    assert ours_result.score == pytest.approx(oracle_score.score / 100, rel=0, abs=TOL)
    assert ours_result.num_edits == oracle_score.num_edits
    assert ours_result.ref_length == pytest.approx(oracle_score.ref_length, rel=1e-15)


@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=4)))
@pytest.mark.parametrize("nrefs", [1, 2, 3])
def test_every_option_combination(flags, nrefs):
    options = dict(zip(OPTION_NAMES, flags))
    oracle, scorer = TER(**options), TERScorer(**options)
    hyps, refs = items(seed(*flags, nrefs), 12, nrefs)
    for hyp, item_refs, result in zip(hyps, refs, scorer.batch(hyps, refs)):
        want = oracle.sentence_score(hyp, item_refs)
        assert_same(want, result)
        assert_same(want, scorer.sentence_score(hyp, item_refs))
    streams = [list(stream) for stream in zip(*refs)]
    assert_same(oracle.corpus_score(hyps, streams), scorer.corpus_score(hyps, refs))


def test_hundreds_of_pairs_with_defaults():
    preds, golds = realistic_pairs(120, seed=7)
    rng = random.Random(11)
    pairs = list(zip(preds, golds)) + [(random_text(rng, 20), random_text(rng, 20)) for _ in range(300)]
    oracle, scorer = TER(), TERScorer()
    scores = []
    for hyp, ref in pairs:
        result = scorer.sentence_score(hyp, ref)           # a lone str is one reference
        assert_same(oracle.sentence_score(hyp, [ref]), result)
        scores.append(result.score)
    assert sum(s > 0 for s in scores) > 300 and len(set(scores)) > 100    # not a vacuous comparison
    hyps = [h for h, _ in pairs]
    assert_same(oracle.corpus_score(hyps, [[r for _, r in pairs]]), scorer.corpus_score(hyps, [r for _, r in pairs]))


def test_variable_number_of_references_and_none_padding():
    rng = random.Random(3)
    preds, golds = realistic_pairs(40, seed=9)
    refs = [[gold] + [random_text(rng, 20) for _ in range(rng.randint(0, 3))] for gold in golds]
    width = max(map(len, refs))
    streams = [[item[j] if j < len(item) else None for item in refs] for j in range(width)]
    assert_same(TER().corpus_score(preds, streams), TERScorer().corpus_score(preds, refs))
    padded = [item + [None] * (width - len(item)) for item in refs]
    for hyp, item in zip(preds[:10], padded):
        assert_same(TER().sentence_score(hyp, item), TERScorer().sentence_score(hyp, item))


EDGE_CASES = [
    ("", ["the cat"]), ("the cat", [""]), ("", [""]), ("  \t ", ["   "]), ("a", ["a"]), ("a b", ["b a"]),
    ("a b c d", ["c d a b"]), ("The CAT", ["the cat"]), ("hello,world", ["hello world"]),
    ("猫在垫子上。", ["猫 在 垫子 上 。"]), ("x y", ["", "x", "x y z"]), ("a " * 40, ["a " * 3]),
    ("&quot;hi&quot; - 5-3", ['"hi" - 5 - 3']), ("line one\n-two", ["line onetwo"]),
]


@pytest.mark.parametrize("hyp,refs", EDGE_CASES)
@pytest.mark.parametrize("flags", [(False,) * 4, (True, True, True, False), (True, False, False, True),
                                   (False, True, True, True)])
def test_edge_cases(hyp, refs, flags):
    options = dict(zip(OPTION_NAMES, flags))
    oracle, scorer = TER(**options), TERScorer(**options)
    assert_same(oracle.sentence_score(hyp, refs), scorer.sentence_score(hyp, refs))
    assert_same(oracle.corpus_score([hyp, "x"], [[refs[0], "y"]]), scorer.corpus_score([hyp, "x"], [refs[0], "y"]))


def test_corpus_formula_equals_sacrebleus_compute_from_statistics():
    oracle, scorer = TER(), TERScorer()
    hyps, refs = items(5, 30, 3)
    stats = oracle._extract_corpus_statistics(hyps, [list(s) for s in zip(*refs)])
    assert [list(r.statistics) for r in scorer.batch(hyps, refs)] == [list(s) for s in stats]
    total = [sum(column) for column in zip(*stats)]
    assert ter_from_statistics(total) == pytest.approx(oracle._compute_score_from_stats(total).score / 100, abs=TOL)
    for degenerate in ([0, 0.0], [3, 0.0], [0, 2.5]):
        want = oracle._compute_score_from_stats(degenerate).score / 100
        assert ter_from_statistics(degenerate) == pytest.approx(want)


# -- the edit search itself ------------------------------------------------------------------------

def _word_lists(rng: random.Random, count: int, lengths: list[int]):
    vocab = "a b c d e f g h the of and x y z".split()
    for _ in range(count):
        words = vocab[:rng.randint(1, len(vocab))]
        hyp = [rng.choice(words) for _ in range(rng.choice(lengths))]
        if rng.random() < 0.5:                     # an edited copy: shifts pay off
            ref = list(hyp)
            for _ in range(rng.randint(0, 6)):
                op = rng.random()
                if op < 0.3 and ref:
                    del ref[rng.randrange(len(ref))]
                elif op < 0.6:
                    ref.insert(rng.randint(0, len(ref)), rng.choice(words))
                elif ref:
                    i, j, size = rng.randrange(len(ref)), rng.randrange(len(ref)), rng.randint(1, 4)
                    block = ref[i:i + size]
                    del ref[i:i + size]
                    ref[j:j] = block
        else:
            ref = [rng.choice(words) for _ in range(rng.choice(lengths))]
        yield hyp, ref


def test_edit_search_on_random_word_lists():
    rng = random.Random(1)
    for hyp, ref in _word_lists(rng, 600, [0, 1, 2, 3, 5, 8, 13, 20, 30]):
        assert translation_edit_rate(hyp, ref) == lib_ter.translation_edit_rate(hyp, ref)


def test_exact_beam_edit_distance_when_forced(monkeypatch):
    # the bound made useless: every distance and alignment comes from the cell-by-cell programme
    original = edits._BandBound.__init__

    def no_bound(self, n_h, n_r):
        original(self, n_h, n_r)
        self.least_outside = 0

    monkeypatch.setattr(edits._BandBound, "__init__", no_bound)
    rng = random.Random(2)
    for hyp, ref in _word_lists(rng, 250, [0, 1, 2, 5, 8, 13, 20, 30]):
        assert translation_edit_rate(hyp, ref) == lib_ter.translation_edit_rate(hyp, ref)


@pytest.mark.parametrize("n_hyp,n_ref", [(60, 60), (70, 40), (30, 80), (1, 110), (2, 130), (110, 3)])
def test_long_and_lopsided_pairs_where_the_band_matters(n_hyp, n_ref):
    # beyond 25 words the beam no longer covers the whole row; a reference over 50 times longer
    # than the hypothesis widens the beam (sacrebleu's ceil(ratio / 2 + 25))
    rng = random.Random(n_hyp * 1000 + n_ref)
    vocab = "a b c d e f g h i j k".split()
    for _ in range(3):
        hyp = [rng.choice(vocab) for _ in range(n_hyp)]
        ref = [rng.choice(vocab) for _ in range(n_ref)]
        assert translation_edit_rate(hyp, ref) == lib_ter.translation_edit_rate(hyp, ref)
        near = hyp[:n_ref] + [rng.choice(vocab) for _ in range(max(0, n_ref - n_hyp))]
        rng.shuffle(near[: len(near) // 3])
        assert translation_edit_rate(hyp, near) == lib_ter.translation_edit_rate(hyp, near)


def test_the_candidate_limit_cuts_where_sacrebleus_does():
    # a small vocabulary and long, scrambled sentences: over 1000 shift candidates in a round
    rng = random.Random(5)
    hit = 0
    for _ in range(4):
        hyp = [rng.choice("abc") for _ in range(70)]
        ref = list(hyp)
        for _ in range(12):
            i, j = rng.randrange(70), rng.randrange(70)
            ref[i:i + 3], ref[j:j + 3] = ref[j:j + 3], ref[i:i + 3]
        search = edits._ShiftSearch(ref, len(hyp))
        if search.best_shift(hyp, 0)[2] >= edits.MAX_SHIFT_CANDIDATES:
            hit += 1
        assert translation_edit_rate(hyp, ref) == lib_ter.translation_edit_rate(hyp, ref)
    assert hit                                   # the limit was reached, not only approached


# -- signatures -------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=4)))
def test_signature_is_sacrebleus_then_ours(flags):
    options = dict(zip(OPTION_NAMES, flags))
    oracle = TER(**options)
    oracle.corpus_score(["a b c", "d"], [["a b c", "d"], ["a b", None]])    # variable number of references
    assert TERScorer(**options).signature(nrefs="var") == f"{oracle.get_signature().format()}|opik_metrics:{ours()}"
    assert TERScorer(**options).signature(nrefs=None).fields.get("nrefs") is None

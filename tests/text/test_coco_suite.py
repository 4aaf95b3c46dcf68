"""The COCO caption suite equals pycocoevalcap's Bleu(4), Meteor() (its jar, where Java is),
Rouge() and Cider() per item and for the corpus, to 1e-9 (tokenised captions; raw ones through the
PTB jar), plus BLEU and ROUGE_L by hand."""
import math

import pytest

from opik_metrics.text.coco import FIELDS, KEYS, CocoSuite, bleu_statistics, bleu_values, coco_from_statistics, coco_rouge_l
from tests.captions import caption_sets
from tests.text.cider_oracle import oracle_coco, simple_tokens

TOL = 1e-9


def _check(cands, refs, suite, raw_cands=None, raw_refs=None):
    want = oracle_coco(cands, refs)
    items = suite.score(raw_cands or cands, raw_refs or refs)
    total = [sum(col) for col in zip(*(i.statistics for i in items))]
    assert set(want) <= set(KEYS) and len(want) >= len(KEYS) - 1       # METEOR's oracle needs Java
    for key in want:
        corpus, per_item = want[key]
        assert [i.values[key] for i in items] == pytest.approx(per_item, abs=TOL), key
        assert coco_from_statistics(total, key=key) == pytest.approx(corpus, abs=TOL), key


@pytest.mark.parametrize("images, refs_per_image, seed", [(1, 1, 0), (2, 3, 1), (30, 5, 2), (250, 5, 3), (40, 1, 4)])
def test_tokenised_captions_equal_pycocoevalcap(images, refs_per_image, seed):
    cands, refs = caption_sets(images, refs_per_image, seed)
    cands, refs = [simple_tokens(c) for c in cands], [[simple_tokens(r) for r in rs] for rs in refs]
    if images > 3:
        cands[1], refs[2] = "dog dog dog", ["a", "the dog on a long winding road near the sea"]
    _check(cands, refs, CocoSuite(tokenize="none"))


def test_raw_captions_through_the_ptb_tokenisation_equal_pycocoevalcap_with_its_jar():
    from tests.coco_oracle import jar_tokenize, require_java
    require_java()
    cands, refs = caption_sets(120, 5, seed=13)
    cands[0] = "A man's \"red\" hat (and coat) -- isn't it nice?"
    flat = [*cands, *(r for rs in refs for r in rs)]
    tok = dict(zip(flat, jar_tokenize(flat)))
    _check([tok[c] for c in cands], [[tok[r] for r in rs] for rs in refs], CocoSuite(), cands, refs)


def test_bleu_by_hand():
    stats = bleu_statistics("a b c".split(), ["a b d".split(), "x y".split()])
    assert stats == [3, 3, 3, 2, 1, 0, 2, 1, 0, 0]          # closest reference length 3; 2 unigrams, 1 bigram match
    b1, b2, b3, b4 = bleu_values(stats)
    assert b1 == pytest.approx(2 / 3) and b2 == pytest.approx(math.sqrt(2 / 3 * 1 / 2))
    assert b3 == pytest.approx((1 / 3 * 1e-15 / (1 + 1e-9)) ** (1 / 3))    # pycocoevalcap's guards, not smoothing
    short = bleu_values(bleu_statistics("a b".split(), ["a b c d".split()]))
    assert short[0] == pytest.approx(math.exp(1 - 4 / 2))                   # brevity penalty, all matched


def test_closest_reference_length_ties_to_the_shorter():
    assert bleu_statistics("a b c".split(), ["a b".split(), "a b c d".split()])[1] == 2


def test_rouge_l_by_hand():
    # LCS("a b c d", "a c e") = 2: P = 2/3, R = 2/4; F_beta with beta 1.2
    p, r = 2 / 3, 2 / 4
    assert coco_rouge_l("a c e".split(), ["a b c d".split()]) == pytest.approx((1 + 1.44) * p * r / (r + 1.44 * p))
    # best precision and best recall are taken from different references
    value = coco_rouge_l("a b".split(), ["a b c d e f".split(), "a x".split()])
    assert value == pytest.approx((1 + 1.44) * 1.0 * 0.5 / (0.5 + 1.44 * 1.0))
    assert coco_rouge_l([], ["a".split()]) == 0.0


def test_statistics_fields_and_corpus_means():
    items = CocoSuite(tokenize="none").score(["a b", "c d"], [["a b"], ["c e"]])
    assert all(len(i.statistics) == len(FIELDS) and i.statistics[-1] == 1 for i in items)
    total = [sum(col) for col in zip(*(i.statistics for i in items))]
    # ROUGE_L by hand: 1.0 for the exact match; "c d" vs "c e": LCS 1, P = R = 1/2, F = 1/2
    assert coco_from_statistics(total, key="ROUGE_L") == pytest.approx((1.0 + 0.5) / 2)
    # corpus BLEU-1 from summed counts: 3 of 4 unigrams match, lengths equal
    assert coco_from_statistics(total, key="Bleu_1") == pytest.approx((3 + 1e-15) / (4 + 1e-9))


def test_without_meteor_the_suite_has_its_other_keys():
    suite = CocoSuite(tokenize="none", meteor=False)
    (item,) = suite.score(["a dog runs"], [["a dog is running"]])
    assert suite.keys == tuple(k for k in KEYS if k != "METEOR") and list(item.values) == list(suite.keys)
    assert len(item.statistics) == len(FIELDS) and "meteor:off" in str(suite.signature())


def test_an_empty_output_says_why_under_every_key():
    (item,) = CocoSuite(tokenize="none").score([""], [["a dog"]])
    assert set(item.reasons) == set(KEYS) and all(v == 0.0 for v in item.values.values())
    assert "output has no tokens" in item.reasons["Bleu_4"]

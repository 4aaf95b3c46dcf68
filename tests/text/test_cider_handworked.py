"""CIDEr-D worked by hand from its formula: tf-idf with idf = log(N) - log(df), clipped cosine
per order, the Gaussian penalty on the bigram count, the mean over 4 orders, x10."""
import math

import pytest

from opik_metrics.text.cider import CiderD, DocumentFrequency

L = math.log(2)   # two images: every n-gram seen in one of them weighs log(2) - log(1)


def _score(cands, refs):
    return [item.value for item in CiderD(tokenize="none").score(cands, refs)]


def test_an_exact_match_scores_two_orders_of_four():
    # "a b" vs "a b": orders 1 and 2 have cosine 1, orders 3 and 4 have no n-grams: (1 + 1 + 0 + 0) / 4 * 10
    assert _score(["a b", "c d"], [["a b"], ["x y"]])[0] == pytest.approx(5.0, abs=1e-12)


def test_order_one_is_the_unigram_cosine_alone():
    # n=1: "a b" vs "a b" is cosine 1 (x10); and no length penalty is counted (no bigram order)
    values = [i.value for i in CiderD(n=1, tokenize="none").score(["a b", "c"], [["a b"], ["c d"]])]
    assert values == pytest.approx([10.0, 10 / math.sqrt(2)], abs=1e-12)


def test_a_shorter_caption_pays_the_length_penalty():
    # "c" vs "c d": unigram cosine L*L / (L * sqrt(2) L) = 1/sqrt(2); no bigram; 0 vs 1 bigram: exp(-1/72)
    value = _score(["a b", "c"], [["a b"], ["c d"]])[1]
    assert value == pytest.approx(10 * (1 / math.sqrt(2)) * math.exp(-1 / 72) / 4, abs=1e-12)


def test_repeated_ngrams_are_clipped_to_the_references_weight():
    # "a a": unigram weight 2L, clipped to the reference's L: L*L / (2L * sqrt(2) L) = 1/(2 sqrt 2);
    # its bigram (a, a) is unseen, weighs log(2) but matches nothing
    value = _score(["a a", "c d"], [["a b"], ["c d"]])[0]
    assert value == pytest.approx(10 * (1 / (2 * math.sqrt(2))) / 4, abs=1e-12)


def test_several_references_are_averaged():
    both = _score(["a b", "c d"], [["a b", "c d"], ["c d"]])[0]
    # image 0's references hold a, b, c, d; image 1's hold c, d: idf(a, b) = L, idf(c, d) = 0
    # vs "a b": 2 orders at cosine 1 -> 5.0; vs "c d": no shared n-gram -> 0; mean over references
    assert both == pytest.approx(2.5, abs=1e-12)


def test_one_image_alone_scores_zero_and_says_why():
    (item,) = CiderD(tokenize="none").score(["a dog runs"], [["a dog runs fast"]])
    assert item.value == 0.0 and "fitted on 1 image" in item.reason and "df_references" in item.reason


def test_empty_output_and_empty_references_say_why():
    items = CiderD(tokenize="none").score(["", "a b"], [["a b"], [""]])
    assert items[0].value == 0.0 and "output has no tokens" in items[0].reason
    assert items[1].value == 0.0 and "every reference is empty" in items[1].reason


def test_document_frequencies_add_up_like_a_fit_on_the_union():
    engine = CiderD(tokenize="none")
    refs = [["a b c", "a d"], ["b c"], ["a b", "e f g"]]
    whole = engine.fit(refs)
    summed = engine.fit(refs[:1]) + engine.fit(refs[1:])
    assert summed.images == whole.images == 3 and summed.counts == whole.counts
    assert summed.fingerprint() == whole.fingerprint() != engine.fit(refs[:2]).fingerprint()
    assert whole.counts[("a",)] == 2 and whole.counts[("b", "c")] == 2 and whole.counts[("a", "d")] == 1


@pytest.mark.parametrize("kwargs, message", [({"n": 0}, "n: expected"), ({"sigma": 0}, "sigma: expected"),
                                             ({"sigma": float("inf")}, "sigma: expected"),
                                             ({"tokenize": "13a"}, "tokenize: expected")])
def test_bad_options_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CiderD(**kwargs)


def test_an_empty_context_has_no_log_length():
    assert DocumentFrequency().ref_len == 0.0

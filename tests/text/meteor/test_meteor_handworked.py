"""Meteor by hand: each expected value is worked out here from the formula of Meteor 1.3+ (rank task,
English: alpha 0.85, beta 0.2, gamma 0.6, delta 0.75; module weights exact 1, stem 0.6, synonym
0.8, paraphrase 0.6), from the matches the alignment must find, not from the code under test.

    P = sum_m w_m (delta * content matches_m + (1 - delta) * function matches_m)    [output side]
        / (delta * content words + (1 - delta) * function words)                      [output]
    R = the same on the reference side
    Fmean = P R / (alpha P + (1 - alpha) R)
    penalty = gamma * (chunks / mean(words matched in output, in reference)) ** beta
              (0 when both sides are matched whole in one chunk)
    score = Fmean * (1 - penalty)
"""
import pytest

from opik_metrics.text.meteor import MeteorDataError, MeteorScorer

ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75
EXACT, STEM, SYNONYM, PARAPHRASE = 1.0, 0.6, 0.8, 0.6


@pytest.fixture(scope="module")
def scorer():
    try:
        return MeteorScorer()
    except MeteorDataError as exc:
        pytest.skip(str(exc))


def f_mean(p, r):
    return p * r / (ALPHA * p + (1 - ALPHA) * r)


def penalty(chunks, matched_output, matched_reference):
    return GAMMA * (chunks / ((matched_output + matched_reference) / 2)) ** BETA


def test_identical_sentences_score_one(scorer):
    seg = scorer.score("the cat sat", ["the cat sat"])
    assert seg.score == pytest.approx(1.0)
    assert seg.chunks == 1 and seg.fragmentation == 0.0
    assert seg.matches == (3, 0, 0, 0)


def test_swapped_content_words(scorer):
    # "cat dog" against "dog cat": two exact content matches in two chunks; P = R = 1
    seg = scorer.score("cat dog", ["dog cat"])
    assert seg.precision == pytest.approx(1.0) and seg.recall == pytest.approx(1.0)
    assert seg.chunks == 2
    assert seg.fragmentation == pytest.approx(penalty(2, 2, 2))          # 0.6 * 1 ** 0.2
    assert seg.score == pytest.approx(1.0 * (1 - 0.6))


def test_function_words_weigh_one_minus_delta(scorer):
    # "the cat" / "the dog": only "the" (a function word) matches, on both sides
    p = (1 - DELTA) * EXACT / (DELTA * 1 + (1 - DELTA) * 1)                 # 0.25
    seg = scorer.score("the cat", ["the dog"])
    assert seg.precision == pytest.approx(p) and seg.recall == pytest.approx(p)
    assert seg.score == pytest.approx(f_mean(p, p) * (1 - penalty(1, 1, 1)))  # 0.25 * 0.4 = 0.1


def test_recall_weighs_more_than_precision(scorer):
    # "the" / "the cat": P = 0.25 / 0.25 = 1, R = 0.25 / (0.75 + 0.25) = 0.25
    p, r = 1.0, 0.25
    seg = scorer.score("the", ["the cat"])
    assert (seg.precision, seg.recall) == pytest.approx((p, r))
    assert seg.f_mean == pytest.approx(f_mean(p, r))                       # 1 / 3.55
    assert seg.score == pytest.approx(f_mean(p, r) * (1 - penalty(1, 1, 1)))


def test_stems(scorer):
    # "the dogs run" / "the dog runs": "the" exact (function), dogs~dog and run~runs stems (content);
    # everything matched in one chunk, so no penalty
    p = (DELTA * STEM * 2 + (1 - DELTA) * EXACT * 1) / (DELTA * 2 + (1 - DELTA) * 1)   # 1.15 / 1.75
    seg = scorer.score("the dogs run", ["the dog runs"])
    assert seg.matches == (1, 2, 0, 0)
    assert seg.fragmentation == 0.0
    assert seg.score == pytest.approx(f_mean(p, p))


def test_a_paraphrase_of_several_words(scorer):
    # "he is in front of the house" / "he is before the house": he, is (function) and house
    # (content) exact; "in front of the" ~ "before the" from the paraphrase table: output side
    # front (content) + in, of, the (function), reference side before (content) + the (function)
    p = (DELTA * (EXACT * 1 + PARAPHRASE * 1) + (1 - DELTA) * (EXACT * 2 + PARAPHRASE * 3)) / \
        (DELTA * 2 + (1 - DELTA) * 5)                                         # 2.15 / 2.75
    r = (DELTA * (EXACT * 1 + PARAPHRASE * 1) + (1 - DELTA) * (EXACT * 2 + PARAPHRASE * 1)) / \
        (DELTA * 2 + (1 - DELTA) * 3)                                         # 1.85 / 2.25
    seg = scorer.score("he is in front of the house", ["he is before the house"])
    assert seg.matches == (3, 0, 0, 4)
    assert (seg.precision, seg.recall) == pytest.approx((p, r))
    assert seg.score == pytest.approx(f_mean(p, r))                        # one chunk, all matched


def test_a_lone_synonym_that_is_also_a_paraphrase_is_not_matched(scorer):
    # The jar's search scores stem/synonym/paraphrase matches at weight 0.5 in integer fields, so a
    # one-word match adds 0 to a path, and the path that skips it has one chunk fewer. A match is
    # kept anyway when it is its word's only candidate; "car" ~ "automobile" is both a synonym
    # and a paraphrase, so neither is forced and the empty alignment wins: the score is 0.
    seg = scorer.score("car", ["automobile"])
    assert seg.matches == (0, 0, 0, 0) and seg.score == 0.0
    # a synonym with no competing candidate is kept ("the" exact, "car" ~ "machine" a synonym)
    p = (DELTA * SYNONYM * 1 + (1 - DELTA) * EXACT * 1) / (DELTA * 1 + (1 - DELTA) * 1)     # 0.85
    seg = scorer.score("the car", ["the machine"])
    assert seg.matches == (1, 0, 1, 0)
    assert seg.score == pytest.approx(f_mean(p, p))


def test_the_best_reference_is_the_first_of_the_highest_score(scorer):
    assert scorer.score("cat dog", ["dog cat", "cat dog"]).reference == 1
    assert scorer.score("cat dog", ["cat dog", "cat dog"]).reference == 0
    assert scorer.score("cat dog", ["x", "y"]).reference == 0                 # all 0: the first


def test_empty_output_or_reference_scores_zero(scorer):
    for output, ref in (("", "a cat"), ("a cat", ""), ("", "")):
        seg = scorer.score(output, [ref])
        assert seg.score == 0.0 and seg.chunks == 0


def test_corpus_score_sums_statistics_and_drops_chunks_of_whole_matches(scorer):
    # "the cat sat" (identical: 2 content + 1 function matched, 1 chunk, matched whole) and
    # "cat dog" / "dog cat" (2 content, 2 chunks). Summed: P = R = 1 (every word matched), 10 words
    # matched in all, and chunks = 2 only: the whole match adds none.
    segments = [scorer.score("the cat sat", ["the cat sat"]), scorer.score("cat dog", ["dog cat"])]
    expected = 1.0 * (1 - penalty(2, 5, 5))                                 # 1 - 0.6 * 0.4 ** 0.2
    assert scorer.corpus_score(segments) == pytest.approx(expected)
    assert scorer.corpus_score(segments) != pytest.approx(sum(s.score for s in segments) / 2)
    assert scorer.corpus_score([s.statistics for s in segments]) == pytest.approx(expected)


def test_normalisation_tokens(scorer):
    assert scorer.tokens("The U.S.-based Mr. Smith's dog, (aged 3,000) ran... fast.") == [
        "the", "us", "based", "mr.", "smith", "'s", "dog", ",", "(", "aged", "3,000", ")", "ran", "...", "fast", "."]
    assert scorer.tokens("“Quoted” ‘text’ – and -- dashes") == ['"', "quoted", '"', "'", "text", "'", "-", "and",
                                                                 "-", "dashes"]


def test_signature(scorer):
    sig = scorer.signature
    assert sig.startswith("meteor-1.5|lang:en|norm:yes|modules:exact,stem,synonym,paraphrase|")
    assert "params:0.85,0.2,0.6,0.75" in sig and "weights:1,0.6,0.8,0.6" in sig
    assert sig.fields["beam"] == 40

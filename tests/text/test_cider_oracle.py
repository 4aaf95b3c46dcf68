"""CIDEr-D equals pycocoevalcap's ``Cider`` per item and for the corpus, to 1e-9: on tokenised
captions (no Java needed) and on raw captions through its PTB tokenisation (the jar runs)."""
import pytest

from opik_metrics.text.cider import CiderD
from tests.captions import caption_sets
from tests.text.cider_oracle import oracle_cider, simple_tokens

TOL = 1e-9


def _tokenised(images, refs_per_image, seed):
    cands, refs = caption_sets(images, refs_per_image, seed)
    return [simple_tokens(c) for c in cands], [[simple_tokens(r) for r in rs] for rs in refs]


@pytest.mark.parametrize("images, refs_per_image, seed", [
    (2, 1, 0), (3, 5, 1), (10, 2, 2), (50, 5, 3), (200, 3, 4), (400, 5, 5), (25, 1, 6), (60, 7, 7)])
def test_tokenised_captions_equal_pycocoevalcap(images, refs_per_image, seed):
    cands, refs = _tokenised(images, refs_per_image, seed)
    corpus, per_item = oracle_cider(cands, refs)
    ours = CiderD(tokenize="none").score(cands, refs)
    assert [o.value for o in ours] == pytest.approx(per_item, abs=TOL)
    assert sum(o.value for o in ours) / len(ours) == pytest.approx(corpus, abs=TOL)


def test_varying_reference_counts_repeats_and_empty_captions():
    cands, refs = _tokenised(80, 4, 11)
    refs = [rs[: 1 + k % 4] for k, rs in enumerate(refs)]
    cands[3] = "a a a a a a dog dog"            # clipping: repeats earn no more than the reference
    cands[4] = "dog"                            # shorter than every bigram
    cands[5] = ""                               # nothing to score
    refs[6] = ["a", "the dog"]                  # one-word reference
    corpus, per_item = oracle_cider(cands, refs)
    ours = CiderD(tokenize="none").score(cands, refs)
    assert [o.value for o in ours] == pytest.approx(per_item, abs=TOL)


@pytest.mark.parametrize("sigma", [1.0, 3.0, 10.0])
def test_other_sigmas(sigma):
    # pycocoevalcap's own n option is broken (its n-gram counts stop at 4; n < 4 raises IndexError), so
    # only sigma is compared here; other orders are checked by hand in test_cider_handworked.py
    from pycocoevalcap.cider.cider import Cider
    cands, refs = _tokenised(40, 3, 21)
    _, per_item = Cider(sigma=sigma).compute_score({i: r for i, r in enumerate(refs)},
                                                   {i: [c] for i, c in enumerate(cands)})
    ours = CiderD(sigma=sigma, tokenize="none").score(cands, refs)
    assert [o.value for o in ours] == pytest.approx(list(per_item), abs=TOL)


def test_a_subset_scored_with_the_whole_sets_frequencies_equals_the_whole_sets_values():
    cands, refs = _tokenised(120, 5, 8)
    engine = CiderD(tokenize="none")
    _, per_item = oracle_cider(cands, refs)
    df = engine.fit(refs)
    part = engine.score(cands[30:45], refs[30:45], df)
    assert [o.value for o in part] == pytest.approx(per_item[30:45], abs=TOL)


def test_raw_captions_through_the_ptb_tokenisation_equal_pycocoevalcap_with_its_jar():
    from tests.coco_oracle import jar_tokenize, require_java
    require_java()
    cands, refs = caption_sets(150, 5, seed=9)
    cands[0] = 'A "quoted" dog, running (fast) -- on the grass... isn\'t it?'
    refs[1] = ["The man's hat is red.", "Two dogs; one cat: all asleep!"]
    flat = [*cands, *(r for rs in refs for r in rs)]
    tokenised = dict(zip(flat, jar_tokenize(flat)))
    corpus, per_item = oracle_cider([tokenised[c] for c in cands], [[tokenised[r] for r in rs] for rs in refs])
    ours = CiderD(tokenize="ptb").score(cands, refs)
    assert [o.value for o in ours] == pytest.approx(per_item, abs=TOL)
    assert sum(o.value for o in ours) / len(ours) == pytest.approx(corpus, abs=TOL)

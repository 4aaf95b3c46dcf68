"""BLEU as an Opik metric: values equal to sacrebleu (/100), corpus score, reasons, errors."""
import pytest
import sacrebleu

from tests.corpus import realistic_pairs
from opik_metrics import BLEU
from opik_metrics.core.inputs import MetricInputError


def test_sentence_bleu_equals_sacrebleu_with_metadata():
    preds, refs = realistic_pairs(150, seed=11)
    _, refs2 = realistic_pairs(150, seed=12)
    m = BLEU(track=False)
    for p, r, r2 in zip(preds, refs, refs2):
        (res,) = m.score(output=p, reference=[r, r2])
        want = sacrebleu.sentence_bleu(p, [r, r2])
        assert res.name == "bleu"
        assert res.value == pytest.approx(want.score / 100, rel=1e-12, abs=1e-15)
        assert res.metadata["bp"] == pytest.approx(want.bp, rel=1e-12)
        assert res.metadata["sys_len"] == want.sys_len and res.metadata["ref_len"] == want.ref_len
        assert res.metadata["counts"] == list(want.counts) and res.metadata["totals"] == list(want.totals)
    assert "nrefs:2" in res.metadata["signature"] and "tok:13a" in res.metadata["signature"]


@pytest.mark.parametrize("opts", [dict(tokenize="intl", lowercase=True), dict(smooth_method="floor", smooth_value=0.2),
                                  dict(smooth_method="add-k"), dict(smooth_method="none", effective_order=False)])
def test_options_map_to_sacrebleu(opts):
    preds, refs = realistic_pairs(60, seed=5)
    m = BLEU(track=False, **opts)
    oracle = sacrebleu.BLEU(**{"effective_order": True, **opts})
    for p, r in zip(preds, refs):
        assert m.score(p, r)[0].value == pytest.approx(oracle.sentence_score(p, [r]).score / 100, rel=1e-12, abs=1e-15)


def test_corpus_bleu_equals_sacrebleu_and_is_not_the_mean():
    preds, refs = realistic_pairs(200, seed=2)
    m = BLEU(track=False)
    corpus = m.corpus_score(preds, refs)
    want = sacrebleu.corpus_bleu(preds, [refs])
    assert corpus.name == "corpus_bleu"
    assert corpus.value == pytest.approx(want.score / 100, rel=1e-12)
    mean = sum(r[0].value for r in m.score_batch(preds, refs)) / len(preds)
    assert abs(mean - corpus.value) > 1e-3


def test_weights_must_sum_to_one():
    with pytest.raises(ValueError, match="sum to 1"):
        BLEU(weights=[0.5, 0.5, 0.5, 0.0], track=False)
    (r,) = BLEU(weights=[1, 0, 0, 0], track=False).score("the cat sat on a mat", "the cat sat on the mat")
    # p1 = 5/6, same length so BP = 1: hand-worked
    assert r.value == pytest.approx(5 / 6)


def test_empty_output_is_zero_with_reason_and_errors_name_the_field():
    (r,) = BLEU(track=False).score("", "the cat")
    assert r.value == 0.0 and "output has no tokens" in r.reason
    with pytest.raises(MetricInputError, match="field 'reference'"):
        BLEU(track=False).score("a", None)
    with pytest.raises(MetricInputError, match="got 2 outputs but 1 references"):
        BLEU(track=False).corpus_score(["a", "b"], ["a"])


def test_statistics_equal_the_scored_items_and_corpus_is_their_sum():
    """The fast statistics path (engine counts, no sentence scores) gives what ``item_statistics``
    reads from ``score_batch``, for one and several references, and corpus_score is their sum."""
    preds, refs = realistic_pairs(120, seed=7)
    _, refs2 = realistic_pairs(120, seed=8)
    mixed = [r if i % 3 else [r, r2] for i, (r, r2) in enumerate(zip(refs, refs2))]
    for opts in ({}, dict(tokenize="intl", lowercase=True, max_ngram_order=3)):
        m = BLEU(track=False, **opts)
        stats = m.statistics(preds, mixed)
        assert stats == [m.item_statistics(results) for results in m.score_batch(preds, mixed)]
        corpus = m.corpus_score(preds, mixed)
        expected = m.from_statistics(sum(stats))
        assert corpus.value == expected.value and corpus.metadata["statistics"] == expected.metadata["statistics"]
    corpus = BLEU(track=False).corpus_score(preds, [[r, r2] for r, r2 in zip(refs, refs2)])
    assert corpus.value == pytest.approx(sacrebleu.corpus_bleu(preds, [refs, refs2]).score / 100, rel=1e-12)
    assert "nrefs:2" in corpus.metadata["signature"]
    with pytest.raises(MetricInputError, match="needs references"):
        BLEU(track=False).statistics(preds)
    with pytest.raises(MetricInputError, match="at least one item"):
        BLEU(track=False).corpus_score([], [])


def test_corpus_score_tokenises_each_text_once(monkeypatch):
    from opik_metrics.text.tokenizers import sacrebleu as tokenizers

    preds, refs = realistic_pairs(50, seed=9)
    seen = []
    original = tokenizers.tokenize_13a.__wrapped__      # uncached: every call is a tokenisation
    monkeypatch.setattr(tokenizers, "tokenize_13a", lambda line: seen.append(line) or original(line))
    m = BLEU(track=False)      # built after the patch: its token lister calls the counting tokeniser
    m.corpus_score(preds, refs)
    assert len(seen) == len(preds) + len(refs)

"""ROUGE as an Opik metric: names, values equal to rouge-score, reasons, errors, batch."""
import pytest
from rouge_score import rouge_scorer

from tests.corpus import realistic_pairs
from opik_metrics import ROUGE
from opik_metrics.core.inputs import MetricInputError


def as_dict(results):
    return {r.name: r.value for r in results}


def test_result_names_follow_the_guide():
    m = ROUGE(rouge_types=["rouge1", "rougeL", "rougeW", "rougeS4", "rougeSU4"], track=False)
    names = [r.name for r in m.score(output="a b c", reference="a b d")]
    assert names == [f"{t}_{p}" for t in ("rouge1", "rougeL", "rougeW", "rougeS4", "rougeSU4")
                     for p in ("precision", "recall", "f1")]


@pytest.mark.parametrize("stem", [False, True])
def test_values_equal_rouge_score_single_and_multi_reference(stem):
    preds, refs = realistic_pairs(120, seed=7)
    _, refs2 = realistic_pairs(120, seed=8)
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    ours = ROUGE(rouge_types=types, use_stemmer=stem, track=False)
    oracle = rouge_scorer.RougeScorer(types, use_stemmer=stem)
    for p, r, r2 in zip(preds, refs, refs2):
        got = as_dict(ours.score(output=p, reference=[r, r2]))
        want = oracle.score_multi([r, r2], p)
        for t in types:
            assert got[f"{t}_precision"] == want[t].precision
            assert got[f"{t}_recall"] == want[t].recall
            assert got[f"{t}_f1"] == want[t].fmeasure


@pytest.mark.parametrize("rouge155", [False, True])
def test_mean_over_references_per_item_and_its_corpus_score(rouge155):
    """multi_reference="mean" per item: the mean of the item scored against each reference alone (the
    metric itself with one reference, checked against rouge-score in tests/text); the corpus score stays
    from_statistics(sum of the items' statistics): the mean over items of those per-item means."""
    preds, refs = realistic_pairs(30, seed=12)
    _, refs2 = realistic_pairs(30, seed=13)
    types = ["rouge1", "rougeLsum"]
    mean = ROUGE(rouge_types=types, multi_reference="mean", rouge155=rouge155, track=False)
    single = ROUGE(rouge_types=types, rouge155=rouge155, track=False)
    lists = [[r, r2] for r, r2 in zip(refs, refs2)]
    items = mean.score_batch(preds, lists)
    for p, refs_of, got in zip(preds, lists, items):
        alone = [as_dict(single.score(output=p, reference=r)) for r in refs_of]
        assert as_dict(got) == {name: sum(a[name] for a in alone) / 2 for name in alone[0]}
    corpus = mean.corpus_score(preds, lists)
    assert corpus.name == "corpus_rouge1_f1"
    assert corpus.value == mean.from_statistics(sum(mean.statistics(preds, lists))).value
    assert corpus.value == pytest.approx(sum(as_dict(got)["rouge1_f1"] for got in items) / len(items), rel=1e-12)
    assert mean.signature.fields["multi"] == "mean"


def test_batch_equals_single_calls_and_keeps_order():
    preds, refs = realistic_pairs(40, seed=3)
    m = ROUGE(track=False)
    batch = m.score_batch(preds, refs)
    assert [as_dict(b) for b in batch] == [as_dict(m.score(p, r)) for p, r in zip(preds, refs)]
    assert m.score_batch([], []) == []


def test_empty_output_is_zero_with_a_reason():
    res = ROUGE(track=False).score(output="  ...  ", reference="the cat sat")
    assert all(r.value == 0.0 for r in res)
    assert all("output has no tokens" in r.reason for r in res)


def test_empty_reference_is_zero_with_a_reason_and_normal_items_have_none():
    m = ROUGE(track=False)
    assert all("reference has no tokens" in r.reason for r in m.score("the cat", ""))
    assert all(r.reason is None for r in m.score("the cat", "the cat"))


def test_signature_in_metadata():
    r = ROUGE(use_stemmer=True, track=False).score("a cat", "a cat")[0]
    sig = r.metadata["signature"]
    assert "stem:yes" in sig and "nltk:" in sig and r.metadata["rouge_type"] == "rouge1"


def test_bad_input_names_item_and_field():
    m = ROUGE(track=False)
    with pytest.raises(MetricInputError, match="field 'output'"):
        m.score(output=None, reference="x")
    with pytest.raises(MetricInputError, match="field 'reference'"):
        m.score(output="x")
    with pytest.raises(MetricInputError, match="item 1, field 'reference'"):
        m.score_batch(["a", "b"], ["a", 5])
    with pytest.raises(ValueError, match="rougeQ"):
        ROUGE(rouge_types=["rougeQ"], track=False)


def test_unicode_tokenizer_scores_russian_where_default_gives_zero():
    pred, ref = "Кошка сидит на ковре", "Кошка сидела на ковре"
    default = as_dict(ROUGE(track=False).score(pred, ref))
    uni = as_dict(ROUGE(tokenizer="unicode", track=False).score(pred, ref))
    assert default["rouge1_f1"] == 0.0
    assert uni["rouge1_f1"] == pytest.approx(3 / 4)  # кошка, на, ковре of 4 words each side


def test_rouge155_mode_values_signature_and_reason():
    from opik_metrics.text.rouge.scorer import RougeScorer

    types = ["rouge1", "rougeLsum", "rougeW", "rougeSU4"]
    m = ROUGE(rouge_types=types, rouge155=True, multi_reference="average", track=False)
    engine = RougeScorer(types, rouge155=True, multi_reference="average")
    preds, refs = realistic_pairs(20, seed=5)
    for p, r in zip(preds, refs):
        got = as_dict(m.score(output=p, reference=[r, p]))
        for t, s in engine.score(p, [r, p]).items():
            assert (got[f"{t}_precision"], got[f"{t}_recall"], got[f"{t}_f1"]) == (s.precision, s.recall, s.fmeasure)
    r = m.score("police kill the gunman", "police killed the gunman")[-1]
    assert r.name == "rougeSU4_f1" and r.value == 0.55556  # (3 pairs + 2 leading unigrams) / (6 + 3)
    assert r.metadata["signature"].fields["mode"] == "rouge155" and "mode:rouge155" in r.metadata["signature"]
    assert "mode" not in ROUGE(track=False).signature.fields
    assert all("output has no tokens" in x.reason for x in m.score("!!!", "the cat"))


@pytest.mark.parametrize("copies", [1, 40])       # 6 items item by item; 240 on the arrays
def test_reasons_in_a_batch_name_the_empty_text_and_only_it(copies):
    items = [("  ...  ", ["the cat sat"], "output has no tokens"),
             ("the cat", [""], "reference has no tokens"),
             ("the cat", ["the cat", "!!"], None),                  # a reference above 0: nothing to explain
             ("the dog", ["a cat", "?"], "references [1] have no tokens"),
             ("a b", ["c d"], None),                                # tokens on both sides, nothing in common
             ("a b c", ["a c"], None)]                              # rouge2 is 0, rouge1 is not
    outputs = [o for o, _, _ in items] * copies
    references = [r for _, r, _ in items] * copies
    batch = ROUGE(track=False).score_batch(outputs, references)
    for k, results in enumerate(batch):
        want = items[k % len(items)][2]
        assert len({r.reason for r in results}) == 1, k
        if want is None:
            assert results[0].reason is None, k
        else:
            assert want in results[0].reason, k


def test_metadata_is_shared_by_items_alike_and_read_only():
    m = ROUGE(rouge_types=["rouge1", "rougeL"], track=False)
    one, two, multi = m.score_batch(["a b", "c d", "a"], ["a b", "c", ["a", "b"]])
    assert one[0].metadata is one[2].metadata is two[0].metadata              # rouge1 P, F; another item
    assert one[0].metadata is not one[3].metadata                             # rougeL's own
    assert multi[0].metadata == {"signature": m.signature, "n_references": 2, "rouge_type": "rouge1"}
    assert one[3].metadata == {"signature": m.signature, "n_references": 1, "rouge_type": "rougeL"}
    with pytest.raises(TypeError, match="read-only"):
        one[0].metadata["n_references"] = 3
    assert two[0].metadata["n_references"] == 1
    one[0].metadata = dict(one[0].metadata, note="mine")                      # the way to change one
    assert "note" not in two[0].metadata

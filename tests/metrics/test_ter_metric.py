"""TER as an Opik metric: values equal to sacrebleu's TER (/100), lower is better, corpus and
experiment scores from summed statistics, reasons for empty text, errors naming item and field
or option."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from sacrebleu.metrics import TER as SacreTER

from opik_metrics.core import MetricFacts, facts_of
from opik_metrics.core.inputs import MetricInputError
from opik_metrics.metrics.ter import TER
from tests.corpus import realistic_pairs
from tests.text.chrf_ter_inputs import items

TOL = 1e-9


def test_sentence_ter_equals_sacrebleu_with_metadata():
    preds, refs = realistic_pairs(40, seed=11)
    _, refs2 = realistic_pairs(40, seed=12)
    # up to 30 words: sacrebleu's TER takes ~0.1 s a 90-word pair
    preds, refs, refs2 = ([" ".join(t.split()[:30]) for t in texts] for texts in (preds, refs, refs2))
    metric, oracle = TER(track=False), SacreTER()
    batch = metric.score_batch(preds, [[r, r2] for r, r2 in zip(refs, refs2)])
    for p, r, r2, in_batch in zip(preds, refs, refs2, batch):
        (res,) = metric.score(output=p, reference=[r, r2], input="ignored")
        want = oracle.sentence_score(p, [r, r2])
        assert res.name == "ter" and res.reason is None
        assert res.value == pytest.approx(want.score / 100, abs=TOL)
        assert res.metadata["statistics"] == list(oracle._extract_corpus_statistics([p], [[r], [r2]])[0])
        assert res.metadata["num_edits"] == want.num_edits and res.metadata["ref_length"] == want.ref_length
        assert res.metadata["hyp_length"] == len(p.split()) and res.metadata["n_references"] == 2
        assert in_batch[0].value == res.value and in_batch[0].metadata == res.metadata
    assert str(res.metadata["signature"]).startswith(
        "nrefs:2|case:lc|tok:tercom|norm:no|punct:yes|asian:no|version:2.6.0")


@pytest.mark.parametrize("options", [dict(normalized=True), dict(no_punct=True, asian_support=True),
                                     dict(case_sensitive=True), dict(normalized=True, asian_support=True)])
def test_options_map_to_sacrebleu(options):
    hyps, refs = items(len(options) + 7, 40, 2)
    metric, oracle = TER(track=False, **options), SacreTER(**options)
    for hyp, item, results in zip(hyps, refs, metric.score_batch(hyps, refs)):
        assert results[0].value == pytest.approx(oracle.sentence_score(hyp, item).score / 100, abs=TOL)
    corpus = metric.corpus_score(hyps, refs)
    assert corpus.value == pytest.approx(oracle.corpus_score(hyps, [list(s) for s in zip(*refs)]).score / 100, abs=TOL)


def test_corpus_ter_equals_sacrebleu_and_is_not_the_mean():
    preds, refs = realistic_pairs(80, seed=2)
    metric = TER(track=False)
    corpus = metric.corpus_score(preds, refs)
    want = SacreTER().corpus_score(preds, [refs])
    assert corpus.name == "corpus_ter" and corpus.reason is None
    assert corpus.value == pytest.approx(want.score / 100, abs=TOL) and corpus.metadata["num_edits"] == want.num_edits
    stats = metric.statistics(preds, refs)
    assert metric.from_statistics(sum(stats)).value == corpus.value
    assert metric.from_statistics(sum(stats[:33]) + sum(stats[33:])).value == pytest.approx(corpus.value, rel=1e-12)
    mean = sum(r[0].value for r in metric.score_batch(preds, refs)) / len(preds)
    assert abs(mean - corpus.value) > 1e-3


def _test_result(output, reference, score_results=()):
    case = SimpleNamespace(mapped_scoring_inputs={"output": output, "reference": reference},
                           dataset_item_content=None, task_output=None)
    return SimpleNamespace(test_case=case, score_results=list(score_results))


def test_experiment_score_reuses_logged_results_and_scores_the_rest():
    preds, refs = realistic_pairs(24, seed=4)
    metric = TER(track=False)
    other = TER(case_sensitive=True, track=False)     # same name, other configuration: not reused
    results = []
    for k, (p, r) in enumerate(zip(preds, refs)):
        logged = metric.score(p, r) if k % 3 == 0 else other.score(p, r) if k % 3 == 1 else []
        results.append(_test_result(p, r, logged))
    corpus = metric.experiment_score(results)
    assert corpus.name == "corpus_ter"
    assert corpus.value == pytest.approx(SacreTER().corpus_score(preds, [refs]).score / 100, abs=TOL)


def test_lower_is_better_facts_and_name():
    metric = TER(name="edits", track=False)
    facts = facts_of(metric)
    assert TER.higher_is_better is False and facts.higher_is_better is False
    assert facts.main.higher_is_better is False and facts.main.bounds == (0.0, None)
    assert facts.corpus.score.higher_is_better is False and facts.corpus.score.bounds == (0.0, None)
    assert facts.corpus.name == "corpus_edits" and facts.corpus.fields == ("num_edits", "ref_length")
    assert MetricFacts.from_dict(facts.as_dict()).as_dict() == facts.as_dict()
    assert metric.score("a b", "a c")[0].name == "edits"
    assert "nrefs" not in metric.signature.fields and metric.signature.fields["tok"] == "tercom"


def test_empty_text_gets_sacrebleus_value_and_a_reason():
    metric = TER(track=False)
    (res,) = metric.score("", "the cat")
    assert res.value == 1.0 and res.reason.startswith("output has no words")
    (res,) = metric.score("the cat", " ")
    assert res.value == 1.0 and res.reason.startswith("the reference has no words: TER is 1")
    (res,) = metric.score("", "")
    assert res.value == 0.0 and res.reason.startswith("output and reference have no words: TER is 0")
    (res,) = metric.score("a b c d", "x")                       # above 1: a defined value, no reason
    assert res.value == 4.0 and res.reason is None
    corpus = metric.corpus_score(["a", "b"], ["", ""])
    assert corpus.value == 1.0 and "corpus TER is 1" in corpus.reason


def test_inputs_errors_name_item_and_field():
    metric = TER(track=False)
    with pytest.raises(MetricInputError, match="item 2, field 'output': expected a string, got None$"):
        metric.score_batch(["a", "b", None], ["x", "y", "z"])
    with pytest.raises(MetricInputError, match=r"item 1, field 'reference\[0\]': expected a string, got bytes"):
        metric.score_batch(["a", "b"], ["x", [b"y"]])
    with pytest.raises(MetricInputError, match="item 0, field 'reference': the list of references is empty"):
        metric.score_batch(["a"], [[]])
    with pytest.raises(MetricInputError, match="field 'output': expected a string, got list"):
        metric.score(["a"], "a")


@pytest.mark.parametrize("option", ["normalized", "no_punct", "asian_support", "case_sensitive"])
def test_bad_options_name_the_option(option):
    with pytest.raises(ValueError, match=f"^{option} must be True or False, got 'yes'$"):
        TER(track=False, **{option: "yes"})

"""CHRF as an Opik metric: values equal to sacrebleu's CHRF (/100), corpus and experiment scores
from summed statistics, facts, reasons for empty text, errors naming item and field or option."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from sacrebleu.metrics import CHRF as SacreCHRF

from opik_metrics.core import MetricFacts, Statistics, facts_of
from opik_metrics.core.inputs import MetricInputError
from opik_metrics.metrics.chrf import CHRF
from tests.corpus import realistic_pairs
from tests.text.chrf_ter_inputs import items

TOL = 1e-9


def test_sentence_chrf_equals_sacrebleu_with_metadata():
    preds, refs = realistic_pairs(120, seed=11)
    _, refs2 = realistic_pairs(120, seed=12)
    metric, oracle = CHRF(track=False), SacreCHRF()
    batch = metric.score_batch(preds, [[r, r2] for r, r2 in zip(refs, refs2)])
    for p, r, r2, in_batch in zip(preds, refs, refs2, batch):
        (res,) = metric.score(output=p, reference=[r, r2], input="ignored", context=["ignored"])
        assert res.name == "chrf" and res.reason is None
        assert res.value == pytest.approx(oracle.sentence_score(p, [r, r2]).score / 100, abs=TOL)
        assert res.metadata["statistics"] == list(oracle._extract_corpus_statistics([p], [[r], [r2]])[0])
        assert in_batch[0].value == res.value and in_batch[0].metadata == res.metadata
        assert res.metadata["n_references"] == 2 and res.metadata["best_reference"] in (0, 1)
    assert str(res.metadata["signature"]).startswith("nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0")


@pytest.mark.parametrize("options", [dict(word_order=2), dict(word_order=2, eps_smoothing=True, beta=1),
                                     dict(lowercase=True, whitespace=True, char_order=4), dict(word_order=1)])
def test_options_map_to_sacrebleu(options):
    hyps, refs = items(len(options), 60, 2)
    metric, oracle = CHRF(track=False, **options), SacreCHRF(**options)
    for hyp, item, results in zip(hyps, refs, metric.score_batch(hyps, refs)):
        assert results[0].value == pytest.approx(oracle.sentence_score(hyp, item).score / 100, abs=TOL)
    corpus = metric.corpus_score(hyps, refs)
    assert corpus.value == pytest.approx(oracle.corpus_score(hyps, [list(s) for s in zip(*refs)]).score / 100, abs=TOL)


def test_corpus_chrf_equals_sacrebleu_and_is_not_the_mean():
    preds, refs = realistic_pairs(200, seed=2)
    metric = CHRF(word_order=2, track=False)
    corpus = metric.corpus_score(preds, refs)
    assert corpus.name == "corpus_chrf" and corpus.reason is None
    assert corpus.value == pytest.approx(SacreCHRF(word_order=2).corpus_score(preds, [refs]).score / 100, abs=TOL)
    assert corpus.metadata["signature"].fields["nrefs"] == "1"
    stats = metric.statistics(preds, refs)
    assert all(isinstance(s, Statistics) for s in stats)
    assert metric.from_statistics(sum(stats)).value == corpus.value
    assert metric.from_statistics(sum(stats[:77]) + sum(stats[77:])).value == corpus.value
    mean = sum(r[0].value for r in metric.score_batch(preds, refs)) / len(preds)
    assert abs(mean - corpus.value) > 1e-3


def _test_result(output, reference, score_results=()):
    case = SimpleNamespace(mapped_scoring_inputs={"output": output, "reference": reference},
                           dataset_item_content=None, task_output=None)
    return SimpleNamespace(test_case=case, score_results=list(score_results))


def test_experiment_score_reuses_logged_results_and_scores_the_rest():
    preds, refs = realistic_pairs(30, seed=4)
    metric = CHRF(track=False)
    other = CHRF(word_order=2, track=False)           # same name, other configuration: not reused
    results = []
    for k, (p, r) in enumerate(zip(preds, refs)):
        logged = metric.score(p, r) if k % 3 == 0 else other.score(p, r) if k % 3 == 1 else []
        results.append(_test_result(p, r, logged))
    corpus = metric.experiment_score(results)
    assert corpus.name == "corpus_chrf"
    assert corpus.value == pytest.approx(SacreCHRF().corpus_score(preds, [refs]).score / 100, abs=TOL)
    assert corpus.value == metric.corpus_score(preds, refs).value


def test_facts_name_and_bounds():
    metric = CHRF(word_order=2, name="chrf_pp", track=False)
    facts = facts_of(metric)
    assert facts.higher_is_better is True and facts.main.bounds == (0.0, 1.0)
    assert facts.corpus.name == "corpus_chrf_pp" and facts.corpus.carrier == "chrf_pp"
    assert facts.corpus.options == {"char_order": 6, "word_order": 2, "beta": 2, "eps_smoothing": False}
    assert len(facts.corpus.fields) == 24 and facts.corpus.fields[-1] == "word2_match"
    assert MetricFacts.from_dict(facts.as_dict()).as_dict() == facts.as_dict()
    assert metric.score("a b", "a b")[0].name == "chrf_pp"
    assert metric.corpus_score(["a b"], ["a b"]).name == "corpus_chrf_pp"
    assert "nrefs" not in metric.signature.fields and metric.signature.fields["nw"] == "2"


def test_empty_text_gets_sacrebleus_value_and_a_reason():
    metric = CHRF(track=False)
    (res,) = metric.score("", "the cat")
    assert res.value == 0.0 and res.reason.startswith("output has no characters")
    (res,) = metric.score("the cat", "  ")
    assert res.value == 0.0 and res.reason.startswith("reference has no characters")
    (res,) = metric.score(" ", "")
    assert res.value == 0.0 and res.reason.startswith("output and reference have no characters")
    (res,) = CHRF(eps_smoothing=True, track=False).score("", "")
    assert res.value == pytest.approx(SacreCHRF(eps_smoothing=True).sentence_score("", [""]).score / 100)
    assert "1e-16" in res.reason                       # sacrebleu's epsilon, said as such
    (res,) = metric.score("xyz", "abc")                # no character in common: a real 0, no reason
    assert res.value == 0.0 and res.reason is None
    corpus = metric.corpus_score(["", ""], ["a", "b"])
    assert corpus.value == 0.0 and corpus.reason.startswith("every output is empty")


def test_inputs_errors_name_item_and_field():
    metric = CHRF(track=False)
    with pytest.raises(MetricInputError, match="item 1, field 'output': expected a string, got int"):
        metric.score_batch(["a", 3], ["x", "y"])
    with pytest.raises(MetricInputError, match=r"item 0, field 'reference\[1\]': expected a string, got int"):
        metric.score_batch(["a"], [["x", 5]])
    with pytest.raises(MetricInputError, match="field 'reference': expected a string or a list of strings, got None"):
        metric.score("a", None)
    with pytest.raises(MetricInputError, match="field 'output': lone surrogate"):
        metric.score("cut \ud83d", "a")
    with pytest.raises(MetricInputError, match="chrf needs references"):
        metric.score_batch(["a"])
    with pytest.raises(MetricInputError, match="got 2 outputs but 1 references"):
        metric.corpus_score(["a", "b"], ["a"])


@pytest.mark.parametrize("option,value", [("word_order", -1), ("char_order", 0), ("beta", "2"),
                                          ("lowercase", "no"), ("whitespace", None), ("eps_smoothing", 2)])
def test_bad_options_name_the_option(option, value):
    with pytest.raises(ValueError, match=f"^{option} must be"):
        CHRF(track=False, **{option: value})
    with pytest.raises(ValueError, match="name: expected a non-empty string"):
        CHRF(name="", track=False)



def test_a_poison_test_result_is_left_out_of_the_corpus_score_and_named():
    """One test result whose output is a list (a task that returned the wrong type) costs that item,
    not the experiment's corpus score: BLEU, chrF and CIDEr-D leave it out and say so."""
    from opik_metrics import BLEU, CIDEr
    from sacrebleu.metrics import BLEU as SacreBLEU

    preds, refs = realistic_pairs(12, seed=6)
    results = [_test_result(p, r) for p, r in zip(preds, refs)]
    results[5] = _test_result(["not", "a", "string"], refs[5])
    kept_preds, kept_refs = preds[:5] + preds[6:], refs[:5] + refs[6:]
    bleu = BLEU(track=False).experiment_score(results)
    assert bleu.value == pytest.approx(SacreBLEU().corpus_score(kept_preds, [kept_refs]).score / 100, abs=TOL)
    assert bleu.reason == "1 of 12 test results left out: item 5, field 'output': expected a string, got list"
    chrf = CHRF(track=False).experiment_score(results)
    assert chrf.value == CHRF(track=False).corpus_score(kept_preds, kept_refs).value and "item 5" in chrf.reason
    cider = CIDEr(track=False).experiment_score(results)
    assert cider.value == CIDEr(track=False).corpus_score(kept_preds, [[r] for r in kept_refs]).value
    assert "1 of 12 test results left out: item 5" in cider.reason
    with pytest.raises(MetricInputError, match="no test result could be scored"):
        CHRF(track=False).experiment_score([_test_result(None, "a")])

"""CIDEr and COCOCaption as Opik metrics: names, facts, document frequencies as a corpus context,
corpus scores from statistics, and both inside opik.evaluate (the emulated backend)."""
from types import SimpleNamespace

import opik
import pytest

from opik_metrics import CIDEr, COCOCaption
from opik_metrics.core import MetricInputError
from tests.captions import caption_sets
from tests.text.cider_oracle import oracle_coco, simple_tokens

CANDS, REFS = caption_sets(40, 5, seed=17)
TOK_CANDS = [simple_tokens(c) for c in CANDS]
TOK_REFS = [[simple_tokens(r) for r in rs] for rs in REFS]
ORACLE = oracle_coco(TOK_CANDS, TOK_REFS)


def test_score_batch_fits_on_its_own_references_as_pycocoevalcap_does():
    metric = CIDEr(tokenize="none", track=False)
    results = metric.score_batch(TOK_CANDS, TOK_REFS)
    assert [r[0].name for r in results] == ["cider"] * len(CANDS)
    assert [r[0].value for r in results] == pytest.approx(ORACLE["CIDEr"][1], abs=1e-9)
    corpus = metric.corpus_score(TOK_CANDS, TOK_REFS)
    assert corpus.name == "corpus_cider" and corpus.value == pytest.approx(ORACLE["CIDEr"][0], abs=1e-9)


def test_one_at_a_time_with_df_references_equals_the_batch():
    metric = CIDEr(df_references=TOK_REFS, tokenize="none", track=False)
    one_by_one = [metric.score(c, r)[0].value for c, r in zip(TOK_CANDS, TOK_REFS)]
    assert one_by_one == pytest.approx(ORACLE["CIDEr"][1], abs=1e-9)
    assert metric.signature.fields["df"].startswith("40img-")


def test_one_item_without_df_references_is_zero_with_a_reason_and_a_warning():
    metric = CIDEr(tokenize="none", track=False)
    with pytest.warns(UserWarning, match="df_references"):
        (result,) = metric.score(TOK_CANDS[0], TOK_REFS[0])
    assert result.value == 0.0 and "df_references" in result.reason


def test_facts_state_direction_bounds_and_the_corpus_score():
    facts = CIDEr(track=False).facts
    assert facts.main.name == "cider" and facts.main.higher_is_better and facts.main.bounds == (0.0, 10.0)
    assert facts.corpus.name == "corpus_cider" and facts.own_corpus is not None
    assert CIDEr(name="cd", track=False).facts.corpus.name == "corpus_cd"


def test_bad_df_references_are_named():
    with pytest.raises(MetricInputError, match="df_references"):
        CIDEr(df_references="a dog", track=False)
    with pytest.raises(MetricInputError, match=r"item 1, field 'df_references'"):
        CIDEr(df_references=[["a"], None], track=False)


def test_coco_caption_items_and_corpus_equal_pycocoevalcap():
    coco = COCOCaption(tokenize="none", track=False)
    items = coco.score_batch(TOK_CANDS, TOK_REFS)
    for key, (corpus, per_item) in ORACLE.items():
        assert [next(r.value for r in item if r.name == key) for item in items] == pytest.approx(per_item, abs=1e-9)
    results = coco.corpus_score(TOK_CANDS, TOK_REFS)
    assert [r.name for r in results] == [f"corpus_{k}" for k in ORACLE]
    assert {r.metadata["key"]: r.value for r in results} == pytest.approx({k: v[0] for k, v in ORACLE.items()},
                                                                          abs=1e-9)
    assert coco.coco_eval(TOK_CANDS, TOK_REFS) == pytest.approx({k: v[0] for k, v in ORACLE.items()}, abs=1e-9)
    assert results[3].name == coco.facts.corpus.name and results[3].value == coco.from_statistics(
        sum(coco.statistics(TOK_CANDS, TOK_REFS)))[3].value


def test_coco_caption_prefixes_its_keys_under_another_name():
    coco = COCOCaption(tokenize="none", name="val", track=False)
    assert [r.name for r in coco.score_batch(TOK_CANDS[:1], TOK_REFS[:1])[0]] == [
        "val_Bleu_1", "val_Bleu_2", "val_Bleu_3", "val_Bleu_4", "val_METEOR", "val_ROUGE_L", "val_CIDEr"]
    assert coco.facts.corpus.name == "corpus_val_Bleu_4"


@pytest.mark.parametrize("with_df", [True, False])
def test_inside_opik_evaluate_the_experiment_score_is_pycocoevalcaps_corpus(fake_opik_backend, with_df):
    items = [{"caption": c, "reference": r} for c, r in zip(TOK_CANDS, TOK_REFS)]
    kwargs = {"df_references": TOK_REFS} if with_df else {}
    cider, coco = CIDEr(tokenize="none", **kwargs), COCOCaption(tokenize="none", **kwargs)
    with pytest.warns(UserWarning) if not with_df else _nothing():
        result = opik.evaluate_on_dict_items(items=items, task=lambda item: {"output": item["caption"]},
                                             scoring_metrics=[cider, coco])
    logged = [next(s.value for s in tr.score_results if s.name == "cider") for tr in result.test_results]
    if with_df:
        by_output = dict(zip(TOK_CANDS, ORACLE["CIDEr"][1]))
        assert logged == pytest.approx([by_output[tr.test_case.task_output["output"]]
                                        for tr in result.test_results], abs=1e-9)
    else:
        assert logged == [0.0] * len(items)      # one item alone has no corpus to weigh n-grams by
    assert cider.experiment_score(result.test_results).value == pytest.approx(ORACLE["CIDEr"][0], abs=1e-9)
    corpus = {r.metadata["key"]: r.value for r in coco.experiment_score(result.test_results)}
    assert corpus == pytest.approx({k: v[0] for k, v in ORACLE.items()}, abs=1e-9)


def _test_result(output, reference, score_results=()):
    case = SimpleNamespace(mapped_scoring_inputs={"output": output, "reference": reference},
                           dataset_item_content=None, task_output=None)
    return SimpleNamespace(test_case=case, score_results=list(score_results))


def _refusing(*args, **kwargs):
    raise AssertionError("scored again although the results were logged")


@pytest.mark.parametrize("logged", ["in one batch", "one at a time", "some, on part of the set"])
def test_coco_experiment_score_without_df_reuses_the_logged_statistics(monkeypatch, logged):
    """Without df_references only CIDEr-D is scored again (on frequencies fitted on every item's
    references); BLEU, METEOR and ROUGE_L come from the logged statistics (issue 40: 15.9 s -> 0.8 s
    on 5,000 captions), and the corpus values equal ``corpus_score``'s to 1e-12."""
    coco = COCOCaption(tokenize="none", track=False)
    want = coco.corpus_score(TOK_CANDS, TOK_REFS)
    if logged == "in one batch":
        items = coco.score_batch(TOK_CANDS, TOK_REFS)
    elif logged == "one at a time":                   # CIDEr-D 0: one item alone has no corpus
        with pytest.warns(UserWarning, match="df_references"):
            items = [coco.score(c, r) for c, r in zip(TOK_CANDS, TOK_REFS)]
    else:                                              # CIDEr-D on frequencies of the first 25 only
        items = coco.score_batch(TOK_CANDS[:25], TOK_REFS[:25]) + [[]] * 15
    results = [_test_result(c, r, s) for c, r, s in zip(TOK_CANDS, TOK_REFS, items)]
    scored = []
    if logged == "some, on part of the set":       # only the 15 items with nothing logged are scored whole
        score = coco.engine.score
        monkeypatch.setattr(coco.engine, "score", lambda c, r, *a: scored.append(list(c)) or score(c, r, *a))
    else:                                           # nothing but CIDEr-D is scored: no METEOR, no BLEU
        monkeypatch.setattr(coco.engine, "score", _refusing)
        monkeypatch.setattr(coco.engine.meteor, "score_batch", _refusing)
    got = coco.experiment_score(results)
    assert [r.name for r in got] == [r.name for r in want]
    assert max(abs(a.value - b.value) for a, b in zip(got, want)) <= 1e-12
    assert scored == ([TOK_CANDS[25:]] if logged == "some, on part of the set" else [])


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("metric_class", [CIDEr, COCOCaption])
def test_the_runner_fits_the_corpus_once_so_chunks_score_as_one_pass(tmp_path, metric_class):
    from opik_metrics.experiments.runner import run_experiment
    from opik_metrics.experiments.store import ExperimentStore

    metric = metric_class(tokenize="none", track=False)
    items = [{"k": k, "reference": r} for k, r in enumerate(TOK_REFS)]
    with ExperimentStore(tmp_path / "s.sqlite") as store:
        summary = run_experiment("e", items, lambda item: {"output": TOK_CANDS[item["k"]]}, [metric],
                                 dataset_name="d", store=store, chunk_size=7, progress=False)
        info = store.info("e")
        scored = sorted(store.items(info.id, ["scored"]), key=lambda i: i.input["k"])
    key = "cider" if metric_class is CIDEr else "CIDEr"
    assert [i.scores[key].value for i in scored] == pytest.approx(ORACLE["CIDEr"][1], abs=1e-9)
    corpus = summary.experiment_scores["corpus_cider" if metric_class is CIDEr else "corpus_CIDEr"]
    assert corpus == pytest.approx(ORACLE["CIDEr"][0], abs=1e-9)
    assert info.config["metrics"][metric.name]["signature"]["fields"]["df"].startswith("40img-")


def test_a_perfect_caption_scores_exactly_the_bound():
    refs = [["a dog runs on the grass"], ["a cat sleeps"]]
    (result,) = CIDEr(df_references=refs, tokenize="none", track=False).score("a dog runs on the grass", refs[0])
    assert result.value == 10.0            # pycocoevalcap gives 10.000000000000002: capped at the bound


def test_df_references_of_one_image_say_so_without_asking_for_them():
    (result,) = CIDEr(df_references=[["a dog"]], tokenize="none", track=False).score("a dog", "a dog")
    assert result.value == 0.0 and "should hold the references of every image" in result.reason


def test_coco_caption_declares_every_corpus_score_and_compare_recomputes_them(tmp_path):
    import json

    from opik_metrics.compare.analysis import CompareSettings, compare_experiments
    from opik_metrics.compare.reading.sources import load_experiments
    from opik_metrics.core import MetricFacts
    from opik_metrics.experiments.runner import run_experiment
    from opik_metrics.experiments.store import ExperimentStore

    coco = COCOCaption(tokenize="none", track=False)
    facts = coco.facts
    assert [c.name for c in facts.corpora] == ["corpus_Bleu_4", "corpus_Bleu_1", "corpus_Bleu_2", "corpus_Bleu_3",
                                               "corpus_METEOR", "corpus_ROUGE_L", "corpus_CIDEr"]
    assert [c.name for c in facts.own_corpora] == ["corpus_Bleu_4", "corpus_Bleu_1", "corpus_Bleu_2", "corpus_Bleu_3",
                                                   "corpus_METEOR"]
    assert facts.score("corpus_CIDEr").bounds == (0.0, 10.0)
    assert MetricFacts.from_dict(json.loads(json.dumps(facts.as_dict()))).as_dict() == facts.as_dict()

    items = [{"k": k, "reference": r} for k, r in enumerate(TOK_REFS)]
    worse = [" ".join(c.split()[::-1]) for c in TOK_CANDS]              # the same words, reversed
    with ExperimentStore(tmp_path / "s.sqlite") as store:
        for name, outputs in (("good", TOK_CANDS), ("reversed", worse)):
            run_experiment(name, items, lambda item, o=outputs: {"output": o[item["k"]]}, [coco], dataset_name="d",
                           store=store, chunk_size=9, progress=False)
        records = load_experiments(["good", "reversed"], store=store)
    comparison = compare_experiments(records, CompareSettings(resamples=200))
    for k in range(4):
        entry = comparison.scores[f"corpus_Bleu_{k + 1}"]["good"]
        assert entry.value == pytest.approx(ORACLE[f"Bleu_{k + 1}"][0], abs=1e-9)   # pycocoevalcap's corpus BLEU
        assert entry.low <= entry.value <= entry.high
    assert comparison.pairs[0].better("corpus_Bleu_2") == "good"
    if "METEOR" in ORACLE:                     # the jar's final score, recomputed from the stored statistics
        assert comparison.scores["corpus_METEOR"]["good"].value == pytest.approx(ORACLE["METEOR"][0], abs=1e-9)

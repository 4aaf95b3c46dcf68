"""Segments that stress the aligner (thousands of words, one word repeated hundreds of times) end
in bounded time: scored as the jar scores them below the pack's bound on one segment's work, or
refused with a reason giving the numbers (``MeteorSearchLimit``; through the metric, a failed item
while the others are scored). The bound is checked on its deterministic work count, not by timing;
the small tables of test_meteor_data stand in, so nothing here needs Java."""
import pytest

from opik_metrics import METEOR
from opik_metrics.core.inputs import MetricInputError
from opik_metrics.text.meteor import MeteorScorer, MeteorSearchLimit, align
from opik_metrics.text.meteor.align import Aligner
from tests.text.meteor.test_meteor_data import data  # noqa: F401  (the fixture)


def _count_candidates(monkeypatch):
    calls = []
    original = Aligner.candidates

    def counting(self, test, ref):
        stage = original(self, test, ref)
        calls.append(align.search_work(stage, len(test.tokens), len(ref.tokens)))
        return stage
    monkeypatch.setattr(Aligner, "candidates", counting)
    return calls


def test_a_5000_word_segment_is_refused_before_any_matching(data, monkeypatch):   # noqa: F811
    calls = _count_candidates(monkeypatch)
    scorer = MeteorScorer(data=data)
    long = " ".join(["the car is big"] * 1250)                      # 5,000 words each side
    with pytest.raises(MeteorSearchLimit, match=r"reference 0: 5,000 x 5,000 words is over the 4,000,000 word pairs"):
        scorer.score(long, [long])
    assert calls == []                                             # refused before the modules ran


def test_too_much_search_work_is_refused_with_the_numbers(data, monkeypatch):      # noqa: F811
    calls = _count_candidates(monkeypatch)
    scorer = MeteorScorer(data=data)
    repeated = "car " * 600                                        # 600 x 600 exact candidates
    with pytest.raises(MeteorSearchLimit, match=r"600 x 601 words with 360,000 candidate matches need "
                                                 r"28,800,000 units of beam-search work, over the 8,000,000"):
        scorer.score(repeated, [repeated + "dog"])
    assert calls == [28_800_000]


def test_two_hundred_repeats_are_scored_within_the_bound(data, monkeypatch):       # noqa: F811
    calls = _count_candidates(monkeypatch)
    scorer = MeteorScorer(data=data)
    assert scorer.score("the " * 200, ["a the " * 100]).score == pytest.approx(0.2, abs=1e-12)
    assert scorer.score("car " * 200, ["automobile " * 200 + "dog"]).matches.synonym == 200
    assert all(work <= align.MAX_SEARCH_WORK for work in calls)


def test_the_metric_fails_only_the_item_over_the_bound(data):                      # noqa: F811
    metric = METEOR(data=data, track=False)
    long = "car " * 2500
    items = metric.score_batch(["the car", long, "a big dog"], [["the car"], [long], ["a large dog"]])
    assert [r[0].scoring_failed for r in items] == [False, True, False]
    failed = items[1][0]
    assert failed.value == 0.0 and "not scored" in failed.reason and "word pairs" in failed.reason
    assert items[0][0].value > 0.9 and items[2][0].value > 0
    with pytest.raises(MetricInputError, match=r"^meteor: item 1 could not be scored \(not scored: the output against "
                                               r"reference 0: 2,500 x 2,500 words .*; a corpus score needs every item's "
                                               r"statistics: leave the item out$"):
        metric.corpus_score(["the car", long], [["the car"], [long]])


def test_the_coco_suite_fails_only_the_item_over_the_bound(data):                  # noqa: F811
    """COCOCaption's METEOR over the bound fails that item under every key, with the reason; the
    other items keep the values they have alone (before, the whole batch stopped)."""
    from opik_metrics import COCOCaption

    coco = COCOCaption(meteor=data, df_references=[["the car"], ["a large dog"], ["x y"]], track=False)
    long = "car " * 2500
    items = coco.score_batch(["the car", long, "a big dog"], [["the car"], [long], ["a large dog"]])
    assert [{r.scoring_failed for r in results} for results in items] == [{False}, {True}, {False}]
    assert {r.name for r in items[1]} == {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"}
    for failed in items[1]:
        assert failed.value == 0.0 and failed.reason.startswith("METEOR not scored: the output against reference 0: "
                                                                "2,500 x 2,500 words is over the 4,000,000 word pairs")
        assert "statistics" not in failed.metadata
    alone = [coco.score("the car", ["the car"]), coco.score("a big dog", ["a large dog"])]
    assert [[(r.name, r.value) for r in results] for results in (items[0], items[2])] == \
        [[(r.name, r.value) for r in results] for results in alone]
    with pytest.raises(MetricInputError, match=r"^coco: item 1 could not be scored \(METEOR not scored: .*leave the item out$"):
        coco.corpus_score(["the car", long], [["the car"], [long]])
    # opik.evaluate's experiment score, without df_references: the failed item is named, not summed as zeros
    from types import SimpleNamespace

    fitted_later = COCOCaption(meteor=data, track=False)
    results = [SimpleNamespace(test_case=SimpleNamespace(mapped_scoring_inputs={"output": out, "reference": ref},
                                                         dataset_item_content=None, task_output=None),
                               score_results=logged)
               for out, ref, logged in zip(["the car", long], [["the car"], [long]], items)]
    with pytest.raises(MetricInputError, match=r"^coco: an item could not be scored \(METEOR not scored: "):
        fitted_later.experiment_score(results)

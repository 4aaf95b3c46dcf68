"""``experiments rescore``: adds the named metrics' scores to a stored experiment, prints the new
scores (item means and corpus values), refuses a metric already there unless ``--replace``."""
from __future__ import annotations

import json

import pytest
import sacrebleu

from opik_metrics import ROUGE, METEOR
from opik_metrics.cli import main
from opik_metrics.experiments.store import ExperimentStore
from tests.compare.systems import FAIL, store_with

REFERENCES = ["a dog runs in the park", "a red bus on the road", "two cats on a sofa"]
OUTPUTS = ["a dog runs", "a red bus", FAIL]


def test_rescore_adds_meteor_and_bleu(tmp_path, capsys):
    path = store_with(tmp_path / "s.sqlite", REFERENCES, {"sys": OUTPUTS}, metrics=[ROUGE()])
    args = ["experiments", "rescore", "sys", "--store", str(path), "--no-progress"]
    assert main([*args, "-m", "meteor", "-m", "bleu", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    outs, refs = OUTPUTS[:2], REFERENCES[:2]
    assert shown["scored_items"] == 2 and shown["failed_items"] == 1 and shown["metrics"] == ["meteor", "bleu"]
    assert shown["experiment_scores"]["corpus_bleu"] == pytest.approx(sacrebleu.corpus_bleu(outs, [refs]).score / 100)
    assert shown["experiment_scores"]["corpus_meteor"] == pytest.approx(METEOR().corpus_score(outs, refs).value)
    want = [r[0].value for r in METEOR().score_batch(outs, refs)]
    assert shown["scores"]["meteor"] == pytest.approx(sum(want) / 2)
    assert "rouge1_f1" not in shown["scores"]           # only the new scores are shown
    with ExperimentStore(path, create=False) as store:
        info = store.info("sys")
        failed = [it for it in store.items(info.id) if it.status == "failed"]
    assert set(info.config["metrics"]) == {"rouge", "meteor", "bleu"}
    assert failed[0].failure == "RuntimeError: the system crashed on this item" and not failed[0].scores

    assert main([*args, "-m", "bleu"]) == 2
    err = capsys.readouterr().err
    assert "metric 'bleu' is already there" in err and "--replace" in err and len(err.strip().splitlines()) == 1
    assert main([*args, "-m", "bleu", "--bleu-tokenize", "char", "--replace"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rescored experiment sys with bleu: 2 items; 1 failed items left as they were")
    assert "corpus_bleu" in out and "corpus statistics" in out and "meteor" not in out


def test_rescore_of_an_unknown_experiment_is_one_line(tmp_path, capsys):
    path = store_with(tmp_path / "s.sqlite", REFERENCES, {"sys": OUTPUTS}, metrics=[ROUGE()])
    assert main(["experiments", "rescore", "other", "--store", str(path), "-m", "bleu"]) == 2
    assert "no experiment named 'other'" in capsys.readouterr().err


@pytest.mark.parametrize("third", ["two cats", FAIL], ids=["all scored", "a failed item"])
def test_cider_rescored_equals_cider_in_the_first_run(tmp_path, capsys, third):
    # a failed item's references count in CIDEr-D's document frequencies in a first run: in a rescore too
    from opik_metrics import CIDEr

    refs = ["a dog runs in the park", "a red bus on the road", "two cats on a sofa", "a man rides a bike"]
    outs = ["a dog runs", "a red bus", third, "a man on a bike"]
    added = store_with(tmp_path / "added.sqlite", refs, {"sys": outs}, metrics=[ROUGE()])
    first = store_with(tmp_path / "first.sqlite", refs, {"sys": outs}, metrics=[ROUGE(), CIDEr()])
    assert main(["experiments", "rescore", "sys", "--store", str(added), "-m", "cider", "--no-progress"]) == 0
    with ExperimentStore(added, create=False) as a, ExperimentStore(first, create=False) as b:
        got, want = a.info("sys"), b.info("sys")
        assert [it.scores["cider"].value for it in a.items(got.id, ["scored"])] == \
            pytest.approx([it.scores["cider"].value for it in b.items(want.id, ["scored"])])
    assert got.experiment_scores["corpus_cider"] == pytest.approx(want.experiment_scores["corpus_cider"])
    assert got.config["metrics"]["cider"] == want.config["metrics"]["cider"]   # the corpus-wide context included

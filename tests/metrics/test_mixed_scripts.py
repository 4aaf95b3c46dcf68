"""Mixed scripts and NUL bytes through the metrics (issue 40 item 10): every item is scored, in
``score`` and ``score_batch`` alike, equal to the library each metric equals (sacrebleu, rouge-score,
pycocoevalcap's CIDEr; the Meteor jar in tests/text/meteor); an item with nothing to score has a defined value whose
reason says so. A NUL is a character like any other: it neither ends a text nor fails it."""
from __future__ import annotations

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from opik_metrics import BLEU, METEOR, ROUGE, CIDEr
from opik_metrics.metrics.chrf import CHRF
from opik_metrics.metrics.ter import TER
from tests.mixed_scripts import OUTPUTS, PAIRS, REFERENCES
from tests.text.cider_oracle import oracle_cider
from tests.text.meteor.test_meteor_data import data  # noqa: F401  (the fixture: small tables)


def _batch_and_single(metric):
    batch = metric.score_batch(OUTPUTS, REFERENCES)
    single = [metric.score(output, reference) for output, reference in PAIRS]
    assert [[(r.name, r.value, r.reason) for r in item] for item in batch] == \
        [[(r.name, r.value, r.reason) for r in item] for item in single]
    assert not any(r.scoring_failed for item in batch for r in item)
    return batch


@pytest.mark.parametrize("make, oracle", [
    (BLEU, sacrebleu.metrics.BLEU(effective_order=True)), (CHRF, sacrebleu.metrics.CHRF()),
    (TER, sacrebleu.metrics.TER())], ids=["bleu", "chrf", "ter"])
def test_sacrebleu_family_equals_sacrebleu(make, oracle):
    batch = _batch_and_single(make(track=False))
    want = [oracle.sentence_score(output, [reference]).score / 100 for output, reference in PAIRS]
    assert [item[0].value for item in batch] == pytest.approx(want, abs=1e-12)
    assert 0 < batch[0][0].value < 1                  # the mixed-script pair shares some words, not all


def test_rouge_equals_rouge_score_and_says_why_a_text_without_its_tokens_is_zero():
    """rouge-score keeps only [a-z0-9] runs: a text with none of them scores 0, with the reason."""
    batch = _batch_and_single(ROUGE(track=False))
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    for (output, reference), item in zip(PAIRS, batch):
        want = scorer.score(reference, output)
        got = {r.name: r for r in item}
        for kind in want:
            assert got[f"{kind}_f1"].value == pytest.approx(want[kind].fmeasure, abs=1e-12), (output, kind)
        if not any(ch.isascii() and ch.isalnum() for ch in output):
            assert all(r.value == 0 and r.reason.startswith("output has no tokens after tokenisation") for r in item)
        else:
            assert all(r.reason is None for r in item)


def test_cider_equals_pycocoevalcap_on_the_same_tokens():
    """CIDEr-D on whitespace tokens (``tokenize="none"``): a NUL inside a token stays in it."""
    cider = CIDEr(tokenize="none", track=False)
    batch = cider.score_batch(OUTPUTS, REFERENCES)
    _, want = oracle_cider(OUTPUTS, [[r] for r in REFERENCES])
    assert [item[0].value for item in batch] == pytest.approx(want, abs=1e-9)
    assert not any(item[0].scoring_failed for item in batch) and batch[1][0].value > 0


def test_cider_with_the_ptb_tokeniser_says_why_an_output_of_nul_is_zero():
    (result,) = CIDEr(track=False).score_batch(OUTPUTS, REFERENCES)[-1]
    assert result.value == 0.0 and result.reason == "output has no tokens after tokenisation: CIDEr-D is 0 by definition"


def test_meteor_scores_every_item_and_says_why_an_output_of_nul_is_zero(data):        # noqa: F811
    """Equal to the jar on these pairs: see EDGE_CASES in tests/text/meteor/test_meteor_oracle.py."""
    batch = _batch_and_single(METEOR(data=data, track=False))
    assert all(0 < item[0].value <= 1 and item[0].reason is None for item in batch[:-1])
    assert batch[-1][0].value == 0.0 and batch[-1][0].reason.startswith("output has no words after normalisation")

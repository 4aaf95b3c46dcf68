"""The 1,000,000-character bound on one text (``MAX_TEXT_CHARS``, issue 40 item 10): a text of
exactly the bound is scored, equal to the reference library; one character more is a one-line
error naming the item and the field, with the fix, in ``score`` and ``score_batch`` of every text
metric. The bound counts characters, not UTF-8 bytes."""
from __future__ import annotations

import itertools
import string

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from opik_metrics import BLEU, METEOR, ROUGE, CIDEr
from opik_metrics.core.inputs import MAX_TEXT_CHARS, MetricInputError
from opik_metrics.metrics.chrf import CHRF
from opik_metrics.metrics.ter import TER
from tests.text.cider_oracle import oracle_cider
from tests.text.meteor.test_meteor_data import data  # noqa: F401  (the fixture: small tables, no Java)

HEAD = "the cat sat on the mat"
REFERENCE = "the cat sat on the mat"


def filler_words():
    """Distinct 30-letter words that match nothing (no stem, synonym or paraphrase of the reference's)."""
    for letters in itertools.product(string.ascii_lowercase, repeat=4):
        yield "zq" + "".join(letters) * 7


def text_of(length: int) -> str:
    """``HEAD``, distinct filler words, then CJK characters up to exactly ``length`` characters
    (so that its UTF-8 bytes are more than its characters)."""
    words, size = [HEAD], len(HEAD)
    for word in filler_words():
        if size + 1 + len(word) > length - 3:
            break
        words.append(word)
        size += 1 + len(word)
    text = " ".join(words) + " "
    return text + "東" * (length - len(text))


AT = text_of(MAX_TEXT_CHARS)
OVER = AT + "x"


def test_the_text_is_exactly_the_bound_in_characters_not_bytes():
    assert len(AT) == MAX_TEXT_CHARS and len(AT.encode("utf-8")) > MAX_TEXT_CHARS and len(OVER) == MAX_TEXT_CHARS + 1


def _sacrebleu(name):
    metric = {"bleu": sacrebleu.metrics.BLEU(effective_order=True), "chrf": sacrebleu.metrics.CHRF(),
              "ter": sacrebleu.metrics.TER()}[name]
    return lambda out, refs: metric.sentence_score(out, refs).score / 100


@pytest.mark.parametrize("make, name", [(BLEU, "bleu"), (CHRF, "chrf"), (TER, "ter")])
def test_sacrebleu_metrics_at_the_bound_equal_sacrebleu(make, name):
    metric, oracle = make(track=False), _sacrebleu(name)
    (one,) = metric.score(AT, REFERENCE)
    batch = metric.score_batch([AT, "a cat"], [REFERENCE, [AT, "the cat"]])
    assert one.value == pytest.approx(oracle(AT, [REFERENCE]), abs=1e-12) and one.reason is None
    assert batch[0][0].value == one.value
    assert batch[1][0].value == pytest.approx(oracle("a cat", [AT, "the cat"]), abs=1e-12)   # a reference at the bound
    assert not any(r.scoring_failed for results in batch for r in results)


def test_rouge_at_the_bound_equals_rouge_score():
    metric = ROUGE(track=False)
    oracle = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"]).score(REFERENCE, AT)
    for results in (metric.score(AT, REFERENCE), metric.score_batch([AT], [REFERENCE])[0]):
        got = {r.name: r.value for r in results}
        for kind, want in oracle.items():
            assert got[f"{kind}_f1"] == pytest.approx(want.fmeasure, abs=1e-12)
            assert got[f"{kind}_recall"] == pytest.approx(want.recall, abs=1e-12)
        assert got["rouge1_recall"] == 1.0 and 0 < got["rouge1_precision"] < 1e-3


def test_cider_at_the_bound_equals_pycocoevalcap():
    """Against itself (against the short reference CIDEr-D's length penalty, exp(-33,000^2 / 72),
    is 0 in pycocoevalcap as here)."""
    cands, refs = [AT, AT, "a dog runs"], [[AT, "a cat"], [REFERENCE], ["a dog is running", "the dog runs"]]
    _, per_item = oracle_cider(cands, refs)
    got = CIDEr(tokenize="none", track=False).score_batch(cands, refs)
    assert [r[0].value for r in got] == pytest.approx(per_item, abs=1e-9)
    assert got[0][0].value > 1 and got[1][0].value == 0.0 and not any(r[0].scoring_failed for r in got)


def test_meteor_at_the_bound_by_hand(data):                                          # noqa: F811
    """Worked from Meteor's formula (see test_meteor_handworked): the output's six words match the
    reference's in one chunk ("the" twice a function word, four content words); the fillers and
    the CJK characters (each a word of its own, as the jar normalises them) are unmatched content words."""
    alpha, beta, gamma, delta = 0.85, 0.2, 0.6, 0.75
    unmatched = (len(AT.split()) - 7) + AT.count("東")            # the fillers, then the CJK run's characters
    precision = (delta * 4 + (1 - delta) * 2) / (delta * (4 + unmatched) + (1 - delta) * 2)
    recall = 1.0
    f_mean = precision * recall / (alpha * precision + (1 - alpha) * recall)
    want = f_mean * (1 - gamma * (1 / 6) ** beta)
    metric = METEOR(data=data, track=False)
    for (result,) in (metric.score(AT, REFERENCE), metric.score_batch([AT], [REFERENCE])[0]):
        assert not result.scoring_failed and result.reason is None
        assert result.value == pytest.approx(want, rel=1e-12)
        assert result.metadata["precision"] == pytest.approx(precision, rel=1e-12)


MESSAGE = (r"item {item}, field '{field}': 1,000,001 characters, more than the 1,000,000 a metric of opik-metrics "
           r"scores \(MAX_TEXT_CHARS\); split the text into items")


@pytest.mark.parametrize("make", [ROUGE, BLEU, CHRF, TER, CIDEr, METEOR], ids=lambda m: m.__name__)
def test_one_character_over_the_bound_names_item_and_field(make, data):              # noqa: F811
    """Refused at once, before any engine runs, in both of a metric's calls."""
    metric = make(data=data, track=False) if make is METEOR else make(track=False)
    for call, item, field in [
        (lambda: metric.score(OVER, REFERENCE), None, "output"),
        (lambda: metric.score(REFERENCE, OVER), None, "reference"),
        (lambda: metric.score(REFERENCE, [REFERENCE, OVER]), None, r"reference\[1\]"),
        (lambda: metric.score_batch(["a", OVER], ["a", "b"]), 1, "output"),
        (lambda: metric.score_batch(["a", "b", "c"], ["a", "b", OVER]), 2, "reference"),
        (lambda: metric.score_batch(["a", "b"], [["a"], ["b", OVER]]), 1, r"reference\[1\]"),
    ]:
        where = MESSAGE.format(item=item, field=field) if item is not None else \
            MESSAGE.replace("item {item}, ", "").format(field=field)
        with pytest.raises(MetricInputError, match=rf"^{where}$"):
            call()

"""The speed helpers (the collector paused, ScoreResults built positionally, metadata shared by
many results) change no number: every metric that uses them gives the same results on the plain
reference path (``ScoringContext(speed_helpers=False)``), serial and on worker processes, and the
plain path really goes without them."""
from __future__ import annotations

import gc

import pytest

import functools

from opik_metrics import BLEU, CIDEr
from opik_metrics import ROUGE as _ROUGE
from opik_metrics.execution import ScoringContext
from opik_metrics.execution import kernels
from opik_metrics.metric_kit.shared_metadata import SharedMetadata
from opik_metrics.scoring import Scorer
from tests.corpus import realistic_pairs


def _pairs(n=1_500):
    preds, refs = realistic_pairs(n, seed=41)
    _, more = realistic_pairs(n, seed=42)
    references = [r if k % 4 else [r, m] for k, (r, m) in enumerate(zip(refs, more))]
    preds[3], references[9] = "", ""
    return preds, references


def _plain(results):
    """Every field of every result, metadata as a plain dict (its signature as text)."""
    return [[(r.name, r.value, r.reason, r.category_name, r.scoring_failed,
              {k: str(v) for k, v in dict(r.metadata or {}).items()}) for r in item] for item in results]


ROUGE = functools.partial(_ROUGE, engine="python")     # our engine: its batches go to worker processes
METRICS = [lambda: ROUGE(track=False), lambda: ROUGE(rouge_types=["rouge1", "rougeLsum", "rougeSU4"],
                                                     use_stemmer=True, track=False),
           lambda: BLEU(track=False), lambda: CIDEr(track=False)]


@pytest.mark.parametrize("make", METRICS, ids=["rouge", "rouge-stemmed", "bleu", "cider"])
def test_the_plain_path_gives_the_same_results(make):
    preds, references = _pairs()
    fast = make().score_batch(preds, references)
    with ScoringContext(speed_helpers=False):
        plain = make().score_batch(preds, references)
    assert _plain(plain) == _plain(fast)


def test_the_plain_path_on_worker_processes_and_through_the_scorer(monkeypatch):
    monkeypatch.setattr(kernels, "MIN_SLICE", 400)
    preds, references = _pairs()
    want = _plain(ROUGE(track=False).score_batch(preds, references, workers=1))
    with ScoringContext(speed_helpers=False):
        assert _plain(ROUGE(track=False).score_batch(preds, references, workers=2)) == want
        rows = Scorer([ROUGE(track=False), BLEU(track=False)]).rows(
            0, [{"output": p, "reference": r} for p, r in zip(preds, references)])
    fast = Scorer([ROUGE(track=False), BLEU(track=False)]).rows(
        0, [{"output": p, "reference": r} for p, r in zip(preds, references)])
    assert rows == fast


class _Watching(_ROUGE):
    """ROUGE noting whether the collector runs and which metadata type it builds."""

    def _score_items(self, outputs, references):
        self.collector_on = gc.isenabled()
        made = super()._score_items(outputs, references)
        self.metadata_types = {type(r.metadata) for item in made for r in item}
        return made


def test_the_plain_path_goes_without_the_helpers():
    preds, references = _pairs(50)
    was = gc.isenabled()
    gc.enable()
    try:
        fast = _Watching(track=False, engine="python")
        fast.score_batch(preds, references, workers=1)
        with ScoringContext(speed_helpers=False):
            plain = _Watching(track=False, engine="python")
            plain.score_batch(preds, references, workers=1)
    finally:
        if not was:
            gc.disable()
    assert (fast.collector_on, fast.metadata_types) == (False, {SharedMetadata})
    assert (plain.collector_on, plain.metadata_types) == (True, {dict})

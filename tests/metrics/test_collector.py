"""The cyclic collector around ``score_batch``: paused while a batch scores and restored as it was;
a large batch's results go straight to the oldest generation (no young collection rescans them),
after the caller's own young garbage has been collected; nothing of the kind where the collector
was off, another thread runs or the process froze objects of its own."""
import gc
import threading
import weakref

import pytest

from opik_metrics import ROUGE
from opik_metrics.execution import context as scoring_context
from opik_metrics.metric_kit import collector
from opik_metrics.metric_kit.collector import collector_paused
from tests.corpus import realistic_pairs


def _generation_of(obj) -> int | None:
    for generation in range(3):
        if any(o is obj for o in gc.get_objects(generation=generation)):
            return generation
    return None


def _batch(n):
    preds, refs = realistic_pairs(n, seed=31)
    return preds, refs


@pytest.fixture
def collector_on(monkeypatch):
    """The collector on, and no thread of another test counted as running here (threads are
    their own test below)."""
    monkeypatch.setattr(scoring_context, "other_threads_than_ours", lambda: False)
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_a_large_batch_lands_in_the_oldest_generation(collector_on):
    preds, refs = _batch(collector.PROMOTE_MIN_ITEMS)
    results = ROUGE(track=False).score_batch(preds, refs, workers=1)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert _generation_of(results[0][0]) == 2 and _generation_of(results[-1]) == 2
    # the batch's ~10,000 objects were not left counting towards a young collection (a few hundred
    # may come from threads other tests left behind: the SDK's background flushers)
    assert gc.get_count()[0] < 1_000


@pytest.fixture
def freezes(monkeypatch):
    """The calls of ``gc.freeze`` (which moves objects), counted; it still runs."""
    calls = []
    freeze = gc.freeze
    monkeypatch.setattr(gc, "freeze", lambda: (calls.append(1), freeze())[1])
    return calls


def test_a_small_batch_is_left_to_the_collector_as_usual(collector_on, freezes):
    preds, refs = _batch(collector.PROMOTE_MIN_ITEMS - 1)
    ROUGE(track=False).score_batch(preds, refs, workers=1)
    assert freezes == []
    ROUGE(track=False).score_batch(preds + preds[:1], refs + refs[:1], workers=1)
    assert freezes == [1]


@pytest.fixture
def collections():
    """The generation of each collection that runs, in order."""
    seen = []

    def note(phase, info):
        if phase == "start":
            seen.append(info["generation"])
    gc.callbacks.append(note)
    yield seen
    gc.callbacks.remove(note)


def test_the_callers_young_garbage_is_collected_not_promoted(collector_on, collections):
    class Node:
        pass

    preds, refs = _batch(collector.PROMOTE_MIN_ITEMS)       # made first: the garbage below is the newest
    metric = ROUGE(track=False)
    gc.collect()
    older = Node()
    older.me = older
    gc.collect(0)                            # survives one young collection: now in generation 1
    newer = Node()
    newer.me = newer
    alive = [weakref.ref(older), weakref.ref(newer)]
    del older, newer                         # young cyclic garbage: only a collection frees it
    assert all(ref() is not None for ref in alive)
    collections.clear()
    metric.score_batch(preds, refs, workers=1)
    assert [ref() for ref in alive] == [None, None]
    assert collections[:1] == [1] and 2 not in collections      # one young collection, never a full one


def test_nothing_moves_while_another_thread_runs(collector_on, freezes, monkeypatch):
    monkeypatch.undo()                       # the real check of threads (the fixtures' patches go too)
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(1))
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        preds, refs = _batch(collector.PROMOTE_MIN_ITEMS)
        ROUGE(track=False).score_batch(preds, refs, workers=1)
        assert freezes == []
    finally:
        stop.set()
        other.join()


def test_objects_the_process_froze_stay_frozen(collector_on, freezes):
    gc.freeze()
    frozen = gc.get_freeze_count()
    try:
        preds, refs = _batch(collector.PROMOTE_MIN_ITEMS)
        ROUGE(track=False).score_batch(preds, refs, workers=1)
        assert gc.get_freeze_count() > frozen // 2 and freezes == [1]     # the test's own freeze only (frozen objects may die meanwhile)
    finally:
        gc.unfreeze()


def test_a_collector_turned_off_stays_off_and_nothing_moves(freezes):
    was = gc.isenabled()
    gc.disable()
    try:
        preds, refs = _batch(collector.PROMOTE_MIN_ITEMS)
        ROUGE(track=False).score_batch(preds, refs, workers=1)
        assert not gc.isenabled() and freezes == []
    finally:
        if was:
            gc.enable()


def test_the_collector_is_restored_on_error(collector_on):
    with pytest.raises(RuntimeError):
        with collector_paused(collector.PROMOTE_MIN_ITEMS):
            assert not gc.isenabled()
            raise RuntimeError("boom")
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_bad_input_still_gets_its_error(collector_on):
    with pytest.raises(Exception, match="outputs"):
        ROUGE(track=False).score_batch(42, ["a"])
    assert gc.isenabled()


def test_compare_promotes_the_records_it_read_and_leaves_nothing_frozen(collector_on, tmp_path):
    """``compare`` run in a process that goes on (a test, a notebook calling ``main``): the records
    go to the oldest generation, and the process's collector is as it was (nothing frozen)."""
    from opik_metrics.cli.main import main

    class Node:
        pass

    kept = Node()
    kept.me = kept
    gc.collect(0)
    assert _generation_of(kept) in (1, 2)
    paths = []
    for name in ("a", "b"):
        source = tmp_path / f"{name}.jsonl"
        source.write_text("".join(f'{{"id": "q{k}", "output": "a cat sat {k}", "reference": "a cat sat on {k}"}}\n'
                                  for k in range(6)), encoding="utf-8")
        paths.append(str(tmp_path / f"{name}.scores.jsonl"))
        assert main(["score", "-i", str(source), "-o", paths[-1], "-m", "rouge", "--no-progress"]) == 0
    assert main(["compare", *paths, "--resamples", "20", "--format", "json"]) == 0
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert _generation_of(kept) == 2

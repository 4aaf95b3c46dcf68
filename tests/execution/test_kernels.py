"""``score_batch`` on several processes: ROUGE's kernel run by worker processes gives the very
results of the serial path (values, reasons, metadata, order), equal to rouge-score; the choice of
processes is explained and bounded."""
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from rouge_score import rouge_scorer

import functools

from opik_metrics import BLEU
from opik_metrics import ROUGE as _ROUGE
from opik_metrics.execution import ScoringContext
from opik_metrics.execution import kernels as parallel
from tests.corpus import realistic_pairs


# ROUGE on our engine: on rouge-score-rs a batch stays in this process (it uses every core itself)
ROUGE = functools.partial(_ROUGE, engine="python")


def _batch():
    """Mixed items: one and two references, an empty output, an empty reference, punctuation only."""
    preds, refs = realistic_pairs(2_500, seed=21)
    _, more = realistic_pairs(2_500, seed=22)
    references = [r if k % 3 else [r, m] for k, (r, m) in enumerate(zip(refs, more))]
    preds[5], references[7], preds[11] = "", "", "?!"
    return preds, references


def _as_tuples(batch):
    return [[(r.name, r.value, r.reason, r.metadata["n_references"], r.metadata["rouge_type"], str(r.metadata["signature"]))
             for r in results] for results in batch]


@pytest.mark.parametrize("options", [dict(), dict(use_stemmer=True, rouge_types=["rouge1", "rougeLsum", "rougeSU4"]),
                                     dict(multi_reference="average", alpha=0.3, name="custom")])
def test_two_processes_give_the_serial_results(monkeypatch, options):
    monkeypatch.setattr(parallel, "MIN_SLICE", 700)      # several slices a worker, in order
    seen = []
    run_kernel = parallel.run_kernel
    monkeypatch.setattr(parallel, "run_kernel", lambda *a: (seen.append(a[-1]), *run_kernel(*a))[1:])
    preds, references = _batch()
    metric = ROUGE(track=False, **options)
    serial = metric.score_batch(preds, references, workers=1)
    assert seen == []
    spread = metric.score_batch(preds, references, workers=2)
    assert seen == [2] and len(parallel.slices(len(preds), 2)) > 2
    assert _as_tuples(spread) == _as_tuples(serial)
    assert spread[5][0].reason and "output has no tokens" in spread[5][0].reason


def test_processes_equal_rouge_score():
    preds, refs = realistic_pairs(3_000, seed=23)
    types = ["rouge1", "rouge2", "rougeL"]
    got = ROUGE(rouge_types=types, track=False).score_batch(preds, refs, workers=2)
    oracle = rouge_scorer.RougeScorer(types)
    for k in range(0, 3_000, 7):
        want = oracle.score(refs[k], preds[k])
        values = {r.name: r.value for r in got[k]}
        for t in types:
            assert (values[f"{t}_precision"], values[f"{t}_recall"], values[f"{t}_f1"]) == \
                (want[t].precision, want[t].recall, want[t].fmeasure)


def test_workers_are_chosen_by_batch_size_and_checked(monkeypatch):
    monkeypatch.setattr(parallel, "choose_start_method", lambda *a, **k: "fork")
    assert parallel.resolve_workers(None, parallel.PARALLEL_MIN_ITEMS - 1) == 1
    assert parallel.resolve_workers(None, parallel.PARALLEL_MIN_ITEMS) == parallel.available_cores()
    monkeypatch.setattr(parallel, "choose_start_method", lambda *a, **k: "forkserver")   # threads: only when asked
    assert parallel.resolve_workers(None, 10 * parallel.PARALLEL_MIN_ITEMS) == 1
    assert parallel.resolve_workers(3, 10) == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            ROUGE(track=False).score_batch(["a"], ["a"], workers=bad)
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            ROUGE(track=False).score_batch([], [], workers=bad)
    import numpy as np
    assert parallel.check_workers(np.int64(2)) == 2


def test_a_tokenizer_that_cannot_travel_keeps_the_batch_here(monkeypatch):
    metric = ROUGE(tokenizer=lambda text: text.split(), track=False)
    assert metric._batch_kernel([["a b"]]) is None
    monkeypatch.setattr(parallel, "run_kernel", lambda *a: pytest.fail("no kernel: no processes"))
    got = metric.score_batch(["a b", "c"], ["a b", "d"], workers=2)
    assert [r.value for r in got[0]][:3] == [1.0, 1.0, 1.0]


def test_metrics_without_a_kernel_score_here(monkeypatch):
    monkeypatch.setattr(parallel, "run_kernel", lambda *a: pytest.fail("BLEU has no kernel"))
    got = BLEU(track=False).score_batch(["a b c d"], ["a b c d"], workers=2)
    assert got[0][0].value == pytest.approx(1.0)


def test_a_context_keeps_its_pool_for_later_batches_and_stops_it_at_the_end():
    preds, references = _batch()
    metric = ROUGE(track=False)
    want = _as_tuples(metric.score_batch(preds, references, workers=1))
    with ScoringContext() as context:
        assert _as_tuples(metric.score_batch(preds, references, workers=2)) == want
        pool = context.pool(2)
        workers = {p.pid for p in pool.executor._processes.values()}  # noqa: SLF001  which processes scored
        assert _as_tuples(metric.score_batch(preds, references, workers=2)) == want
        assert context.pool(2) is pool and {p.pid for p in pool.executor._processes.values()} == workers  # noqa: SLF001
    assert not context.has_pools()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(os.getpid)


def test_outside_a_context_a_batch_stops_the_pool_it_started():
    before = set(threading.enumerate())
    children = len(multiprocessing.active_children())
    ROUGE(track=False).score_batch(*_batch(), workers=2)
    assert len(multiprocessing.active_children()) == children          # its workers have exited
    assert [t for t in set(threading.enumerate()) - before if t.is_alive()] == []


def test_a_dead_worker_costs_one_serial_batch_and_the_pool_is_replaced():
    preds, references = _batch()
    metric = ROUGE(track=False)
    want = _as_tuples(metric.score_batch(preds, references, workers=1))
    with ScoringContext() as context:
        metric.score_batch(preds, references, workers=2)
        pool = context.pool(2)
        for process in list(pool.executor._processes.values()):  # noqa: SLF001  the workers to kill
            os.kill(process.pid, signal.SIGKILL)
        with pytest.warns(UserWarning, match="worker process died"):
            assert _as_tuples(metric.score_batch(preds, references, workers=2)) == want
        assert not context.has_pools()                                  # the broken pool is dropped
        assert _as_tuples(metric.score_batch(preds, references, workers=2)) == want
        assert context.pool(2) is not pool


def test_two_threads_with_different_worker_counts_do_not_cancel_each_other():
    preds, references = _batch()
    metric = ROUGE(track=False)
    want = _as_tuples(metric.score_batch(preds, references, workers=1))
    got, errors = {}, []

    def run(count):
        try:
            got[count] = _as_tuples(metric.score_batch(preds, references, workers=count))
        except Exception as exc:  # handed to the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(count,)) for count in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and got == {2: want, 3: want}


CHILD = textwrap.dedent("""
    import os, signal, sys
    signal.alarm(60)
    from opik_metrics import ROUGE
    from opik_metrics.execution import ScoringContext, current_context
    from opik_metrics.execution import kernels
    from tests.corpus import realistic_pairs
    preds, refs = realistic_pairs(6000, seed=3)
    metric = ROUGE(track=False)
    want = [[r.value for r in x] for x in metric.score_batch(preds, refs, workers=1)]
    with ScoringContext() as context:
        assert [[r.value for r in x] for x in metric.score_batch(preds, refs, workers=2)] == want
        pid = os.fork()
        if pid == 0:     # a child forked inside the context does not use its parent's pool
            ok = current_context() is None and \
                [[r.value for r in x] for x in metric.score_batch(preds, refs, workers=2)] == want
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), "in-pool", kernels.resolve_workers(2, 10 ** 6))
""")


def test_a_process_forked_inside_a_context_scores_with_its_own_pool():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.split() == ["child", "0", "in-pool", "2"], done.stderr[-2000:]


def test_no_nested_pools_inside_a_worker_or_a_daemon():
    with multiprocessing.get_context("fork").Pool(1) as pool:          # daemonic workers
        assert pool.apply(parallel.resolve_workers, (2, 10 ** 6)) == 1
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(parallel.resolve_workers, None, 10 ** 6).result() == 1


def test_slices_in_flight_are_bounded(monkeypatch):
    """Two slices a worker are handed out ahead, not the whole batch at once."""
    monkeypatch.setattr(parallel, "MIN_SLICE", 100)
    monkeypatch.setattr(parallel, "SLICES_PER_WORKER", 4)
    real, submitted = ScoringContext.pool, []

    def spy(context, workers):
        pool = real(context, workers)

        class Counting:
            method = pool.method

            def submit(self, *args):
                submitted.append(args[3][0])
                return pool.submit(*args)
        return Counting()

    monkeypatch.setattr(ScoringContext, "pool", spy)
    preds, refs = realistic_pairs(3_000, seed=24)
    ranges = parallel.slices(3_000, 2)
    spread = parallel.run_kernel(ROUGE(track=False)._batch_kernel([[r] for r in refs]), preds, [[r] for r in refs], 2)
    assert next(spread)[:2] == ranges[0] and len(submitted) == 5        # four ahead, one more as the first goes
    assert [r[:2] for r in spread] == ranges[1:] and len(submitted) == len(ranges) == 8

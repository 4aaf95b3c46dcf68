"""The local store under faults (issue "Hardening"): several processes on one experiment, a killed
run, a lost lease; lone surrogates in outputs and items; a damaged file, another application's
SQLite file, a store on read-only storage. Real processes and real files, no mocks."""
from __future__ import annotations

import json
import multiprocessing
import os
import random
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from opik_metrics.experiments.store import (ExperimentLocked, ExperimentStore, NotAStore, StoreDamaged,
                                            StoredScore)

REPO = Path(__file__).resolve().parents[2]
ITEMS = [(f"k{k}", {"question": f"q{k}", "reference": f"reference {k}"}) for k in range(4)]
CONFIG = {"model": "sampler"}
WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away"]
RUN_ITEMS = [{"question": f"q{k}", "reference": "the cat sat on the mat"} for k in range(8)]


def _cli(argv: list[str], capsys) -> tuple[int, str, str]:
    from opik_metrics.cli.main import main

    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---- 1. one process at a time on an experiment ---------------------------------------------

class SamplingTask:
    """An LLM stand-in that samples: each call answers a different number of random words."""

    def __init__(self, delay: float = 0.0, interrupt_after: int | None = None) -> None:
        self.calls = 0
        self.delay, self.interrupt_after = delay, interrupt_after
        self.rng = random.Random(os.getpid() * 1000 + int(time.time() * 1000) % 1000)

    def __call__(self, item: dict) -> dict:
        if self.interrupt_after is not None and self.calls == self.interrupt_after:
            raise KeyboardInterrupt
        self.calls += 1
        time.sleep(self.delay)
        return {"output": " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 9)))}


def _run_sampled(path, task, **kw):
    from opik_metrics.experiments.runner import run_experiment
    from tests.experiments.toy import FragileMetric      # scores "length": the output's word count

    return run_experiment("sampled", RUN_ITEMS, task, [FragileMetric()], dataset_name="d", config=CONFIG,
                          store=path, chunk_size=1, progress=False, **kw)


def _resume_in_child(path: str, wait: float, barrier, queue) -> None:
    task = SamplingTask(delay=0.3)
    store = ExperimentStore(path, lock_wait=wait)
    barrier.wait(timeout=120)                 # imports done: every process resumes at the same moment
    try:
        _run_sampled(store, task)
        queue.put((os.getpid(), "ran", "", task.calls))
    except ExperimentLocked as exc:
        queue.put((os.getpid(), "locked", str(exc), task.calls))
    except BaseException as exc:              # anything else fails the test with its message
        queue.put((os.getpid(), "error", f"{type(exc).__name__}: {exc}", task.calls))
    finally:
        store.close()


def _fast_context():
    """Children that need not import opik again (seconds each): fork where no other thread could be
    copied mid-lock, else a fork server that imports it once."""
    import threading

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["opik_metrics.experiments.runner", "tests.experiments.toy", __name__])
        return ctx
    return multiprocessing.get_context("spawn")


def test_three_processes_resuming_one_experiment_run_each_item_once(tmp_path):
    path = tmp_path / "store.sqlite"
    with pytest.raises(KeyboardInterrupt):
        _run_sampled(path, SamplingTask(interrupt_after=2))
    with ExperimentStore(path) as store:
        info = store.info("sampled")
        pending = len(store.items(info.id, ["pending", "output"]))
    assert info.status == "interrupted" and pending == 6

    ctx = _fast_context()
    barrier, queue = ctx.Barrier(3), ctx.Queue()
    waits = [0.0, 0.0, 120.0]                 # two stop at once, one waits for the holder to finish
    children = [ctx.Process(target=_resume_in_child, args=(str(path), w, barrier, queue)) for w in waits]
    for child in children:
        child.start()
    results = {}
    for _ in children:
        pid, outcome, message, calls = queue.get(timeout=300)
        results[pid] = (outcome, message, calls)
    for child in children:
        child.join(timeout=60)
    by_wait = dict(zip([c.pid for c in children], waits))

    assert not [r for r in results.values() if r[0] == "error"], results
    assert sum(calls for _, _, calls in results.values()) == pending       # every item ran exactly once
    ran = [pid for pid, r in results.items() if r[0] == "ran" and r[2] > 0]
    assert len(ran) == 1
    locked = {pid: r[1] for pid, r in results.items() if r[0] == "locked"}
    assert locked and all(by_wait[pid] == 0 for pid in locked)             # the waiting one never gives up
    for message in locked.values():
        assert len(message.splitlines()) == 1
        assert f"experiment 'sampled' in {path}" in message
        assert f"pid {ran[0]} on host {socket.gethostname()}" in message and "OPIK_METRICS_LOCK_WAIT" in message

    with ExperimentStore(path) as store:
        info = store.info("sampled")
        items = store.items(info.id)
    assert info.status == "finished" and info.runs == 1 + (3 - len(locked))
    assert all(item.status == "scored" for item in items)
    for item in items:                                                    # each score is of its own output
        assert item.scores["length"].value == len(item.output["output"].split()), item


def _hold_and_hang(path: str, ready) -> None:
    store = ExperimentStore(path)
    exp_id, _ = store.begin("held", "d", CONFIG, ITEMS)
    store.save_output(exp_id, "k0", {"output": "half done"}, None, 0.1)
    ready.set()
    time.sleep(600)


def test_a_killed_run_leaves_a_lease_that_is_taken_over_at_once(tmp_path):
    path = tmp_path / "store.sqlite"
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    child = ctx.Process(target=_hold_and_hang, args=(str(path), ready))
    child.start()
    try:
        assert ready.wait(120)
        with ExperimentStore(path) as other:
            with pytest.raises(ExperimentLocked, match=rf"experiment 'held' in .* is being run by another process "
                                                       rf"\(pid {child.pid} on host "):
                other.begin("held", "d", CONFIG, ITEMS)
            with pytest.raises(ExperimentLocked, match=f"pid {child.pid}"):
                other.begin("held", "d", CONFIG, ITEMS, overwrite=True)    # no replacing a running experiment
            child.kill()                                                   # kill -9: no finish, no release
            child.join(timeout=60)
            exp_id, done = other.begin("held", "d", CONFIG, ITEMS)         # the dead pid's lease is free
            assert done == 0
            assert [i.status for i in other.items(exp_id)] == ["output", "pending", "pending", "pending"]
            other.finish(exp_id, "interrupted", 0.0)
    finally:
        if child.is_alive():
            child.kill()
            child.join(timeout=60)


def test_leases_expire_when_not_renewed_and_a_waiting_run_gives_up_with_the_holder(tmp_path):
    path = tmp_path / "store.sqlite"
    with ExperimentStore(path) as store:
        store.begin("exp", "d", CONFIG, ITEMS)
        store.close()
    now = time.time()
    with sqlite3.connect(path) as db:                 # a run on another machine that stopped renewing
        db.execute("INSERT INTO experiment_leases VALUES ('exp', 'elsewhere', 4242, 'gpu-box-7', 'gpu-box-7||', "
                   "'2026-01-01T00:00:00+00:00', ?, ?)", (now, now + 1.0))
    with ExperimentStore(path, lock_wait=0.3) as store:
        started = time.monotonic()
        with pytest.raises(ExperimentLocked, match=r"pid 4242 on host gpu-box-7.*waited 0.[34] s"):
            store.begin("exp", "d", CONFIG, ITEMS)
        assert 0.25 < time.monotonic() - started < 5
        exp_id, _ = store.begin("exp", "d", CONFIG, ITEMS, wait=10)      # waits until the lease expires
        assert time.time() >= now + 1.0
        store.finish(exp_id, "finished", 0.0)


def test_the_heartbeat_keeps_a_long_run_locked_and_a_lost_lease_writes_nothing(tmp_path):
    path = tmp_path / "store.sqlite"
    with ExperimentStore(path, lease_seconds=0.4) as first, ExperimentStore(path) as second:
        exp_id, _ = first.begin("exp", "d", CONFIG, ITEMS)
        time.sleep(1.2)                                # three lease lengths with no save: the heartbeat renews
        with pytest.raises(ExperimentLocked, match=f"pid {os.getpid()}"):
            second.begin("exp", "d", CONFIG, ITEMS)
        first.finish(exp_id, "interrupted", 0.0)
        assert second.begin("exp", "d", CONFIG, ITEMS)[0] == exp_id

    with ExperimentStore(path) as first, ExperimentStore(path) as second:
        exp_id, _ = first.begin("lost", "d", CONFIG, ITEMS)
        with sqlite3.connect(path) as db:          # as if this process had been suspended past its lease
            db.execute("UPDATE experiment_leases SET expires_at = 0 WHERE experiment = 'lost'")
        second_id, _ = second.begin("lost", "d", CONFIG, ITEMS)
        with pytest.raises(ExperimentLocked, match="lost its lease"):
            first.save_output(exp_id, "k0", {"output": "stale"}, None, 0.1)
        assert not first.holds(exp_id) and second.holds(second_id)
        assert second.items(second_id)[0].status == "pending"


# ---- 2. lone surrogates ---------------------------------------------------------------------

CUT = "a smiling cat \ud83d"                 # an LLM reply cut in the middle of an emoji


def test_lone_surrogates_in_outputs_items_and_reasons_are_stored_and_the_run_resumes(tmp_path):
    from opik_metrics.experiments.runner import run_experiment
    from tests.experiments.toy import FragileMetric

    items = [{"question": "q0", "reference": "a cat"}, {"question": "q1 \udcff", "reference": "a dog \ud83d"},
             {"question": "q2", "reference": "a cow"}]
    calls = []

    def task(item):
        calls.append(item["question"])
        if item["question"] == "q2":
            raise ValueError(f"could not parse {CUT!r}: {CUT}")
        return {"output": CUT if item["question"] == "q0" else "a dog"}

    path = tmp_path / "store.sqlite"
    summary = run_experiment("cut", items, task, [FragileMetric()], dataset_name="d", store=path, progress=False)
    assert (summary.items, summary.failed_items) == (3, 1)
    again = run_experiment("cut", items, task, [FragileMetric()], dataset_name="d", store=path, progress=False)
    assert calls == ["q0", "q1 \udcff", "q2"] and again.resumed_items == 3    # the resume redoes nothing

    with ExperimentStore(path, create=False) as store:
        stored = store.items(store.info("cut").id)
    assert stored[0].output == {"output": CUT}                              # read back exactly as returned
    assert stored[1].input == items[1]
    assert stored[2].status == "failed" and "\\ud83d" in stored[2].failure  # a reason: shown, not lost
    sqlite3.connect(path).execute("SELECT output FROM experiment_items").fetchall()   # valid UTF-8 on disk


# ---- 3. damaged, foreign and read-only stores ------------------------------------------------

def _store_with_one_run(path: Path) -> Path:
    with ExperimentStore(path) as store:
        exp_id, _ = store.begin("exp", "d", CONFIG, ITEMS)
        for key, _ in ITEMS:
            store.save_output(exp_id, key, {"output": "words " * 50}, None, 0.1)
            store.save_scores(exp_id, key, [StoredScore("length", "len", 50.0, False, None, {"x": "y" * 100})], 0.0)
        store.finish(exp_id, "finished", 1.0)
    assert not Path(f"{path}-wal").exists()
    return path


def _damage_page_of(path: Path, table: str) -> None:
    with sqlite3.connect(path) as db:
        page = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    with open(path, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xee" * 64)


def test_a_damaged_store_is_named_and_never_written(tmp_path, capsys):
    path = _store_with_one_run(tmp_path / "store.sqlite")
    _damage_page_of(path, "scores")
    before = path.read_bytes()

    for argv in (["experiments", "list"], ["experiments", "show", "exp"],
                 ["compare", "exp", "exp2", "--output", str(tmp_path / "r")]):
        status, _, err = _cli([*argv, "--store", str(path)], capsys)
        line = _one_line_error(err)
        assert status == 2 and f"experiment store {path} is damaged" in line and "malformed" in line, line
    with pytest.raises(StoreDamaged, match="is damaged .*it is not written to"):
        ExperimentStore(path)                                     # a writer checks the file before writing
    from opik_metrics.experiments.runner import run_experiment
    with pytest.raises(StoreDamaged):
        run_experiment("new", [{"reference": "x"}], lambda item: {"output": "x"}, [], dataset_name="d",
                       store=path, progress=False)
    assert path.read_bytes() == before

    text = tmp_path / "notes.sqlite"
    text.write_text("this is not a database, just text " * 100)
    status, _, err = _cli(["experiments", "list", "--store", str(text)], capsys)
    assert status == 2 and "is damaged (sqlite: file is not a database)" in _one_line_error(err)


def test_another_applications_sqlite_file_is_not_a_store_and_is_left_alone(tmp_path, capsys):
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE experiments (name TEXT, value REAL)")     # a clash of names, not our table
        db.execute("INSERT INTO experiments VALUES ('lr-sweep', 0.1)")
        db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, started TEXT)")
    db.close()
    before = path.read_bytes()
    for argv in (["experiments", "list"], ["compare", "a", "b", "--output", str(tmp_path / "r")]):
        status, _, err = _cli([*argv, "--store", str(path)], capsys)
        line = _one_line_error(err)
        assert status == 2 and f"{path} is an SQLite file but not an opik-metrics store" in line, line
        assert "no such column" not in line
    with pytest.raises(NotAStore, match=r"\(it has tables experiments, runs\); it was not changed"):
        ExperimentStore(path)
    assert path.read_bytes() == before and not Path(f"{path}-wal").exists()

    ours_by_name = tmp_path / "clash.sqlite"           # our table names with other columns
    with sqlite3.connect(ours_by_name) as db:
        db.execute("CREATE TABLE experiments (id INTEGER PRIMARY KEY, title TEXT)")
    db.close()
    with pytest.raises(NotAStore, match="table experiments has other columns than ours"):
        ExperimentStore(ours_by_name)


def test_reading_commands_open_read_only_and_never_migrate(tmp_path, capsys):
    path = _store_with_one_run(tmp_path / "store.sqlite")
    with sqlite3.connect(path) as db:               # a store made before the metadata and lease tables
        db.execute("DROP TABLE opik_metrics_store")
        db.execute("DROP TABLE experiment_leases")
    db.close()
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    status, out, err = _cli(["experiments", "list", "--store", str(path), "--format", "json"], capsys)
    assert status == 0 and json.loads(out)[0]["scores"] == {"length": 50.0}, err
    assert _cli(["experiments", "show", "exp", "--store", str(path)], capsys)[0] == 0
    with ExperimentStore(path, create=False) as store:
        assert store.readonly and store.names() == ["exp"]
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    with ExperimentStore(path) as store:            # a writer migrates it and its data stay
        assert store.info("exp").scored_items == 4
    with sqlite3.connect(path) as db:
        assert dict(db.execute("SELECT key, value FROM opik_metrics_store"))["application"] == "opik-metrics"
    db.close()

    empty = tmp_path / "empty.sqlite"
    empty.touch()
    status, out, _ = _cli(["experiments", "list", "--store", str(empty), "--format", "json"], capsys)
    assert status == 0 and json.loads(out) == [] and empty.stat().st_size == 0


def _without_root_overrides() -> None:
    """In the child, before exec: as root, drop the capabilities that write through file modes."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):                 # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, capability, 0, 0, 0) != 0:     # PR_CAPBSET_DROP
            os._exit(77)


def test_a_store_on_read_only_storage_can_be_read(tmp_path):
    """The folder and file not writable (as on a read-only mount): list and show still work."""
    folder = tmp_path / "readonly"
    folder.mkdir()
    path = _store_with_one_run(folder / "store.sqlite")
    path.chmod(0o444)
    folder.chmod(0o555)
    try:
        probe = subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'r+b')"], preexec_fn=_without_root_overrides,
                               capture_output=True, timeout=60)
        if probe.returncode == 77 or probe.returncode == 0:
            pytest.skip("cannot make a file read-only for a child process here")
        for argv in (["experiments", "list", "--format", "json"], ["experiments", "show", "exp"]):
            done = subprocess.run([sys.executable, "-m", "opik_metrics", *argv, "--store", str(path)],
                                  cwd=REPO, capture_output=True, text=True, timeout=120,
                                  preexec_fn=_without_root_overrides)
            assert done.returncode == 0, done.stderr
            assert "exp" in done.stdout
        assert sorted(p.name for p in folder.iterdir()) == ["store.sqlite"]
    finally:
        folder.chmod(0o755)


def test_a_folder_given_as_the_store_is_named_as_a_folder(tmp_path, capsys):
    for command in (["experiments", "list"], ["experiments", "show", "x"]):
        status, _, err = _cli([*command, "--store", str(tmp_path)], capsys)
        assert status == 2 and "is a directory, not an experiment store" in _one_line_error(err)


def test_a_bit_flip_in_stored_text_is_named_as_damage(tmp_path, capsys):
    path = _store_with_one_run(tmp_path / "store.sqlite")
    data = bytearray(path.read_bytes())
    at = data.index(b"words words words")          # inside a stored output (JSON text)
    data[at + 1] = 0xFF                            # one byte that is no UTF-8
    path.write_bytes(bytes(data))
    status, _, err = _cli(["experiments", "show", "exp", "--items", "--store", str(path)], capsys)
    line = _one_line_error(err)
    assert status == 2 and f"experiment store {path} is damaged" in line, line

"""``evaluate(..., trial_count=N)`` without a server: each item runs N times in the local store (the
task and the metrics called again each trial, as ``opik.evaluate`` calls them), every trial kept and
resumed on its own; a store written before trials were kept reads as one trial per item and is
migrated by its first writer; ``experiments push`` sends one trace and one experiment item per
trial, once; ``compare`` merges an item's trials and reports their counts and spread."""
from __future__ import annotations

import json
import random
import re
import sqlite3

import pytest
import sacrebleu
from opik.api_objects import opik_client

from opik_metrics import BLEU, evaluate
from opik_metrics.cli.main import main
from opik_metrics.compare.publishing.experiment_intervals import interval_scores
from opik_metrics.compare.reading.sources import from_store, load_compared
from opik_metrics.experiments.store import SCHEMA_VERSION, ExperimentStore
from opik_metrics.experiments.summary import item_keys
from tests.opik_rest_server import OpikRestServer

REFS = [f"the {w} sat on the mat near the door" for w in ("cat", "dog", "bird", "fox", "cow", "owl")]
ITEMS = [{"reference": r} for r in REFS]


class Captioner:
    """A nondeterministic task: each call drops words of the reference at random (seeded); counts its
    calls, and raises KeyboardInterrupt (Ctrl-C) on call ``interrupt_after``."""

    def __init__(self, drop: float, seed: int = 0, interrupt_after: int | None = None) -> None:
        self.rng, self.drop, self.interrupt_after = random.Random(seed), drop, interrupt_after
        self.calls: list[str] = []

    def __call__(self, item: dict) -> dict:
        if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append(item["reference"])
        words = item["reference"].split()
        return {"output": " ".join([w for w in words if self.rng.random() > self.drop] or words[:1])}


def _run(path, name, task, trials=3, **extra):
    return evaluate(ITEMS, task, [BLEU(track=False)], experiment_name=name, trial_count=trials, store=path,
                    verbose=0, **extra)


def test_each_item_runs_trial_count_times_and_every_trial_is_kept(tmp_path):
    path, task = tmp_path / "s.sqlite", Captioner(0.4)
    summary = _run(path, "noisy", task, experiment_scoring_functions=interval_scores([BLEU(track=False)]))
    assert (summary.items, summary.trials, summary.failed_items) == (6, 3, 0)
    assert len(task.calls) == 18 and all(task.calls.count(r) == 3 for r in REFS)   # the task ran every trial
    with ExperimentStore(path, create=False) as store:
        info = store.info("noisy")
        rows = store.items(info.id)
    assert (info.items, info.trials, info.scored_items, info.config["trial_count"]) == (6, 3, 18, 3)
    assert [(r.position, r.trial) for r in rows] == [(p, t) for p in range(6) for t in range(3)]
    assert [r.key for r in rows] == [k for k in item_keys(ITEMS) for _ in range(3)]     # the trials share the item key
    outputs = [r.output["output"] for r in rows]
    assert len(set(outputs)) > 6                                         # the trials differ: the task ran again
    for r in rows:                                                       # and the metrics scored each trial
        assert r.scores["bleu"].value == pytest.approx(sacrebleu.sentence_bleu(r.output["output"],
                                                                               [r.input["reference"]]).score / 100)
    per_item = [sum(r.scores["bleu"].value for r in rows[3 * p:3 * p + 3]) / 3 for p in range(6)]
    assert summary.scores["bleu"] == pytest.approx(sum(per_item) / 6)    # the mean of the item means, as Opik's
    assert summary.experiment_scores["corpus_bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(outputs, [[r.input["reference"] for r in rows]]).score / 100)
    assert summary.experiment_scores["bleu.mean"] == pytest.approx(summary.scores["bleu"])
    with ExperimentStore(path) as store:
        (reason,) = {s.reason for s in store.experiment_score_rows(info.id) if s.name.startswith("bleu.")}
    assert reason.startswith("6 items, 95% bootstrap interval")           # intervals resample items, not trials


def test_an_interrupted_run_resumes_with_only_the_missing_trials(tmp_path):
    path = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):
        _run(path, "resumed", Captioner(0.4, interrupt_after=7))
    with ExperimentStore(path, create=False) as store:
        info = store.info("resumed")
        before = {(r.key, r.trial): r.output for r in store.items(info.id) if r.status != "pending"}
    assert info.status == "interrupted" and len(before) == 7
    task = Captioner(0.4, seed=1)
    summary = _run(path, "resumed", task)
    assert len(task.calls) == 18 - 7 and summary.resumed_items == 0 and summary.items == 6
    with ExperimentStore(path, create=False) as store:
        rows = store.items(store.info("resumed").id)
    assert all(r.status == "scored" for r in rows) and len(rows) == 18
    assert {(r.key, r.trial): r.output for r in rows if (r.key, r.trial) in before} == before   # kept, not rerun
    again = Captioner(0.4)
    assert _run(path, "resumed", again).resumed_items == 18 and again.calls == []
    with pytest.raises(Exception, match=r"different config \(changed: trial_count\)"):
        _run(path, "resumed", Captioner(0.4), trials=2)


# the schema of a store written before trials were kept (version 1), as that version created it
V1_SCHEMA = """
CREATE TABLE datasets (name TEXT PRIMARY KEY, created_at TEXT NOT NULL);
CREATE TABLE dataset_items (dataset TEXT NOT NULL REFERENCES datasets(name) ON DELETE CASCADE,
    item_key TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (dataset, item_key));
CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, dataset TEXT NOT NULL
    REFERENCES datasets(name), config TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, seconds REAL NOT NULL DEFAULT 0, runs INTEGER NOT NULL DEFAULT 0, pushed_at TEXT,
    pushed_to TEXT);
CREATE TABLE experiment_items (experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    item_key TEXT NOT NULL, position INTEGER NOT NULL, status TEXT NOT NULL, output TEXT, failure_stage TEXT,
    failure TEXT, trace TEXT, task_seconds REAL, score_seconds REAL, finished_at TEXT,
    PRIMARY KEY (experiment_id, item_key));
CREATE TABLE scores (experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    item_key TEXT NOT NULL, name TEXT NOT NULL, metric TEXT NOT NULL, value REAL, failed INTEGER NOT NULL DEFAULT 0,
    reason TEXT, metadata TEXT, PRIMARY KEY (experiment_id, item_key, name));
CREATE TABLE experiment_scores (experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name TEXT NOT NULL, value REAL, failed INTEGER NOT NULL DEFAULT 0, reason TEXT, metadata TEXT,
    PRIMARY KEY (experiment_id, name));
CREATE TABLE experiment_leases (experiment TEXT PRIMARY KEY, token TEXT NOT NULL, pid INTEGER NOT NULL,
    host TEXT NOT NULL, machine TEXT NOT NULL, acquired_at TEXT NOT NULL, renewed_at REAL NOT NULL,
    expires_at REAL NOT NULL);
CREATE TABLE opik_metrics_store (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pushes (experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    target TEXT NOT NULL, remote_id TEXT NOT NULL, started_at TEXT NOT NULL, complete_at TEXT,
    PRIMARY KEY (experiment_id, target));
CREATE TABLE pushed_traces (experiment_id INTEGER NOT NULL, target TEXT NOT NULL, item_key TEXT NOT NULL,
    trace_id TEXT NOT NULL, PRIMARY KEY (experiment_id, target, item_key),
    FOREIGN KEY (experiment_id, target) REFERENCES pushes(experiment_id, target) ON DELETE CASCADE);
INSERT INTO opik_metrics_store VALUES ('application', 'opik-metrics'), ('schema_version', '1'),
    ('created_at', '2026-11-01T00:00:00+00:00');
PRAGMA user_version = 1;
"""


def _old_store(path, outputs=("the cat sat on the mat", "a dog")):
    """A version-1 store holding experiment ``old``: two items, each scored once (bleu)."""
    db = sqlite3.connect(path)
    db.executescript(V1_SCHEMA)
    items = [{"reference": "the cat sat on the mat"}, {"reference": "a dog runs"}]
    keys = item_keys(items)
    now = "2026-11-01T00:00:00+00:00"
    db.execute("INSERT INTO datasets VALUES ('d', ?)", (now,))
    db.executemany("INSERT INTO dataset_items VALUES ('d', ?, ?)", [(k, json.dumps(i)) for k, i in zip(keys, items)])
    db.execute("INSERT INTO experiments (id, name, dataset, config, status, created_at, updated_at, runs) "
               "VALUES (1, 'old', 'd', '{}', 'finished', ?, ?, 1)", (now, now))
    for position, (key, item, output) in enumerate(zip(keys, items, outputs)):
        db.execute("INSERT INTO experiment_items (experiment_id, item_key, position, status, output, finished_at) "
                   "VALUES (1, ?, ?, 'scored', ?, ?)", (key, position, json.dumps({"output": output}), now))
        bleu = sacrebleu.sentence_bleu(output, [item["reference"]]).score / 100
        db.execute("INSERT INTO scores VALUES (1, ?, 'bleu', 'bleu', ?, 0, NULL, '{}')", (key, bleu))
    db.commit()
    db.close()
    return keys


def test_a_store_written_before_trials_opens_as_one_trial_per_item_and_is_migrated_by_a_writer(tmp_path, capsys):
    path = tmp_path / "old.sqlite"
    keys = _old_store(path)
    before = path.read_bytes()
    with ExperimentStore(path, create=False) as store:                    # read as it is: nothing written
        info = store.info("old")
        rows = store.items(info.id)
        records = from_store(store, "old")
    assert (info.items, info.trials, info.scored_items) == (2, 1, 2)
    assert [(r.key, r.trial, r.status) for r in rows] == [(keys[0], 0, "scored"), (keys[1], 0, "scored")]
    assert [item.key for item in records.items] == keys and rows[0].scores["bleu"].value == pytest.approx(1.0)
    assert main(["experiments", "show", "old", "--store", str(path), "--items"]) == 0
    assert "2 items: 2 scored, 0 failed" in capsys.readouterr().out
    assert path.read_bytes() == before

    with ExperimentStore(path) as store:                                  # a writer rebuilds items and scores
        assert [(r.key, r.trial) for r in store.items(store.info("old").id)] == [(keys[0], 0), (keys[1], 0)]
        exp_id, done = store.begin("old", "d", {}, [(k, {}) for k in keys])   # resumes: both trials 0 done
        assert done == 2
        store.finish(exp_id, "finished", 0.0)
    db = sqlite3.connect(path)
    try:
        for table in ("experiment_items", "scores"):
            assert "trial" in {c[1] for c in db.execute(f"PRAGMA table_info({table})")}
        assert db.execute("SELECT COUNT(*), MIN(trial), MAX(trial) FROM scores").fetchone() == (2, 0, 0)
        assert dict(db.execute("SELECT key, value FROM opik_metrics_store"))["schema_version"] == str(SCHEMA_VERSION)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    finally:
        db.close()
    with ExperimentStore(path, create=False) as store:
        assert store.info("old").scores == info.scores


SCORES = re.compile(r"/traces/feedback-scores$")
TRACES = re.compile(r"/traces(/batch)?$")
EXPERIMENT_ITEMS = re.compile(r"/experiments/items$")
EXPERIMENTS = re.compile(r"/experiments$")


@pytest.fixture
def server(monkeypatch):
    with OpikRestServer() as srv:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", srv.url)
        opik_client.reset_global_client()
        try:
            yield srv
        finally:
            opik_client.reset_global_client()
        assert srv.invalid == [] and srv.unexpected == []


def test_a_push_sends_one_trace_and_experiment_item_per_trial_and_a_second_push_nothing(tmp_path, server, capsys):
    path = tmp_path / "s.sqlite"
    _run(path, "toy", Captioner(0.4))
    argv = ["experiments", "push", "toy", "--store", str(path), "--no-progress"]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "18 item trials (3 per item) on dataset" in out and "read back: all 18 item trials and 18 feedback" in out
    (experiment,) = server.experiments.values()
    links = server.experiment_items[experiment["id"]]
    assert len(links) == 18 and len(server.traces) == 18 and len({i["trace_id"] for i in links}) == 18
    assert len(server.dataset_items[experiment["dataset_id"]]) == 6            # the trials share their dataset item
    assert sorted(list(map(lambda i: i["dataset_item_id"], links)).count(d) for d in
                  {i["dataset_item_id"] for i in links}) == [3] * 6
    with ExperimentStore(path, create=False) as store:
        rows = store.items(store.info("toy").id)
    dataset = {row["id"]: row["data"] for row in server.dataset_items[experiment["dataset_id"]]}
    pushed = sorted((json.dumps(dataset[i["dataset_item_id"]], sort_keys=True),
                     round(server.trace_scores(i["trace_id"])["bleu"], 9)) for i in links)
    assert pushed == sorted((json.dumps(r.input, sort_keys=True), round(r.scores["bleu"].value, 9)) for r in rows)

    start = len(server.requests)
    assert main(argv) == 0
    assert "this push sent nothing" in capsys.readouterr().out
    for pattern in (SCORES, TRACES, EXPERIMENT_ITEMS, EXPERIMENTS):
        assert [b for m, p, b in server.requests[start:] if m in ("POST", "PUT", "PATCH") and pattern.search(p)] == []
    assert len(server.experiment_items[experiment["id"]]) == 18 and len(server.traces) == 18

    (read,), _ = load_compared(["toy"], opik=True)                           # read back as a server's trials
    assert len(read.items) == 18 and len({item.key for item in read.items}) == 6


def test_compare_of_stored_experiments_with_trials_merges_by_item_and_reports_trial_counts(tmp_path, capsys):
    path = tmp_path / "s.sqlite"
    _run(path, "poor", Captioner(0.5, seed=1))
    _run(path, "good", Captioner(0.1, seed=2), trials=2)
    out = tmp_path / "report"
    assert main(["compare", "poor", "good", "--store", str(path), "--output", str(out), "--resamples", "200"]) == 0
    printed = capsys.readouterr().out
    assert "good vs poor (baseline), 6 shared items" in printed
    assert "poor: 6 items, 18 trials in all (3 per item)" in printed
    assert "good: 6 items, 12 trials in all (2 per item)" in printed
    assert "poor: bleu varies across the trials of an item by a mean standard deviation of" in printed
    data = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert data["pairs"][0]["metrics"]["bleu"]["n"] == 6
    assert main(["compare", "good", "poor", "--store", str(path), "--output", str(tmp_path / "gate"),
                 "--resamples", "200", "--fail-on", "worse"]) == 1                # the CI gate: poor is worse
    assert "gate failed: bleu is significantly worse" in capsys.readouterr().out


def test_the_journal_of_a_server_run_keeps_every_trial(tmp_path, server):
    path = tmp_path / "journal.sqlite"
    summary = evaluate(ITEMS, Captioner(0.4), [BLEU()], experiment_name="served", trial_count=3, store=path,
                       backend="opik", verbose=0)
    assert summary.missing is None and (summary.items, summary.trials) == (6, 3)
    db = sqlite3.connect(path)
    try:
        (target,) = [r[0] for r in db.execute("SELECT target FROM pushes")]
    finally:
        db.close()
    with ExperimentStore(path) as store:
        info = store.info("served")
        rows = store.items(info.id)
        record = store.push_record(info.id, target)
    assert info.pushed_at is not None and (info.items, info.trials, info.scored_items) == (6, 3, 18)
    assert [r.trial for r in rows] == [0, 1, 2] * 6 and all("bleu" in r.scores for r in rows)
    assert sorted(record.traces.values()) == sorted(i["trace_id"] for i in next(iter(
        server.experiment_items.values())))                              # each trial's trace, as a push notes it

"""The local experiment store, used when no Opik server is configured: one SQLite file holding
experiments and their config, dataset items, task outputs, every score (failed ones with their
reason), span records and timings. Each item is committed as it finishes, so an interrupted run
loses nothing already scored and a re-run resumes.
"""
from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from opik_metrics.core.numbers import is_number

STORE_ENV = "OPIK_METRICS_STORE"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS datasets (
    name        TEXT PRIMARY KEY,
    created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dataset_items (
    dataset     TEXT NOT NULL REFERENCES datasets(name) ON DELETE CASCADE,
    item_key    TEXT NOT NULL,
    content     TEXT NOT NULL,              -- JSON: the dataset item
    PRIMARY KEY (dataset, item_key)
);
CREATE TABLE IF NOT EXISTS experiments (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    dataset     TEXT NOT NULL REFERENCES datasets(name),
    config      TEXT NOT NULL,              -- JSON: model, settings, metric signatures, versions
    status      TEXT NOT NULL,              -- running | finished | interrupted
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    seconds     REAL NOT NULL DEFAULT 0,    -- wall time over every (resumed) run
    runs        INTEGER NOT NULL DEFAULT 0,
    pushed_at   TEXT,
    pushed_to   TEXT
);
CREATE TABLE IF NOT EXISTS experiment_items (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    item_key      TEXT NOT NULL,
    position      INTEGER NOT NULL,
    status        TEXT NOT NULL,            -- pending | output | scored | failed
    output        TEXT,                     -- JSON: the task output
    failure_stage TEXT,
    failure       TEXT,
    trace         TEXT,                     -- JSON: span records of the task call
    task_seconds  REAL,
    score_seconds REAL,
    finished_at   TEXT,
    PRIMARY KEY (experiment_id, item_key)
);
CREATE TABLE IF NOT EXISTS scores (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    item_key      TEXT NOT NULL,
    name          TEXT NOT NULL,
    metric        TEXT NOT NULL,
    value         REAL,                     -- NULL when scoring failed
    failed        INTEGER NOT NULL DEFAULT 0,
    reason        TEXT,
    metadata      TEXT,                     -- JSON, with the signature
    PRIMARY KEY (experiment_id, item_key, name)
);
CREATE TABLE IF NOT EXISTS experiment_scores (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    value         REAL,
    failed        INTEGER NOT NULL DEFAULT 0,
    reason        TEXT,
    metadata      TEXT,
    PRIMARY KEY (experiment_id, name)
);
"""


class StoreError(RuntimeError):
    """A problem with the store file or an experiment in it; the message says what to do."""


class ExperimentNotFound(StoreError):
    """No experiment of that name in the store."""


class StoreNotFound(StoreError):
    """No store file where one was expected (reading commands do not create one)."""


def default_store_path() -> Path:
    """``$OPIK_METRICS_STORE``, else ``$XDG_DATA_HOME/opik-metrics/experiments.sqlite``."""
    explicit = os.environ.get(STORE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(data_home).expanduser() / "opik-metrics" / "experiments.sqlite"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _finite(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def config_identity(config: dict) -> str:
    """The part of a config that must match to resume (``runtime`` settings may change)."""
    return _dumps({k: v for k, v in config.items() if k != "runtime"})


@dataclass
class StoredScore:
    """One score of one item; ``value`` is None when the metric failed (see ``reason``)."""

    name: str
    metric: str
    value: float | None
    failed: bool
    reason: str | None
    metadata: dict


@dataclass
class StoredItem:
    """One dataset item's state in an experiment."""

    key: str
    position: int
    input: dict
    status: str
    output: dict | None = None
    failure_stage: str | None = None
    failure: str | None = None
    trace: list | None = None
    task_seconds: float | None = None
    score_seconds: float | None = None
    finished_at: str | None = None
    scores: dict[str, StoredScore] = field(default_factory=dict)


@dataclass
class ExperimentInfo:
    """An experiment's header: config, counts, mean scores and experiment-level scores."""

    id: int
    name: str
    dataset: str
    config: dict
    status: str
    created_at: str
    updated_at: str
    seconds: float
    runs: int
    pushed_at: str | None
    pushed_to: str | None
    items: int = 0
    failed_items: int = 0
    scored_items: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    experiment_scores: dict[str, float | None] = field(default_factory=dict)

    def listing(self) -> dict[str, Any]:
        """The ``experiments list --format json`` entry; ``scores`` holds item means and corpus scores."""
        corpus = {k: v for k, v in self.experiment_scores.items() if v is not None}
        return {"name": self.name, "items": self.items, "failed_items": self.failed_items,
                "created_at": self.created_at, "config": self.config,
                "scores": {**self.scores, **corpus}, "status": self.status, "dataset": self.dataset}


class ExperimentStore:
    """A SQLite experiment store (``path``, or the default path); use as a context manager.

    ``create=False`` refuses to make a new file (for commands that only read).
    """

    def __init__(self, path: str | os.PathLike | None = None, create: bool = True) -> None:
        self.path = Path(path).expanduser() if path else default_store_path()
        if not create and not self.path.is_file():
            raise StoreNotFound(f"no experiment store at {self.path} (pass --store PATH, or set {STORE_ENV})")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA foreign_keys = ON")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(f"store {self.path} has schema version {version}; this opik-metrics "
                                 f"reads version {SCHEMA_VERSION} (upgrade opik-metrics)")
            self._db.execute("PRAGMA journal_mode = WAL")
            with self._db:
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open experiment store {self.path}: {exc} "
                             "(is it an opik-metrics store? pass another --store path)") from None
        except OSError as exc:
            raise StoreError(f"cannot create experiment store {self.path}: {exc}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "ExperimentStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------------

    def begin(self, name: str, dataset: str, config: dict, items: Sequence[tuple[str, dict]],
              overwrite: bool = False) -> tuple[int, int]:
        """Create (or resume) experiment ``name`` over ``items`` (key, content).

        Returns (experiment id, number of items already finished). A stored experiment of the
        same name resumes when its config matches; otherwise a StoreError says how to proceed.
        """
        now = _now()
        row = self._db.execute("SELECT id, config, dataset FROM experiments WHERE name = ?", (name,)).fetchone()
        if row is not None and overwrite:
            self.delete(name)
            row = None
        if row is not None:
            self._check_resumable(name, row, dataset, config)
        with self._db:
            self._db.execute("INSERT OR IGNORE INTO datasets (name, created_at) VALUES (?, ?)", (dataset, now))
            self._db.executemany(
                "INSERT OR IGNORE INTO dataset_items (dataset, item_key, content) VALUES (?, ?, ?)",
                [(dataset, key, _dumps(content)) for key, content in items])
            if row is None:
                cur = self._db.execute(
                    "INSERT INTO experiments (name, dataset, config, status, created_at, updated_at, runs) "
                    "VALUES (?, ?, ?, 'running', ?, ?, 1)", (name, dataset, _dumps(config), now, now))
                exp_id = int(cur.lastrowid)
            else:
                exp_id = int(row["id"])
                self._db.execute("UPDATE experiments SET status = 'running', updated_at = ?, runs = runs + 1, "
                                 "config = ? WHERE id = ?", (now, _dumps(config), exp_id))
            self._db.executemany(
                "INSERT OR IGNORE INTO experiment_items (experiment_id, item_key, position, status) "
                "VALUES (?, ?, ?, 'pending')", [(exp_id, key, pos) for pos, (key, _) in enumerate(items)])
        done = self._db.execute("SELECT COUNT(*) FROM experiment_items WHERE experiment_id = ? AND "
                                "status IN ('scored', 'failed')", (exp_id,)).fetchone()[0]
        return exp_id, int(done)

    def _check_resumable(self, name: str, row: sqlite3.Row, dataset: str, config: dict) -> None:
        stored = _loads(row["config"])
        if row["dataset"] != dataset:
            raise StoreError(f"experiment {name!r} in {self.path} ran on dataset {row['dataset']!r}, not "
                             f"{dataset!r}: choose another experiment name, or pass --overwrite to replace it")
        if config_identity(stored) != config_identity(config):
            changed = sorted(k for k in set(stored) | set(config)
                             if k != "runtime" and _dumps(stored.get(k)) != _dumps(config.get(k)))
            raise StoreError(f"experiment {name!r} in {self.path} has a different config (changed: "
                             f"{', '.join(changed)}): choose another experiment name to keep both, or "
                             "pass --overwrite to replace it")

    def save_output(self, exp_id: int, key: str, output: dict, trace: list | None,
                    task_seconds: float | None) -> None:
        """The task's output for one item (scored next); committed at once."""
        with self._db:
            self._db.execute(
                "UPDATE experiment_items SET status = 'output', output = ?, trace = ?, task_seconds = ?, "
                "failure_stage = NULL, failure = NULL WHERE experiment_id = ? AND item_key = ?",
                (_dumps(output), _dumps(trace) if trace else None, task_seconds, exp_id, key))

    def save_failure(self, exp_id: int, key: str, stage: str, reason: str, trace: list | None = None,
                     task_seconds: float | None = None) -> None:
        """An item that produced no output, with the stage and the reason; committed at once."""
        with self._db:
            self._db.execute(
                "UPDATE experiment_items SET status = 'failed', failure_stage = ?, failure = ?, trace = ?, "
                "task_seconds = ?, output = NULL, finished_at = ? WHERE experiment_id = ? AND item_key = ?",
                (stage, reason, _dumps(trace) if trace else None, task_seconds, _now(), exp_id, key))
            self._db.execute("DELETE FROM scores WHERE experiment_id = ? AND item_key = ?", (exp_id, key))

    def save_scores(self, exp_id: int, key: str, scores: Iterable[StoredScore],
                    score_seconds: float | None) -> None:
        """Every score of one item (failed ones with their reason); the item is then finished."""
        rows = [(exp_id, key, s.name, s.metric, None if s.failed else _finite(s.value), int(s.failed),
                 s.reason, _dumps(s.metadata or {})) for s in scores]
        with self._db:
            self._db.execute("DELETE FROM scores WHERE experiment_id = ? AND item_key = ?", (exp_id, key))
            self._db.executemany(
                "INSERT OR REPLACE INTO scores (experiment_id, item_key, name, metric, value, failed, reason, "
                "metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            self._db.execute(
                "UPDATE experiment_items SET status = 'scored', score_seconds = ?, finished_at = ? "
                "WHERE experiment_id = ? AND item_key = ?", (score_seconds, _now(), exp_id, key))

    def save_experiment_scores(self, exp_id: int, scores: Iterable[StoredScore]) -> None:
        """Experiment-level scores (corpus BLEU, ...), replacing earlier ones."""
        with self._db:
            self._db.execute("DELETE FROM experiment_scores WHERE experiment_id = ?", (exp_id,))
            self._db.executemany(
                "INSERT INTO experiment_scores (experiment_id, name, value, failed, reason, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(exp_id, s.name, None if s.failed else _finite(s.value), int(s.failed), s.reason,
                  _dumps(s.metadata or {})) for s in scores])

    def finish(self, exp_id: int, status: str, seconds: float) -> None:
        """Close a run: ``finished`` or ``interrupted``, adding its wall time."""
        with self._db:
            self._db.execute("UPDATE experiments SET status = ?, updated_at = ?, seconds = seconds + ? "
                             "WHERE id = ?", (status, _now(), seconds, exp_id))

    def mark_pushed(self, name: str, target: str) -> None:
        """Note that the experiment was uploaded to an Opik server."""
        with self._db:
            self._db.execute("UPDATE experiments SET pushed_at = ?, pushed_to = ? WHERE name = ?",
                             (_now(), target, name))

    def delete(self, name: str) -> None:
        """Remove an experiment with its items and scores (dataset items stay)."""
        with self._db:
            self._db.execute("DELETE FROM experiments WHERE name = ?", (name,))

    # ---- reading -------------------------------------------------------------------------

    def items(self, exp_id: int, statuses: Sequence[str] | None = None) -> list[StoredItem]:
        """An experiment's items in dataset order (optionally only some statuses), with scores."""
        sql = ("SELECT ei.*, di.content FROM experiment_items ei JOIN experiments e ON e.id = ei.experiment_id "
               "JOIN dataset_items di ON di.dataset = e.dataset AND di.item_key = ei.item_key "
               "WHERE ei.experiment_id = ?")
        args: list[Any] = [exp_id]
        if statuses:
            sql += f" AND ei.status IN ({', '.join('?' * len(statuses))})"
            args.extend(statuses)
        items = [StoredItem(key=r["item_key"], position=r["position"], input=_loads(r["content"]),
                            status=r["status"], output=_loads(r["output"]), failure_stage=r["failure_stage"],
                            failure=r["failure"], trace=_loads(r["trace"]), task_seconds=r["task_seconds"],
                            score_seconds=r["score_seconds"], finished_at=r["finished_at"])
                 for r in self._db.execute(sql + " ORDER BY ei.position", args)]
        by_key = {item.key: item for item in items}
        for r in self._db.execute("SELECT * FROM scores WHERE experiment_id = ? ORDER BY rowid", (exp_id,)):
            if r["item_key"] in by_key:
                by_key[r["item_key"]].scores[r["name"]] = StoredScore(
                    r["name"], r["metric"], r["value"], bool(r["failed"]), r["reason"], _loads(r["metadata"]))
        return items

    def names(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT name FROM experiments ORDER BY id")]

    def infos(self) -> list[ExperimentInfo]:
        """Every experiment's header, oldest first."""
        return [self._info(row) for row in self._db.execute("SELECT * FROM experiments ORDER BY id")]

    def info(self, name: str) -> ExperimentInfo:
        row = self._db.execute("SELECT * FROM experiments WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = self.names()
            hint = f"; stored: {', '.join(known)}" if known else "; the store is empty"
            raise ExperimentNotFound(f"no experiment named {name!r} in {self.path}{hint}")
        return self._info(row)

    def _info(self, row: sqlite3.Row) -> ExperimentInfo:
        exp_id = row["id"]
        counts = dict(self._db.execute("SELECT status, COUNT(*) FROM experiment_items WHERE experiment_id = ? "
                                       "GROUP BY status", (exp_id,)).fetchall())
        means = {r[0]: r[1] for r in self._db.execute(
            "SELECT s.name, AVG(s.value) FROM scores s JOIN experiment_items ei ON ei.experiment_id = "
            "s.experiment_id AND ei.item_key = s.item_key WHERE s.experiment_id = ? AND s.failed = 0 AND "
            "s.value IS NOT NULL AND ei.status = 'scored' GROUP BY s.name ORDER BY MIN(s.rowid)", (exp_id,))}
        corpus = {r[0]: r[1] for r in self._db.execute(
            "SELECT name, value FROM experiment_scores WHERE experiment_id = ? ORDER BY rowid", (exp_id,))}
        return ExperimentInfo(
            id=exp_id, name=row["name"], dataset=row["dataset"], config=_loads(row["config"]),
            status=row["status"], created_at=row["created_at"], updated_at=row["updated_at"],
            seconds=row["seconds"], runs=row["runs"], pushed_at=row["pushed_at"], pushed_to=row["pushed_to"],
            items=sum(counts.values()), failed_items=counts.get("failed", 0),
            scored_items=counts.get("scored", 0), scores=means, experiment_scores=corpus)

    def experiment_score_rows(self, exp_id: int) -> list[StoredScore]:
        return [StoredScore(r["name"], "", r["value"], bool(r["failed"]), r["reason"], _loads(r["metadata"]))
                for r in self._db.execute("SELECT * FROM experiment_scores WHERE experiment_id = ? "
                                          "ORDER BY rowid", (exp_id,))]

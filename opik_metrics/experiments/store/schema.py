"""The store's SQLite schema, its version and the tables and columns it expects."""
from __future__ import annotations

import functools
import sqlite3

SCHEMA_VERSION = 2          # 2: experiment items and scores keyed by trial too (1: one run per item)
APPLICATION = "opik-metrics"
META_TABLE = "opik_metrics_store"

SCHEMA = """
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
    trial         INTEGER NOT NULL DEFAULT 0,   -- the run of the item (opik.evaluate's trial_id: 0, 1, ...)
    position      INTEGER NOT NULL,
    status        TEXT NOT NULL,            -- pending | output | scored | failed
    output        TEXT,                     -- JSON: the task output
    failure_stage TEXT,
    failure       TEXT,
    trace         TEXT,                     -- JSON: span records of the task call
    task_seconds  REAL,
    score_seconds REAL,
    finished_at   TEXT,
    PRIMARY KEY (experiment_id, item_key, trial)
);
CREATE TABLE IF NOT EXISTS scores (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    item_key      TEXT NOT NULL,
    trial         INTEGER NOT NULL DEFAULT 0,
    name          TEXT NOT NULL,
    metric        TEXT NOT NULL,
    value         REAL,                     -- NULL when scoring failed
    failed        INTEGER NOT NULL DEFAULT 0,
    reason        TEXT,
    metadata      TEXT,                     -- JSON, with the signature
    PRIMARY KEY (experiment_id, item_key, trial, name)
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
CREATE TABLE IF NOT EXISTS experiment_leases (
    experiment  TEXT PRIMARY KEY,           -- the experiment name (a lease outlives --overwrite)
    token       TEXT NOT NULL,              -- the holding ExperimentStore
    pid         INTEGER NOT NULL,
    host        TEXT NOT NULL,
    machine     TEXT NOT NULL,              -- host, boot and pid namespace: where the pid can be checked
    acquired_at TEXT NOT NULL,
    renewed_at  REAL NOT NULL,              -- unix time of the last heartbeat
    expires_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS opik_metrics_store (
    key         TEXT PRIMARY KEY,           -- application, schema_version, created_at
    value       TEXT NOT NULL
);
"""
# Added later, without a new schema version (older versions ignore them): a store made before them
# gets them when it is next opened for writing.
PUSH_SCHEMA = """
CREATE TABLE IF NOT EXISTS pushes (
    experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    target        TEXT NOT NULL,            -- server URL, project, dataset and experiment name there
    remote_id     TEXT NOT NULL,            -- the experiment's id on that server
    started_at    TEXT NOT NULL,
    complete_at   TEXT,                     -- when a read-back last found everything there
    PRIMARY KEY (experiment_id, target)
);
CREATE TABLE IF NOT EXISTS pushed_traces (
    experiment_id INTEGER NOT NULL,
    target        TEXT NOT NULL,
    item_key      TEXT NOT NULL,            -- records.trial_key: the item key, with '#TRIAL' for trials after the first
    trace_id      TEXT NOT NULL,            -- the trial's trace on that server; its span ids derive from it
    PRIMARY KEY (experiment_id, target, item_key),
    FOREIGN KEY (experiment_id, target) REFERENCES pushes(experiment_id, target) ON DELETE CASCADE
);
"""
SCHEMA += PUSH_SCHEMA
CORE_TABLES = ("datasets", "dataset_items", "experiments", "experiment_items", "scores", "experiment_scores")
ADDED_TABLES = ("pushes", "pushed_traces")
#: The tables schema version 2 keys by trial; a version-1 store lacks their ``trial`` column: it reads
#: as trial 0 of each item, and its first writer rebuilds them with the column (``trial_migration``).
TRIAL_TABLES = ("experiment_items", "scores")
TRIAL_COLUMN = "trial"


@functools.lru_cache(maxsize=1)
def expected_columns() -> dict[str, frozenset[str]]:
    """Each table of our schema with its columns (read from the schema itself)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: frozenset(r[1] for r in db.execute(f'PRAGMA table_info("{t}")')) for t in tables}
    finally:
        db.close()


def trial_migration(columns: dict[str, frozenset[str]]) -> list[str]:
    """The SQL that rebuilds a version-1 store's ``TRIAL_TABLES`` (``columns``: their columns now)
    with the ``trial`` column, every row trial 0: statements to run in one transaction."""
    definitions = {t: _definition(t) for t in TRIAL_TABLES}
    script: list[str] = []
    for table in TRIAL_TABLES:
        if TRIAL_COLUMN in columns[table]:
            continue
        kept = ", ".join(sorted((expected_columns()[table] - {TRIAL_COLUMN}) & columns[table]))
        script += [f"ALTER TABLE {table} RENAME TO {table}_v1", definitions[table],
                   f"INSERT INTO {table} ({kept}, {TRIAL_COLUMN}) SELECT {kept}, 0 FROM {table}_v1",
                   f"DROP TABLE {table}_v1"]
    return script


def _definition(table: str) -> str:
    start = SCHEMA.index(f"CREATE TABLE IF NOT EXISTS {table} (")
    return SCHEMA[start:SCHEMA.index(");", start) + 1]


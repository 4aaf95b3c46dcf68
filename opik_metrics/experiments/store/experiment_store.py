"""``ExperimentStore``: opening the file (read-only for reading commands, never writing a damaged
or foreign file), beginning, saving and finishing experiments under a lease, and the queries."""
from __future__ import annotations

import functools
import math
import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

from opik_metrics.core.file_names import name_too_long
from opik_metrics.core.processes import pid_alive
from opik_metrics.experiments.store.errors import (ExperimentLocked, ExperimentNotFound, NotAStore, StoreDamaged,
                                                   StoreError, StoreNotFound, is_damage)
from opik_metrics.experiments.store.leases import (BUSY_SECONDS, HOST, LEASE_SECONDS, MACHINE, Heartbeat,
                                                   LOCK_WAIT_ENV, lock_wait_seconds)
from opik_metrics.experiments.store.records import (ExperimentInfo, PushRecord, StoredItem, StoredScore,
                                                    config_identity, dumps, finite, loads, read_value, storable_text,
                                                    stored_value, utc_now)
from opik_metrics.experiments.store.schema import ADDED_TABLES, APPLICATION, CORE_TABLES, META_TABLE, PUSH_SCHEMA, \
    SCHEMA, SCHEMA_VERSION, TRIAL_COLUMN, TRIAL_TABLES, expected_columns, trial_migration

STORE_ENV = "OPIK_METRICS_STORE"
SQLITE_JOURNAL = "-journal"          # the longest name SQLite writes beside a store ("-wal", "-shm" too)


def default_store_path() -> Path:
    """``$OPIK_METRICS_STORE``, else ``$XDG_DATA_HOME/opik-metrics/experiments.sqlite``."""
    explicit = os.environ.get(STORE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return Path(data_home).expanduser() / "opik-metrics" / "experiments.sqlite"


_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(method: _F) -> _F:
    """SQLite errors of a store method as StoreErrors that say what happened to which file."""

    @functools.wraps(method)
    def wrapper(self: "ExperimentStore", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise self._store_error(exc) from exc

    return wrapper  # type: ignore[return-value]


class ExperimentStore:
    """A SQLite experiment store (``path``, or the default path); use as a context manager.

    ``create=False`` refuses to make a new file and opens the file read-only (for commands that only
    read; a write asked of it reopens it for writing). ``lock_wait``: seconds ``begin`` waits while
    another process runs the same experiment (default ``$OPIK_METRICS_LOCK_WAIT``, else 0: stop at
    once). ``lease_seconds``: how long a lease lasts without being renewed.
    """

    def __init__(self, path: str | os.PathLike | None = None, create: bool = True, *,
                 lock_wait: float | None = None, lease_seconds: float = LEASE_SECONDS) -> None:
        self.path = Path(path).expanduser() if path else default_store_path()
        self.lock_wait = lock_wait_seconds(lock_wait)
        if not (isinstance(lease_seconds, (int, float)) and math.isfinite(lease_seconds) and lease_seconds > 0):
            raise ValueError(f"lease_seconds: expected a positive number, got {lease_seconds!r}")
        self.lease_seconds = float(lease_seconds)
        self._token = uuid.uuid4().hex
        self._held: dict[int, str] = {}               # experiment id -> name, leases this store holds
        self._heartbeats: dict[str, Heartbeat] = {}
        self._damage: str | None = None               # why the file is damaged, once seen
        self._empty = False                           # read-only view of a file with no tables yet
        self._trial_rows = True                       # False: a version-1 store read as it is (one trial per item)
        self._db: sqlite3.Connection | None = None
        too_long = name_too_long(self.path, SQLITE_JOURNAL)
        if too_long is not None:
            raise StoreError(f"experiment store {self.path}: {too_long}")
        if self.path.is_dir():
            raise NotAStore(f"{self.path} is a directory, not an experiment store (an SQLite file): "
                            f"pass --store PATH of the file, or set {STORE_ENV}")
        if not create and not self.path.is_file():
            raise StoreNotFound(f"no experiment store at {self.path} (pass --store PATH, or set {STORE_ENV})")
        self.readonly = not create
        if self.readonly:
            self._open_readonly()
        else:
            self._open_writable()

    # ---- opening -------------------------------------------------------------------------

    def _open_readonly(self) -> None:
        """Open without writing anything: ``mode=ro``; ``immutable`` where SQLite cannot even create
        its shared-memory file next to the store (read-only storage)."""
        uri = self.path.resolve().as_uri()
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            db = None
            try:
                db = sqlite3.connect(uri + query, uri=True, timeout=BUSY_SECONDS)
                db.row_factory = sqlite3.Row
                self._empty = self._inspect(db) == "empty"
                self._db = db
                return
            except sqlite3.DatabaseError as exc:
                if db is not None:
                    db.close()
                if is_damage(exc) or "immutable" in query or not readonly_storage(exc):
                    raise self._store_error(exc, opening=True) from None
            except StoreError:
                if db is not None:
                    db.close()
                raise

    def _open_writable(self) -> None:
        """Open for writing: a damaged or foreign file is refused before anything is written."""
        db = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # check_same_thread off: evaluate's journal writes from Opik's task threads, one at a time
            # under its own lock (experiments.journal), while the thread that opened it waits in opik.evaluate
            db = sqlite3.connect(self.path, timeout=BUSY_SECONDS, check_same_thread=False)
            db.row_factory = sqlite3.Row
            kind = self._inspect(db)
            problems = [r[0] for r in db.execute("PRAGMA quick_check(3)")]
            if problems != ["ok"]:
                self._damage = "; ".join(str(p) for p in problems)
                raise StoreDamaged(self._damage_message(self._damage))
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("PRAGMA journal_mode = WAL")
            if kind != "empty" and not self._trial_rows:
                self._migrate_trials(db)
            if kind != "ours":
                db.executescript("BEGIN IMMEDIATE;\n" + SCHEMA + f"""
                    INSERT OR IGNORE INTO {META_TABLE} (key, value) VALUES ('application', '{APPLICATION}');
                    INSERT OR IGNORE INTO {META_TABLE} (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
                    INSERT OR IGNORE INTO {META_TABLE} (key, value) VALUES ('created_at', '{utc_now()}');
                    PRAGMA user_version = {SCHEMA_VERSION};
                    COMMIT;""")
            elif self._lacks(db, ADDED_TABLES):       # made before the push tables: added, nothing else changes
                db.executescript("BEGIN IMMEDIATE;\n" + PUSH_SCHEMA + "COMMIT;")
            self._db, db = db, None
            self._empty = False
        except sqlite3.DatabaseError as exc:
            raise self._store_error(exc, opening=True) from None
        except OSError as exc:
            raise StoreError(f"cannot create experiment store {self.path}: {exc}") from None
        finally:
            if db is not None:
                db.close()

    def _migrate_trials(self, db: sqlite3.Connection) -> None:
        """Rebuild a version-1 store's items and scores with their trial (0: each item's one run) and
        mark the store version 2, in one transaction (a writer that migrated it first leaves nothing to do)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            columns = {t: frozenset(c[1] for c in db.execute(f'PRAGMA table_info("{t}")')) for t in TRIAL_TABLES}
            for statement in trial_migration(columns):
                db.execute(statement)
            if not self._lacks(db, [META_TABLE]):
                db.execute(f"UPDATE {META_TABLE} SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            db.rollback()
            raise
        db.commit()
        self._trial_rows = True

    def _inspect(self, db: sqlite3.Connection) -> str:
        """What the file holds, read without writing: "empty" (no tables yet), "ours" (our metadata
        table), "legacy" (our tables, made before the metadata table). Raises NotAStore for another
        application's file or another schema, StoreError for a newer opik-metrics store."""
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0]: frozenset(c[1] for c in db.execute(f'PRAGMA table_info("{r[0]}")'))
                  for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                      "AND name NOT LIKE 'sqlite!_%' ESCAPE '!'")}
        expected = expected_columns()
        if META_TABLE in tables:
            meta = {}
            if {"key", "value"} <= tables[META_TABLE]:
                meta = {str(k): str(v) for k, v in db.execute(f"SELECT key, value FROM {META_TABLE}")}
            if meta.get("application") != APPLICATION:
                raise NotAStore(self._foreign_message(tables, f"its {META_TABLE} table names "
                                                              f"{meta.get('application')!r}"))
            stored = meta.get("schema_version", "")
            if not stored.isdigit():
                raise NotAStore(self._foreign_message(tables, f"its schema version is {stored!r}"))
            if int(stored) > SCHEMA_VERSION:
                raise StoreError(self._newer_message(int(stored)))
            kind = "ours"
        elif not tables:
            if version > SCHEMA_VERSION:
                raise StoreError(self._newer_message(version))
            return "empty"
        else:
            kind = "legacy"
            if "experiments" not in tables or any(t not in expected for t in tables):
                raise NotAStore(self._foreign_message(tables))
            if version > SCHEMA_VERSION:
                raise StoreError(self._newer_message(version))
        # a version-1 store lacks the trial column: read as one trial per item, rebuilt by its first writer
        self._trial_rows = all(TRIAL_COLUMN in tables[t] for t in TRIAL_TABLES if t in tables)
        expected = {t: c - {TRIAL_COLUMN} if t in TRIAL_TABLES else c for t, c in expected.items()}
        different = sorted(t for t in CORE_TABLES + ADDED_TABLES if t in tables and not expected[t] <= tables[t])
        missing = [t for t in CORE_TABLES if t not in tables]
        if different or (kind == "ours" and missing):
            what = (f"table {', '.join(different)} has other columns than ours" if different
                    else f"it lacks table {', '.join(missing)}")
            raise NotAStore(self._foreign_message(tables, what))
        return kind

    @staticmethod
    def _lacks(db: sqlite3.Connection, tables: Sequence[str]) -> bool:
        found = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return not set(tables) <= found

    def _foreign_message(self, tables: dict, why: str | None = None) -> str:
        shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
        why = why or f"it has tables {shown}"
        return (f"{self.path} is an SQLite file but not an opik-metrics store ({why}); it was not changed: "
                "pass another --store path")

    def _newer_message(self, version: int) -> str:
        return (f"store {self.path} has schema version {version}; this opik-metrics reads version "
                f"{SCHEMA_VERSION} (upgrade opik-metrics)")

    def _damage_message(self, detail: str) -> str:
        question = "is it an opik-metrics store? " if "not a database" in detail else ""
        return (f"experiment store {self.path} is damaged (sqlite: {detail}); it is not written to: {question}"
                "restore it from a backup, or pass another --store path")

    def _store_error(self, exc: sqlite3.DatabaseError, opening: bool = False) -> StoreError:
        """A StoreError saying what ``exc`` means for this store."""
        if is_damage(exc):
            self._damage = self._damage or str(exc)
            return StoreDamaged(self._damage_message(str(exc)))
        text = str(exc)
        if "locked" in text or "busy" in text:
            return StoreError(f"experiment store {self.path} is busy: another process kept it locked for over "
                              f"{BUSY_SECONDS:g} s (sqlite: {text}); try again")
        if "readonly" in text or "read-only" in text:
            return StoreError(f"experiment store {self.path} is on read-only storage or not writable (sqlite: "
                              f"{text}); reading commands still work: copy it elsewhere to write")
        verb = "open" if opening else "use"
        return StoreError(f"cannot {verb} experiment store {self.path}: {text} "
                          "(is it an opik-metrics store? pass another --store path)")

    def _writable(self) -> sqlite3.Connection:
        """The connection, reopened for writing when the store was opened read-only."""
        if self._damage is not None:
            raise StoreDamaged(self._damage_message(self._damage))
        if self.readonly:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._open_writable()
            self.readonly = False
        assert self._db is not None
        return self._db

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"experiment store {self.path} is closed")
        return self._db

    def close(self) -> None:
        for heartbeat in list(self._heartbeats.values()):
            heartbeat.stop()
        self._heartbeats.clear()
        if self._held and self._db is not None and not self.readonly and self._damage is None:
            try:
                with self._db:
                    self._db.executemany("DELETE FROM experiment_leases WHERE experiment = ? AND token = ?",
                                         [(name, self._token) for name in set(self._held.values())])
            except sqlite3.Error:
                pass        # the lease expires on its own
        self._held.clear()
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> "ExperimentStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- leases --------------------------------------------------------------------------

    def _holder(self, name: str) -> sqlite3.Row | None:
        """The live lease of another holder on ``name``, else None (free, ours, expired or dead)."""
        row = self._conn.execute("SELECT * FROM experiment_leases WHERE experiment = ?", (name,)).fetchone()
        if row is None or row["token"] == self._token or row["expires_at"] < time.time():
            return None
        if row["machine"] == MACHINE and not pid_alive(int(row["pid"])):
            return None
        return row

    def _take_lease(self, name: str) -> None:
        now = time.time()
        self._conn.execute(
            "INSERT OR REPLACE INTO experiment_leases (experiment, token, pid, host, machine, acquired_at, "
            "renewed_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (name, self._token, os.getpid(), HOST, MACHINE, utc_now(), now, now + self.lease_seconds))

    def _locked_message(self, name: str, row: sqlite3.Row, waited: float) -> str:
        ago = max(0.0, time.time() - row["renewed_at"])
        wait = f"waited {waited:.1f} s; " if waited > 0 else ""
        return (f"experiment {name!r} in {self.path} is being run by another process (pid {row['pid']} on host "
                f"{row['host']}, since {row['acquired_at']}, alive {ago:.0f} s ago): {wait}let it finish (a "
                f"re-run then resumes), or set {LOCK_WAIT_ENV}=SECONDS to wait for it")

    def _fence(self, exp_id: int) -> str:
        """Renew this store's lease on the experiment, inside the caller's transaction; raise
        ExperimentLocked when another process took it over (nothing is then written)."""
        name = self._held.get(exp_id)
        if name is None:
            raise StoreError(f"experiment id {exp_id} is not being run by this store: call begin() first")
        now = time.time()
        cur = self._conn.execute("UPDATE experiment_leases SET renewed_at = ?, expires_at = ? "
                                 "WHERE experiment = ? AND token = ?", (now, now + self.lease_seconds, name,
                                                                        self._token))
        if cur.rowcount == 0:
            raise ExperimentLocked(f"this run of experiment {name!r} lost its lease on {self.path}: it was not "
                                   f"renewed for {self.lease_seconds:g} s and another process took the experiment "
                                   "over; nothing more is written by this run")
        return name

    def holds(self, exp_id: int) -> bool:
        """Whether this store still holds the lease of the experiment it began as ``exp_id``."""
        name = self._held.get(exp_id)
        if name is None or self._db is None or self._damage is not None:
            return False
        try:
            row = self._db.execute("SELECT token FROM experiment_leases WHERE experiment = ?", (name,)).fetchone()
        except sqlite3.Error:
            return False
        return row is not None and row["token"] == self._token

    def _release(self, name: str) -> None:
        heartbeat = self._heartbeats.pop(name, None)
        if heartbeat is not None:
            heartbeat.stop()
        for exp_id in [i for i, n in self._held.items() if n == name]:
            del self._held[exp_id]

    # ---- writing -------------------------------------------------------------------------

    @_guarded
    def begin(self, name: str, dataset: str, config: dict, items: Sequence[tuple[str, dict]],
              overwrite: bool = False, wait: float | None = None, trials: int = 1) -> tuple[int, int]:
        """Create (or resume) experiment ``name`` over ``items`` (key, content), each run ``trials``
        times (trials 0 to trials - 1), taking its lease.

        Returns (experiment id, number of item trials already finished). A stored experiment of the
        same name resumes when its config matches; otherwise a StoreError says how to proceed.
        While another process runs it, ExperimentLocked names that process, at once or after
        ``wait`` seconds (default: the store's ``lock_wait``).
        """
        db = self._writable()
        name, dataset = storable_text(name), storable_text(dataset)
        if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
            raise ValueError(f"trials: expected a positive integer, got {trials!r}")
        exp_id = self._leased(name, wait, lambda: self._begin_locked(db, name, dataset, config, items, overwrite,
                                                                     trials))
        done = db.execute("SELECT COUNT(*) FROM experiment_items WHERE experiment_id = ? AND "
                          "status IN ('scored', 'failed')", (exp_id,)).fetchone()[0]
        return exp_id, int(done)

    def _leased(self, name: str, wait: float | None, body: Callable[[], int]) -> int:
        """Run ``body`` (which takes the lease and returns the experiment id) in one transaction once
        no other process holds ``name``'s lease, waiting up to ``wait`` seconds; then keep the lease
        alive with a heartbeat."""
        db = self._writable()
        wait = self.lock_wait if wait is None else lock_wait_seconds(wait)
        started = time.monotonic()
        while True:
            db.execute("BEGIN IMMEDIATE")
            try:
                holder = self._holder(name)
                if holder is None:
                    exp_id = body()
                    db.commit()
                    break
            except BaseException:
                db.rollback()
                raise
            db.rollback()
            waited = time.monotonic() - started
            if waited >= wait:
                raise ExperimentLocked(self._locked_message(name, holder, waited if wait > 0 else 0.0))
            time.sleep(min(0.25, max(0.01, wait - waited)))
        for old in [i for i, n in self._held.items() if n == name and i != exp_id]:
            del self._held[old]
        self._held[exp_id] = name
        if name not in self._heartbeats:
            heartbeat = Heartbeat(self.path, name, self._token, self.lease_seconds)
            heartbeat.start()
            self._heartbeats[name] = heartbeat
        return exp_id

    @_guarded
    def begin_rescore(self, name: str, previous: dict, config: dict, drop_metrics: Sequence[str] = (),
                      wait: float | None = None) -> int:
        """Take the lease of stored experiment ``name`` to add scores to it (``add_scores``): its
        config, still ``previous`` (else StoreError: another process changed it meanwhile), becomes
        ``config``, and the item scores of ``drop_metrics`` (being replaced) are deleted, in the same
        transaction. The experiment's status and items stay as they are; a push that had arrived
        whole is no longer marked so (the server lacks the new scores)."""
        db = self._writable()
        name = storable_text(name)

        def body() -> int:
            row = db.execute("SELECT id, config FROM experiments WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise ExperimentNotFound(f"no experiment named {name!r} in {self.path}")
            if dumps(loads(row["config"])) != dumps(previous):
                raise StoreError(f"experiment {name!r} in {self.path} was changed by another process while this "
                                 "one read it: run the command again")
            exp_id = int(row["id"])
            self._take_lease(name)
            db.execute("UPDATE experiments SET config = ?, updated_at = ?, pushed_at = NULL, pushed_to = NULL "
                       "WHERE id = ?", (dumps(config), utc_now(), exp_id))
            db.execute("UPDATE pushes SET complete_at = NULL WHERE experiment_id = ?", (exp_id,))
            if drop_metrics:
                db.execute(f"DELETE FROM scores WHERE experiment_id = ? AND metric IN "
                           f"({', '.join('?' * len(drop_metrics))})", (exp_id, *map(storable_text, drop_metrics)))
            return exp_id

        return self._leased(name, wait, body)

    @_guarded
    def add_scores(self, exp_id: int, added: Sequence[tuple[str, int, Sequence[str], Sequence[StoredScore]]],
                   score_seconds: float | None) -> None:
        """Scores added by a rescore to scored item trials, each ``(item key, trial, metrics, scores)``:
        the trial's scores from those metrics are replaced, its other scores, status and output stay.
        Committed together (a chunk), ``score_seconds`` added to each trial's."""
        db = self._writable()
        with db:
            self._fence(exp_id)
            for key, trial, metrics, scores in added:
                db.execute(f"DELETE FROM scores WHERE experiment_id = ? AND item_key = ? AND trial = ? AND metric IN "
                           f"({', '.join('?' * len(metrics))})", (exp_id, key, trial, *map(storable_text, metrics)))
                db.executemany(
                    "INSERT OR REPLACE INTO scores (experiment_id, item_key, trial, name, metric, value, failed, "
                    "reason, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(exp_id, key, trial, storable_text(s.name), storable_text(s.metric),
                      None if s.failed else stored_value(s.value), int(s.failed), storable_text(s.reason),
                      dumps(s.metadata or {})) for s in scores])
            db.executemany("UPDATE experiment_items SET score_seconds = COALESCE(score_seconds, 0) + ? "
                           "WHERE experiment_id = ? AND item_key = ? AND trial = ?",
                           [(score_seconds or 0.0, exp_id, key, trial) for key, trial, _, _ in added])

    @_guarded
    def end_rescore(self, exp_id: int, config: dict, seconds: float) -> None:
        """Close a rescore: the config it leaves (its metrics no longer pending), its wall time
        added; the lease is released."""
        db = self._writable()
        with db:
            name = self._fence(exp_id)
            db.execute("UPDATE experiments SET config = ?, updated_at = ?, seconds = seconds + ? WHERE id = ?",
                       (dumps(config), utc_now(), seconds, exp_id))
            db.execute("DELETE FROM experiment_leases WHERE experiment = ? AND token = ?", (name, self._token))
        self._release(name)

    def _begin_locked(self, db: sqlite3.Connection, name: str, dataset: str, config: dict,
                      items: Sequence[tuple[str, dict]], overwrite: bool, trials: int = 1) -> int:
        """``begin`` inside its transaction, the lease free for us."""
        now = utc_now()
        self._take_lease(name)
        row = db.execute("SELECT id, config, dataset FROM experiments WHERE name = ?", (name,)).fetchone()
        if row is not None and overwrite:
            db.execute("DELETE FROM experiments WHERE id = ?", (row["id"],))
            row = None
        if row is not None:
            self._check_resumable(name, row, dataset, config)
        db.execute("INSERT OR IGNORE INTO datasets (name, created_at) VALUES (?, ?)", (dataset, now))
        db.executemany("INSERT OR IGNORE INTO dataset_items (dataset, item_key, content) VALUES (?, ?, ?)",
                       [(dataset, key, dumps(content)) for key, content in items])
        if row is None:
            cur = db.execute("INSERT INTO experiments (name, dataset, config, status, created_at, updated_at, runs) "
                             "VALUES (?, ?, ?, 'running', ?, ?, 1)", (name, dataset, dumps(config), now, now))
            assert cur.lastrowid is not None
            exp_id = int(cur.lastrowid)
        else:
            exp_id = int(row["id"])
            db.execute("UPDATE experiments SET status = 'running', updated_at = ?, runs = runs + 1, "
                       "config = ? WHERE id = ?", (now, dumps(config), exp_id))
        db.executemany("INSERT OR IGNORE INTO experiment_items (experiment_id, item_key, trial, position, status) "
                       "VALUES (?, ?, ?, ?, 'pending')",
                       [(exp_id, key, trial, pos) for pos, (key, _) in enumerate(items) for trial in range(trials)])
        return exp_id

    def _check_resumable(self, name: str, row: sqlite3.Row, dataset: str, config: dict) -> None:
        stored = loads(row["config"])
        if row["dataset"] != dataset:
            raise StoreError(f"experiment {name!r} in {self.path} ran on dataset {row['dataset']!r}, not "
                             f"{dataset!r}: choose another experiment name, or pass --overwrite to replace it")
        if config_identity(stored) != config_identity(config):
            changed = sorted(k for k in set(stored) | set(config)
                             if k != "runtime" and dumps(stored.get(k)) != dumps(config.get(k)))
            raise StoreError(f"experiment {name!r} in {self.path} has a different config (changed: "
                             f"{', '.join(changed)}): choose another experiment name to keep both, or "
                             "pass --overwrite to replace it")

    @_guarded
    def save_output(self, exp_id: int, key: str, output: dict, trace: list | None,
                    task_seconds: float | None, trial: int = 0) -> None:
        """The task's output for one item's trial (scored next); committed at once."""
        db = self._writable()
        with db:
            self._fence(exp_id)
            db.execute(
                "UPDATE experiment_items SET status = 'output', output = ?, trace = ?, task_seconds = ?, "
                "failure_stage = NULL, failure = NULL WHERE experiment_id = ? AND item_key = ? AND trial = ?",
                (dumps(output), dumps(trace) if trace else None, task_seconds, exp_id, key, trial))

    @_guarded
    def save_failure(self, exp_id: int, key: str, stage: str, reason: str, trace: list | None = None,
                     task_seconds: float | None = None, trial: int = 0) -> None:
        """An item's trial that produced no output, with the stage and the reason; committed at once."""
        db = self._writable()
        with db:
            self._fence(exp_id)
            db.execute(
                "UPDATE experiment_items SET status = 'failed', failure_stage = ?, failure = ?, trace = ?, "
                "task_seconds = ?, output = NULL, finished_at = ? WHERE experiment_id = ? AND item_key = ? AND trial = ?",
                (storable_text(stage), storable_text(reason), dumps(trace) if trace else None, task_seconds, utc_now(),
                 exp_id, key, trial))
            db.execute("DELETE FROM scores WHERE experiment_id = ? AND item_key = ? AND trial = ?", (exp_id, key, trial))

    @_guarded
    def save_scores(self, exp_id: int, key: str, scores: Iterable[StoredScore],
                    score_seconds: float | None, trial: int = 0) -> None:
        """Every score of one item's trial (failed ones with their reason); the trial is then finished.
        An infinite value is kept as such, NaN as NULL: neither counts as a value when read."""
        rows = [(exp_id, key, trial, storable_text(s.name), storable_text(s.metric), None if s.failed else stored_value(s.value),
                 int(s.failed), storable_text(s.reason), dumps(s.metadata or {})) for s in scores]
        db = self._writable()
        with db:
            self._fence(exp_id)
            db.execute("DELETE FROM scores WHERE experiment_id = ? AND item_key = ? AND trial = ?", (exp_id, key, trial))
            db.executemany(
                "INSERT OR REPLACE INTO scores (experiment_id, item_key, trial, name, metric, value, failed, reason, "
                "metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
            db.execute(
                "UPDATE experiment_items SET status = 'scored', score_seconds = ?, finished_at = ? "
                "WHERE experiment_id = ? AND item_key = ? AND trial = ?", (score_seconds, utc_now(), exp_id, key, trial))

    @_guarded
    def save_experiment_scores(self, exp_id: int, scores: Iterable[StoredScore], keep_others: bool = False) -> None:
        """Experiment-level scores (corpus BLEU, ...), replacing earlier ones (``keep_others``: only
        those of the same names, as a rescore adds its metrics' corpus scores)."""
        rows = [(exp_id, storable_text(s.name), None if s.failed else finite(s.value), int(s.failed), storable_text(s.reason),
                 dumps(s.metadata or {})) for s in scores]
        db = self._writable()
        with db:
            self._fence(exp_id)
            if keep_others:
                db.executemany("DELETE FROM experiment_scores WHERE experiment_id = ? AND name = ?",
                               [(exp_id, row[1]) for row in rows])
            else:
                db.execute("DELETE FROM experiment_scores WHERE experiment_id = ?", (exp_id,))
            db.executemany("INSERT INTO experiment_scores (experiment_id, name, value, failed, reason, metadata) "
                           "VALUES (?, ?, ?, ?, ?, ?)", rows)

    @_guarded
    def finish(self, exp_id: int, status: str, seconds: float) -> None:
        """Close a run: ``finished`` or ``interrupted``, adding its wall time; the lease is released."""
        db = self._writable()
        with db:
            name = self._fence(exp_id)
            db.execute("UPDATE experiments SET status = ?, updated_at = ?, seconds = seconds + ? "
                       "WHERE id = ?", (status, utc_now(), seconds, exp_id))
            db.execute("DELETE FROM experiment_leases WHERE experiment = ? AND token = ?", (name, self._token))
        self._release(name)

    @_guarded
    def mark_pushed(self, name: str, target: str) -> None:
        """Note that the experiment was uploaded to an Opik server."""
        db = self._writable()
        with db:
            db.execute("UPDATE experiments SET pushed_at = ?, pushed_to = ? WHERE name = ?",
                       (utc_now(), storable_text(target), storable_text(name)))

    # ---- pushes to Opik servers ------------------------------------------------------------

    @_guarded
    def push_record(self, exp_id: int, target: str) -> PushRecord | None:
        """An earlier push of the experiment to ``target`` (server, project, dataset and experiment
        name there): the experiment's id on the server and each item's trace id, else None."""
        db = self._writable()
        row = db.execute("SELECT * FROM pushes WHERE experiment_id = ? AND target = ?", (exp_id, target)).fetchone()
        if row is None:
            return None
        traces = dict(db.execute("SELECT item_key, trace_id FROM pushed_traces WHERE experiment_id = ? AND "
                                 "target = ?", (exp_id, target)).fetchall())
        return PushRecord(target=target, remote_id=row["remote_id"], started_at=row["started_at"],
                          complete_at=row["complete_at"], traces=traces)

    @_guarded
    def start_push(self, exp_id: int, target: str, remote_id: str) -> None:
        """Note, before creating it, the id the experiment gets on ``target``, so a rerun finds it."""
        db = self._writable()
        with db:
            db.execute("INSERT OR IGNORE INTO pushes (experiment_id, target, remote_id, started_at) "
                       "VALUES (?, ?, ?, ?)", (exp_id, storable_text(target), remote_id, utc_now()))

    @_guarded
    def save_push_traces(self, exp_id: int, target: str, traces: dict[str, str]) -> None:
        """Each item's trace id on ``target`` (item key -> trace id), noted before the traces are sent."""
        db = self._writable()
        with db:
            db.executemany("INSERT OR REPLACE INTO pushed_traces (experiment_id, target, item_key, trace_id) "
                           "VALUES (?, ?, ?, ?)", [(exp_id, storable_text(target), key, trace_id)
                                                   for key, trace_id in traces.items()])

    @_guarded
    def finish_push(self, exp_id: int, target: str) -> None:
        """Note that a read-back found everything on ``target``."""
        db = self._writable()
        with db:
            db.execute("UPDATE pushes SET complete_at = ? WHERE experiment_id = ? AND target = ?",
                       (utc_now(), exp_id, storable_text(target)))

    @_guarded
    def delete(self, name: str) -> None:
        """Remove an experiment with its items and scores (dataset items stay); refused while another
        process runs it."""
        db = self._writable()
        name = storable_text(name)
        db.execute("BEGIN IMMEDIATE")
        try:
            holder = self._holder(name)
            if holder is not None:
                raise ExperimentLocked(self._locked_message(name, holder, 0.0))
            db.execute("DELETE FROM experiments WHERE name = ?", (name,))
        except BaseException:
            db.rollback()
            raise
        db.commit()

    # ---- reading -------------------------------------------------------------------------

    @_guarded
    def items(self, exp_id: int, statuses: Sequence[str] | None = None) -> list[StoredItem]:
        """An experiment's item trials in dataset order, each item's trials in order (optionally only
        some statuses), with scores."""
        if self._empty:
            return []
        db = self._conn
        trial = "ei.trial" if self._trial_rows else "0"
        sql = (f"SELECT ei.*, {trial} AS run_trial, di.content FROM experiment_items ei JOIN experiments e ON e.id = ei.experiment_id "
               "JOIN dataset_items di ON di.dataset = e.dataset AND di.item_key = ei.item_key "
               "WHERE ei.experiment_id = ?")
        args: list[Any] = [exp_id]
        if statuses:
            sql += f" AND ei.status IN ({', '.join('?' * len(statuses))})"
            args.extend(statuses)
        items = [StoredItem(key=r["item_key"], position=r["position"], input=loads(r["content"]),
                            status=r["status"], output=loads(r["output"]), failure_stage=r["failure_stage"],
                            failure=r["failure"], trace=loads(r["trace"]), task_seconds=r["task_seconds"],
                            score_seconds=r["score_seconds"], finished_at=r["finished_at"], trial=r["run_trial"])
                 for r in db.execute(sql + " ORDER BY ei.position, run_trial", args)]
        by_key = {(item.key, item.trial): item for item in items}
        trial = "trial" if self._trial_rows else "0"
        for r in db.execute(f"SELECT *, {trial} AS run_trial FROM scores WHERE experiment_id = ? ORDER BY rowid",
                            (exp_id,)):
            if (r["item_key"], r["run_trial"]) in by_key:
                value, non_finite = read_value(r["value"], bool(r["failed"]))
                by_key[(r["item_key"], r["run_trial"])].scores[r["name"]] = StoredScore(
                    r["name"], r["metric"], value, bool(r["failed"]), r["reason"], loads(r["metadata"]),
                    non_finite)
        return items

    @_guarded
    def names(self) -> list[str]:
        if self._empty:
            return []
        return [r[0] for r in self._conn.execute("SELECT name FROM experiments ORDER BY id")]

    @_guarded
    def infos(self) -> list[ExperimentInfo]:
        """Every experiment's header, oldest first."""
        if self._empty:
            return []
        return [self._info(row) for row in self._conn.execute("SELECT * FROM experiments ORDER BY id").fetchall()]

    @_guarded
    def info(self, name: str) -> ExperimentInfo:
        row = None if self._empty else self._conn.execute("SELECT * FROM experiments WHERE name = ?",
                                                          (storable_text(name),)).fetchone()
        if row is None:
            known = self.names()
            hint = f"; stored: {', '.join(known)}" if known else "; the store is empty"
            raise ExperimentNotFound(f"no experiment named {name!r} in {self.path}{hint}")
        return self._info(row)

    def _info(self, row: sqlite3.Row) -> ExperimentInfo:
        db = self._conn
        exp_id = row["id"]
        counts = dict(db.execute("SELECT status, COUNT(*) FROM experiment_items WHERE experiment_id = ? "
                                 "GROUP BY status", (exp_id,)).fetchall())
        trial = "trial" if self._trial_rows else "0"
        items, trials = db.execute(f"SELECT COUNT(DISTINCT item_key), MAX({trial}) + 1 FROM experiment_items "
                                   "WHERE experiment_id = ?", (exp_id,)).fetchone()
        same_trial = " AND ei.trial = s.trial" if self._trial_rows else ""
        # each item's mean over its trials, then the mean over items (with one trial: the plain mean)
        means = {r[0]: r[1] for r in db.execute(
            "SELECT name, AVG(item_mean) FROM (SELECT s.name AS name, AVG(s.value) AS item_mean, MIN(s.rowid) AS "
            "first FROM scores s JOIN experiment_items ei ON ei.experiment_id = s.experiment_id AND ei.item_key = "
            f"s.item_key{same_trial} WHERE s.experiment_id = ? AND s.failed = 0 AND "
            "s.value BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308 AND ei.status = 'scored' "
            "GROUP BY s.name, s.item_key) GROUP BY name ORDER BY MIN(first)", (exp_id,))}
        corpus = {r[0]: r[1] for r in db.execute(
            "SELECT name, value FROM experiment_scores WHERE experiment_id = ? ORDER BY rowid", (exp_id,))}
        return ExperimentInfo(
            id=exp_id, name=row["name"], dataset=row["dataset"], config=loads(row["config"]),
            status=row["status"], created_at=row["created_at"], updated_at=row["updated_at"],
            seconds=row["seconds"], runs=row["runs"], pushed_at=row["pushed_at"], pushed_to=row["pushed_to"],
            items=int(items), failed_items=counts.get("failed", 0), scored_items=counts.get("scored", 0),
            scores=means, experiment_scores=corpus, trials=int(trials or 1))

    @_guarded
    def experiment_score_rows(self, exp_id: int) -> list[StoredScore]:
        if self._empty:
            return []
        return [StoredScore(r["name"], "", r["value"], bool(r["failed"]), r["reason"], loads(r["metadata"]))
                for r in self._conn.execute("SELECT * FROM experiment_scores WHERE experiment_id = ? "
                                            "ORDER BY rowid", (exp_id,))]


def readonly_storage(exc: sqlite3.DatabaseError) -> bool:
    """Whether ``exc`` is SQLite failing to make its -shm/-wal files beside a store on read-only storage."""
    code = getattr(exc, "sqlite_errorname", "") or ""
    return code.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")) or "readonly" in str(exc) \
        or "unable to open" in str(exc)

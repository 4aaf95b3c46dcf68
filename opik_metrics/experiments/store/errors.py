"""The store's errors: each message says what happened to which file and what to do."""
from __future__ import annotations

import sqlite3

class StoreError(RuntimeError):
    """A problem with the store file or an experiment in it; the message says what to do."""


class ExperimentNotFound(StoreError):
    """No experiment of that name in the store."""


class StoreNotFound(StoreError):
    """No store file where one was expected (reading commands do not create one)."""


class StoreDamaged(StoreError):
    """The store file is damaged (or not an SQLite file at all); it is not written to."""


class NotAStore(StoreError):
    """An SQLite file of another application (or of another schema); it is not written to."""


class ExperimentLocked(StoreError):
    """Another process is running the experiment (or took it over from this one)."""


_DAMAGE_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_CORRUPT_INDEX", "SQLITE_CORRUPT_SEQUENCE",
                 "SQLITE_CORRUPT_VTAB"}
# the store writes only valid UTF-8 text: a column that does not decode was changed on disk
_DAMAGE_WORDS = ("file is not a database", "malformed", "corrupt", "could not decode to utf-8")


def is_damage(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorname", "") or ""
    return code in _DAMAGE_CODES or any(word in str(exc).lower() for word in _DAMAGE_WORDS)

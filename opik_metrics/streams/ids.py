"""Record ids, checked before a run scores anything: the column that holds them (``id`` when the
input has one, unless named), present in every readable record, text or an integer, and unique
(with a kept ``trial`` column, unique with it: the rows of one id are its trials, with one
reference, source and image); so that a comparison pairs the output's rows by id, never by position."""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from opik_metrics.streams.fields import FieldError, FieldMap, column_kind, id_text, value_kind
from opik_metrics.streams.sources import BadRecord, CsvSource, ParquetSource, Source

DEFAULT_ID = "id"
#: A kept column of this name marks the records sharing an id as trials of one item (the comparison
#: merges them); (id, trial) is then what must be unique.
TRIAL_COLUMN = "trial"
_PLACE = {"jsonl": "line", "csv": "data row", "parquet": "row"}


def place(source: Source, index: int) -> str:
    """Where record ``index`` is, in the words of its format (``line 4 of in.jsonl``)."""
    return f"{_PLACE.get(source.format, 'record')} {index + 1} of {source.path}"


def with_default_id(source: Source, fields: FieldMap) -> FieldMap:
    """``fields`` with its id column decided: the one named, else ``id`` when the input has that
    column (a CSV header, a Parquet schema, the first readable JSONL record), else none ("")."""
    if fields.id_field is not None:
        return fields
    return replace(fields, id_field=DEFAULT_ID if DEFAULT_ID in _first_columns(source) else "")


def _first_columns(source: Source) -> list[str]:
    if isinstance(source, CsvSource):
        return list(source.header)
    if isinstance(source, ParquetSource):
        import pyarrow.parquet as pq
        return list(pq.read_schema(source.path).names)
    for chunk in source.chunks(64):
        for record in chunk.records:
            if isinstance(record, dict):
                return list(record)
    return []


def check_records(source: Source, fields: FieldMap, chunk_size: int = 1024) -> FieldMap:
    """Read every record's id and kept columns once, before scoring: FieldError naming the record
    whose id is missing, empty or neither text nor an integer, the id two records share, or a
    kept column no record has. Unreadable records are left to the run (their rows say why, with
    no id). Returns ``fields`` with the type of each kept column (``kept_types``): numbers stay
    numbers in the output when every record's value is one."""
    if not fields.id_field and not fields.keep:
        return fields
    wanted = fields.carried
    trials = bool(fields.id_field) and TRIAL_COLUMN in fields.keep
    inputs = [c for i in ("reference", "source", "image") for c in fields.column(i)] if trials else []
    if isinstance(source, ParquetSource):          # only the columns checked are read
        import pyarrow.parquet as pq

        present = set(pq.read_schema(source.path).names)
        inputs = [c for c in inputs if c in present]
        source = ParquetSource(source.path, columns=list(dict.fromkeys([*wanted, *inputs])))
    seen: dict[str, int] = {}
    first_inputs: dict[str, tuple[int, Any, tuple[int, ...]]] = {}     # see _check_trial_inputs
    kept_seen: set[str] = set()
    kinds: dict[str, set[str]] = {c: set() for c in fields.keep}
    name = fields.id_field
    for chunk in source.chunks(chunk_size):
        for k, record in enumerate(chunk.records):
            if isinstance(record, BadRecord):
                continue
            index = chunk.first + k
            kept_seen.update(c for c in fields.keep if c in record)
            for column in fields.keep:
                kind = value_kind(record.get(column))
                if kind is not None:
                    kinds[column].add(kind)
            if not name:
                continue
            key = _id_of(record, name, source, index)
            trial = f"{key!r}, trial {record.get(TRIAL_COLUMN)!r}" if TRIAL_COLUMN in fields.keep else None
            first = seen.setdefault(trial or key, index)
            if first != index:
                what = f"id {key!r}" if trial is None else f"id and trial ({trial})"
                raise FieldError(f"{what} is held by {place(source, first)} and {place(source, index)}: ids must be "
                                 "unique to pair records (choose another column with --id-field; rows that are "
                                 f"trials of one item keep a {TRIAL_COLUMN!r} column: --keep {TRIAL_COLUMN})")
            if trials:
                _check_trial_inputs(record, key, index, inputs, first_inputs, source)
    missing = [c for c in fields.keep if c not in kept_seen]
    if missing:
        raise FieldError(f"--keep {missing[0]}: no record of {source.path} has a column {missing[0]!r}")
    typed = {column: kind for column, found in kinds.items() if (kind := column_kind(found)) != "text"}
    return replace(fields, kept_types=typed)


def _check_trial_inputs(record: dict, key: str, index: int, inputs: list[str],
                        first: dict[str, tuple[int, Any, tuple[int, ...]]], source: Source) -> None:
    """FieldError when a trial of id ``key`` has another reference (source, image) than its first
    trial: the trials of an item are runs on one input, which the comparison averages as one item.
    ``first`` keeps each id's first trial: its index, trial and a hash of each input column."""
    hashes = tuple(hash(json.dumps(record.get(c), sort_keys=True, default=str)) for c in inputs)
    index0, trial0, hashes0 = first.setdefault(key, (index, record.get(TRIAL_COLUMN), hashes))
    differ = next((c for c, a, b in zip(inputs, hashes0, hashes) if a != b), None)
    if differ is not None:
        raise FieldError(f"id {key!r}: trials {trial0!r} ({place(source, index0)}) and {record.get(TRIAL_COLUMN)!r} "
                         f"({place(source, index)}) have different {differ!r}; the trials of an item are runs on "
                         "one input, averaged as one item: give items with different inputs their own ids")


def _id_of(record: dict, name: str, source: Source, index: int) -> str:
    if name not in record:
        raise FieldError(f"{place(source, index)}: no id column {name!r} (every record needs an id to be paired; "
                         "name the column with --id-field, or --id-field '' for no ids)")
    value: Any = record[name]
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        shown = ("empty" if value == "" else "null" if value is None
                 else f"{type(value).__name__} {value!r}"[:80])
        raise FieldError(f"{place(source, index)}: id {name!r} is {shown}; an id is non-empty text or an integer")
    return id_text(value)

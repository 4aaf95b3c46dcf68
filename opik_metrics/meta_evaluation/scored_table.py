"""Anyone's scored table as a meta-evaluation's input: a JSON Lines, CSV or Parquet file that no
``opik-metrics score`` run wrote (no record header), with an id column, metric columns and human
columns, as SummEval, UniEval and the WMT metrics task release their predictions and ratings.

The metric columns are the ones named (``--metric COLUMN``); nothing in the table says which way
they point, so each is higher-is-better unless named lower-is-better (``--lower-is-better COLUMN``),
and the result says which was assumed. Every other column (the human ones, a system column, a
group) is the item's input, read as a record file's kept columns are (``source.item_ratings``).

Each row is read as one item (``ItemRecord``) of one experiment named by the file, so the rated
table, its levels, raters and tests are the record files' own (``table.rated_table``). Bad input is
one line naming the file, the row, the item and the field: a metric value missing or not a finite
number, a human value that is not a number, an id missing or given twice (without ``--system``).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from opik_metrics.compare.reading.records import ExperimentRecords, ItemRecord
from opik_metrics.meta_evaluation.source import parse_ratings

__all__ = ["TABLE_SUFFIXES", "ScoredTable", "direction_note", "is_scored_table", "read_scored_table"]

#: File name endings read as tables (a .jsonl / .parquet one only when it has no record header).
TABLE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet", ".pq")

_CHUNK = 10_000


@dataclass
class ScoredTable:
    """A table read as one experiment: its rows as items, which metrics are lower-is-better, and
    how many rows lack each human column's value (left out of that column's correlations)."""

    records: ExperimentRecords
    metrics: list[str]
    lower_is_better: set[str]
    columns: list[str]
    unrated: dict[str, int] = field(default_factory=dict)


def is_scored_table(path: str) -> bool:
    """Whether ``path`` is an existing table file without a record header (a file ``score --output``
    wrote, with its header line or Parquet metadata, is a record file instead)."""
    if not path.lower().endswith(TABLE_SUFFIXES) or not os.path.isfile(path):
        return False
    if not path.lower().endswith((".jsonl", ".ndjson", ".parquet", ".pq")):
        return True                         # CSV or .json: `score` writes neither
    from opik_metrics.streams.output import read_metadata

    try:
        return read_metadata(path) is None
    except Exception:                       # an unreadable Parquet file: the table reader says why
        return True


def _number(value: Any) -> float | None:
    """A finite number from a JSON number or numeric text (CSV holds text); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def read_scored_table(path: str, metrics: Sequence[str], *, lower_is_better: Sequence[str] = (),
                      id_field: str = "id", human: Sequence[str] = (), unique_ids: bool = True,
                      progress: bool = False) -> ScoredTable:
    """The rows of table ``path`` as one experiment named ``path``: each row an item keyed by its
    ``id_field`` value, with the ``metrics`` columns as its scores (each present and a finite number
    on every row) and every other column as its input. ``human``: the human columns to check (each
    value a number, numeric text or a list of numbers; a row without one is unrated there); one no
    row has is an error naming the columns. ``unique_ids``: each id on one row (False with a system
    or group column: an item's rows are its systems' outputs). ValueError, one line, on bad input."""
    from tqdm.auto import tqdm

    from opik_metrics.streams.sources import BadRecord, open_source

    chosen = list(dict.fromkeys(metrics))
    if not chosen:
        raise ValueError(f"{path} is a table without a record header: name its metric columns with --metric COLUMN")
    lower = list(dict.fromkeys(lower_is_better))
    stray = [c for c in lower if c not in chosen]
    if stray:
        raise ValueError(f"--lower-is-better {stray[0]}: not a --metric column ({', '.join(chosen)}); name it "
                         f"with --metric {stray[0]} too")
    both = [c for c in human if c in chosen]
    if both:
        raise ValueError(f"{both[0]} is named both as a human score and as a --metric column: a column is one or "
                         "the other")
    if id_field in chosen or id_field in human:
        raise ValueError(f"the id column {id_field!r} is named as a metric or human column; name the id column "
                         "with --id-field COLUMN")
    records = ExperimentRecords(name=path, source=f"table {path}", dataset=f"rows by {id_field}", status="finished",
                                config={"id_field": id_field, "metrics": {}}, items=[])
    columns: dict[str, None] = {}
    seen: dict[str, int] = {}
    unrated = {h: 0 for h in human}
    rated = {h: 0 for h in human}
    bar = tqdm(desc=f"reading {os.path.basename(path)}", unit="row", disable=not progress, leave=False)
    for chunk in open_source(path).chunks(_CHUNK):
        for number, row in enumerate(chunk.records, start=chunk.first + 1):
            where = f"{path}: row {number}"
            if isinstance(row, BadRecord):
                raise ValueError(f"{path}: record {number}: {row.reason}")
            columns.update(dict.fromkeys(row))
            ident = row.get(id_field)
            if _missing(ident) or isinstance(ident, (dict, list)):
                raise ValueError(f"{where}: no id in column {id_field!r} (its columns are "
                                 f"{', '.join(map(str, row)) or 'none'}); name the id column with --id-field COLUMN")
            key = str(ident)
            where += f" (id {key!r})"
            if unique_ids:
                if key in seen:
                    raise ValueError(f"{path}: id {key!r} is on rows {seen[key]} and {number}; each row of a table is "
                                     "one item unless --system FIELD names the system of each row (or --group-by "
                                     "FIELD the item)")
                seen[key] = number
            scores = {}
            for m in chosen:
                if m not in row or _missing(row[m]):
                    raise ValueError(f"{where}: no value in --metric column {m!r}; every row needs one (a metric "
                                     "that failed on a row: leave the row out, or score it again)")
                value = _number(row[m])
                if value is None:
                    raise ValueError(f"{where}: --metric column {m!r} is {row[m]!r}, not a finite number")
                scores[m] = value
            for h in human:
                try:
                    ratings = parse_ratings(row.get(h), key, h)
                except ValueError as exc:
                    raise ValueError(f"{path}: row {number}: {exc}") from None
                if ratings is None:
                    unrated[h] += 1
                else:
                    rated[h] += 1
            item_input = {c: v for c, v in row.items() if c not in scores}
            records.items.append(ItemRecord(key=key, position=number - 1, input=item_input, output=None,
                                            scores=scores))
        bar.update(len(chunk.records))
    bar.close()
    if not records.items:
        raise ValueError(f"{path} holds no rows")
    absent = [h for h in human if rated[h] == 0]
    if absent:
        where = "column" if absent[0] not in columns else "column with a rating in any row"
        raise ValueError(f"{path} has no {where} {absent[0]!r}; its columns are {', '.join(map(str, columns))}")
    return ScoredTable(records=records, metrics=chosen, lower_is_better=set(lower), columns=list(columns),
                       unrated={h: n for h, n in unrated.items() if n})


def direction_note(table: ScoredTable) -> str:
    """The one line that says which way each metric column was read (a table states none)."""
    higher = [m for m in table.metrics if m not in table.lower_is_better]
    lower = [m for m in table.metrics if m in table.lower_is_better]
    parts = []
    if higher:
        parts.append(f"{', '.join(higher)} higher is better (assumed: the table states no direction; "
                     "--lower-is-better COLUMN for one that is not)")
    if lower:
        parts.append(f"{', '.join(lower)} lower is better (--lower-is-better): negated, so that a higher "
                     "correlation is closer to people")
    return f"{table.records.name}: " + "; ".join(parts)

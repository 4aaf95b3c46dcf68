"""Which columns of a record file hold the scoring inputs: ``output``, ``reference`` (one column,
or several whose values form the list of references), ``image`` and ``source`` (what an output was made from); and which are carried to the
output as they are: the record's id (what pairs records across runs) and columns to keep."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from opik_metrics.core.inputs import printable

INPUTS = ("output", "reference", "image", "source")
_MISSING = "field {name!r}: column {column!r} is missing from the record"
_MISSING_PATTERN = re.compile(r"field '(\w+)': column (.+) is missing from the record$")


def missing_input(reason: str) -> str | None:
    """The input (``output``, ``reference``, ``image``) when ``reason`` is FieldMap's "column is
    missing" (its record's place stripped, see ``rows.common_reason``), else None: what the
    command line turns into a ``--field`` hint."""
    found = _MISSING_PATTERN.fullmatch(reason)
    return found.group(1) if found else None


class FieldError(ValueError):
    """A field mapping that cannot be used (unknown input, empty column name)."""


@dataclass(frozen=True)
class FieldMap:
    """Input name -> the record columns it is read from (``reference`` may list several)."""

    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    id_field: str | None = None          # None: ``id`` when the input has it; "": no id
    keep: tuple[str, ...] = ()           # columns copied to the output
    kept_types: Mapping[str, str] = field(default_factory=dict)   # kept column -> integer|number|boolean (else text)

    @property
    def carried(self) -> list[str]:
        """The output columns taken from the record as they are: its id, then the kept ones."""
        return [*([self.id_field] if self.id_field else []), *self.keep]

    def carry(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The id and kept values of one record (None where the record lacks one): the id as text, a
        kept column of numbers or booleans as they are (``kept_types``), any other as text. The id
        is checked before a run (``streams.ids``), so here a missing one is only None."""
        out: dict[str, Any] = {}
        if self.id_field:
            value = record.get(self.id_field)
            out[self.id_field] = id_text(value) if _usable_id(value) else None
        for name in self.keep:
            value, kind = record.get(name), self.kept_types.get(name)
            if kind is None or value is None:
                out[name] = kept_text(value)
            else:             # every record's value was checked to be of the column's kind (``streams.ids``)
                out[name] = float(value) if kind == "number" else value
        return out

    def carried_types(self) -> dict[str, str]:
        """Each carried column's type in the output: the id text, a kept column its ``kept_types`` kind or text."""
        return {name: self.kept_types.get(name, "text") for name in self.carried}

    def column(self, name: str) -> tuple[str, ...]:
        return self.columns.get(name, (name,))

    def as_dict(self) -> dict[str, list[str]]:
        return {name: list(self.column(name)) for name in INPUTS}

    def extract(self, record: Mapping[str, Any], wanted: Sequence[str]) -> dict[str, Any]:
        """The scoring inputs of one record; raises KeyError naming a missing column."""
        inputs: dict[str, Any] = {}
        for name in wanted:
            cols = self.column(name)
            missing = [c for c in cols if c not in record]
            if missing:
                raise KeyError(_MISSING.format(name=name, column=missing[0]))
            values = [record[c] for c in cols]
            inputs[name] = values[0] if len(cols) == 1 else values
        return inputs


def _usable_id(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (isinstance(value, int) and not isinstance(value, bool))


def id_text(value: Any) -> str:
    """A record's id as the output writes it: text as it is, an integer in decimal (so that ids
    read from JSON, CSV and Parquet pair up)."""
    return printable(value) if isinstance(value, str) else str(value)


def value_kind(value: Any) -> str | None:
    """A kept value's kind: integer, number (a finite float), boolean or text (anything else); None for None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if -2**63 <= value < 2**63 else "text"     # what int64 holds (Parquet)
    if isinstance(value, float) and math.isfinite(value):
        return "number"
    return "text"


def column_kind(kinds: set[str]) -> str:
    """The kind of a kept column whose values have ``kinds``: one kind, or number for integers and
    numbers mixed; text otherwise (each value then as its JSON text, one type per column in every format)."""
    if kinds <= {"integer"} and kinds:
        return "integer"
    if kinds <= {"integer", "number"} and kinds:
        return "number"
    if kinds == {"boolean"}:
        return "boolean"
    return "text"


def kept_text(value: Any) -> str | None:
    """A kept column's value as the output writes it: text as it is, anything else as its JSON
    text (one type per column in every output format); None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return printable(value)


def parse_field_options(options: Sequence[str] | None) -> FieldMap:
    """``["output=pred", "reference=ref_a,ref_b"]`` as a FieldMap (the ``--field`` option)."""
    columns: dict[str, tuple[str, ...]] = {}
    for option in options or ():
        name, sep, value = option.partition("=")
        name = name.strip()
        if not sep or name not in INPUTS:
            raise FieldError(f"--field {option!r}: expected INPUT=COLUMN with INPUT one of {', '.join(INPUTS)}")
        cols = tuple(c.strip() for c in value.split(","))
        if not all(cols) or (len(cols) > 1 and name != "reference"):
            raise FieldError(f"--field {option!r}: give one column name"
                             + (" (several, comma-separated, only for reference)" if name != "reference" else ""))
        columns[name] = cols
    return FieldMap(columns)

"""One signature type for every number the pack produces: structured fields plus the familiar
``key:value|key:value`` string (sacrebleu's form), so a score says exactly how it was made.
"""
from __future__ import annotations

from typing import Any, Mapping


class Signature(str):
    """The string users know (``nrefs:1|case:mixed|...``) that also keeps its ``fields`` as a dict.

    A ``str`` subclass, so it travels in JSON and metadata as the plain string; the structured
    ``fields`` are what code reads (never parse the string back). ``formats`` renders a field
    other than ``key:value`` (e.g. ``{"layer": "L{}"}`` gives ``L17``).
    """

    fields: dict[str, Any]

    def __new__(cls, fields: Mapping[str, Any], formats: Mapping[str, str] | None = None) -> "Signature":
        formats = formats or {}
        parts = [formats[k].format(v) if k in formats else f"{k}:{_text(v)}" for k, v in fields.items()]
        made = super().__new__(cls, "|".join(parts))
        made.fields = dict(fields)
        return made

    def __reduce__(self) -> tuple:
        """Pickled as its text and fields (to Ray workers, to other processes), rebuilt exactly."""
        return _rebuild, (str(self), self.fields)

    def extended(self, **more: Any) -> "Signature":
        """This signature with more fields appended (same rendering for the old ones)."""
        return _join(self, Signature(more))

    def as_dict(self) -> dict[str, Any]:
        """Structured form for configs: the string and its fields."""
        return {"text": str(self), "fields": _jsonable(self.fields)}


def _rebuild(text: str, fields: dict[str, Any]) -> Signature:
    made = str.__new__(Signature, text)
    made.fields = dict(fields)
    return made


def _join(first: Signature, second: Signature) -> Signature:
    made = str.__new__(Signature, f"{first}|{second}" if first and second else f"{first}{second}")
    made.fields = {**first.fields, **second.fields}
    return made


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "no"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)

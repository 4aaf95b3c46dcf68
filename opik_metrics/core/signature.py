"""One signature type for every number the pack produces: structured fields plus the familiar
``key:value|key:value`` string (sacrebleu's form), so a score says exactly how it was made.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from opik_metrics.core.versions import Version


class Signature(str):
    """The string users know (``nrefs:1|case:mixed|...``) that also keeps its ``fields`` as a dict.

    A ``str`` subclass, so it travels in JSON and metadata as the plain string; the structured
    ``fields`` are what code reads (never parse the string back). ``formats`` renders a field
    other than ``key:value`` (e.g. ``{"layer": "L{}"}`` gives ``L17``). ``versions`` names the
    fields that record a package's version (values made by ``core.versions``): what software made
    the number, as opposed to the options that change it.
    """

    fields: dict[str, Any]
    versions: tuple[str, ...]

    def __new__(cls, fields: Mapping[str, Any], formats: Mapping[str, str] | None = None) -> "Signature":
        formats = formats or {}
        parts = [formats[k].format(v) if k in formats else f"{k}:{_text(v)}" for k, v in fields.items()]
        made = super().__new__(cls, "|".join(parts))
        made.fields = dict(fields)
        made.versions = tuple(k for k, v in fields.items() if isinstance(v, Version))
        return made

    def __reduce__(self) -> tuple:
        """Pickled as its text, fields and version fields (to Ray workers, to other processes), rebuilt exactly."""
        return _rebuild, (str(self), self.fields, self.versions)

    def options(self) -> dict[str, Any]:
        """The fields that change the number: every field but the versions."""
        return {k: v for k, v in self.fields.items() if k not in self.versions}

    def extended(self, **more: Any) -> "Signature":
        """This signature with more fields appended (same rendering for the old ones)."""
        return _join(self, Signature(more))

    def as_dict(self) -> dict[str, Any]:
        """Structured form for configs: the string and its fields."""
        return {"text": str(self), "fields": _jsonable(self.fields), "versions": list(self.versions)}


def rebuilt(text: str, fields: Mapping[str, Any], versions: Iterable[str] = ()) -> Signature:
    """A signature from its recorded parts (text, fields, version fields), without parsing the text."""
    made = str.__new__(Signature, text)
    made.fields = dict(fields)
    made.versions = tuple(k for k in versions if k in made.fields)
    return made


_rebuild = rebuilt


def _join(first: Signature, second: Signature) -> Signature:
    return rebuilt(f"{first}|{second}" if first and second else f"{first}{second}",
                   {**first.fields, **second.fields}, dict.fromkeys([*first.versions, *second.versions]))


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

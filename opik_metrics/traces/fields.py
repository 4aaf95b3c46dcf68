"""Where a trace (or span) holds the scoring inputs: ``output``, ``reference`` and ``image`` as
dotted paths into it (``output=output.caption``, ``reference=metadata.reference``), as ``score
--field`` maps a record's columns. A trace whose field is missing or of the wrong type is named with
the field and the path, never scored as an empty text."""
from __future__ import annotations

from collections import abc
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from opik_metrics.streams.fields import FieldError, parse_field_options

#: Where Opik's tracing puts a function's return value (``{"output": ...}``) and where a user
#: typically keeps a reference; every one is changed with ``--field``.
DEFAULT_PATHS: Mapping[str, tuple[str, ...]] = {"output": ("output.output",), "reference": ("metadata.reference",),
                                                "image": ("input.image",), "source": ("input.input",)}
ROOTS = ("input", "output", "metadata", "name", "tags", "thread_id", "id", "first_message", "last_message")


class Unreadable(ValueError):
    """A trace's field that cannot be a scoring input: the message names the field and its path."""


@dataclass(frozen=True)
class TraceFields:
    """Input name -> the dotted paths it is read from (``reference`` may list several: a list of
    references). Paths start at a trace's ``input``, ``output`` or ``metadata`` (or ``name``...),
    a thread's ``first_message`` (its first trace's input) or ``last_message`` (its last output)."""

    paths: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_PATHS))

    @classmethod
    def parse(cls, options: Sequence[str] | None) -> "TraceFields":
        """``["output=output.caption", "reference=metadata.ref_a,metadata.ref_b"]`` (``--field``)."""
        given = parse_field_options(options).columns
        for name, paths in given.items():
            for path in paths:
                if path.split(".", 1)[0] not in ROOTS:
                    raise FieldError(f"--field {name}={','.join(paths)}: a path starts at one of {', '.join(ROOTS)} "
                                     f"(e.g. output.caption), got {path!r}")
        return cls({**DEFAULT_PATHS, **given})

    def path(self, name: str) -> tuple[str, ...]:
        return self.paths.get(name, DEFAULT_PATHS.get(name, (name,)))

    def read(self, trace: Mapping[str, Any], name: str) -> Any:
        """Input ``name`` of ``trace`` (a dict of its fields): text for ``output`` and ``image``, text or
        a list of texts for ``reference``; None when absent; Unreadable when of another type."""
        paths = self.path(name)
        if len(paths) == 1:
            value = _follow(trace, paths[0])
            if value is None or type(value) is str:     # the usual case, once per trace and input
                return value
        values = [_follow(trace, p) for p in paths]
        if all(v is None for v in values):
            return None
        if len(paths) > 1:                      # several paths: the references, each a text
            for path, value in zip(paths, values):
                if value is not None and not isinstance(value, str):
                    raise Unreadable(f"field {name!r} ({path}): expected text, got {type(value).__name__}")
            return [v for v in values if v is not None]
        value = values[0]
        if name == "reference" and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value
        if not isinstance(value, str):
            raise Unreadable(f"field {name!r} ({paths[0]}): expected text, got {type(value).__name__}"
                             + (f" with keys {sorted(value)[:5]}" if isinstance(value, dict) else ""))
        return value


def _follow(node: Any, path: str) -> Any:
    for part in path.split("."):
        if not (type(node) is dict or isinstance(node, abc.Mapping)) or part not in node:
            return None
        node = node[part]
    return node

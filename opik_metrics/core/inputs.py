"""Validation of metric inputs: every error names the item and the field, never a deep traceback."""
from __future__ import annotations

import itertools
from typing import Any, Sequence


class MetricInputError(ValueError, TypeError):
    """Bad input to a metric; the message names the item (when known) and the field. A ValueError
    (and a TypeError, for callers that catch wrong types as such)."""


def _where(field: str, item: int | None) -> str:
    return f"item {item}, field {field!r}" if item is not None else f"field {field!r}"


def utf8_problem(text: str) -> str | None:
    """Why ``text`` cannot be encoded as UTF-8, or None when it can. Only a surrogate code point
    can stop it: a lone half of a pair, e.g. an LLM reply cut mid-emoji ("\\ud83d"), or bytes that
    were not UTF-8 kept by Python's ``surrogateescape``. Tokenizers reject such text with an
    error naming neither item nor field."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}: "
                "the text cannot be encoded as UTF-8")
    return None


def require_text(value: Any, field: str, item: int | None = None) -> str:
    """Return ``value`` if it is a string that can be encoded as UTF-8 (every tokenizer's input),
    else raise a MetricInputError saying where and what."""
    if isinstance(value, str):
        problem = utf8_problem(value)
        if problem is not None:
            raise MetricInputError(f"{_where(field, item)}: {problem}")
        return value
    if value is None:
        raise MetricInputError(f"{_where(field, item)}: expected a string, got None")
    raise MetricInputError(f"{_where(field, item)}: expected a string, got {type(value).__name__}")


def require_references(value: Any, field: str = "reference", item: int | None = None) -> list[str]:
    """Normalise a reference (a string or a non-empty list of strings) to a list of strings."""
    if isinstance(value, str):
        return [require_text(value, field, item)]
    if value is None:
        raise MetricInputError(f"{_where(field, item)}: expected a string or a list of strings, got None")
    if isinstance(value, (list, tuple)):
        if not value:
            raise MetricInputError(f"{_where(field, item)}: the list of references is empty")
        return [require_text(v, f"{field}[{k}]", item) for k, v in enumerate(value)]
    raise MetricInputError(
        f"{_where(field, item)}: expected a string or a list of strings, got {type(value).__name__}"
    )


def _all_plain_text(values: Sequence) -> bool:
    """Whether every value is a str that encodes as UTF-8, checked for the whole batch in a few C
    passes (the common case); when not, the item-by-item checks find the culprit and say where."""
    return all(map(isinstance, values, itertools.repeat(str))) and utf8_problem("".join(values)) is None


def require_batch(outputs: Any, references: Any | None) -> tuple[list[str], list[list[str]] | None]:
    """Validate a batch: same lengths, every output a string, every reference a string or list."""
    if isinstance(outputs, str) or not isinstance(outputs, Sequence):
        raise MetricInputError("outputs: expected a list of strings")
    if _all_plain_text(outputs):
        outs = list(outputs)
    else:
        outs = [require_text(o, "output", i) for i, o in enumerate(outputs)]
    if references is None:
        return outs, None
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise MetricInputError("references: expected a list (one entry per output)")
    if len(references) != len(outs):
        raise MetricInputError(
            f"got {len(outs)} outputs but {len(references)} references; they must pair up one to one"
        )
    if _all_plain_text(references):                 # one reference string per item
        return outs, [[r] for r in references]
    return outs, [require_references(r, "reference", i) for i, r in enumerate(references)]

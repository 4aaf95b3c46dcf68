"""The source text of an item (the document a summary was made from, the question a reply answers), for
metrics that score an output given its source: read from the scoring input ``field`` (Opik's dataset
``input`` by default, re-mapped with ``scoring_key_mapping``), one clear error naming the item when absent."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from opik_metrics.core import MetricInputError, require_text

#: The scoring input a source-reading metric takes by default: an Opik dataset item's ``input``.
DEFAULT_SOURCE_FIELD = "input"


def check_source_field(field: Any) -> str:
    if not isinstance(field, str) or not field:
        raise ValueError(f"source_field must be a non-empty string, got {field!r}")
    return field


def missing_source(metric: str, field: str, item: int | None = None) -> MetricInputError:
    where = f"item {item}, " if item is not None else ""
    return MetricInputError(
        f"{where}field {field!r}: missing. {metric} scores the output given its source text: give the item a "
        f"{field!r} field, or map the field that holds the source to it, e.g. opik.evaluate(..., "
        f"scoring_key_mapping={{{field!r}: \"document\"}}); on the command line --field source=COLUMN or --source FILE")


def read_source(metric: str, inputs: Mapping[str, Any], field: str, item: int | None = None) -> str:
    """The item's source text from its scoring inputs."""
    value = inputs.get(field)
    if value is None:
        raise missing_source(metric, field, item)
    return require_text(value, field, item)


def require_sources(metric: str, sources: Sequence[Any] | None, n: int, field: str) -> list[str]:
    """A batch's sources: one text per output."""
    if sources is None:
        raise missing_source(metric, field)
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Sequence):
        raise MetricInputError("sources: expected a list with one source text per output")
    if len(sources) != n:
        raise MetricInputError(f"got {n} outputs but {len(sources)} sources; they must pair up one to one")
    return [require_text(s, field, k) if s is not None else _raise(missing_source(metric, field, k))
            for k, s in enumerate(sources)]


def _raise(exc: Exception) -> str:
    raise exc

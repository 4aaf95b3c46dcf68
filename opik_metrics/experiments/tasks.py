"""What the runner asks of a task: a per-item call (as ``opik.evaluate``) and, optionally,
``prepare(items)`` doing batch work ahead (fetch, batched generation) and naming failed items.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

Task = Callable[[dict], dict]


@dataclass(frozen=True)
class ItemFailure:
    """Why one item produced no output: the stage ('data', 'fetch', 'caption', 'task') and reason."""

    stage: str
    reason: str

    def __str__(self) -> str:
        return f"{self.stage}: {self.reason}"


@runtime_checkable
class PreparedTask(Protocol):
    """A task that does batch work for a chunk of items before being called on each."""

    def prepare(self, items: Sequence[dict]) -> Mapping[int, ItemFailure]:
        """Work for ``items``; returns {index in ``items``: failure} for those that cannot run."""

    def __call__(self, item: dict) -> dict:
        """The task output for one item (a dict, merged with the item to score it)."""


def prepare_chunk(task: Any, items: Sequence[dict]) -> dict[int, ItemFailure]:
    """Run ``task.prepare`` when the task has one; an exception fails the whole chunk with its reason."""
    if not items or not isinstance(task, PreparedTask):
        return {}
    try:
        return dict(task.prepare(items))
    except Exception as exc:  # a crash in batch work must not lose the run: record it per item
        failure = ItemFailure("prepare", f"{type(exc).__name__}: {exc}")
        return {k: failure for k in range(len(items))}

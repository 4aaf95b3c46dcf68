"""What the store holds, as Python values: scores, items and experiment headers, and how values
and texts are encoded so that they read back unchanged."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, overload

from opik_metrics.core.numbers import is_number


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any) -> str:
    """JSON text that SQLite can store: non-ASCII kept, lone surrogates (a reply cut in the middle
    of an emoji: "\\ud83d") written as ``\\uXXXX`` escapes, so that they read back unchanged."""
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@overload
def storable_text(value: str) -> str: ...
@overload
def storable_text(value: None) -> None: ...
def storable_text(value: str | None) -> str | None:
    """Free text (names, reasons) that SQLite can store: a lone surrogate becomes a visible ``\\udXXX``."""
    if value is None or not isinstance(value, str) or not LONE_SURROGATE.search(value):
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def finite(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def stored_value(value: Any) -> float | None:
    """A score's value column: finite numbers and infinities (SQLite keeps them); NaN and anything
    that is not a number become NULL, read back as ``non_finite="nan"``."""
    if is_number(value):
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isinf(value):
        return float(value)
    return None


def read_value(value: Any, failed: bool) -> tuple[float | None, str | None]:
    """(value, non_finite) of a stored score: infinities and NULLs of unfailed scores are not values."""
    if failed:
        return None, None
    if value is None:
        return None, "nan"
    if isinstance(value, float) and math.isinf(value):
        return None, "inf" if value > 0 else "-inf"
    return value, None


def config_identity(config: dict) -> str:
    """The part of a config that must match to resume (``runtime`` settings may change)."""
    return dumps({k: v for k, v in config.items() if k != "runtime"})


@dataclass
class StoredScore:
    """One score of one item; ``value`` is None when the metric failed (see ``reason``)."""

    name: str
    metric: str
    value: float | None
    failed: bool
    reason: str | None
    metadata: dict
    non_finite: str | None = None    # "inf", "-inf" or "nan": the metric gave no finite number (value None)


def trial_key(key: str, trial: int) -> str:
    """One trial of an item as one key (a push notes each trial's trace under it): the item key for
    the first trial, ``KEY#TRIAL`` for the others (item keys are hex digests, with ``-N`` for repeats)."""
    return key if not trial else f"{key}#{trial}"


@dataclass
class StoredItem:
    """One trial of one dataset item in an experiment (``trial`` 0, 1, ... as Opik numbers them;
    one trial per item unless the run had ``trial_count``); its trials share ``key`` and ``position``."""

    key: str
    position: int
    input: dict
    status: str
    output: dict | None = None
    failure_stage: str | None = None
    failure: str | None = None
    trace: list | None = None
    task_seconds: float | None = None
    score_seconds: float | None = None
    finished_at: str | None = None
    scores: dict[str, StoredScore] = field(default_factory=dict)
    trial: int = 0

    @property
    def trial_key(self) -> str:
        return trial_key(self.key, self.trial)


@dataclass
class ExperimentInfo:
    """An experiment's header: config, counts, mean scores and experiment-level scores. ``items``
    counts dataset items, ``trials`` the runs of each (``trial_count``); ``scored_items`` and
    ``failed_items`` count trials (with one trial per item, items); ``scores`` are means over items
    of each item's mean over its trials, as Opik's summary and the comparison count them."""

    id: int
    name: str
    dataset: str
    config: dict
    status: str
    created_at: str
    updated_at: str
    seconds: float
    runs: int
    pushed_at: str | None
    pushed_to: str | None
    items: int = 0
    failed_items: int = 0
    scored_items: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    experiment_scores: dict[str, float | None] = field(default_factory=dict)
    trials: int = 1

    def listing(self) -> dict[str, Any]:
        """The ``experiments list --format json`` entry; ``scores`` holds item means and corpus scores;
        ``trials`` only when items ran several times."""
        corpus = {k: v for k, v in self.experiment_scores.items() if v is not None}
        return {"name": self.name, "items": self.items, "failed_items": self.failed_items,
                "created_at": self.created_at, "config": self.config,
                "scores": {**self.scores, **corpus}, "status": self.status, "dataset": self.dataset,
                **({"trials": self.trials} if self.trials > 1 else {})}


@dataclass
class PushRecord:
    """An earlier push of an experiment to one target: its id there and each item's trace id."""

    target: str
    remote_id: str
    started_at: str
    complete_at: str | None = None
    traces: dict[str, str] = field(default_factory=dict)      # trial key (``trial_key``) -> trace id


# ---- the lease holder's identity -------------------------------------------------------------

"""What a finished experiment run reports, whichever backend ran it; and stable item keys."""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence


def item_keys(items: Sequence[dict]) -> list[str]:
    """A stable key per item (hash of its content; repeats get a suffix), so a re-run can resume."""
    seen: Counter[str] = Counter()
    keys = []
    for item in items:
        digest = hashlib.sha256(json.dumps(item, sort_keys=True, default=str).encode()).hexdigest()[:20]
        seen[digest] += 1
        keys.append(digest if seen[digest] == 1 else f"{digest}-{seen[digest]}")
    return keys


@dataclass
class ExperimentSummary:
    """Counts, mean scores, experiment-level scores and failures of one experiment."""

    name: str
    backend: str                      # "local" or "opik"
    dataset: str
    location: str                     # store path, or the experiment's URL in Opik
    items: int = 0
    failed_items: int = 0
    resumed_items: int = 0            # finished by an earlier, interrupted run (item trials, with trial_count)
    scores: dict[str, float] = field(default_factory=dict)
    experiment_scores: dict[str, float | None] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)   # {"item", "stage", "reason"}
    seconds: float = 0.0
    trials: int = 1                   # runs of each item (opik.evaluate's trial_count)
    parts: list[str] = field(default_factory=list)   # part scores (precision, recall), from the metrics' facts
    journal: str | None = None        # on a server: the command that pushes the run's journal (the local store's copy)
    missing: str | None = None        # on a server: what the read-back found missing there (None: all there)

    def failure_counts(self) -> list[tuple[str, int]]:
        """Failure reasons with how many items each, most frequent first."""
        return Counter(f"{f['stage']}: {f['reason']}" for f in self.failures).most_common()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

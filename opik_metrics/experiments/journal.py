"""What ``opik.evaluate`` produces on a server, kept in the local store as it goes: each item's task
output as the task returns it (from Opik's task threads), then every score and the experiment
scores, with the experiment's id and each item's trace id noted as a push would note them. So
nothing exists only in flight, and ``experiments push NAME`` can read back the server's copy and
send what it lacks under the same ids.

With ``trial_count`` every trial is kept, under the trial number Opik gives it (``trial_id``), as
a local run keeps its trials. Each server run gets a journal of its own: an earlier server run's journal of the same name is replaced (it
is a new experiment on the server); a stored experiment of that name that is not a journal (a local
run), or one another process is journaling now, is kept, and the journal takes the name
``NAME (Opik run <UTC time>)``.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

from opik_metrics.core.facts import facts_of
from opik_metrics.experiments.store import ExperimentLocked, ExperimentStore, StoredScore, trial_key
from opik_metrics.experiments.summary import item_keys
from opik_metrics.experiments.tasks import ItemFailure

#: The config key that marks a stored experiment as the journal of a run on a server.
JOURNAL_KEY = "journal_of"


def _journal_name(store: ExperimentStore, name: str, taken: bool = False) -> str:
    """``name``, unless a stored experiment of that name is not a journal, or is being journaled by
    another process (``taken``): then a name of its own."""
    if not taken and (name not in store.names() or isinstance(store.info(name).config.get(JOURNAL_KEY), str)):
        return name
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d-%H%M%S")
    candidate, k = f"{name} (Opik run {stamp})", 1
    while candidate in store.names():
        k += 1
        candidate = f"{name} (Opik run {stamp}-{k})"
    return candidate


class EvaluationJournal:
    """One server run's journal in ``store``: ``begin`` before the run, ``task`` wraps the task given
    to ``opik.evaluate``, ``results`` and ``note_push`` after it."""

    def __init__(self, store: ExperimentStore, name: str, dataset_name: str, config: dict,
                 items: Sequence[dict], server: str | None = None, trials: int = 1) -> None:
        self.store, self.name = store, _journal_name(store, name)
        self.keys = item_keys(items)
        marked = {**config, JOURNAL_KEY: f"opik.evaluate on {server or 'the configured Opik server'}",
                  **({"trial_count": trials} if trials > 1 else {})}
        try:
            self.exp_id, _ = store.begin(self.name, dataset_name, marked, list(zip(self.keys, items)), overwrite=True,
                                         wait=0, trials=trials)
        except ExperimentLocked:      # another process's server run of that name journals now: one of its own
            self.name = _journal_name(store, name, taken=True)
            self.exp_id, _ = store.begin(self.name, dataset_name, marked, list(zip(self.keys, items)), overwrite=True,
                                         wait=0, trials=trials)
        self.by_dataset_item: dict[str, str] = {}
        self._calls: dict[str, int] = {}       # item key -> task calls so far: the trial its next output is kept as
        self._lock = threading.Lock()          # Opik's task threads write one at a time
        self._started = time.perf_counter()

    def failures(self, failures: Mapping[int, ItemFailure]) -> None:
        """Items whose batch work failed (they never reach the server)."""
        for position, failure in failures.items():
            self.store.save_failure(self.exp_id, self.keys[position], failure.stage, failure.reason)

    def link(self, positions: Sequence[int], dataset_item_ids: Sequence[str]) -> None:
        """Each item's id in the Opik dataset (what the task receives as ``id``)."""
        self.by_dataset_item = {str(i): self.keys[p] for p, i in zip(positions, dataset_item_ids)}

    def task(self, task: Callable[[dict], Any]) -> Callable[[dict], Any]:
        """``task``, its output (or its failure) written to the store as soon as it returns. The task
        is not told its trial: an item's calls are kept as trials 0, 1, ... in the order they end
        (``results`` files each trial's output under Opik's own trial number)."""
        def journaled(item: dict) -> Any:
            started = time.perf_counter()
            key = self.by_dataset_item.get(str(item.get("id"))) if isinstance(item, dict) else None
            try:
                output = task(item)
            except Exception as exc:
                if key is not None:
                    with self._lock:
                        self.store.save_failure(self.exp_id, key, "task", f"{type(exc).__name__}: {exc}", None,
                                                time.perf_counter() - started, trial=self._next_trial(key))
                raise
            if key is not None and isinstance(output, dict):
                with self._lock:
                    self.store.save_output(self.exp_id, key, output, None, time.perf_counter() - started,
                                           trial=self._next_trial(key))
            return output
        return journaled

    def _next_trial(self, key: str) -> int:
        trial = self._calls.get(key, 0)
        self._calls[key] = trial + 1
        return trial

    def results(self, test_results: Sequence[Any], experiment_scores: Sequence[Any], metrics: Sequence[Any]) -> None:
        """Every trial's output and scores, the experiment scores, and the run finished."""
        metric_of = {score.name: facts.metric for facts in map(facts_of, metrics) for score in facts.scores}
        for (key, trial), result in self._trials(test_results).items():
            case = result.test_case
            if isinstance(case.task_output, dict):
                self.store.save_output(self.exp_id, key, case.task_output, None, None, trial=trial)
            self.store.save_scores(self.exp_id, key, [
                StoredScore(s.name, metric_of.get(s.name, s.name), s.value, bool(s.scoring_failed), s.reason,
                            dict(s.metadata or {})) for s in result.score_results], None, trial=trial)
        self.store.save_experiment_scores(self.exp_id, [
            StoredScore(s.name, "", s.value, bool(s.scoring_failed), s.reason, dict(s.metadata or {}))
            for s in experiment_scores])
        self.store.finish(self.exp_id, "finished", time.perf_counter() - self._started)

    def note_push(self, target: str, experiment_id: str, test_results: Sequence[Any]) -> None:
        """The server's ids, as ``experiments push`` notes its own: the experiment and each item's trace."""
        self.store.start_push(self.exp_id, target, experiment_id)
        self.store.save_push_traces(self.exp_id, target, {trial_key(key, trial): result.test_case.trace_id
                                                           for (key, trial), result in self._trials(test_results).items()})

    def _trials(self, test_results: Sequence[Any]) -> dict[tuple[str, int], Any]:
        """Each journaled item's trials among ``test_results``, by (item key, Opik's trial number)."""
        found: dict[tuple[str, int], Any] = {}
        for result in test_results:
            key = self.by_dataset_item.get(str(result.test_case.dataset_item_id))
            if key is not None:
                found.setdefault((key, int(getattr(result, "trial_id", 0) or 0)), result)
        return found

    def interrupted(self) -> None:
        """The run stopped before its results came back: what was journaled stays, marked interrupted."""
        if self.store.holds(self.exp_id):
            self.store.finish(self.exp_id, "interrupted", time.perf_counter() - self._started)

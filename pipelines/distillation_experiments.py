"""Run one experiment (task + metrics over items) on an Opik server with ``opik.evaluate``, or,
with none, in process; either way the result becomes an ExperimentRecord for the results file.

Seam for the local experiment store (a later issue): it will take ExperimentRecords as
``JsonResults`` does (``add`` then ``write``), and ``LocalRunner`` stays as it is.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import httpx
import opik
from opik import url_helpers
from opik.evaluation.test_case import TestCase
from opik.evaluation.test_result import TestResult
from tqdm.auto import tqdm

Task = Callable[[dict], dict]
ExperimentScorer = Callable[[list], Any]


@dataclass
class ExperimentRecord:
    """What one experiment produced: per-item outputs and scores, experiment-level scores."""

    name: str
    config: dict
    items: list[dict] = field(default_factory=list)
    experiment_scores: dict[str, float] = field(default_factory=dict)
    means: dict[str, float] = field(default_factory=dict)
    backend: str = "local"


def _as_list(result: Any) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _finite(x: float) -> float | None:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def record_from(name: str, config: dict, test_results: Sequence[TestResult],
                experiment_scorers: Sequence[ExperimentScorer], backend: str) -> ExperimentRecord:
    """Build the record from Opik TestResults (both runners produce them)."""
    rec = ExperimentRecord(name=name, config=config, backend=backend)
    sums: dict[str, list[float]] = {}
    for tr in test_results:
        case = tr.test_case
        scores = {s.name: _finite(s.value) for s in tr.score_results if not s.scoring_failed}
        reasons = {s.name: s.reason for s in tr.score_results if s.reason}
        rec.items.append({"id": case.dataset_item_id, "input": case.dataset_item_content,
                          "output": case.task_output, "scores": scores, "reasons": reasons})
        for k, v in scores.items():
            if v is not None:
                sums.setdefault(k, []).append(v)
    rec.means = {k: sum(v) / len(v) for k, v in sums.items()}
    for scorer in experiment_scorers:
        for res in _as_list(scorer(list(test_results))):
            rec.experiment_scores[res.name] = _finite(res.value)
    return rec


class LocalRunner:
    """No Opik server: run the task and each metric's ``score`` in process, as opik.evaluate would."""

    backend = "local"

    def run(self, name: str, items: list[dict], task: Task, metrics: Sequence[Any], config: dict,
            experiment_scorers: Sequence[ExperimentScorer] = ()) -> ExperimentRecord:
        results = []
        for k, item in enumerate(tqdm(items, desc=f"experiment {name}", unit="item")):
            output = task(item)
            inputs = {**item, **output}
            scores = [r for m in metrics for r in _as_list(m.score(**inputs))]
            case = TestCase(trace_id=f"local-{k}", dataset_item_id=str(k), task_output=output,
                            dataset_item_content=item, mapped_scoring_inputs=inputs)
            results.append(TestResult(test_case=case, score_results=scores, trial_id=0))
        return record_from(name, config, results, experiment_scorers, self.backend)


class OpikRunner:
    """An Opik server is configured: a dataset, ``opik.evaluate``, experiment-level scores."""

    backend = "opik"

    def __init__(self, project_name: str | None = None, dataset_name: str = "opik-metrics-distillation"):
        self.project_name = project_name
        self.dataset_name = dataset_name

    def run(self, name: str, items: list[dict], task: Task, metrics: Sequence[Any], config: dict,
            experiment_scorers: Sequence[ExperimentScorer] = ()) -> ExperimentRecord:
        client = opik.Opik(project_name=self.project_name)
        dataset = client.get_or_create_dataset(name=self.dataset_name)
        dataset.insert(items)
        result = opik.evaluate(dataset=dataset, task=task, scoring_metrics=list(metrics), experiment_name=name,
                               project_name=self.project_name, experiment_config=config, task_threads=1,
                               experiment_scoring_functions=list(experiment_scorers))
        return record_from(name, config, result.test_results, experiment_scorers, self.backend)


def opik_server(probe: bool = True, timeout_s: float = 3.0) -> tuple[bool, str]:
    """Whether an Opik server is configured and answers; the string says why or why not."""
    cfg = opik.config.OpikConfig()
    configured = bool(cfg.api_key) or bool(os.environ.get("OPIK_URL_OVERRIDE")) \
        or Path(cfg.config_file_fullpath).expanduser().exists()
    if not configured:
        return False, "no Opik server configured (set OPIK_URL_OVERRIDE or run `opik configure`)"
    if not probe:
        return True, f"Opik server configured at {cfg.url_override}"
    # A plain ping: building an opik.Opik client here would leave process-wide state behind.
    try:
        response = httpx.get(url_helpers.get_is_alive_ping_url(cfg.url_override), timeout=timeout_s)
        response.raise_for_status()
    except Exception as exc:  # any failure means: do not use the server
        return False, f"Opik server at {cfg.url_override} not reachable ({type(exc).__name__}: {exc})"
    return True, f"Opik server at {cfg.url_override}"


def choose_runner(mode: str, project_name: str | None = None) -> tuple[LocalRunner | OpikRunner, str]:
    """``auto``: Opik when a server answers, else local; ``opik`` or ``local`` force one."""
    if mode == "local":
        return LocalRunner(), "local run requested (--backend local)"
    ok, why = opik_server()
    if ok:
        return OpikRunner(project_name), why
    if mode == "opik":
        raise RuntimeError(f"--backend opik but {why}")
    return LocalRunner(), why


class JsonResults:
    """Experiment records and the run's config written as one JSON results file."""

    def __init__(self, path: Path, run_config: dict) -> None:
        self.path = Path(path)
        self.payload: dict[str, Any] = {"config": run_config, "experiments": []}

    def add(self, record: ExperimentRecord) -> None:
        self.payload["experiments"].append(asdict(record))

    def set(self, key: str, value: Any) -> None:
        self.payload[key] = value

    def write(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.payload, indent=2, default=str), encoding="utf-8")
        return self.path

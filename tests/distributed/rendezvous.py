"""A metric for testing how Ray spreads work: each worker that scores writes its pid to a folder
and waits (up to a deadline) until ``expected`` workers have, then scores each item with its pid.
Every metric built after the ``slow_after``-th takes ``slow_s`` longer to build (an actor that
loads late). If one worker were handed every group while another loads, it would wait in vain."""
from __future__ import annotations

import os
import time
from pathlib import Path

from opik.evaluation.metrics import base_metric, score_result


class Rendezvous(base_metric.BaseMetric):
    def __init__(self, folder: str, expected: int, slow_after: int, slow_s: float = 3.0,
                 deadline_s: float = 30.0) -> None:
        super().__init__(name="worker_pid", track=False)
        if _birth_order(Path(folder) / "born") > slow_after:
            time.sleep(slow_s)
        self.folder, self.expected, self.deadline_s = Path(folder), expected, deadline_s
        self.end: float | None = None      # one deadline for the worker, not one per item

    def score(self, output: str, **ignored) -> score_result.ScoreResult:
        scored = self.folder / "scored"
        (scored / str(os.getpid())).touch()
        if self.end is None:
            self.end = time.monotonic() + self.deadline_s
        while len(list(scored.iterdir())) < self.expected:
            if time.monotonic() > self.end:
                raise TimeoutError(f"only {len(list(scored.iterdir()))} of {self.expected} workers came")
            time.sleep(0.05)
        return score_result.ScoreResult(name="worker_pid", value=float(os.getpid()))


def _birth_order(folder: Path) -> int:
    """1 for the first metric built (in any process), 2 for the second, ..."""
    k = 1
    while True:
        try:
            os.close(os.open(folder / str(k), os.O_CREAT | os.O_EXCL))
            return k
        except FileExistsError:
            k += 1


def rendezvous_metrics(folder: str, expected: int, slow_after: int) -> list:
    return [Rendezvous(folder, expected, slow_after)]

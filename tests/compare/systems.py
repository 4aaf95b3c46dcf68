"""Two or more text systems over shared references, run as experiments into a local store:
the inputs every comparison test starts from."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from opik_metrics import BLEU, ROUGE
from opik_metrics.experiments.runner import run_experiment

FAIL = "!fail"


def items_for(references: Sequence[str]) -> list[dict]:
    return [{"line": k + 1, "reference": ref} for k, ref in enumerate(references)]   # no "id": Opik owns that field


def answer_with(outputs: Sequence[str]):
    """A task answering the item of line k with outputs[k - 1]; FAIL marks an item the system fails on."""

    def task(item: dict) -> dict:
        line = outputs[item["line"] - 1]
        if line == FAIL:
            raise RuntimeError("the system crashed on this item")
        return {"output": line}

    return task


def store_with(path: Path, references: Sequence[str], systems: dict[str, Sequence[str]], metrics=None) -> Path:
    """Each system as an experiment (ROUGE and BLEU unless ``metrics``) in the store at ``path``."""
    items = items_for(references)
    for name, outputs in systems.items():
        run_experiment(name, items, answer_with(outputs), metrics or [ROUGE(), BLEU()], dataset_name="shared",
                       config={"model": name}, store=path, progress=False, overwrite=True)
    return path

"""The metrics the CLI and pipelines can build by name, with the options each one takes."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class MetricSpec:
    """How to build one metric by name; ``options`` maps CLI option names to constructor kwargs."""

    name: str
    target: str                      # "module:Class"
    needs_reference: bool = True
    summary: str = ""

    def build(self, **kwargs: Any):
        module, cls = self.target.split(":")
        factory: Callable[..., Any] = getattr(importlib.import_module(module), cls)
        return factory(**kwargs)


METRICS: dict[str, MetricSpec] = {
    "rouge": MetricSpec("rouge", "opik_metrics.metrics.rouge:ROUGE",
                        summary="ROUGE-N/L/Lsum/W/S/SU precision, recall, F"),
    "bleu": MetricSpec("bleu", "opik_metrics.metrics.bleu:BLEU",
                       summary="sentence BLEU per item, corpus BLEU in the aggregate"),
}


def metric_spec(name: str) -> MetricSpec:
    """Look a metric up by name; a clear error lists the known names."""
    key = name.lower()
    if key not in METRICS:
        raise ValueError(f"unknown metric {name!r}; choose from: {', '.join(sorted(METRICS))}")
    return METRICS[key]

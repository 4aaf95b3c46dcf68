"""opik-metrics: evaluation metrics for Opik (ROUGE family, BLEU, BERTScore,
CIDEr-D, METEOR, the COCO caption suite, CLIPScore, perplexity, distillation KL) as ``BaseMetric``
subclasses, plus tracked pipelines and a scoring CLI.

Names are imported lazily so that ``import opik_metrics`` stays light (no torch until needed).
"""
from __future__ import annotations

import importlib
from typing import Any

from opik_metrics.core.extras import extra_providing, needs_extra
from opik_metrics.core.versions import ours as _ours

__version__ = _ours()

_PUBLIC = {
    "ROUGE": "opik_metrics.metrics.rouge",
    "BLEU": "opik_metrics.metrics.bleu",
    "CHRF": "opik_metrics.metrics.chrf",
    "TER": "opik_metrics.metrics.ter",
    "BERTScore": "opik_metrics.metrics.bertscore",
    "CIDEr": "opik_metrics.metrics.cider",
    "CLIPScore": "opik_metrics.metrics.clipscore",
    "COCOCaption": "opik_metrics.metrics.coco",
    "METEOR": "opik_metrics.metrics.meteor",
    "Perplexity": "opik_metrics.metrics.perplexity",
    "DistillationKL": "opik_metrics.metrics.distillation",
    "BARTScore": "opik_metrics.metrics.bartscore",
    "UniEval": "opik_metrics.metrics.unieval",
    "GPTScore": "opik_metrics.metrics.gptscore",
    "distillation_loss": "opik_metrics.neural.lm.distillation_loss",
    "EvaluateMetric": "opik_metrics.metrics.evaluate_module",
    "evaluate": "opik_metrics.experiments.evaluate",
    "evaluate_experiment": "opik_metrics.experiments.evaluate",
    "ResultsMissing": "opik_metrics.experiments.evaluate",
    "score_traces": "opik_metrics.traces.scoring",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'opik_metrics' has no attribute {name!r}")
    try:
        module = importlib.import_module(_PUBLIC[name])
    except ModuleNotFoundError as exc:
        if exc.name == _PUBLIC[name]:
            raise AttributeError(f"{name} is not available in this version of opik-metrics") from exc
        extra = extra_providing(exc.name or "")
        if extra is None:
            raise
        return needs_extra(name, extra, _PUBLIC[name])   # as transformers' dummy objects: `import *` works
    return getattr(module, name)

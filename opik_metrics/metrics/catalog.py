"""The metrics the CLI and pipelines can build by name, with the options each one takes."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


@dataclass(frozen=True)
class MetricSpec:
    """How to build one metric by name; ``options`` maps CLI option names to constructor kwargs."""

    name: str
    target: str                      # "module:Class"
    needs_reference: bool = True
    summary: str = ""
    needs_image: bool = False        # scores images too (the caption pipeline gives them; text files do not)
    loads_model: bool = False        # model-backed: a worker should build it once and keep it
    fits_on_references: bool = False  # its item scores need every reference of the set first (a corpus context)

    def build(self, **kwargs: Any):
        module, cls = self.target.split(":")
        factory: Callable[..., Any] = getattr(importlib.import_module(module), cls)
        return factory(**kwargs)


METRICS: dict[str, MetricSpec] = {
    "rouge": MetricSpec("rouge", "opik_metrics.metrics.rouge:ROUGE",
                        summary="ROUGE-N/L/Lsum/W/S/SU precision, recall, F"),
    "bleu": MetricSpec("bleu", "opik_metrics.metrics.bleu:BLEU",
                       summary="sentence BLEU per item, corpus BLEU in the aggregate"),
    "chrf": MetricSpec("chrf", "opik_metrics.metrics.chrf:CHRF",
                       summary="sentence chrF (chrF++ with --chrf-word-order 2) per item, corpus chrF in the aggregate"),
    "ter": MetricSpec("ter", "opik_metrics.metrics.ter:TER",
                      summary="sentence TER per item (lower is better), corpus TER in the aggregate"),
    "bertscore": MetricSpec("bertscore", "opik_metrics.metrics.bertscore:BERTScore", loads_model=True,
                            summary="BERTPrecision, BERTRecall, BERTF1 (bert_score's numbers)"),
    "cider": MetricSpec("cider", "opik_metrics.metrics.cider:CIDEr", fits_on_references=True,
                        summary="CIDEr-D per item and for the corpus (pycocoevalcap's numbers, no Java)"),
    "coco": MetricSpec("coco", "opik_metrics.metrics.coco:COCOCaption", fits_on_references=True,
                       summary="COCO caption suite: Bleu_1..4, ROUGE_L, CIDEr (pycocoevalcap's keys)"),
    "clipscore": MetricSpec("clipscore", "opik_metrics.metrics.clipscore:CLIPScore", needs_reference=False,
                            needs_image=True, loads_model=True,
                            summary="CLIP-S per item (RefCLIP-S with references), Hessel et al.'s numbers"),
    "perplexity": MetricSpec("perplexity", "opik_metrics.metrics.perplexity:Perplexity", needs_reference=False,
                             loads_model=True,
                             summary="perplexity of a causal LM per item, token-weighted corpus perplexity"),
    "distillation_kl": MetricSpec("distillation_kl", "opik_metrics.metrics.distillation:DistillationKL",
                                  needs_reference=False, loads_model=True,
                                  summary="per-token KL(teacher_T || student_T) of two causal LMs"),
}


def metric_spec(name: str) -> MetricSpec:
    """Look a metric up by name; a clear error lists the known names."""
    key = name.lower()
    if key not in METRICS:
        raise ValueError(f"unknown metric {name!r}; choose from: {', '.join(sorted(METRICS))}")
    return METRICS[key]


@dataclass(frozen=True)
class MetricRecipe:
    """How to build named catalog metrics, picklable: another process (a Ray worker) calls it to
    build the same metrics there."""

    named: tuple[tuple[str, Mapping[str, Any]], ...]

    @classmethod
    def of(cls, named: Sequence[tuple[str, Mapping[str, Any]]]) -> "MetricRecipe":
        for name, _ in named:
            metric_spec(name)
        return cls(tuple((name, dict(kwargs)) for name, kwargs in named))

    @property
    def loads_model(self) -> bool:
        return any(metric_spec(name).loads_model for name, _ in self.named)

    def __call__(self) -> list[Any]:
        return [metric_spec(name).build(**kwargs) for name, kwargs in self.named]

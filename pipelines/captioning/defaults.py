"""The captioner's defaults, apart from the model code so that the command line reads them
without importing torch."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping

CAPTION_MODEL = "Salesforce/blip-image-captioning-base"

# The generation settings of the Comet article's ``generate_caption``.
GENERATION_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "max_length": 50,
    "min_length": 10,
    "num_beams": 5,
    "repetition_penalty": 1.2,
    "length_penalty": 1.0,
    "early_stopping": True,
})

__all__ = ["CAPTION_MODEL", "GENERATION_DEFAULTS"]

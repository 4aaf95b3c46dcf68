"""Which image inputs are the same image, so that each is read and embedded once: the same path
or URL string, the same bytes (by hash), the same PIL object."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Hashable

from PIL import Image


def image_key(image: Any) -> Hashable:
    """A key equal for inputs that are the same image. A PIL image is keyed by identity (the
    caller keeps it alive while the key is in use); a URL by its stripped text, as it is fetched."""
    if isinstance(image, Image.Image):
        return ("pil", id(image))
    if isinstance(image, (bytes, bytearray, memoryview)):
        return ("bytes", hashlib.sha256(bytes(image)).hexdigest())
    if isinstance(image, Path):
        return ("text", str(image))
    if isinstance(image, str):
        text = image.strip()
        return ("text", text if text.lower().startswith(("http://", "https://")) else image)
    return ("object", id(image))

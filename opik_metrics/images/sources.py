"""Images as metrics receive them (a local path, an http(s) URL, bytes or a PIL image) turned into
upright RGB PIL images; an image that cannot be read is an error naming the item and the image."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from PIL import Image

from opik_metrics.core import MetricInputError
from opik_metrics.images.fetch import ImageFetcher, normalise_image, decode_image, load_image

DEFAULT_MAX_PIXELS = 89_478_485   # PIL's own decompression-bomb limit


def _where(field: str, item: int | None) -> str:
    return f"item {item}, field {field!r}" if item is not None else f"field {field!r}"


def describe_image(image: Any) -> str:
    """A short, stable label for an image input (for errors and as a cache key's readable part)."""
    if isinstance(image, Image.Image):
        return f"<PIL image {image.mode} {image.width}x{image.height}>"
    if isinstance(image, (bytes, bytearray, memoryview)):
        return f"<{len(image)} bytes>"
    text = str(image)
    return text if len(text) <= 200 else text[:197] + "..."


_URL_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.-]+)://")     # a URL of another scheme (file://, ftp://)


def is_url(image: Any) -> bool:
    return isinstance(image, str) and image.strip().lower().startswith(("http://", "https://"))


def check_image_input(image: Any, field: str = "image", item: int | None = None) -> None:
    """Raise a MetricInputError when ``image`` is of no kind an image can be read from."""
    if isinstance(image, (Image.Image, bytes, bytearray, memoryview, Path)):
        return
    if isinstance(image, str) and image.strip():
        return
    kind = "an empty string" if isinstance(image, str) else ("None" if image is None else type(image).__name__)
    raise MetricInputError(f"{_where(field, item)}: expected an image (a local path, an http(s) URL, bytes or a "
                           f"PIL image), got {kind}")


def open_image(image: Any, *, field: str = "image", item: int | None = None, fetcher: ImageFetcher | None = None,
               max_pixels: int = DEFAULT_MAX_PIXELS, upright: bool = True) -> Image.Image:
    """One image input as an RGB PIL image (URLs fetched through ``fetcher``'s disk cache): upright
    (EXIF orientation applied, transparency flattened on white), or with ``upright=False`` only
    converted to RGB, as a model's own preprocessing may expect (CLIPScore's authors' code does)."""
    check_image_input(image, field, item)
    try:
        if isinstance(image, Image.Image):
            return normalise_image(image) if upright else image.convert("RGB")
        if isinstance(image, (bytes, bytearray, memoryview)):
            return decode_image(bytes(image), max_pixels, upright)
        if is_url(image):
            fetched = (fetcher or ImageFetcher()).fetch(image.strip())
            if fetched.path is None:
                raise ValueError(fetched.error)
            return load_image(fetched.path, max_pixels, upright)
        scheme = _URL_SCHEME.match(image) if isinstance(image, str) else None
        if scheme:
            raise ValueError(f"{scheme.group(1).lower()}:// URLs are not read; give an http(s) URL, a local "
                             "path, bytes or a PIL image")
        path = Path(image).expanduser()
        if not path.is_file():
            raise ValueError("no such file" if not path.exists() else "not a file")
        return load_image(path, max_pixels, upright)
    except (ValueError, OSError) as exc:
        raise MetricInputError(f"{_where(field, item)}: cannot read image {describe_image(image)}: {exc}") from None


def open_images(images: Sequence[Any], *, field: str = "image", fetcher: ImageFetcher | None = None,
                max_pixels: int = DEFAULT_MAX_PIXELS) -> list[Image.Image]:
    """Many image inputs; URLs are fetched in parallel first, then every image is opened in order."""
    for k, image in enumerate(images):
        check_image_input(image, field, k)
    urls = sorted({image.strip() for image in images if is_url(image)})
    if len(urls) > 1:
        fetcher = fetcher or ImageFetcher()
        fetcher.fetch_many(urls, progress=False)   # fills the disk cache; open_image reads from it
    return [open_image(image, field=field, item=k, fetcher=fetcher, max_pixels=max_pixels)
            for k, image in enumerate(images)]

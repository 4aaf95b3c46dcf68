"""The captioning task for the experiment runner: ``prepare`` fetches a chunk's images in
parallel and captions them in batches as they arrive (a batch is captioned while the next downloads); calling the task on one item returns its caption from
``generate_caption``, an Opik span with the image attached and the model and settings in metadata.
"""
from __future__ import annotations

import mimetypes
import time
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Sequence

from tqdm.auto import tqdm

from opik_metrics.experiments.spans import AttachmentFile, report_span, traced
from opik_metrics.experiments.tasks import ItemFailure

from opik_metrics.images import FetchedImage, ImageFetcher, load_image


class ItemFailedError(RuntimeError):
    """Raised by the task for an item that cannot be captioned (the reason is the message)."""


@dataclass(frozen=True)
class _Prepared:
    caption: str
    image: FetchedImage
    seconds: float          # this image's share of its batch's generation time
    batch: int              # images in that batch


class CaptionTask:
    """Captions ``item["image_url"]`` with ``captioner`` (a BlipCaptioner) via ``fetcher``."""

    def __init__(self, captioner: Any, fetcher: ImageFetcher, progress: bool = True) -> None:
        self.captioner = captioner
        self.fetcher = fetcher
        self.progress = progress
        self._ready: dict[str, _Prepared] = {}
        self._generate = traced("generate_caption")(self._generate_caption)

    def config(self) -> dict[str, Any]:
        """The experiment config: model and generation settings as the article logs them, plus
        ``runtime`` settings that may change when a run resumes."""
        described = self.captioner.describe()
        runtime = {k: described.pop(k) for k in ("device", "batch_size") if k in described}
        for package in ("transformers", "torch"):       # the config's "versions" has them
            described.pop(package, None)
        return {**described, "runtime": {**runtime, "fetch": self.fetcher.settings()}}

    # ---- batch work ---------------------------------------------------------------------

    def prepare(self, items: Sequence[dict]) -> dict[int, ItemFailure]:
        """Fetch and caption what ``items`` need; {index: failure} for those that cannot run."""
        failures: dict[int, ItemFailure] = {}
        wanted: dict[str, list[int]] = {}
        for k, item in enumerate(items):
            url = item.get("image_url")
            if item.get("row_problem"):
                failures[k] = ItemFailure("data", str(item["row_problem"]))
            elif not isinstance(url, str) or not url.strip():
                failures[k] = ItemFailure("data", f"item {k}: field 'image_url' missing or empty")
            elif url not in self._ready:
                wanted.setdefault(url, []).append(k)
        urls = list(wanted)
        caption_failures: dict[str, ItemFailure] = {}
        size = self.captioner.batch_size
        batch: list[FetchedImage] = []
        # images come in the order of the chunk while the fetcher's workers go on downloading, so
        # each batch is captioned while the next one arrives; batches are the same as fetching
        # everything first would give (the chunk's fetched images, in order, ``size`` at a time)
        fetched = self.fetcher.fetch_in_order(urls, progress=self.progress)
        with closing(fetched), tqdm(total=len(urls), desc="captioning", unit="image", disable=not self.progress,
                                    leave=False) as bar:
            for url, result in zip(urls, fetched):   # closed on any exit: its workers stop at once
                if result.ok:
                    batch.append(result)
                else:
                    failures.update({k: ItemFailure("fetch", result.error or "unknown error") for k in wanted[url]})
                    bar.update(1)
                if len(batch) == size:
                    caption_failures.update(self._caption_batch(batch))
                    bar.update(len(batch))
                    batch = []
            if batch:
                caption_failures.update(self._caption_batch(batch))
                bar.update(len(batch))
        for url, failure in caption_failures.items():
            failures.update({k: failure for k in wanted[url]})
        return failures

    def _caption_batch(self, batch: list[FetchedImage]) -> dict[str, ItemFailure]:
        """Caption one batch of fetched images; a failing batch is retried image by image."""
        failures: dict[str, ItemFailure] = {}
        loaded, usable = [], []
        for fetched in batch:
            try:
                loaded.append(load_image(fetched.path, self.fetcher.max_pixels))
                usable.append(fetched)
            except (OSError, ValueError) as exc:
                failures[fetched.url] = ItemFailure("fetch", f"cached image unreadable: {exc}")
        failures.update(self._generate_batch(usable, loaded))
        return failures

    def _generate_batch(self, fetched: list[FetchedImage], images: list[Any]) -> dict[str, ItemFailure]:
        if not images:
            return {}
        start = time.perf_counter()
        try:
            captions = self.captioner.caption(images)
        except Exception as exc:
            if len(images) == 1:
                return {fetched[0].url: ItemFailure("caption", f"{type(exc).__name__}: {exc}")}
            failures: dict[str, ItemFailure] = {}
            for one, image in zip(fetched, images):
                failures.update(self._generate_batch([one], [image]))
            return failures
        share = (time.perf_counter() - start) / len(images)
        for one, caption in zip(fetched, captions):
            self._ready[one.url] = _Prepared(caption, one, share, len(images))
        return {}

    # ---- per item -----------------------------------------------------------------------

    def _generate_caption(self, image_url: str) -> dict[str, str]:
        """The traced step: the caption for one image, with the image and the settings on the span."""
        ready = self._ready[image_url]
        image = ready.image
        extension = mimetypes.guess_extension(image.content_type or "") or ".img"
        report_span(
            metadata={**self.captioner.describe(), "image": image.describe(),
                      "generation_seconds": round(ready.seconds, 4), "generation_batch": ready.batch},
            attachments=[AttachmentFile(str(image.path), f"{image.path.stem[:16]}{extension}",
                                        image.content_type or "application/octet-stream")])
        return {"caption": ready.caption}

    def __call__(self, item: dict) -> dict[str, str]:
        """The task output for one item: ``{"output": caption, "image": cached image path}``; metrics
        read ``reference`` from the item, and CLIPScore the image already fetched (no second download)."""
        url = item.get("image_url")
        if url not in self._ready:
            failures = self.prepare([item])
            if failures:
                raise ItemFailedError(str(failures[0]))
        return {"output": self._generate(url)["caption"], "image": str(self._ready[url].image.path)}

"""Fetching overlaps captioning: a chunk's first batch is captioned while a later image is still
downloading, and the batches are the ones fetching everything first would give."""
from __future__ import annotations

import time

from opik_metrics.images import ImageFetcher
from opik_metrics.pipelines.captioning.task import CaptionTask
from tests.pipelines.caption_fixtures import GOOD, image_server, jpeg_bytes  # noqa: F401

LATE_SECONDS = 3.0


class RecordingCaptioner:
    """Captions anything "a caption", noting when each batch came and how many images it had."""

    batch_size = 2

    def __init__(self) -> None:
        self.calls: list[tuple[float, int]] = []

    def caption(self, images):
        self.calls.append((time.monotonic(), len(images)))
        return ["a caption"] * len(images)


def test_the_first_batch_is_captioned_while_a_later_image_downloads(tmp_path, image_server):  # noqa: F811
    image_server.routes["/img/late.jpg"] = (200, {"Content-Type": "image/jpeg"}, jpeg_bytes((9, 9, 9)), LATE_SECONDS)
    urls = [image_server.url(path) for path in list(GOOD)[:4]] + [image_server.url("/img/late.jpg"),
                                                                   image_server.url("/img/gone.jpg")]
    captioner = RecordingCaptioner()
    task = CaptionTask(captioner, ImageFetcher(tmp_path / "cache", workers=8, retries=0), progress=False)
    start = time.monotonic()
    failures = task.prepare([{"image_url": u} for u in urls])
    assert list(failures) == [5] and "410" in failures[5].reason          # the gone image, and nothing else
    assert [n for _, n in captioner.calls] == [2, 2, 1]                   # the batches of the fetched images, in order
    first, last = captioner.calls[0][0] - start, captioner.calls[-1][0] - start
    assert first < LATE_SECONDS - 1.0 <= last                             # captioning began before the late image came


def test_fetch_in_order_hands_each_result_once_in_the_order_given(tmp_path, image_server):  # noqa: F811
    urls = [image_server.url(path) for path in list(GOOD)[:3]]
    fetcher = ImageFetcher(tmp_path / "cache", workers=2, retries=0)
    got = list(fetcher.fetch_in_order([urls[1], urls[0], urls[1], urls[2]], progress=False))
    assert [g.url for g in got] == [urls[1], urls[0], urls[2]] and all(g.ok for g in got)
    assert [g.url for g in fetcher.fetch_many([urls[2], urls[2], urls[0]], progress=False)] == [urls[2], urls[2],
                                                                                               urls[0]]

"""Offline stand-ins for the captioning pipeline, as pytest fixtures: a tiny random BLIP and the
local image server come from ``opik_metrics.pipelines.captioning.offline`` (the notebooks use them too); the
routes here add what only tests need — a 404, a slow one, an HTML page, a fake and a truncated
JPEG, a flaky one, a redirect — and a TSV with dead links and malformed rows.
Import the fixtures into a test module: ``from tests.pipelines.caption_fixtures import ...``.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from opik_metrics.pipelines.captioning import offline
from opik_metrics.pipelines.captioning.offline import WORDS, ImageServer, Route, build_tiny_blip, jpeg_bytes  # noqa: F401

SLOW_SECONDS = 1.5          # the slow route answers after this; tests use a shorter timeout
FAST_GENERATION = {"max_length": 16, "min_length": 4, "num_beams": 2}


def png_with_alpha() -> bytes:
    image = Image.new("RGBA", (30, 30), (0, 0, 255, 0))
    image.paste((255, 0, 0, 255), (10, 10, 20, 20))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def _flaky(count: int) -> Route:
    if count == 1:
        return 503, {"Content-Type": "text/plain", "Retry-After": "0"}, b"busy", 0.0
    return 200, {"Content-Type": "image/jpeg"}, jpeg_bytes((200, 200, 0)), 0.0


GOOD = offline.SAMPLE_IMAGES  # path: (reference caption, colour); the images every caption test can fetch


def default_routes() -> dict[str, Any]:
    """Every route the caption tests use."""
    jpeg = {"Content-Type": "image/jpeg"}
    truncated = jpeg_bytes((90, 120, 30), size=(120, 90))
    routes: dict[str, Any] = offline.sample_routes(GOOD)
    routes.update({
        "/img/rotated.jpg": (200, jpeg, jpeg_bytes((20, 20, 120), size=(40, 20), orientation=6), 0.0),
        "/img/alpha.png": (200, {"Content-Type": "image/png"}, png_with_alpha(), 0.0),
        "/img/octet.jpg": (200, {"Content-Type": "application/octet-stream"}, jpeg_bytes((5, 99, 5)), 0.0),
        "/img/slow.jpg": (200, jpeg, jpeg_bytes((1, 2, 3)), SLOW_SECONDS),
        "/img/page.html": (200, {"Content-Type": "text/html; charset=utf-8"}, b"<html>moved</html>", 0.0),
        "/img/fake.jpg": (200, jpeg, b"this is plain text, not a JPEG at all", 0.0),
        "/img/truncated.jpg": (200, jpeg, truncated[: len(truncated) // 2], 0.0),
        "/img/huge.jpg": (200, jpeg, b"\xff\xd8" + b"\x00" * 300_000, 0.0),
        "/img/flaky.jpg": _flaky,
        "/img/gone.jpg": (410, {"Content-Type": "text/plain"}, b"gone", 0.0),
        "/img/redirect.jpg": (302, {"Location": "/img/red.jpg"}, b"", 0.0),
    })
    return routes


def caption_tsv_text(server: ImageServer) -> str:
    """A Conceptual Captions TSV over the server: good rows, dead links and malformed rows."""
    good = offline.caption_tsv_text(offline.sample_rows(server, GOOD))
    lines = [
        f"a missing picture\t{server.url('/img/missing.jpg')}",
        f"a slow picture\t{server.url('/img/slow.jpg')}",
        f"a web page\t{server.url('/img/page.html')}",
        f"a fake jpeg\t{server.url('/img/truncated.jpg').replace('truncated', 'fake')}",
        f"a truncated jpeg\t{server.url('/img/truncated.jpg')}",
        "only one column here",
        f"too\tmany\t{server.url('/img/red.jpg')}",
        "an ftp link\tftp://example.com/a.jpg",
        f"\t{server.url('/img/blue.jpg')}",
    ]
    return good + "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def tiny_blip(tmp_path_factory) -> Path:
    """A tiny random BLIP checkpoint folder (built once per session)."""
    return build_tiny_blip(tmp_path_factory.mktemp("tiny-blip"))


@pytest.fixture(scope="module")
def image_server():
    """The local image server, started for a module and stopped after it."""
    with ImageServer(default_routes()) as server:
        yield server


@pytest.fixture
def caption_tsv(tmp_path, image_server) -> Path:
    path = tmp_path / "captions.tsv"
    path.write_text(caption_tsv_text(image_server), encoding="utf-8")
    image_server.routes["/data/captions.tsv"] = (200, {"Content-Type": "text/tab-separated-values"},
                                                path.read_bytes(), 0.0)
    return path


@pytest.fixture
def one_thread():
    """One torch thread: tiny models run faster without OpenMP's overhead on shared cores."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

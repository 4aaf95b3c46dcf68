"""Offline stand-ins for the captioning pipeline: a tiny random BLIP saved with save_pretrained
(loaded through the real from_pretrained path), and images served by a local HTTP server on
127.0.0.1 — good ones, a 404, a slow one, an HTML page, a fake and a truncated JPEG, a flaky one.
Import the fixtures into a test module: ``from tests.pipelines.caption_fixtures import ...``.
"""
from __future__ import annotations

import io
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import pytest
from PIL import Image

SLOW_SECONDS = 1.5          # the slow route answers after this; tests use a shorter timeout
FAST_GENERATION = {"max_length": 16, "min_length": 4, "num_beams": 2}
WORDS = ("a an the dog cat man woman child on in of with at sitting standing running picture photo "
         "beach city street car red blue green white black house tree water sky field").split()


def build_tiny_blip(folder: Path, seed: int = 0) -> Path:
    """A 2-layer BLIP (hidden 32, 32x32 images) with a word-level WordPiece vocab; special tokens
    other than [SEP] are pushed down in the LM head so captions are words, not padding."""
    import torch
    from transformers import BertTokenizer, BlipConfig, BlipForConditionalGeneration, BlipImageProcessorPil, \
        BlipProcessor

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]"] + list(string.ascii_lowercase) + WORDS
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(folder / "vocab.txt"), bos_token="[DEC]", model_max_length=64)
    processor = BlipProcessor(image_processor=BlipImageProcessorPil(size={"height": 32, "width": 32}),
                              tokenizer=tokenizer)
    torch.manual_seed(seed)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  image_size=32, patch_size=8, projection_dim=32, initializer_range=0.5)
    text = dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, encoder_hidden_size=32, max_position_embeddings=64, projection_dim=32,
                bos_token_id=tokenizer.bos_token_id, pad_token_id=tokenizer.pad_token_id,
                sep_token_id=tokenizer.sep_token_id, eos_token_id=tokenizer.sep_token_id, initializer_range=0.2)
    model = BlipForConditionalGeneration(BlipConfig(text_config=text, vision_config=vision, projection_dim=32))
    with torch.no_grad():
        bias = model.text_decoder.cls.predictions.bias
        for token in ("[PAD]", "[UNK]", "[CLS]", "[MASK]", "[DEC]"):
            bias[tokenizer.convert_tokens_to_ids(token)] = -50.0
        bias[len(vocab) - len(WORDS):] += 3.0
    model.eval().save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def jpeg_bytes(color: tuple[int, int, int], size: tuple[int, int] = (48, 36), orientation: int | None = None) -> bytes:
    """A JPEG of a colour with a diagonal stripe (so orientation is visible); EXIF orientation optional."""
    image = Image.new("RGB", size, color)
    for k in range(min(size)):
        image.putpixel((k, k), (255 - color[0], 255 - color[1], 255 - color[2]))
    buffer = io.BytesIO()
    if orientation is None:
        image.save(buffer, "JPEG", quality=90)
    else:
        exif = Image.Exif()
        exif[0x0112] = orientation
        image.save(buffer, "JPEG", quality=90, exif=exif.tobytes())
    return buffer.getvalue()


def png_with_alpha() -> bytes:
    image = Image.new("RGBA", (30, 30), (0, 0, 255, 0))
    image.paste((255, 0, 0, 255), (10, 10, 20, 20))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


Route = tuple[int, dict, bytes, float]


class ImageServer:
    """A threaded HTTP server on 127.0.0.1 with fixed routes; it counts hits per path and stops
    itself after ``lifetime_s`` or ``max_requests`` whatever happens to the test."""

    def __init__(self, lifetime_s: float = 300.0, max_requests: int = 2000) -> None:
        self.routes: dict[str, Route | Callable[[int], Route]] = {}
        self.hits: dict[str, int] = {}
        self.max_requests = max_requests
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                with server._lock:
                    count = server.hits[self.path] = server.hits.get(self.path, 0) + 1
                    total = sum(server.hits.values())
                if total > server.max_requests:
                    threading.Thread(target=server.stop, daemon=True).start()
                route = server.routes.get(self.path, (404, {"Content-Type": "text/plain"}, b"not found", 0.0))
                status, headers, body, delay = route(count) if callable(route) else route
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    for key, value in {"Content-Length": str(len(body)), **headers}.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the slow route)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._watchdog = threading.Timer(lifetime_s, self.stop)
        self._watchdog.daemon = True
        self._stopped = False

    @property
    def base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def start(self) -> "ImageServer":
        self._thread.start()
        self._watchdog.start()
        return self

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._watchdog.cancel()
        self._httpd.shutdown()
        self._httpd.server_close()


def _flaky(count: int) -> Route:
    if count == 1:
        return 503, {"Content-Type": "text/plain", "Retry-After": "0"}, b"busy", 0.0
    return 200, {"Content-Type": "image/jpeg"}, jpeg_bytes((200, 200, 0)), 0.0


GOOD = {  # path: (reference caption, colour)
    "/img/red.jpg": ("a red car on the street", (200, 20, 20)),
    "/img/green.jpg": ("a green field with a tree", (20, 180, 40)),
    "/img/blue.jpg": ("the blue sky over the water", (30, 60, 220)),
    "/img/white.jpg": ("a white house in the city", (240, 240, 240)),
    "/img/black.jpg": ("a black cat sitting on a car", (10, 10, 10)),
}


def default_routes() -> dict[str, Any]:
    """Every route the caption tests use."""
    jpeg = {"Content-Type": "image/jpeg"}
    truncated = jpeg_bytes((90, 120, 30), size=(120, 90))
    routes: dict[str, Any] = {path: (200, jpeg, jpeg_bytes(color), 0.0) for path, (_, color) in GOOD.items()}
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
    lines = [f"{caption}\t{server.url(path)}" for path, (caption, _) in GOOD.items()]
    lines += [
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
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def tiny_blip(tmp_path_factory) -> Path:
    """A tiny random BLIP checkpoint folder (built once per session)."""
    return build_tiny_blip(tmp_path_factory.mktemp("tiny-blip"))


@pytest.fixture(scope="module")
def image_server():
    """The local image server, started for a module and stopped after it."""
    server = ImageServer()
    server.routes.update(default_routes())
    server.start()
    try:
        yield server
    finally:
        server.stop()


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

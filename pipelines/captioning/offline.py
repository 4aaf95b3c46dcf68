"""Run the captioning pipeline with no network: a tiny random BLIP built from a config (saved
with ``save_pretrained``, so it loads through the real ``from_pretrained`` path), a small HTTP
server on 127.0.0.1 serving generated JPEGs, and a Conceptual Captions TSV pointing at them.

The captions of a random BLIP are word salad; the point is that every step runs (fetching,
batched beam search, scoring, the store). The notebooks and the tests use these pieces::

    folder = build_tiny_blip(tmp / "tiny-blip")
    with ImageServer(sample_routes()) as server:
        tsv = write_caption_tsv(tmp / "captions.tsv", sample_rows(server))
        run_captioning(experiment="tiny", tsv=str(tsv), model=str(folder), store=tmp / "store.sqlite")
"""
from __future__ import annotations

import io
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from PIL import Image

# Words of the tiny BLIP's vocabulary (after the special tokens and the 26 letters).
WORDS = ("a an the dog cat man woman child on in of with at sitting standing running picture photo "
         "beach city street car red blue green white black house tree water sky field").split()

# Generated images: URL path -> (reference caption, colour of the picture).
SAMPLE_IMAGES: Mapping[str, tuple[str, tuple[int, int, int]]] = {
    "/img/red.jpg": ("a red car on the street", (200, 20, 20)),
    "/img/green.jpg": ("a green field with a tree", (20, 180, 40)),
    "/img/blue.jpg": ("the blue sky over the water", (30, 60, 220)),
    "/img/white.jpg": ("a white house in the city", (240, 240, 240)),
    "/img/black.jpg": ("a black cat sitting on a car", (10, 10, 10)),
}

# A route's answer: (HTTP status, headers, body, seconds to wait first), or a function of the
# how-many-th request this is to that path (1, 2, ...) returning one.
Route = tuple[int, dict, bytes, float]


def build_tiny_blip(folder: str | Path, seed: int = 0) -> Path:
    """A 2-layer BLIP (hidden size 32, 32x32 images) with a word-level WordPiece vocabulary,
    saved in ``folder`` with its processor. Special tokens other than [SEP] are pushed down in
    the LM head, so captions are words (random ones), not padding. Builds in about a second."""
    import torch
    from transformers import (BertTokenizer, BlipConfig, BlipForConditionalGeneration, BlipImageProcessorPil,
                              BlipProcessor)

    folder = Path(folder)
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


def jpeg_bytes(color: tuple[int, int, int], size: tuple[int, int] = (48, 36),
               orientation: int | None = None) -> bytes:
    """A JPEG of one colour with a diagonal stripe in the opposite colour (so a rotation is
    visible); ``orientation`` writes that EXIF orientation tag."""
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


class ImageServer:
    """A threaded HTTP server on 127.0.0.1 (a free port) answering fixed ``routes``; unknown
    paths get a 404. It counts requests per path in ``hits`` and stops itself after
    ``lifetime_s`` seconds (None: never) or ``max_requests`` requests, so a forgotten server
    does not outlive its use. ``start()``/``stop()``, or use it as a context manager."""

    def __init__(self, routes: Mapping[str, Route | Callable[[int], Route]] | None = None,
                 lifetime_s: float | None = 300.0, max_requests: int = 2000) -> None:
        self.routes: dict[str, Route | Callable[[int], Route]] = dict(routes or {})
        self.hits: dict[str, int] = {}
        self.max_requests = max_requests
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._watchdog: threading.Timer | None = None
        if lifetime_s is not None:
            self._watchdog = threading.Timer(lifetime_s, self.stop)
            self._watchdog.daemon = True
        self._stopped = False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
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
                    pass  # the client gave up (a timeout on a slow route)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    @property
    def base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def start(self) -> "ImageServer":
        self._thread.start()
        if self._watchdog is not None:
            self._watchdog.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port (again: nothing happens)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "ImageServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def sample_routes(images: Mapping[str, tuple[str, tuple[int, int, int]]] = SAMPLE_IMAGES,
                  size: tuple[int, int] = (48, 36)) -> dict[str, Route]:
    """A route serving a generated JPEG for each path of ``images``."""
    jpeg = {"Content-Type": "image/jpeg"}
    return {path: (200, jpeg, jpeg_bytes(color, size=size), 0.0) for path, (_, color) in images.items()}


def sample_rows(server: ImageServer,
                images: Mapping[str, tuple[str, tuple[int, int, int]]] = SAMPLE_IMAGES) -> list[tuple[str, str]]:
    """(reference caption, image URL on ``server``) for each of ``images``."""
    return [(caption, server.url(path)) for path, (caption, _) in images.items()]


def caption_tsv_text(rows: Iterable[tuple[str, str]]) -> str:
    """Conceptual Captions' TSV form of (caption, url) rows: ``caption<TAB>url`` lines, no header."""
    lines = []
    for k, (caption, url) in enumerate(rows):
        if any(ch in text for text in (caption, url) for ch in "\t\r\n"):
            raise ValueError(f"row {k}: a caption or URL cannot hold a tab or a line break in a TSV: "
                             f"{caption!r}, {url!r}")
        lines.append(f"{caption}\t{url}")
    return "".join(line + "\n" for line in lines)


def write_caption_tsv(path: str | Path, rows: Iterable[tuple[str, str]]) -> Path:
    """Write (caption, url) rows as a Conceptual Captions TSV at ``path``; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(caption_tsv_text(rows), encoding="utf-8")
    return path

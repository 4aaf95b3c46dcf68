"""Fetch images by URL robustly: timeouts (a total deadline per URL, enforced while bytes
trickle in), retries with backoff on transient errors, a size limit, content checks, full PIL
decoding, a disk cache keyed by URL and parallel fetches. A failure is a result with its reason,
never an exception, except one: a cache folder that cannot be created or written raises
``ImageCacheError`` once, on first use, before any download. Only failures that are permanent
for the content are cached (HTTP 404/410, not an image, too large for the limit it was fetched
with, with that limit); transient ones (DNS, connection errors, timeouts, 5xx) are fetched again
next time.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import queue
import socket
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from PIL import Image, ImageOps, UnidentifiedImageError
from tqdm.auto import tqdm

from opik_metrics.images.deadline_http import deadline as request_deadline, deadline_session, response_socket

CACHE_ENV = "OPIK_METRICS_IMAGE_CACHE"
TRANSIENT_STATUS = {408, 425, 429, 500, 502, 503, 504}
CACHED_STATUS = {404, 410}      # HTTP answers that say the content is gone: cached as failures
# Not retried within one fetch (retrying at once will not help), but not cached either: a DNS
# hiccup or a certificate being renewed must not mark a URL dead for every later run.
_NOT_RETRIED_REASONS = {"host not found", "TLS error", "too many redirects"}
_CHUNK = 64 * 1024
USER_AGENT = "opik-metrics-captioning/0.1 (+https://github.com/comet-ml/opik)"


def default_cache_dir() -> Path:
    """``$OPIK_METRICS_IMAGE_CACHE``, else ``$XDG_CACHE_HOME/opik-metrics/images``."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "").strip() or "~/.cache").expanduser() / "opik-metrics" / "images"


class ImageCacheError(ValueError):
    """The image cache folder cannot be created or written: no fetch could keep its image, so the
    run stops at once with this one message instead of recording every item as failed. A
    ``ValueError``, so the CLI prints it as one line (exit status 2)."""

    def __init__(self, folder: Path, cause: str) -> None:
        super().__init__(f"cannot use the image cache folder {folder}: {cause}; choose another with "
                         f"--cache-dir or ${CACHE_ENV}")
        self.folder = folder
        self.cause = cause


def _describe_os_error(exc: OSError, folder: Path) -> str:
    """``exc`` in words, naming the path it is about when that is not ``folder`` itself."""
    cause = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename and Path(os.fsdecode(exc.filename)) != folder:
        cause += f" ({os.fsdecode(exc.filename)})"
    return cause


@dataclass(frozen=True)
class FetchedImage:
    """The outcome for one URL: ``path`` to the verified bytes, or ``error`` with the reason."""

    url: str
    path: Path | None = None
    error: str | None = None
    content_type: str | None = None
    width: int | None = None
    height: int | None = None
    size_bytes: int | None = None
    from_cache: bool = False
    attempts: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.path is not None

    def describe(self) -> dict[str, Any]:
        """Facts for span metadata."""
        return {"url": self.url, "content_type": self.content_type, "width": self.width, "height": self.height,
                "bytes": self.size_bytes, "from_cache": self.from_cache, "attempts": self.attempts,
                "fetch_seconds": round(self.seconds, 4)}


class _Permanent(Exception):
    """A failure that retrying now cannot fix (HTTP 404, not an image, too large, host not found).

    ``settings`` is None when the failure must not be cached (it may pass later: DNS, TLS, HTTP
    403); otherwise the fetch settings it depends on ({} for none): it is cached with them and
    applies to a later fetch only while each of those settings is not larger.
    """

    attempts: int

    def __init__(self, reason: str, settings: dict[str, int] | None = None) -> None:
        super().__init__(reason)
        self.settings = settings


class _Transient(Exception):
    """A failure worth retrying (timeout, connection reset, HTTP 503); ``retry_after`` seconds
    from the server; ``final`` when no retry may follow (the total deadline passed)."""

    attempts: int

    def __init__(self, reason: str, retry_after: float | None = None, final: bool = False) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.final = final


def check_url(url: Any) -> str | None:
    """Why ``url`` cannot be fetched, or None when it looks fetchable."""
    if not isinstance(url, str) or not url.strip():
        return "invalid URL: empty"
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        return f"invalid URL {url!r}: {exc}"
    if parts.scheme.lower() not in ("http", "https"):
        return f"invalid URL {url!r}: scheme must be http or https"
    if not parts.hostname:
        return f"invalid URL {url!r}: no host"
    return None


def normalise_image(image: Image.Image) -> Image.Image:
    """An upright RGB copy of ``image``: EXIF orientation applied, transparency flattened on white."""
    image = ImageOps.exif_transpose(image)
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")


def decode_image(data: bytes, max_pixels: int, upright: bool = True) -> Image.Image:
    """Bytes to an RGB image, fully decoded: upright (EXIF orientation applied, transparency on
    white), or with ``upright=False`` only converted to RGB (what CLIP's own preprocessing does).

    Raises ValueError with the reason for bytes that are not a complete, sane image.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                probe.verify()
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > max_pixels:
                raise ValueError(f"image too large: {image.width}x{image.height} pixels (limit {max_pixels})")
            image.load()
            return normalise_image(image) if upright else image.convert("RGB")
    except UnidentifiedImageError:
        raise ValueError("not an image (PIL cannot identify the content)") from None
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise ValueError(f"image too large: {exc}") from None
    except (OSError, SyntaxError, EOFError) as exc:
        raise ValueError(f"corrupt or truncated image: {exc}") from None


def load_image(path: str | Path, max_pixels: int = 89_478_485, upright: bool = True) -> Image.Image:
    """A cached image file as an RGB PIL image (upright unless ``upright=False``: see ``decode_image``)."""
    return decode_image(Path(path).read_bytes(), max_pixels, upright)


class ImageFetcher:
    """Fetches images into a disk cache; ``fetch_many`` runs ``workers`` downloads at once.

    ``timeout`` is (connect, read) seconds per attempt; ``total_timeout`` bounds the whole fetch
    of one URL, retries and waits included, and holds while a server trickles bytes (the socket
    never waits past it). ``retries`` more attempts follow a transient failure, after
    ``backoff * 2**attempt`` seconds (or the server's Retry-After), capped by ``max_backoff``.
    ``fetch_many`` stops at the first Ctrl-C: its worker threads are daemons and give up their
    downloads; what is already in the cache stays.

    The cache folder is checked twice, and ``ImageCacheError`` names it, the cause and how to
    choose another. At construction, cheaply and without changing anything on disk (a ``stat`` of
    the folder or its nearest existing parent and an ``access`` check; nothing is created): the
    CLI builds its fetcher before the run, so an unusable folder (under a file, on read-only
    storage, not ours) stops the command with one line instead of failing every item, which
    the experiment runner would record per item. On first use (``fetch``/``fetch_many``), for
    real: the folder is created and a file written and removed, which catches what ``access``
    cannot see (root on a chmod'ed folder is fine, a full disk or ACLs are not); that raises
    once, before any download.
    """

    def __init__(self, cache_dir: str | Path | None = None, *, timeout: float | tuple[float, float] = (5.0, 15.0),
                 total_timeout: float = 60.0, retries: int = 2, backoff: float = 0.5, max_backoff: float = 10.0,
                 max_bytes: int = 20 * 2**20, max_pixels: int = 89_478_485, workers: int = 8,
                 cache_failures: bool = True, sleep: Callable[[float], None] = time.sleep) -> None:
        if retries < 0 or workers < 1 or max_bytes < 1:
            raise ValueError("retries must be >= 0, workers >= 1 and max_bytes >= 1")
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self.timeout = timeout
        self.total_timeout = total_timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self.workers = workers
        self.cache_failures = cache_failures
        self._sleep = sleep
        self._local = threading.local()
        self._cache_lock = threading.Lock()
        self._cache_ready = False
        self._precheck_cache()

    def settings(self) -> dict[str, Any]:
        """The fetch settings, for the experiment config."""
        return {"timeout": self.timeout, "total_timeout": self.total_timeout, "retries": self.retries, "backoff": self.backoff,
                "max_bytes": self.max_bytes, "max_pixels": self.max_pixels, "workers": self.workers}

    # ---- cache --------------------------------------------------------------------------

    def _precheck_cache(self) -> None:
        """The cheap check at construction: the folder, or the nearest parent that exists (where
        it would be created), is a folder we may write into. Creates nothing, writes nothing."""
        folder = self.cache_dir
        try:
            existing = folder
            while not os.path.lexists(existing) and existing.parent != existing:
                existing = existing.parent
            if existing == folder and not folder.is_dir():
                raise ImageCacheError(folder, "it exists and is not a folder")
            if not existing.is_dir():
                raise ImageCacheError(folder, f"Not a directory ({existing} is a file)")
            if not os.access(existing, os.W_OK | os.X_OK):
                why = "Read-only file system" if _read_only_mount(existing) else "Permission denied"
                where = "" if existing == folder else f" ({existing})"
                raise ImageCacheError(folder, f"{why}{where}")
        except OSError as exc:
            raise ImageCacheError(folder, _describe_os_error(exc, folder)) from exc

    def check_cache(self) -> None:
        """Make sure the cache folder exists and takes files; raise ``ImageCacheError`` naming the
        folder and the cause when it does not. Checked once per fetcher when it succeeds (a failure
        is checked again at the next use: the folder may have been fixed meanwhile)."""
        if self._cache_ready:
            return
        with self._cache_lock:
            if self._cache_ready:
                return
            folder = self.cache_dir
            try:
                if folder.exists() and not folder.is_dir():
                    raise ImageCacheError(folder, "it exists and is not a folder")
                folder.mkdir(parents=True, exist_ok=True)
                fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
                try:
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(b"ok")
                finally:
                    Path(probe).unlink(missing_ok=True)
            except OSError as exc:
                raise ImageCacheError(folder, _describe_os_error(exc, folder)) from exc
            self._cache_ready = True

    def _paths(self, url: str) -> tuple[Path, Path, Path]:
        key = hashlib.sha256(url.encode("utf-8")).hexdigest()
        folder = self.cache_dir / key[:2]
        return folder / f"{key}.img", folder / f"{key}.json", folder / f"{key}.failed.json"

    @staticmethod
    def _write_atomic(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _from_cache(self, url: str) -> FetchedImage | None:
        data_path, meta_path, failed_path = self._paths(url)
        try:
            if data_path.is_file() and meta_path.is_file():
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                size = data_path.stat().st_size
                width, height = meta.get("width"), meta.get("height")
                # the limits apply to a cached image as to a download
                if size > self.max_bytes:
                    return FetchedImage(url, error=f"too large: {size} bytes (limit {self.max_bytes})",
                                        size_bytes=size, from_cache=True)
                if isinstance(width, int) and isinstance(height, int) and width * height > self.max_pixels:
                    return FetchedImage(url, error=f"image too large: {width}x{height} pixels "
                                                   f"(limit {self.max_pixels})", from_cache=True)
                return FetchedImage(url, data_path, None, meta.get("content_type"), width, height, size,
                                    from_cache=True)
            if self.cache_failures and failed_path.is_file():
                meta = json.loads(failed_path.read_text(encoding="utf-8"))
                if self._failure_applies(meta):
                    return FetchedImage(url, None, f"{meta['reason']} (cached failure from {meta['at']})",
                                        from_cache=True)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # unreadable cache entry: fetch again
        return None

    def _failure_applies(self, record: dict) -> bool:
        """Whether a cached failure holds under the current settings: it names the settings it
        was seen with, and holds while none of them is larger now (a larger ``max_bytes`` may
        fetch what a smaller one refused). An entry without settings (the format before them)
        is of unknown cause: it does not hold, the URL is fetched again."""
        settings = record.get("settings")
        if not isinstance(settings, dict):
            return False
        for name, limit in settings.items():
            current = getattr(self, name, None)
            if not isinstance(limit, (int, float)) or not isinstance(current, (int, float)) or current > limit:
                return False
        return True

    # ---- download -----------------------------------------------------------------------

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = deadline_session()
            session.headers["User-Agent"] = USER_AGENT
        return session

    def _timeouts(self) -> tuple[float, float]:
        """(connect, read) seconds; None (no limit) as infinity: the total deadline still holds."""
        pair = tuple(self.timeout) if isinstance(self.timeout, (tuple, list)) else (self.timeout, self.timeout)
        return tuple(float("inf") if t is None else float(t) for t in pair)  # type: ignore[return-value]

    def _deadline_reason(self) -> str:
        return f"timed out: no complete answer within the total deadline of {self.total_timeout:g} s"

    def _download(self, url: str, deadline: float) -> tuple[bytes, str | None]:
        connect, read = self._timeouts()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Transient(self._deadline_reason(), final=True)
        try:
            with request_deadline(deadline):   # the head of the answer too, however slowly it comes
                response = self._session().get(url, stream=True, timeout=(min(connect, remaining), min(read, remaining)))
        except (requests.Timeout, requests.ConnectionError) as exc:
            if time.monotonic() >= deadline:
                raise _Transient(self._deadline_reason(), final=True) from None
            reason = _describe_request_error(exc)
            raise (_Permanent if reason in _NOT_RETRIED_REASONS else _Transient)(reason) from None
        except requests.RequestException as exc:
            raise _Permanent(_describe_request_error(exc)) from None
        with response:
            if response.status_code in TRANSIENT_STATUS:
                raise _Transient(f"HTTP {response.status_code} {response.reason}", _retry_after(response))
            if response.status_code != 200:
                raise _Permanent(f"HTTP {response.status_code} {response.reason}".strip(),
                                 {} if response.status_code in CACHED_STATUS else None)
            content_type = (response.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if content_type and not content_type.startswith("image/") and content_type not in (
                    "application/octet-stream", "binary/octet-stream"):
                raise _Permanent(f"not an image: the server sent Content-Type {content_type}", {})
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise _Permanent(f"too large: {int(declared)} bytes (limit {self.max_bytes})",
                                 {"max_bytes": self.max_bytes})
            return self._read_body(response, deadline, read), content_type or None

    def _read_body(self, response: requests.Response, deadline: float, read_timeout: float) -> bytes:
        """The body, read as it arrives (``read1``: whatever bytes are there, one socket read at a
        time) so that the deadline is checked between reads however slowly bytes trickle in, and
        the socket itself never waits past the deadline."""
        raw = response.raw
        sock = response_socket(raw)
        before = sock.gettimeout() if sock is not None else None
        cancel = getattr(self._local, "cancel", None)
        body = bytearray()
        try:
            while True:
                if cancel is not None and cancel.is_set():
                    raise _Transient("cancelled", final=True)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Transient(self._deadline_reason(), final=True)
                if sock is not None:
                    try:
                        sock.settimeout(max(0.001, min(read_timeout, remaining)))
                    except OSError:
                        sock = None   # closed at the end of the body: the next read returns b""
                chunk = raw.read1(_CHUNK, decode_content=True)
                if not chunk:
                    return bytes(body)
                body.extend(chunk)
                if len(body) > self.max_bytes:
                    raise _Permanent(f"too large: more than {self.max_bytes} bytes", {"max_bytes": self.max_bytes})
        except (urllib3.exceptions.ReadTimeoutError, socket.timeout):
            if time.monotonic() >= deadline - 0.005:
                raise _Transient(self._deadline_reason(), final=True) from None
            raise _Transient("timed out waiting for the server") from None
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
            raise _Transient(f"download broke off: {exc}") from None
        finally:
            if sock is not None:
                try:
                    sock.settimeout(before)   # a connection back in the pool keeps its own timeout
                except OSError:
                    pass

    def _attempts(self, url: str, deadline: float) -> tuple[bytes, int]:
        """The body after up to 1 + retries attempts, all before ``deadline``; the last failure's
        reason otherwise (``attempts`` on the exception says how many were made)."""
        cancel = getattr(self._local, "cancel", None)
        for attempt in range(self.retries + 1):
            try:
                body, _ = self._download(url, deadline)
                return body, attempt + 1
            except (_Transient, _Permanent) as exc:
                exc.attempts = attempt + 1
                if isinstance(exc, _Permanent):
                    raise
                remaining = deadline - time.monotonic()
                last = attempt == self.retries or exc.final or remaining <= 0 or (cancel is not None and cancel.is_set())
                if last:
                    tries = f"{attempt + 1} attempt" + ("s" if attempt else "")
                    final = _Transient(f"{exc.args[0]} (after {tries})", final=True)
                    final.attempts = attempt + 1
                    raise final from None
                delay = exc.retry_after if exc.retry_after is not None else self.backoff * 2 ** attempt
                self._sleep(max(0.0, min(delay, self.max_backoff, remaining)))
        raise AssertionError("unreachable")

    def fetch(self, url: str) -> FetchedImage:
        """One URL: from the cache, or downloaded, verified and cached."""
        start = time.perf_counter()
        problem = check_url(url)
        if problem:
            return FetchedImage(str(url), error=problem)
        url = url.strip()
        self.check_cache()
        cached = self._from_cache(url)
        if cached is not None:
            return cached
        attempts = 0
        deadline = time.monotonic() + self.total_timeout
        try:
            body, attempts = self._attempts(url, deadline)
            image = decode_image(body, self.max_pixels)
        except _Transient as exc:  # not cached: may work next time
            return FetchedImage(url, error=exc.args[0], attempts=getattr(exc, "attempts", self.retries + 1),
                                seconds=time.perf_counter() - start)
        except _Permanent as exc:
            if exc.settings is not None:
                self._remember_failure(url, str(exc.args[0]), exc.settings)
            return FetchedImage(url, error=str(exc.args[0]), attempts=getattr(exc, "attempts", 1),
                                seconds=time.perf_counter() - start)
        except ValueError as exc:  # the bytes arrived whole but are no usable image
            reason = str(exc.args[0])
            self._remember_failure(url, reason, {"max_pixels": self.max_pixels} if "too large" in reason else {})
            return FetchedImage(url, error=reason, attempts=attempts or 1, seconds=time.perf_counter() - start)
        with Image.open(io.BytesIO(body)) as probe:
            content_type = probe.get_format_mimetype() or "application/octet-stream"
        data_path, meta_path, failed_path = self._paths(url)
        try:
            self._write_atomic(data_path, body)
            meta = {"url": url, "content_type": content_type, "width": image.width, "height": image.height,
                    "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            self._write_atomic(meta_path, json.dumps(meta).encode("utf-8"))
            failed_path.unlink(missing_ok=True)
        except OSError as exc:
            return FetchedImage(url, error=f"cannot write the image cache {self.cache_dir}: {exc}",
                                attempts=attempts, seconds=time.perf_counter() - start)
        return FetchedImage(url, data_path, None, content_type, image.width, image.height, len(body),
                            from_cache=False, attempts=attempts, seconds=time.perf_counter() - start)

    def _remember_failure(self, url: str, reason: str, settings: dict[str, int]) -> None:
        """Cache a failure that is permanent for the content, with the ``settings`` it depends on."""
        if not self.cache_failures:
            return
        _, _, failed_path = self._paths(url)
        record = {"url": url, "reason": reason, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  "settings": settings}
        try:
            self._write_atomic(failed_path, json.dumps(record).encode("utf-8"))
        except OSError:
            pass  # the failure is still reported; only the cache entry is lost

    def fetch_many(self, urls: Sequence[str], progress: bool = True) -> list[FetchedImage]:
        """Every URL (each distinct one fetched once), in order; ``workers`` at a time."""
        distinct = list(dict.fromkeys(str(u) for u in urls))
        results = dict(zip(distinct, self.fetch_in_order(distinct, progress=progress)))
        return [results[str(u)] for u in urls]

    def fetch_in_order(self, urls: Sequence[str], progress: bool = True) -> Iterator[FetchedImage]:
        """Each distinct URL's result, in the order given, as soon as it and those before it are
        done: the workers go on fetching while the caller works on what it was handed (captions
        one batch while the next batch downloads).

        The workers are daemon threads: Ctrl-C (KeyboardInterrupt) propagates at once, they take
        no new URL and give up the download in hand, and they never keep the process alive; a
        caller that stops early (the iterator closed) stops them the same way.
        """
        distinct = list(dict.fromkeys(str(u) for u in urls))
        results: dict[str, FetchedImage] = {}
        if not distinct:
            return
        if any(check_url(url) is None for url in distinct):
            self.check_cache()     # raised here, once, before any worker starts a download
        todo: queue.SimpleQueue[str] = queue.SimpleQueue()
        for url in distinct:
            todo.put(url)
        done: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        cancel = threading.Event()

        def work() -> None:
            self._local.cancel = cancel
            while not cancel.is_set():
                try:
                    url = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put((url, self.fetch(url)))
                except BaseException as exc:  # a bug, not a fetch failure: raised in the caller
                    done.put((url, exc))

        for k in range(min(self.workers, len(distinct))):
            threading.Thread(target=work, name=f"opik-metrics-fetch-{k}", daemon=True).start()
        handed = 0
        try:
            with tqdm(total=len(distinct), desc="fetching images", unit="image", disable=not progress,
                      leave=False) as bar:
                while handed < len(distinct):
                    try:
                        url, outcome = done.get(timeout=0.2)   # a short wait keeps Ctrl-C prompt
                    except queue.Empty:
                        continue
                    if isinstance(outcome, BaseException):
                        raise outcome
                    results[url] = outcome
                    bar.update(1)
                    while handed < len(distinct) and distinct[handed] in results:
                        yield results.pop(distinct[handed])
                        handed += 1
        finally:
            cancel.set()


def _read_only_mount(path: Path) -> bool:
    """Whether ``path`` lies on a file system mounted read-only (False when that cannot be told)."""
    try:
        return bool(os.statvfs(path).f_flag & getattr(os, "ST_RDONLY", 1))
    except (AttributeError, OSError):
        return False


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.strip().isdigit() else None


def _describe_request_error(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.ConnectTimeout):
        return "timed out connecting"
    if isinstance(exc, requests.ReadTimeout):
        return "timed out waiting for the server"
    if isinstance(exc, requests.TooManyRedirects):
        return "too many redirects"
    if isinstance(exc, requests.ConnectionError) and ("timed out" in str(exc).lower() or "timeout" in str(exc).lower()):
        return "timed out waiting for the server"      # a read or TLS handshake timeout, wrapped
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS error"
    if isinstance(exc, requests.ConnectionError):
        text = str(exc).lower()
        if "name or service not known" in text or "nodename nor servname" in text or "getaddrinfo" in text:
            return "host not found"
        if "refused" in text:
            return "connection refused"
        return "connection failed"
    return f"{type(exc).__name__}: {exc}"

"""Image fetching under injected faults, all served from 127.0.0.1: a server that trickles bytes
or stalls (the total deadline holds), Ctrl-C during ``fetch_many`` (stops at once, what is cached
stays), and a failure cache that remembers only what is permanent for the content, under the
settings that caused it."""
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from opik_metrics.images import ImageFetcher
from opik_metrics.pipelines.captioning.offline import ImageServer, jpeg_bytes

JPEG = {"Content-Type": "image/jpeg"}
RED = jpeg_bytes((200, 20, 20))


class _Trickle(BaseHTTPRequestHandler):
    """``/drip``: headers, then one byte every half second; ``/stall``: headers and a few bytes,
    then nothing; ``/drip-head``: the status line and headers one byte every 0.2 s. Each stops
    when the client goes away (or after 30 s)."""

    def do_GET(self):  # noqa: N802
        if self.path == "/drip-head":
            head = b"HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\n" + b"X-Pad: " + b"x" * 200 + b"\r\n\r\n"
            try:
                for byte in head:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    if self.server.stop.wait(0.2):
                        return
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("Content-Type", "image/jpeg")
        self.send_header("Content-Length", str(len(RED)))
        self.end_headers()
        try:
            if self.path == "/stall":
                self.wfile.write(RED[:10])
                self.wfile.flush()
                self.server.stop.wait(30)
                return
            for byte in RED[:60]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                if self.server.stop.wait(0.5):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def trickle_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    httpd.daemon_threads = True
    httpd.stop = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.stop.set()
    httpd.shutdown()
    httpd.server_close()


def _fetch_within(fetcher, url, limit_s):
    """fetcher.fetch(url) in a thread: (result, seconds), or a failure after ``limit_s`` (a hang)."""
    box = {}

    def run():
        start = time.monotonic()
        box["result"] = fetcher.fetch(url)
        box["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"fetch of {url} still running after {limit_s} s"
    return box["result"], box["seconds"]


@pytest.mark.parametrize("path", ["/drip", "/stall", "/drip-head"])
def test_total_deadline_holds_while_bytes_trickle_or_stall(tmp_path, trickle_server, path):
    total = 1.2
    fetcher = ImageFetcher(tmp_path / "cache", timeout=(0.5, 5.0), total_timeout=total, retries=2, backoff=0.01)
    result, seconds = _fetch_within(fetcher, trickle_server + path, total + 3)
    assert not result.ok
    assert result.error.startswith("timed out:") and "total deadline of 1.2 s" in result.error, result.error
    assert total - 0.1 <= seconds <= total + 0.5                  # the deadline, plus a small margin
    assert not list(fetcher.cache_dir.rglob("*.failed.json"))       # a timeout is never cached


def test_ctrl_c_stops_fetch_many_at_once_and_keeps_the_cache(tmp_path):
    routes = {"/good.jpg": (200, JPEG, RED, 0.0)}
    routes.update({f"/slow{k}.jpg": (200, JPEG, RED, 20.0) for k in range(6)})
    script = textwrap.dedent("""
        import sys, time
        from opik_metrics.images import ImageFetcher
        fetcher = ImageFetcher(sys.argv[1], timeout=(1.0, 30.0), total_timeout=60, retries=0, workers=2)
        urls = sys.argv[2:]
        fetcher.fetch(urls[0])                    # cached before the interrupt
        print("ready", flush=True)
        try:
            fetcher.fetch_many(urls, progress=False)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
        print("finished", flush=True)
    """)
    with ImageServer(routes, lifetime_s=60) as server:
        urls = [server.url("/good.jpg")] + [server.url(f"/slow{k}.jpg") for k in range(6)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "cache"), *urls],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 10
            while sum(server.hits.get(f"/slow{k}.jpg", 0) for k in range(6)) < 2 and time.monotonic() < deadline:
                time.sleep(0.02)                  # both workers are inside a slow download
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)       # the first Ctrl-C
            out, err = proc.communicate(timeout=10)
            seconds = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 130 and out.strip() == "interrupted", (out, err)
    assert seconds < 2.0                          # not the 20 s the slow downloads would take
    images = list((tmp_path / "cache").rglob("*.img"))
    assert len(images) == 1 and images[0].read_bytes() == RED


# ---- the failure cache -----------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    routes = {"/big.jpg": (200, JPEG, jpeg_bytes((10, 200, 10), size=(64, 48)), 0.0),
              "/red.jpg": (200, JPEG, RED, 0.0),
              "/slow.jpg": (200, JPEG, RED, 0.3),
              "/missing.jpg": (404, {"Content-Type": "text/plain"}, b"no", 0.0)}
    with ImageServer(routes, lifetime_s=120) as s:
        yield s


def _fetcher(cache, **kw):
    return ImageFetcher(cache, **{"timeout": (0.5, 2.0), "retries": 0, "backoff": 0.01, **kw})


def test_too_large_is_cached_with_its_limit_only(tmp_path, server):
    cache, url = tmp_path / "cache", server.url("/big.jpg")
    size = len(server.routes["/big.jpg"][2])
    small = _fetcher(cache, max_bytes=100).fetch(url)
    assert small.error == f"too large: {size} bytes (limit 100)"
    hits = server.hits["/big.jpg"]
    again = _fetcher(cache, max_bytes=50).fetch(url)              # a smaller limit: the failure holds
    assert again.error.startswith("too large") and "cached failure" in again.error
    assert server.hits["/big.jpg"] == hits
    larger = _fetcher(cache, max_bytes=10**6).fetch(url)          # a larger limit fetches it
    assert larger.ok and not larger.from_cache and server.hits["/big.jpg"] == hits + 1
    assert not list(cache.rglob("*.failed.json"))
    # the limit applies to what the cache holds, too
    assert _fetcher(cache, max_bytes=100).fetch(url).error == f"too large: {size} bytes (limit 100)"


def test_too_many_pixels_is_cached_with_max_pixels(tmp_path, server):
    cache, url = tmp_path / "cache", server.url("/big.jpg")
    assert _fetcher(cache, max_pixels=100).fetch(url).error.startswith("image too large: 64x48 pixels")
    assert "cached failure" in _fetcher(cache, max_pixels=100).fetch(url).error
    assert _fetcher(cache).fetch(url).ok


def test_a_tiny_timeout_does_not_poison_later_runs(tmp_path, server):
    cache, url = tmp_path / "cache", server.url("/red.jpg")
    tiny = _fetcher(cache, total_timeout=0.0).fetch(url)
    assert tiny.error.startswith("timed out:") and "total deadline" in tiny.error
    assert not list(cache.rglob("*.failed.json"))
    assert _fetcher(cache).fetch(url).ok
    slow = server.url("/slow.jpg")
    assert _fetcher(cache, timeout=0.01).fetch(slow).error.startswith("timed out")
    assert not list(cache.rglob("*.failed.json"))
    assert _fetcher(cache).fetch(slow).ok


def test_404_is_cached_but_5xx_and_403_are_not(tmp_path):
    answers = {"/flaky.jpg": [(500, {}, b"oops", 0.0), (200, JPEG, RED, 0.0)],
               "/locked.jpg": [(403, {}, b"later", 0.0), (200, JPEG, RED, 0.0)]}
    routes = {path: (lambda count, path=path: answers[path][min(count, 2) - 1]) for path in answers}
    routes["/missing.jpg"] = (404, {}, b"no", 0.0)
    with ImageServer(routes, lifetime_s=60) as s:
        for path in answers:
            first = _fetcher(tmp_path / "cache").fetch(s.url(path))
            assert first.error.startswith("HTTP 500" if "flaky" in path else "HTTP 403")
            assert _fetcher(tmp_path / "cache").fetch(s.url(path)).ok
        assert _fetcher(tmp_path / "cache").fetch(s.url("/missing.jpg")).error.startswith("HTTP 404")
        assert "cached failure" in _fetcher(tmp_path / "cache").fetch(s.url("/missing.jpg")).error
        assert s.hits["/missing.jpg"] == 1


def test_a_one_off_dns_failure_is_not_cached(tmp_path, server, monkeypatch):
    real = socket.getaddrinfo
    calls = []

    def flaky_dns(host, *args, **kwargs):
        if host == "images.example.test":
            calls.append(host)
            if len(calls) == 1:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", flaky_dns)
    url = server.url("/red.jpg").replace("127.0.0.1", "images.example.test")
    first = _fetcher(tmp_path / "cache").fetch(url)
    assert first.error.startswith("host not found")
    assert not list((tmp_path / "cache").rglob("*.failed.json"))
    assert _fetcher(tmp_path / "cache").fetch(url).ok


def test_old_failure_entries_without_settings_are_fetched_again(tmp_path, server):
    cache, url = tmp_path / "cache", server.url("/red.jpg")
    fetcher = _fetcher(cache)
    _, _, failed = fetcher._paths(url)
    failed.parent.mkdir(parents=True)
    failed.write_text(json.dumps({"url": url, "reason": "host not found", "at": "2026-01-01T00:00:00+00:00"}))
    result = fetcher.fetch(url)
    assert result.ok and not result.from_cache and not failed.exists()
    # a current entry still holds
    assert fetcher.fetch(server.url("/missing.jpg")).error == "HTTP 404 Not Found"
    record = json.loads(next(Path(cache).rglob("*.failed.json")).read_text())
    assert record["settings"] == {} and record["reason"] == "HTTP 404 Not Found"
    assert "cached failure" in fetcher.fetch(server.url("/missing.jpg")).error


@pytest.mark.parametrize("path", ["/drip", "/stall"])
def test_the_body_reader_holds_the_responses_own_socket(trickle_server, path):
    """The socket whose timeout the body loop sets is the one the response reads from (the HTTP/1.0
    server says it will close the connection, after which http.client forgets its socket)."""
    from opik_metrics.images.deadline_http import deadline_session, response_socket

    with deadline_session() as session:
        response = session.get(trickle_server + path, stream=True, timeout=5)
        try:
            assert response_socket(response.raw) is response.raw._fp.fp.raw._sock
        finally:
            response.close()

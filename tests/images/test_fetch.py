"""Image fetching against a local server: what real Conceptual Captions links do (404, slow,
HTML, fake and truncated JPEGs, flaky servers), each a recorded reason; a disk cache by URL."""
import pytest

from opik_metrics.images import ImageFetcher, check_url, decode_image, load_image
from tests.pipelines.caption_fixtures import SLOW_SECONDS, image_server, jpeg_bytes, png_with_alpha  # noqa: F401


@pytest.fixture
def fetcher(tmp_path):
    sleeps = []
    f = ImageFetcher(tmp_path / "cache", timeout=(0.5, SLOW_SECONDS / 5), retries=1, backoff=0.01,
                     max_bytes=100_000, workers=4, sleep=sleeps.append)
    f.sleeps = sleeps
    return f


def test_good_image_is_verified_and_cached(fetcher, image_server):  # noqa: F811
    url = image_server.url("/img/red.jpg")
    first = fetcher.fetch(url)
    assert first.ok and not first.from_cache and first.error is None
    assert (first.content_type, first.width, first.height, first.attempts) == ("image/jpeg", 48, 36, 1)
    hits = image_server.hits["/img/red.jpg"]
    again = fetcher.fetch(url)
    assert again.ok and again.from_cache and again.path == first.path
    assert image_server.hits["/img/red.jpg"] == hits              # served from the disk cache
    assert load_image(again.path).mode == "RGB"


@pytest.mark.parametrize("path, reason", [
    ("/img/missing.jpg", "HTTP 404 Not Found"),
    ("/img/gone.jpg", "HTTP 410 Gone"),
    ("/img/page.html", "not an image: the server sent Content-Type text/html"),
    ("/img/fake.jpg", "not an image (PIL cannot identify the content)"),
    ("/img/truncated.jpg", "corrupt or truncated image"),
    ("/img/huge.jpg", "too large: 300002 bytes (limit 100000)"),
])
def test_permanent_failures_are_reasons_and_cached(fetcher, image_server, path, reason):  # noqa: F811
    result = fetcher.fetch(image_server.url(path))
    assert not result.ok and result.path is None and result.error.startswith(reason)
    hits = image_server.hits[path]
    again = fetcher.fetch(image_server.url(path))
    assert again.error.startswith(reason) and "cached failure" in again.error
    assert image_server.hits[path] == hits


def test_slow_server_times_out_after_retries_and_is_not_cached(fetcher, image_server):  # noqa: F811
    result = fetcher.fetch(image_server.url("/img/slow.jpg"))
    assert result.error == "timed out waiting for the server (after 2 attempts)"
    assert fetcher.sleeps == [0.01]                               # backoff before the retry
    assert not list(fetcher.cache_dir.rglob("*.failed.json"))     # may work next time


def test_transient_error_is_retried(fetcher, image_server):  # noqa: F811
    result = fetcher.fetch(image_server.url("/img/flaky.jpg"))
    assert result.ok and result.attempts == 2
    assert fetcher.sleeps == [0.0]                                # the server's Retry-After


def test_redirects_and_octet_stream_are_followed_and_sniffed(fetcher, image_server):  # noqa: F811
    assert fetcher.fetch(image_server.url("/img/redirect.jpg")).ok
    octet = fetcher.fetch(image_server.url("/img/octet.jpg"))
    assert octet.ok and octet.content_type == "image/jpeg"


def test_unreachable_host_is_a_reason(tmp_path):
    f = ImageFetcher(tmp_path / "c", timeout=0.5, retries=0)
    assert f.fetch("http://127.0.0.1:9/a.jpg").error == "connection refused (after 1 attempt)"


@pytest.mark.parametrize("url, reason", [
    ("ftp://example.com/a.jpg", "scheme must be http or https"),
    ("not a url", "scheme must be http or https"),
    ("http:///a.jpg", "no host"),
    ("", "invalid URL: empty"),
    (None, "invalid URL: empty"),
])
def test_invalid_urls_never_reach_the_network(url, reason, tmp_path):
    assert reason in check_url(url)
    assert reason in ImageFetcher(tmp_path / "c").fetch(url).error


def test_parallel_fetches_keep_order_and_fetch_repeats_once(fetcher, image_server):  # noqa: F811
    urls = [image_server.url(p) for p in ("/img/green.jpg", "/img/missing.jpg", "/img/green.jpg",
                                          "/img/blue.jpg")]
    before = image_server.hits.get("/img/green.jpg", 0)
    results = fetcher.fetch_many(urls, progress=False)
    assert [r.url for r in results] == urls
    assert [r.ok for r in results] == [True, False, True, True]
    assert image_server.hits["/img/green.jpg"] == before + 1


def test_exif_orientation_and_transparency():
    upright = decode_image(jpeg_bytes((20, 20, 120), size=(40, 20), orientation=6), max_pixels=10**6)
    assert upright.size == (20, 40) and upright.mode == "RGB"
    flat = decode_image(png_with_alpha(), max_pixels=10**6)
    assert flat.mode == "RGB" and flat.getpixel((0, 0)) == (255, 255, 255) and flat.getpixel((15, 15)) == (255, 0, 0)
    with pytest.raises(ValueError, match="image too large: 40x20 pixels"):
        decode_image(jpeg_bytes((1, 1, 1), size=(40, 20)), max_pixels=100)

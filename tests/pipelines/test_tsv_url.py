"""A Conceptual Captions TSV streamed over HTTP (served from 127.0.0.1): reading the whole file
(a sample, or a limit beyond the number of rows) ends cleanly at the end of the body, plain or
gzipped; a body cut short is a DatasetSourceError, not a crash."""
import gzip

import pytest

from opik_metrics.pipelines.captioning.conceptual_captions import DatasetSourceError, read_tsv, take
from opik_metrics.pipelines.captioning.offline import ImageServer

ROWS = 40
TEXT = "".join(f"caption number {k}\thttp://127.0.0.1:9/img/{k}.jpg\n" for k in range(ROWS)).encode()


@pytest.fixture(scope="module")
def tsv_server():
    gz = gzip.compress(TEXT)
    routes = {
        "/cc.tsv": (200, {"Content-Type": "text/tab-separated-values"}, TEXT, 0.0),
        "/cc.tsv.gz": (200, {"Content-Type": "application/gzip"}, gz, 0.0),
        "/no-newline.tsv": (200, {}, TEXT.rstrip(b"\n"), 0.0),
        # the server promises more than it sends, then closes the connection
        "/cut.tsv": (200, {"Content-Length": str(len(TEXT) + 5000)}, TEXT[:300], 0.0),
        "/cut.tsv.gz": (200, {}, gz[: len(gz) // 2], 0.0),
    }
    with ImageServer(routes, lifetime_s=60) as server:
        yield server


@pytest.mark.parametrize("path", ["/cc.tsv", "/cc.tsv.gz", "/no-newline.tsv"])
def test_whole_remote_file_is_read_to_its_end(tsv_server, path):
    url = tsv_server.url(path)
    rows = list(read_tsv(url))
    assert [r.row for r in rows] == list(range(1, ROWS + 1)) and all(r.problem is None for r in rows)
    assert rows[-1].caption == f"caption number {ROWS - 1}"
    assert len(take(read_tsv(url), limit=ROWS + 10)) == ROWS                 # --limit beyond the rows
    assert len(take(read_tsv(url))) == ROWS                                  # no limit
    sample = take(read_tsv(url), limit=5, sample=True, seed=3)               # --sample reads it all
    assert len(sample) == 5 and sample == sorted(sample, key=lambda r: r.row)
    assert sample == take(read_tsv(url), limit=5, sample=True, seed=3)


def test_first_rows_still_stop_early(tsv_server):
    rows = take(read_tsv(tsv_server.url("/cc.tsv.gz")), limit=3)
    assert [r.caption for r in rows] == [f"caption number {k}" for k in range(3)]


@pytest.mark.parametrize("path", ["/cut.tsv", "/cut.tsv.gz"])
def test_a_body_cut_short_is_a_clear_error(tsv_server, path):
    with pytest.raises(DatasetSourceError, match="the download of .* broke off"):
        take(read_tsv(tsv_server.url(path), timeout=5), limit=ROWS + 1)

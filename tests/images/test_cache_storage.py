"""An image cache on storage that cannot take files (issue "Hardening", item 10): the fetcher
raises one clear error naming the folder, the cause and how to choose another, once and before
any download, and ``opik-metrics caption`` prints it as one line with exit status 2 (before,
every item was recorded as failed with a cache-write error and the run exited 0).

Tests run as root, where chmod does not block writes: the unwritable cache lies under a regular
FILE (``tmp_path/'file'/'cache'``); a chmod 0o555 folder is tried only when not root."""
from __future__ import annotations

import os

import pytest

from opik_metrics.cli.main import main as cli_main
from opik_metrics.images import ImageFetcher
from opik_metrics.images.fetch import CACHE_ENV, ImageCacheError
from tests.pipelines.caption_fixtures import GOOD, caption_tsv, image_server, tiny_blip  # noqa: F401


def _under_a_file(tmp_path, name="file"):
    blocker = tmp_path / name
    blocker.write_text("a regular file, not a folder", encoding="utf-8")
    return blocker / "cache"


def _fetcher_whose_storage_went_bad(tmp_path, **kw):
    """A fetcher built while its cache could still be created; the storage breaks afterwards
    (a file now stands where the folder's parent would be), so the first use must notice."""
    folder = tmp_path / "file" / "cache"
    fetcher = ImageFetcher(folder, **kw)
    _under_a_file(tmp_path)
    return fetcher, folder


def _good_urls(server):
    return [server.url(path) for path in GOOD]


def _assert_names_folder_cause_and_remedy(message: str, folder) -> None:
    assert str(folder) in message
    assert "Not a directory" in message or "Permission denied" in message or "Read-only" in message
    assert "--cache-dir" in message and f"${CACHE_ENV}" in message
    assert "\n" not in message


def test_construction_checks_cheaply_and_creates_nothing(tmp_path):
    folder = _under_a_file(tmp_path)
    with pytest.raises(ImageCacheError) as raised:
        ImageFetcher(folder)
    assert isinstance(raised.value, ValueError)       # what the CLI's error path turns into one line
    _assert_names_folder_cause_and_remedy(str(raised.value), folder)
    assert raised.value.folder == folder
    lazy = tmp_path / "not" / "yet"
    assert ImageFetcher(lazy).cache_dir == lazy
    assert not (tmp_path / "not").exists()            # a usable path: construction creates nothing


def test_fetch_many_raises_once_before_any_download(tmp_path, image_server):  # noqa: F811
    fetcher, folder = _fetcher_whose_storage_went_bad(tmp_path, retries=0, workers=4)
    hits = dict(image_server.hits)
    with pytest.raises(ImageCacheError) as raised:
        fetcher.fetch_many(_good_urls(image_server), progress=False)
    _assert_names_folder_cause_and_remedy(str(raised.value), folder)
    assert dict(image_server.hits) == hits            # nothing was downloaded


def test_single_fetch_raises_too_and_invalid_urls_need_no_cache(tmp_path, image_server):  # noqa: F811
    fetcher, folder = _fetcher_whose_storage_went_bad(tmp_path, retries=0)
    hits = dict(image_server.hits)
    with pytest.raises(ImageCacheError, match="--cache-dir"):
        fetcher.fetch(_good_urls(image_server)[0])
    assert dict(image_server.hits) == hits
    # a URL that cannot be fetched at all is reported as before, without needing the cache
    assert fetcher.fetch("ftp://example.com/a.jpg").error.startswith("invalid URL")
    assert fetcher.fetch_many(["not a url"], progress=False)[0].error.startswith("invalid URL")


def test_cache_path_that_is_a_file(tmp_path):
    folder = tmp_path / "cache"
    folder.write_text("x", encoding="utf-8")
    with pytest.raises(ImageCacheError, match="is not a folder") as raised:
        ImageFetcher(folder)
    assert str(folder) in str(raised.value) and "--cache-dir" in str(raised.value)


def test_a_writable_cache_is_created_on_first_use_and_works(tmp_path, image_server):  # noqa: F811
    folder = tmp_path / "deep" / "cache"
    fetcher = ImageFetcher(folder, retries=0, workers=2)
    results = fetcher.fetch_many(_good_urls(image_server)[:2], progress=False)
    assert all(r.ok for r in results) and folder.is_dir()
    assert not [p for p in folder.iterdir() if p.name.startswith(".probe-")]   # the probe file is gone
    assert fetcher.fetch_many(_good_urls(image_server)[:2], progress=False)[0].from_cache


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into a 0o555 folder anyway")
def test_read_only_folder_when_not_root(tmp_path, image_server):  # noqa: F811
    folder = tmp_path / "readonly"
    folder.mkdir()
    late = ImageFetcher(folder / "images", retries=0)     # built while the folder was writable
    folder.chmod(0o555)
    try:
        with pytest.raises(ImageCacheError) as raised:
            ImageFetcher(folder, retries=0)
        _assert_names_folder_cause_and_remedy(str(raised.value), folder)
        hits = dict(image_server.hits)
        with pytest.raises(ImageCacheError) as raised:
            late.fetch_many(_good_urls(image_server), progress=False)
        _assert_names_folder_cause_and_remedy(str(raised.value), folder / "images")
        assert dict(image_server.hits) == hits
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("via", ["option", "environment"])
def test_cli_caption_with_an_unwritable_cache_is_one_line_exit_2(tmp_path, caption_tsv, tiny_blip,  # noqa: F811
                                                                  image_server, capsys, monkeypatch, via):  # noqa: F811
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    folder = _under_a_file(tmp_path)
    argv = ["caption", "--tsv", str(caption_tsv), "--limit", "3", "--experiment", "e",
            "--store", str(tmp_path / "s.sqlite"), "--model", str(tiny_blip), "--max-length", "16",
            "--min-length", "4", "--num-beams", "2", "--timeout", "0.5", "--retries", "0", "--no-progress"]
    if via == "option":
        argv += ["--cache-dir", str(folder)]
    else:
        monkeypatch.setenv(CACHE_ENV, str(folder))
    hits = {path: image_server.hits.get(path, 0) for path in GOOD}
    assert cli_main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("opik-metrics: error: ") and "Traceback" not in captured.err
    _assert_names_folder_cause_and_remedy(lines[0], folder)
    assert {path: image_server.hits.get(path, 0) for path in GOOD} == hits   # no image was downloaded

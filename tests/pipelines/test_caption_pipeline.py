"""The captioning pipeline end to end on the local store: a tiny BLIP, images from a local server
(dead links, slow, not an image, truncated), malformed rows; an interrupted run resumes; the CLI."""
import json
import sys

import pytest

from opik_metrics import BLEU, CIDEr
from opik_metrics.cli.main import main as cli_main
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.pipelines.captioning.captioner import BlipCaptioner
from opik_metrics.images import ImageFetcher
from opik_metrics.pipelines.captioning.conceptual_captions import read_tsv
from opik_metrics.pipelines.captioning.pipeline import run_captioning
from tests.neural.tiny_clip import tiny_clip  # noqa: F401
from tests.pipelines.caption_fixtures import (FAST_GENERATION, GOOD, caption_tsv, image_server,  # noqa: F401
                                              one_thread, tiny_blip)

EXPECTED_FAILURES = {
    "fetch: HTTP 404 Not Found",
    "fetch: timed out waiting for the server (after 1 attempt)",
    "fetch: not an image: the server sent Content-Type text/html",
    "fetch: not an image (PIL cannot identify the content)",
    "row 11: expected 2 tab-separated columns (caption, url), got 1",
    "row 12: expected 2 tab-separated columns (caption, url), got 3",
    "fetch: invalid URL 'ftp://example.com/a.jpg': scheme must be http or https",
    "row 14: the caption column is empty",
}


def _fetcher(tmp_path):
    return ImageFetcher(tmp_path / "cache", timeout=(1.0, 1.0), retries=0, workers=4)  # slow route: 1.5 s


def _run(tmp_path, tsv, tiny_blip, **kw):  # noqa: F811
    args = dict(experiment="blip-tiny", tsv=str(tsv), model=str(tiny_blip), generation=FAST_GENERATION,
                batch_size=2, store=tmp_path / "store.sqlite", fetcher=_fetcher(tmp_path), chunk_size=4,
                progress=False)
    return run_captioning(**{**args, **kw})


def test_run_records_captions_scores_failures_and_traces(tmp_path, caption_tsv, tiny_blip, one_thread):  # noqa: F811
    summary = _run(tmp_path, caption_tsv, tiny_blip)
    assert (summary.backend, summary.items, summary.failed_items) == ("local", 14, 9)
    reasons = {r.split(" (")[0] if "truncated" in r else r for r, _ in summary.failure_counts()}
    assert EXPECTED_FAILURES <= {r.replace("data: ", "") for r in reasons}
    assert any(r.startswith("fetch: corrupt or truncated image") for r in reasons)

    with ExperimentStore(tmp_path / "store.sqlite") as store:
        info = store.info("blip-tiny")
        scored = store.items(info.id, ["scored"])
    config = info.config
    assert config["model"] == str(tiny_blip) and config["num_beams"] == 2 and config["repetition_penalty"] == 1.2
    assert set(config["metrics"]) == {"rouge", "bleu", "cider"} and "transformers" in config["versions"]
    assert config["data"] == {"source": str(caption_tsv), "format": "tsv", "limit": 100, "sample": False}
    assert info.dataset == "conceptual-captions-captions" and config["runtime"]["device"] == "cpu"

    assert sorted(i.input["reference"] for i in scored) == sorted(c for c, _ in GOOD.values())
    for item in scored:
        assert item.output["output"] and item.task_seconds is not None
        assert {"rouge1_f1", "rouge2_f1", "rougeL_f1", "bleu", "cider"} <= set(item.scores)
        (span,) = item.trace
        assert span["name"] == "generate_caption" and span["output"] == {"caption": item.output["output"]}
        assert span["metadata"]["model"] == str(tiny_blip) and span["metadata"]["image"]["content_type"] == "image/jpeg"
        (attachment,) = span["attachments"]
        assert attachment["content_type"] == "image/jpeg" and attachment["file_name"].endswith(".jpg")

    corpus = BLEU().corpus_score([i.output["output"] for i in scored], [i.input["reference"] for i in scored])
    assert info.experiment_scores["corpus_bleu"] == pytest.approx(corpus.value)
    # CIDEr-D's document frequencies come from the references of every well-formed row read (the run's corpus)
    cider = CIDEr(df_references=[row.caption for row in read_tsv(str(caption_tsv)) if not row.problem], track=False)
    assert info.experiment_scores["corpus_cider"] == pytest.approx(
        cider.corpus_score([i.output["output"] for i in scored], [i.input["reference"] for i in scored]).value)
    assert [i.scores["cider"].value for i in scored] == pytest.approx(
        [cider.score(i.output["output"], i.input["reference"])[0].value for i in scored])


def test_interrupted_run_resumes_without_redoing_work(tmp_path, caption_tsv, tiny_blip, one_thread,  # noqa: F811
                                                      monkeypatch, image_server):  # noqa: F811
    calls = []
    original = BlipCaptioner.caption

    def caption_then_ctrl_c(self, images):
        calls.append(len(images))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(self, images)

    monkeypatch.setattr(BlipCaptioner, "caption", caption_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, caption_tsv, tiny_blip)
    with ExperimentStore(tmp_path / "store.sqlite") as store:
        info = store.info("blip-tiny")
        statuses = [i.status for i in store.items(info.id)]
    assert info.status == "interrupted"
    assert statuses[:4] == ["scored"] * 4 and set(statuses[4:]) == {"pending"}   # chunk 1 committed

    calls.clear()
    hits = dict(image_server.hits)
    summary = _run(tmp_path, caption_tsv, tiny_blip)
    assert summary.resumed_items == 4 and summary.items == 14 and summary.failed_items == 9
    assert calls == [1]                                      # only the fifth good image is captioned
    assert all(image_server.hits[p] == hits[p] for p in list(GOOD)[:4])   # and nothing refetched
    with ExperimentStore(tmp_path / "store.sqlite") as store:
        assert store.info("blip-tiny").status == "finished" and store.info("blip-tiny").runs == 2


def _cli(argv):
    return cli_main(argv)


def test_cli_caption_list_show_without_touching_the_network(tmp_path, caption_tsv, tiny_blip, one_thread,  # noqa: F811
                                                            image_server, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setenv("OPIK_URL_OVERRIDE", image_server.url("/api/"))   # configured, but --store means local
    store = str(tmp_path / "cli.sqlite")
    tsv_url = image_server.url("/data/captions.tsv")
    common = ["--model", str(tiny_blip), "--max-length", "16", "--min-length", "4", "--num-beams", "2",
              "--batch-size", "2", "--store", store, "--cache-dir", str(tmp_path / "cache"), "--timeout", "0.3",
              "--retries", "0", "--no-progress"]
    assert _cli(["caption", "--tsv", tsv_url, "--limit", "6", "--experiment", "first", *common,
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["items"], summary["failed_items"], summary["backend"]) == (6, 1, "local")
    assert _cli(["caption", "--tsv", tsv_url, "--limit", "3", "--experiment", "second", "-m", "rouge", "-m", "meteor",
                 *common]) == 0
    table = capsys.readouterr().out
    assert "experiment second (local)" in table and "rouge1_f1" in table and "bleu" not in table
    assert "corpus_meteor" in table

    assert _cli(["experiments", "list", "--store", store, "--format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in listing] == ["first", "second"]
    assert set(listing[0]) >= {"name", "items", "failed_items", "created_at", "config", "scores"}
    assert listing[0]["config"]["num_beams"] == 2 and {"bleu", "corpus_bleu", "rouge1_f1"} <= set(listing[0]["scores"])
    assert _cli(["experiments", "list", "--store", store]) == 0
    assert "first" in capsys.readouterr().out

    assert _cli(["experiments", "show", "first", "--store", store, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["records"]) == 6 and shown["records"][5]["failure"] == "HTTP 404 Not Found"
    assert _cli(["experiments", "show", "first", "--store", store, "--items"]) == 0
    assert "failed items:" in capsys.readouterr().out
    assert not [p for p in image_server.hits if p.startswith("/api")]   # no Opik request was made

    assert _cli(["experiments", "show", "nope", "--store", store]) == 2
    assert "no experiment named 'nope'" in capsys.readouterr().err
    monkeypatch.setenv("OPIK_URL_OVERRIDE", "http://127.0.0.1:9/api")
    assert _cli(["experiments", "push", "first", "--store", store]) == 2
    err = capsys.readouterr().err
    assert "Opik server at http://127.0.0.1:9/api" in err and "not reachable" in err
    assert "then push again" in err and "--backend" not in err      # push has no --backend


@pytest.mark.parametrize("extra, message", [
    (["--backend", "opik"], "not reachable (ConnectionError: connection refused). Start the server or fix the URL "
                            "(OPIK_URL_OVERRIDE, `opik configure`), or pass --backend local"),
    (["--model", "Salesforce/blip-image-captioning-base"], "could not load model"),
    (["--model", "./no/such/blip"], "does not exist"),
    (["--metric", "nosuch"], "unknown metric 'nosuch'"),
    (["--hf-dataset", "x"], "give exactly one dataset source"),
    (["--hf-dataset", "google-research-datasets/conceptual_captions"], "pip install datasets"),
    (["--limit", "0"], "limit: expected a positive integer"),
])
def test_cli_bad_input_is_one_clear_line(tmp_path, caption_tsv, tiny_blip, capsys, monkeypatch, extra,  # noqa: F811
                                         message):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    argv = ["caption", "--tsv", str(caption_tsv), "--experiment", "e", "--store", str(tmp_path / "s.sqlite"),
            "--model", str(tiny_blip), "--cache-dir", str(tmp_path / "cache"), "--no-progress", *extra]
    if "--backend" in extra:
        argv.remove("--store")
        argv.remove(str(tmp_path / "s.sqlite"))
    if extra[-1].startswith("google-research"):
        argv.remove("--tsv")
        argv.remove(str(caption_tsv))
        monkeypatch.setitem(sys.modules, "datasets", None)     # as if not installed
    assert _cli(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("opik-metrics: error: ") and message in err and "Traceback" not in err
    if "could not load model" in message:        # says what captions offline, and that no packaged model can
        assert "BLIP captioning checkpoint" in err and "no packaged model" in err and "packaged:" not in err


def test_clipscore_scores_the_images_already_fetched(tmp_path, caption_tsv, tiny_blip, tiny_clip,  # noqa: F811
                                                     one_thread, image_server):  # noqa: F811
    from opik_metrics import CLIPScore

    before = dict(image_server.hits)
    summary = _run(tmp_path, caption_tsv, tiny_blip, metrics=["cider", "clipscore"], clip_model=tiny_clip)
    fetched = {path: count - before.get(path, 0) for path, count in image_server.hits.items()}
    assert all(count <= 1 for path, count in fetched.items() if path.startswith("/img/") and "flaky" not in path)
    with ExperimentStore(tmp_path / "store.sqlite") as store:
        info = store.info("blip-tiny")
        scored = store.items(info.id, ["scored"])
    assert summary.items == 14 and len(scored) == 5 and set(info.config["metrics"]) == {"cider", "clipscore"}
    clip = CLIPScore(model=tiny_clip, track=False)
    for item in scored:
        assert item.output["image"].startswith(str(tmp_path / "cache"))      # the fetcher's cached file
        want = {r.name: r.value for r in clip.score(item.output["output"], image=item.output["image"],
                                                    reference=item.input["reference"])}
        got = {name: item.scores[name].value for name in ("clip_score", "ref_clip_score")}
        assert got == pytest.approx(want, abs=1e-6)

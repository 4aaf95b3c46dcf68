"""CLIPScore added to a stored captioning experiment: each caption scored against its cached image
(one the cache lost is fetched again from the item's URL, the others are not fetched), equal to
CLIPScore's own score_batch on the same captions and images."""
from __future__ import annotations

from pathlib import Path

import pytest

from opik_metrics.experiments.rescore import rescore_local
from opik_metrics.experiments.store import ExperimentStore
from opik_metrics.metrics.clipscore import CLIPScore
from tests.neural.tiny_clip import tiny_clip  # noqa: F401
from tests.pipelines.caption_fixtures import caption_tsv, image_server, one_thread, tiny_blip  # noqa: F401
from tests.pipelines.test_caption_pipeline import _run


def test_clipscore_reads_cached_images_and_refetches_only_a_lost_one(tmp_path, caption_tsv, tiny_blip,  # noqa: F811
                                                                     one_thread, image_server,  # noqa: F811
                                                                     tiny_clip):  # noqa: F811
    _run(tmp_path, caption_tsv, tiny_blip, metrics=["bleu"])
    with ExperimentStore(tmp_path / "store.sqlite") as store:
        info = store.info("blip-tiny")
        scored = store.items(info.id, ["scored"])
    paths = [Path(it.output["image"]) for it in scored]
    assert len(scored) == 5 and all(p.is_file() for p in paths)
    lost = scored[1]
    images = [str(p) for p in paths]
    images[1] = lost.input["image_url"]
    paths[1].unlink()
    hits = dict(image_server.hits)

    with ExperimentStore(tmp_path / "store.sqlite") as store:
        summary = rescore_local(store, "blip-tiny", [CLIPScore(model=tiny_clip)], progress=False)
        after = store.items(info.id, ["scored"])
    url_path = lost.input["image_url"].split("://", 1)[1].split("/", 1)[1]
    fetched = {p: n - hits.get(p, 0) for p, n in image_server.hits.items() if n != hits.get(p, 0)}
    assert fetched == {"/" + url_path: 1}              # the lost image only, once
    want = CLIPScore(model=tiny_clip).score_batch([it.output["output"] for it in scored], images=images)
    assert [it.scores["clip_score"].value for it in after] == pytest.approx([r[0].value for r in want])
    assert summary.scores["clip_score"] == pytest.approx(sum(r[0].value for r in want) / len(want))

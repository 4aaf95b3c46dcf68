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


def test_the_command_line_chooses_clipscores_model_and_prompt(tmp_path, caption_tsv, tiny_blip,  # noqa: F811
                                                              one_thread, image_server, tiny_clip, capsys):  # noqa: F811
    """``experiments rescore -m clipscore --clip-model PATH --clip-prompt TEXT`` builds CLIPScore
    with that model and prompt: the stored scores equal the metric built so, and its signature
    (recorded in the config) names them."""
    from opik_metrics.cli import main

    _run(tmp_path, caption_tsv, tiny_blip, metrics=["bleu"])
    store_path = tmp_path / "store.sqlite"
    assert main(["experiments", "rescore", "blip-tiny", "--store", str(store_path), "--no-progress",
                 "-m", "clipscore", "--clip-model", str(tiny_clip), "--clip-prompt", "A picture of ",
                 "--device", "cpu"]) == 0
    capsys.readouterr()
    with ExperimentStore(store_path) as store:
        info = store.info("blip-tiny")
        scored = store.items(info.id, ["scored"])
    metric = CLIPScore(model=tiny_clip, prompt="A picture of ")
    want = metric.score_batch([it.output["output"] for it in scored], images=[it.output["image"] for it in scored])
    assert [it.scores["clip_score"].value for it in scored] == pytest.approx([r[0].value for r in want])
    # the tiny CLIP's cosines are negative (CLIP-S 0): the cosine itself shows which prompt was used
    cosines = [it.scores["clip_score"].metadata["cosine"] for it in scored]
    assert cosines == pytest.approx([r[0].metadata["cosine"] for r in want])
    default = CLIPScore(model=tiny_clip).score_batch([scored[0].output["output"]], images=[scored[0].output["image"]])
    assert default[0][0].metadata["cosine"] != pytest.approx(cosines[0])      # the prompt made a difference
    assert info.config["metrics"]["clipscore"]["signature"] == metric.signature.as_dict()

"""CLIPScore as an Opik metric: result names (prefixed by ``name``), facts and bounds, metadata,
``score`` vs ``score_batch``, concurrent ``score`` calls gathered into one pass, corpus score from
summed statistics, errors, and a run inside ``opik.evaluate_on_dict_items`` with
``scoring_key_mapping={"image": "image_url"}`` against Opik's emulated backend."""
from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import numpy as np
import opik
import pytest
from PIL import Image, ImageDraw

from opik_metrics.core import MetricFacts, MetricInputError, facts_of
from opik_metrics.metrics.clipscore import CLIPScore
from tests.neural.tiny_clip import tiny_clip  # noqa: F401
from tests.pipelines.caption_fixtures import GOOD, image_server  # noqa: F401

TOL = 2e-6   # padding in a batch moves float32 sums by ~5e-7 (see tests/neural/test_clip_engine.py)
CAPTIONS = ["a red dog", "the cat on the car", "blue sky over a green field", "a white house", "dog " * 90,
            "a tree in the street", "", "picture of a black cat"]
REFS = [["a dog", "a red dog"], "the car", "the sky", ["a house", "a white house", "the car"], "dog",
        "a tree", "something", ["a cat", "a black cat"]]


def _image(k: int) -> Image.Image:
    image = Image.new("RGB", (30 + 7 * k, 40 - 3 * k), ((60 * k) % 256, (255 - 35 * k) % 256, (20 * k) % 256))
    ImageDraw.Draw(image).ellipse([2, 2, 10 + 2 * k, 12 + k], fill=(255 - 30 * k, 10 * k, 120))
    return image


IMAGES = [_image(k) for k in range(len(CAPTIONS))]


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def metric(tiny_clip) -> CLIPScore:  # noqa: F811
    return CLIPScore(model=tiny_clip, device="cpu", batch_size=4, track=False)


def _by_name(results) -> dict[str, float]:
    return {r.name: r.value for r in results}


def test_names_and_the_name_prefix(metric, tiny_clip):  # noqa: F811
    assert [r.name for r in metric.score(output=CAPTIONS[0], image=IMAGES[0])] == ["clip_score"]
    plain = metric.score(output=CAPTIONS[0], image=IMAGES[0], reference=REFS[0], input="ignored field")
    assert [r.name for r in plain] == ["clip_score", "ref_clip_score"]
    named = CLIPScore(model=tiny_clip, device="cpu", name="b32", track=False)
    renamed = named.score(output=CAPTIONS[0], image=IMAGES[0], reference=REFS[0])
    assert [r.name for r in renamed] == ["b32_clip_score", "b32_ref_clip_score"]
    assert [r.value for r in renamed] == pytest.approx([r.value for r in plain], abs=TOL)
    assert (metric.facts.corpus.name, named.facts.corpus.name) == ("corpus_clip_score", "corpus_b32_clip_score")


def test_facts_state_direction_bounds_and_corpus_score(metric, tiny_clip):  # noqa: F811
    facts = facts_of(metric)
    assert facts.main.name == "clip_score" and facts.higher_is_better
    clip, ref = facts.score("clip_score"), facts.score("ref_clip_score")
    assert clip.bounds == (0.0, 2.5) and clip.higher_is_better and not clip.part
    # RefCLIP-S = H(CLIP-S, r) with CLIP-S <= w and r <= 1: at most 2w / (w + 1), 10/7 for w = 2.5
    assert ref.bounds == pytest.approx((0.0, 10 / 7)) and ref.higher_is_better and not ref.part
    corpus = facts.corpus
    assert corpus.name == "corpus_clip_score" and corpus.is_mean and corpus.fields == ("clip_score", "items")
    assert corpus.score.bounds == (0.0, 2.5) and facts.own_corpus is None
    assert MetricFacts.from_dict(json.loads(json.dumps(facts.as_dict()))).as_dict() == facts.as_dict()
    unit = CLIPScore(model=tiny_clip, device="cpu", weight=1.0, track=False)
    assert unit.facts.score("clip_score").bounds == (0.0, 1.0)
    assert unit.facts.score("ref_clip_score").bounds == (0.0, 1.0)          # 2w / (w + 1) with w = 1
    assert unit.signature.fields["w"] == 1.0 and unit.signature != metric.signature
    for results in metric.score_batch(CAPTIONS, REFS, images=IMAGES):
        for r in results:
            low, high = facts.score(r.name).bounds
            assert low <= r.value <= high


def test_metadata_and_reasons(metric):
    clip, ref = metric.score(output=CAPTIONS[3], image=IMAGES[3], reference=REFS[3])
    meta = ref.metadata
    assert meta["signature"] == metric.signature and clip.metadata["signature"] == metric.signature
    assert meta["n_references"] == 3 and meta["best_reference"] in (0, 1, 2)
    assert -1.0 <= meta["cosine"] <= 1.0 and -1.0 <= meta["ref_cosine"] <= 1.0
    assert clip.value == pytest.approx(2.5 * max(meta["cosine"], 0.0), abs=1e-12)
    c, r = clip.value, max(meta["ref_cosine"], 0.0)
    assert ref.value == pytest.approx(2 * c * r / (c + r) if c + r else 0.0, abs=1e-12)
    assert meta["prompt"] == "A photo depicts " and meta["weight"] == 2.5
    alone = metric.score(output=CAPTIONS[0], image=IMAGES[0])[0].metadata
    assert (alone["n_references"], alone["best_reference"], alone["ref_cosine"]) == (0, None, None)
    long = metric.score(output=CAPTIONS[4], image=IMAGES[4], reference="dog " * 90)
    assert "output truncated to 77 tokens" in long[0].reason and "reference truncated" not in long[0].reason
    assert "reference truncated to 77 tokens" in long[1].reason


def test_score_equals_score_batch(metric):
    batch = metric.score_batch(CAPTIONS, REFS, images=IMAGES)
    for k, (c, im, r) in enumerate(zip(CAPTIONS, IMAGES, REFS)):
        single = metric.score(output=c, image=im, reference=r)
        assert [x.name for x in single] == [x.name for x in batch[k]]
        assert [x.value for x in single] == pytest.approx([x.value for x in batch[k]], abs=TOL)
    no_refs = metric.score_batch(CAPTIONS, images=IMAGES)
    assert [[x.name for x in b] for b in no_refs] == [["clip_score"]] * len(CAPTIONS)
    assert [b[0].value for b in no_refs] == pytest.approx([b[0].value for b in batch], abs=TOL)
    assert metric.score_batch([], images=[]) == []


def test_missing_image_and_bad_inputs(metric):
    mapping = r"scoring_key_mapping=\{\"image\": \"image_url\"\}"
    with pytest.raises(MetricInputError, match=rf"field 'image': missing.*{mapping}"):
        metric.score(output="a dog")
    with pytest.raises(MetricInputError, match=r"^field 'image': expected an image .* got int"):
        metric.score(output="a dog", image=3)
    with pytest.raises(MetricInputError, match="^field 'image': cannot read image <4 bytes>: not an image"):
        metric.score(output="a dog", image=b"junk")
    with pytest.raises(MetricInputError, match="field 'output'"):
        metric.score(output=None, image=IMAGES[0])
    with pytest.raises(MetricInputError, match="field 'reference'"):
        metric.score(output="a dog", image=IMAGES[0], reference=[])
    with pytest.raises(MetricInputError, match="2 outputs but 1 images"):
        metric.score_batch(["a", "b"], images=[IMAGES[0]])
    with pytest.raises(MetricInputError, match=r"item 1, field 'image': cannot read image <4 bytes>"):
        metric.score_batch(["a", "b"], images=[IMAGES[0], b"junk"])
    with pytest.raises(MetricInputError, match="need the items' images"):
        metric.statistics(["a"])


def _run_together(calls) -> dict[int, object]:
    """Run the callables in threads released at once; each one's result or exception by index."""
    out: dict[int, object] = {}
    barrier = threading.Barrier(len(calls))

    def run(k: int) -> None:
        barrier.wait()
        try:
            out[k] = calls[k]()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            out[k] = exc

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return out


def test_concurrent_score_calls_are_gathered_into_batches(tiny_clip, monkeypatch):  # noqa: F811
    metric = CLIPScore(model=tiny_clip, device="cpu", track=False, max_wait_ms=50)
    expected = [_by_name(b) for b in metric.score_batch(CAPTIONS, REFS, images=IMAGES)]
    calls: list[int] = []
    real = metric.engine.score
    monkeypatch.setattr(metric.engine, "score", lambda *a, **kw: calls.append(len(a[0])) or real(*a, **kw))
    n = 16
    out = _run_together([lambda k=k: metric.score(output=CAPTIONS[k % 8], image=IMAGES[k % 8],
                                                  reference=REFS[k % 8]) for k in range(n)])
    for k in range(n):
        got = _by_name(out[k])
        assert got.keys() == expected[k % 8].keys()
        assert list(got.values()) == pytest.approx(list(expected[k % 8].values()), abs=TOL)
    assert sum(calls) == n and len(calls) < n and max(calls) > 1      # fewer engine passes than items
    assert metric._batcher.items == n and metric._batcher.batches == len(calls)


def test_a_bad_image_among_concurrent_calls_fails_only_its_own_call(tiny_clip):  # noqa: F811
    metric = CLIPScore(model=tiny_clip, device="cpu", track=False, max_wait_ms=50)
    expected = [_by_name(b) for b in metric.score_batch(CAPTIONS, images=IMAGES)]
    calls = [lambda k=k: metric.score(output=CAPTIONS[k], image=IMAGES[k]) for k in range(8)]
    calls.append(lambda: metric.score(output="a dog", image=b"junk"))
    out = _run_together(calls)
    assert isinstance(out[8], MetricInputError) and "field 'image': cannot read image <4 bytes>" in str(out[8])
    for k in range(8):
        assert _by_name(out[k])["clip_score"] == pytest.approx(expected[k]["clip_score"], abs=TOL)


def test_corpus_score_is_the_mean_from_summed_statistics(metric):
    stats = metric.statistics(CAPTIONS, REFS, images=IMAGES)
    whole = metric.corpus_score(CAPTIONS, REFS, images=IMAGES)
    assert whole.name == "corpus_clip_score"
    assert whole.value == metric.from_statistics(sum(stats)).value
    assert metric.from_statistics(sum(stats[:3]) + sum(stats[3:])).value == pytest.approx(whole.value, abs=1e-12)
    values = [b[0].value for b in metric.score_batch(CAPTIONS, REFS, images=IMAGES)]
    assert whole.value == pytest.approx(float(np.mean(values)), abs=TOL)
    assert whole.metadata["signature"] == metric.signature and whole.metadata["statistics"][-1] == len(CAPTIONS)
    assert metric.corpus_score(CAPTIONS, images=IMAGES).value == pytest.approx(whole.value, abs=TOL)


def test_inside_opik_evaluate_with_scoring_key_mapping(tiny_clip, fake_opik_backend, image_server,  # noqa: F811
                                                      tmp_path, monkeypatch):
    monkeypatch.setenv("OPIK_METRICS_IMAGE_CACHE", str(tmp_path / "images"))
    rows = [(f"a picture of {ref.split()[1]}", image_server.url(path), ref) for path, (ref, _) in GOOD.items()]
    items = [{"caption": c, "image_url": url, "reference": ref} for c, url, ref in rows]
    metric = CLIPScore(model=tiny_clip, device="cpu")
    result = opik.evaluate_on_dict_items(items=items, task=lambda item: {"output": item["caption"]},
                                         scoring_metrics=[metric], scoring_key_mapping={"image": "image_url"},
                                         scoring_threads=4)
    expected = CLIPScore(model=tiny_clip, device="cpu", track=False).score_batch(
        [r[0] for r in rows], [r[2] for r in rows], images=[r[1] for r in rows])
    by_caption = {r[0]: _by_name(e) for r, e in zip(rows, expected)}
    assert len(result.test_results) == len(rows)
    for tr in result.test_results:
        assert not any(s.scoring_failed for s in tr.score_results), [s.reason for s in tr.score_results]
        got = _by_name(tr.score_results)
        want = by_caption[tr.test_case.task_output["output"]]
        assert got.keys() == {"clip_score", "ref_clip_score"}
        assert [got[k] for k in want] == pytest.approx([want[k] for k in want], abs=TOL)
    mean = float(np.mean([e["clip_score"] for e in by_caption.values()]))

    # the experiment-level score reuses the logged results (same signature) ...
    with monkeypatch.context() as patched:
        patched.setattr(metric.engine, "score", lambda *a, **kw: pytest.fail("should reuse the logged CLIP-S"))
        assert metric.experiment_score(result.test_results).value == pytest.approx(mean, abs=TOL)
    # ... and scores the items it finds none for, reading the mapped 'image' input
    bare = [SimpleNamespace(test_case=tr.test_case, score_results=[]) for tr in result.test_results]
    assert metric.experiment_score(bare).value == pytest.approx(mean, abs=TOL)

    opik.flush_tracker()
    logged = {fs.name for tree in fake_opik_backend.trace_trees for fs in tree.feedback_scores}
    assert {"clip_score", "ref_clip_score"} <= logged

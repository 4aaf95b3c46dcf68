"""CLIPScore engine: equal to a direct transformers computation (oracle), hand-worked formulas,
batch invariance, one embedding per distinct input, truncation reasons, errors naming the item
and the image, and every kind of image input (path, bytes, PIL, URL) giving the same score."""
from __future__ import annotations

import io
import random

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from opik_metrics.core import MetricInputError, Signature
from opik_metrics.images import ImageFetcher
from opik_metrics.neural.clip import (ClipScoreEngine, TextTokens, best_reference, clip_s, harmonic_mean, image_key,
                                      load_clip, ref_clip_s, ref_clip_s_bound)
from tests.neural.tiny_clip import WINDOW, tiny_clip  # noqa: F401
from tests.pipelines.caption_fixtures import image_server, jpeg_bytes  # noqa: F401

PROMPT = "A photo depicts "
TOLERANCE = 2e-6   # absolute, on CLIP-S (0..2.5) and RefCLIP-S, vs the direct transformers computation
#                   (float32 forward passes; measured: at most 5.4e-7 here)

CAPTIONS = ["a red dog", "the cat on the car", "blue sky over a green field", "a white house", "sitting",
            "a tree in the street", "picture of a black cat", "dog", "zebra crossing at night", "the photo",
            "xyzzy 123 !!", "a house with a red car", "", "Ünïcödé café crème", "two dogs. one cat.",
            "a dog " * 40, "A DOG ON THE STREET", "the field", "red", "a picture of the sky"]
REFERENCES = [["a dog", "a red dog"], None, "the sky", ["a house", "a white house", "the car"], None,
              "a tree", ["a cat"], "a dog", None, ["a photo", "the photo of a picture " * 16], "xyzzy", None,
              "something", "café", None, "a dog", ["a dog on a street"], None, "red", ["sky", "the sky", "blue"]]


def make_image(k: int) -> Image.Image:
    """Images of different colours, patterns and sizes (some tiny, some wide or tall)."""
    rng = np.random.default_rng(k)
    sizes = [(40, 30), (32, 32), (64, 20), (7, 5), (120, 90), (25, 80), (300, 200), (33, 47)]
    w, h = sizes[k % len(sizes)]
    kind = k % 4
    if kind == 0:
        image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
    elif kind == 1:
        x = np.linspace(0, 255, w, dtype=np.float64)
        arr = np.stack([np.tile(x, (h, 1)), np.tile(x[::-1], (h, 1)), np.full((h, w), 40.0 * (k % 6))], -1)
        image = Image.fromarray(arr.astype(np.uint8))
    else:
        image = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(0, 256, 3)))
    if kind == 3:
        draw = ImageDraw.Draw(image)
        for s in range(0, w, 6):
            draw.line([(s, 0), (s, h)], fill=(255 - 30 * (k % 8), 20, 200), width=2)
    return image


IMAGES = [make_image(k) for k in range(len(CAPTIONS))]


@pytest.fixture(scope="module")
def engine(tiny_clip) -> ClipScoreEngine:  # noqa: F811
    return ClipScoreEngine(tiny_clip, device="cpu", batch_size=4)


@pytest.fixture(scope="module")
def oracle(tiny_clip):  # noqa: F811
    """A direct transformers computation, item by item (no padding, no batching, none of our code):
    CLIPModel's forward gives unit text/image embeddings of "A photo depicts " + text."""
    from transformers import CLIPImageProcessorPil, CLIPModel, CLIPTokenizer

    model = CLIPModel.from_pretrained(tiny_clip).eval()
    tokenizer = CLIPTokenizer.from_pretrained(tiny_clip)
    pixels = CLIPImageProcessorPil.from_pretrained(tiny_clip)

    def compute(caption: str, image: Image.Image, refs) -> tuple[float, float | None]:
        texts = [PROMPT + caption] + [PROMPT + r for r in ([refs] if isinstance(refs, str) else refs or [])]
        with torch.no_grad():
            embeds = []
            for text in texts:
                enc = tokenizer([text], truncation=True, max_length=77, return_tensors="pt")
                out = model(**enc, pixel_values=pixels(images=[image], return_tensors="pt")["pixel_values"])
                embeds.append(out.text_embeds[0].double())
            image_embed = out.image_embeds[0].double()
        cos = float(image_embed @ embeds[0])
        c = 2.5 * max(cos, 0.0)
        if refs is None:
            return c, None
        r = max(max(float(embeds[0] @ e) for e in embeds[1:]), 0.0)
        return c, (2 * c * r / (c + r) if c + r > 0 else 0.0)

    return [compute(c, im, r) for c, im, r in zip(CAPTIONS, IMAGES, REFERENCES)]


def _values(scored) -> list[tuple[float, float | None]]:
    return [(s.clip_score, s.ref_clip_score) for s in scored]


def _assert_close(got, want, tol=TOLERANCE):
    assert len(got) == len(want)
    for k, ((c, r), (wc, wr)) in enumerate(zip(got, want)):
        assert c == pytest.approx(wc, abs=tol), f"item {k}: CLIP-S"
        assert (r is None) == (wr is None), f"item {k}: RefCLIP-S present"
        if r is not None:
            assert r == pytest.approx(wr, abs=tol), f"item {k}: RefCLIP-S"


# --- oracle ----------------------------------------------------------------------------------

def test_equals_a_direct_transformers_computation(engine, oracle):
    scored = engine.score(CAPTIONS, IMAGES, REFERENCES)
    _assert_close(_values(scored), oracle)
    cosines = [s.cosine for s in scored]
    assert min(cosines) < 0 < max(cosines)                       # both branches of max(cos, 0) covered
    assert any(s.output_truncated for s in scored) and any(s.truncated_references for s in scored)


def test_signature_and_settings(engine, tiny_clip):  # noqa: F811
    sig = engine.signature
    assert isinstance(sig, Signature)
    assert sig.fields["clipscore"] == tiny_clip and sig.fields["prompt"] == PROMPT and sig.fields["w"] == 2.5
    assert "prompt:'A photo depicts '" in sig and "max_len:77" in sig and "img:rgb+CLIPImageProcessorPil:32x32" in sig
    assert {"transformers", "torch", "opik-metrics", "dtype"} <= set(sig.fields)
    assert engine.settings()["max_length"] == WINDOW
    other = ClipScoreEngine(tiny_clip, device="cpu", prompt="", weight=1.0)
    assert other.signature != sig and other.clip is engine.clip       # one model in memory per (source, device, dtype)


# --- hand-worked -------------------------------------------------------------------------------

def test_formulas_by_hand():
    assert clip_s(0.4) == pytest.approx(1.0) and clip_s(-0.3) == 0.0 and clip_s(0.4, weight=1.0) == 0.4
    assert harmonic_mean(1.0, 0.5) == pytest.approx(2 / 3)                 # 2 * 1 * .5 / 1.5
    assert harmonic_mean(0.0, 0.0) == 0.0 and harmonic_mean(0.0, 0.7) == 0.0
    assert ref_clip_s(1.5, 0.8) == pytest.approx(2.4 / 2.3)                 # 2 * 1.5 * .8 / 2.3
    assert ref_clip_s(1.5, -0.4) == 0.0 and ref_clip_s(0.0, -0.2) == 0.0
    assert ref_clip_s(2.5, 1.0) == pytest.approx(10 / 7) == ref_clip_s_bound(2.5)
    assert ref_clip_s_bound(1.0) == 1.0
    assert best_reference([0.2, 0.7, 0.7, -1.0]) == (1, 0.7)              # first of a tie
    with pytest.raises(ValueError):
        harmonic_mean(-1.0, 1.0)


class _FixedVectors:
    """An embedder stand-in returning chosen unit vectors, to check the engine's arithmetic."""

    def __init__(self, texts: dict[str, list[float]], image: list[float], truncated=()):
        self.texts, self.image, self.truncated = texts, image, set(truncated)

    def embed_texts(self, texts, progress=None):
        return {t: (torch.tensor(self.texts[t.removeprefix(PROMPT)], dtype=torch.float64),
                    TextTokens((0,), t.removeprefix(PROMPT) in self.truncated)) for t in texts}

    def embed_images(self, images, total, progress=None):
        return torch.tensor([self.image] * total, dtype=torch.float64)


def test_engine_arithmetic_and_reasons_on_chosen_vectors(engine, monkeypatch):
    vectors = {"cap": [0.6, 0.8, 0.0], "neg": [-0.6, 0.8, 0.0], "r1": [0.0, 1.0, 0.0], "r0": [0.0, 0.0, 1.0],
               "rneg": [0.0, -1.0, 0.0], "long": [1.0, 0.0, 0.0]}
    monkeypatch.setattr(engine, "embedder", _FixedVectors(vectors, [1.0, 0.0, 0.0], truncated=["long", "r0"]))
    img = Image.new("RGB", (4, 4))
    a, b, c, d = engine.score(["cap", "neg", "neg", "long"], [img] * 4, [["r0", "r1"], ["rneg"], ["r1"], None])
    # cos(image, cap) = .6 -> CLIP-S 1.5; best reference r1 (cos .8) -> RefCLIP-S 2 * 1.5 * .8 / 2.3
    assert (a.cosine, a.clip_score, a.ref_cosine, a.best_reference) == (pytest.approx(0.6), pytest.approx(1.5),
                                                                        pytest.approx(0.8), 1)
    assert a.ref_clip_score == pytest.approx(2.4 / 2.3) and a.reason is None
    assert a.truncated_references == (0,) and "reference 0 truncated to 77 tokens" in a.ref_reason
    # cos -.6 -> CLIP-S 0; best reference cosine -.8 -> r = 0: both zero, RefCLIP-S 0 (not NaN)
    assert (b.clip_score, b.ref_clip_score) == (0.0, 0.0)
    assert "negative: CLIP-S is 0" in b.reason and "both 0" in b.ref_reason and "counted as 0" in b.ref_reason
    # CLIP-S 0 with r = .8: the harmonic mean is 0
    assert (c.clip_score, c.ref_clip_score) == (0.0, 0.0) and "both 0" not in c.ref_reason
    assert d.clip_score == pytest.approx(2.5) and d.ref_clip_score is None and d.output_truncated
    assert "output truncated to 77 tokens" in d.reason


# --- batch invariance and deduplication -----------------------------------------------------

def test_scores_do_not_depend_on_batch_composition(tiny_clip, engine):  # noqa: F811
    alone = [_values(engine.score([c], [im], [r]))[0] for c, im, r in zip(CAPTIONS, IMAGES, REFERENCES)]
    order = list(range(len(CAPTIONS)))
    random.Random(3).shuffle(order)
    for batch_size in (1, 3, 7, 64):
        other = ClipScoreEngine(tiny_clip, device="cpu", batch_size=batch_size)
        shuffled = other.score([CAPTIONS[k] for k in order], [IMAGES[k] for k in order],
                               [REFERENCES[k] for k in order])
        back = [None] * len(order)
        for pos, k in enumerate(order):
            back[k] = _values([shuffled[pos]])[0]
        _assert_close(back, alone, tol=TOLERANCE)   # padding moves float32 sums by ~5e-7


class _Counter:
    def __init__(self, method):
        self.method, self.rows, self.calls = method, 0, 0

    def __call__(self, **kwargs):
        tensor = kwargs.get("input_ids", kwargs.get("pixel_values"))
        self.rows += tensor.shape[0]
        self.calls += 1
        return self.method(**kwargs)


def test_each_distinct_image_and_text_is_embedded_once(engine, tmp_path, monkeypatch, image_server):  # noqa: F811
    model = engine.clip.model
    texts = _Counter(model.get_text_features)
    pixels = _Counter(model.get_image_features)
    monkeypatch.setattr(model, "get_text_features", texts)
    monkeypatch.setattr(model, "get_image_features", pixels)
    monkeypatch.setattr(engine, "_fetcher", ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0))
    data = jpeg_bytes((10, 200, 30))
    path = tmp_path / "a.jpg"
    path.write_bytes(data)
    image_server.routes["/img/dedup.jpg"] = (200, {"Content-Type": "image/jpeg"}, data, 0.0)
    url = image_server.url("/img/dedup.jpg")
    pil = make_image(1)
    images = [str(path), path, data, bytearray(data), pil, pil, url, url + " ", make_image(1)]
    captions = ["a dog", "a dog", "a cat", "A  DOG", "a cat", "the sky", "a dog", "a dog", "a dog"]
    refs = [["a cat", "a dog"], "the sky", None, ["red", "a dog"], None, "a dog", "a dog", None, "sky"]
    scored = engine.score(captions, images, refs)
    # images: the path (str and Path), the bytes (two equal objects), the PIL object, the URL (stripped),
    # and another PIL object with equal pixels (a different object: embedded again) -> 5 distinct
    assert pixels.rows == 5 and pixels.calls == 2      # batch_size 4
    assert image_server.hits["/img/dedup.jpg"] == 1
    assert texts.rows == len({"a dog", "a cat", "the sky", "red", "sky"})   # "A  DOG" tokenises as "a dog"
    assert scored[0].cosine == scored[1].cosine and scored[6].cosine == scored[7].cosine
    assert scored[0].ref_cosine == pytest.approx(1.0, abs=1e-12) and scored[0].ref_cosine <= 1.0  # "a dog" vs itself
    assert image_key(path) == image_key(str(path)) and image_key(data) == image_key(bytearray(data))


# --- truncation -------------------------------------------------------------------------------

def test_truncation_to_the_window_is_reported(engine):
    # "A photo depicts " is 3 tokens in the tiny vocabulary, plus start and end: 72 more fit in 77.
    fits, over = "x" * 72, "x" * 73
    assert [len(t.ids) for t in engine.embedder.tokenize([PROMPT + fits, PROMPT + over])] == [77, 77]
    a, b = engine.score([fits, over], [IMAGES[0]] * 2, [None, ["a dog", "dog " * 80]])
    assert not a.output_truncated and "truncated" not in (a.reason or "")
    assert b.output_truncated and "output truncated to 77 tokens" in b.reason
    assert b.truncated_references == (1,) and "reference 1 truncated to 77 tokens" in b.ref_reason
    assert "reference 1" not in (b.reason or "")                       # CLIP-S does not depend on references


# --- errors -------------------------------------------------------------------------------------

def test_errors_name_the_item_and_the_image(engine, tmp_path, monkeypatch, image_server):  # noqa: F811
    monkeypatch.setattr(engine, "_fetcher", ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0))
    good = IMAGES[0]
    missing = str(tmp_path / "nope.jpg")
    with pytest.raises(MetricInputError, match=r"item 1, field 'image': cannot read image .*nope\.jpg: no such file"):
        engine.score(["a", "b"], [good, missing])
    with pytest.raises(MetricInputError, match=r"item 2, field 'image': cannot read image <12 bytes>: not an image"):
        engine.score(["a", "b", "c", "d"], [good, good, b"not an image", b"not an image"])
    url = image_server.url("/img/missing.jpg")
    with pytest.raises(MetricInputError, match=rf"item 0, field 'image': cannot read image {url}: HTTP 404"):
        engine.score(["a"], [url])
    with pytest.raises(MetricInputError, match=r"item 3, field 'image': expected an image .* got int"):
        engine.score(["a", "b", "c", "d"], [good, good, good, 3])
    with pytest.raises(MetricInputError, match=r"item 1, field 'image': .*got None"):
        engine.score(["a", "b"], [good, None])
    with pytest.raises(MetricInputError, match=r"^field 'image': cannot read image <52 bytes>: not an image"):
        engine.score(["a"], [b"\xff\xd8" + b"\x00" * 50], items=[None])      # no item number: a lone score()
    with pytest.raises(MetricInputError, match=r"item 1, field 'output': expected a string, got int"):
        engine.score(["a", 5], [good, good])
    with pytest.raises(MetricInputError, match="2 captions but 1 images"):
        engine.score(["a", "b"], [good])
    with pytest.raises(MetricInputError, match=r"item 0, field 'reference'"):
        engine.score(["a"], [good], [[]])
    with pytest.raises(ValueError, match="weight"):
        ClipScoreEngine(engine.model_name, device="cpu", weight=0)
    assert engine.score([], []) == []


def test_a_model_that_is_not_clip_is_refused(tmp_path):
    from tests.neural.tiny_models import build_bert

    with pytest.raises(ValueError, match="not a CLIP model"):
        load_clip(str(build_bert(tmp_path / "bert")), device="cpu")


# --- image inputs -------------------------------------------------------------------------------

def test_path_bytes_pil_and_url_give_the_same_score(engine, tmp_path, monkeypatch, image_server):  # noqa: F811
    monkeypatch.setattr(engine, "_fetcher", ImageFetcher(tmp_path / "cache", timeout=1.0, retries=0))
    data = jpeg_bytes((200, 40, 10), size=(60, 45))
    path = tmp_path / "same.jpg"
    path.write_bytes(data)
    image_server.routes["/img/same.jpg"] = (200, {"Content-Type": "image/jpeg"}, data, 0.0)
    inputs = [str(path), path, data, Image.open(io.BytesIO(data)), image_server.url("/img/same.jpg")]
    together = engine.score(["a red car"] * 5, inputs, [["a car", "red"]] * 5)
    apart = [engine.score(["a red car"], [x], [["a car", "red"]])[0] for x in inputs]
    values = _values(together) + _values(apart)
    assert all(v == pytest.approx(values[0], abs=1e-7) for v in values)
    gray = engine.score(["a red car"], [Image.open(io.BytesIO(data)).convert("L")])[0]
    assert 0.0 <= gray.clip_score <= 2.5


def test_images_are_read_as_the_authors_code_reads_them(tiny_clip, tmp_path):
    """Hessel et al. open an image and convert it to RGB: no EXIF rotation, alpha dropped (not
    flattened on white). A transparent PNG and an EXIF-rotated JPEG score as that reading does."""
    import io

    import torch
    from PIL import Image
    from transformers import AutoProcessor, CLIPModel

    from opik_metrics.images.fetch import normalise_image
    from opik_metrics.neural.clip import ClipScoreEngine
    from opik_metrics.pipelines.captioning.offline import jpeg_bytes

    rgba = Image.new("RGBA", (40, 30), (200, 30, 30, 0))
    rgba.paste((20, 200, 40, 255), (10, 5, 30, 25))
    png = io.BytesIO()
    rgba.save(png, "PNG")
    rotated = jpeg_bytes((30, 60, 200), size=(48, 24), orientation=6)
    paths = []
    for name, data in (("alpha.png", png.getvalue()), ("rotated.jpg", rotated)):
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(str(path))
    ours = [s.clip_score for s in ClipScoreEngine(model=tiny_clip).score(["a red square", "a blue photo"], paths)]
    model, processor = CLIPModel.from_pretrained(tiny_clip).eval(), AutoProcessor.from_pretrained(tiny_clip)
    want = []
    with torch.inference_mode():
        for caption, path in zip(["a red square", "a blue photo"], paths):
            image = Image.open(path).convert("RGB")
            inputs = processor(text=["A photo depicts " + caption], images=[image], return_tensors="pt", padding=True)
            out = model(**inputs)
            want.append(2.5 * max(float((out.text_embeds @ out.image_embeds.T)[0, 0]), 0.0))
    assert ours == pytest.approx(want, abs=2e-6)
    upright = [s.clip_score for s in ClipScoreEngine(model=tiny_clip).score(  # what the other reading would give
        ["a red square", "a blue photo"], [normalise_image(Image.open(p)) for p in paths])]
    assert ours != pytest.approx(upright, abs=1e-3) or not any(want)   # the test tells the two readings apart

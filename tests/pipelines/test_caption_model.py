"""The BLIP captioner on a tiny random checkpoint loaded through from_pretrained: the article's
generation settings as defaults, batched generation, clear errors for models it cannot load."""
import io

import pytest
import torch
from PIL import Image

from opik_metrics.pipelines.captioning.captioner import CAPTION_MODEL, GENERATION_DEFAULTS, BlipCaptioner, generation_settings
from opik_metrics.neural.models.registry import ModelNotAvailableError
from tests.pipelines.caption_fixtures import FAST_GENERATION, jpeg_bytes, one_thread, tiny_blip  # noqa: F401


def _images(n):
    return [Image.open(io.BytesIO(jpeg_bytes((40 * k % 256, 90, 200 - 30 * k)))).convert("RGB") for k in range(n)]


def test_article_settings_are_the_overridable_defaults():
    assert GENERATION_DEFAULTS == {"max_length": 50, "min_length": 10, "num_beams": 5, "repetition_penalty": 1.2,
                                   "length_penalty": 1.0, "early_stopping": True}
    assert generation_settings({"num_beams": 3, "min_length": None})["num_beams"] == 3
    assert generation_settings({"min_length": None})["min_length"] == 10
    with pytest.raises(ValueError, match=r"min_length \(60\) is greater than max_length \(50\)"):
        generation_settings({"min_length": 60})
    with pytest.raises(ValueError, match="num_beams: expected a positive integer"):
        generation_settings({"num_beams": 0})


def test_batched_captions_match_one_by_one(tiny_blip, one_thread):  # noqa: F811
    images = _images(5)
    batched = BlipCaptioner(str(tiny_blip), generation=FAST_GENERATION, batch_size=2).caption(images)
    single = BlipCaptioner(str(tiny_blip), generation=FAST_GENERATION, batch_size=1)
    assert batched == [single.caption([im])[0] for im in images]
    assert all(isinstance(c, str) and c for c in batched)
    assert len(set(batched)) > 1                                 # the captions depend on the image


def test_defaults_and_description(tiny_blip, one_thread):  # noqa: F811
    captioner = BlipCaptioner(str(tiny_blip))
    described = captioner.describe()
    assert {k: described[k] for k in GENERATION_DEFAULTS} == GENERATION_DEFAULTS
    assert (described["model"], described["model_source"], described["device"]) == (str(tiny_blip), "local", "cpu")
    (caption,) = captioner.caption(_images(1))
    assert len(caption.split()) >= 5                             # min_length 10 tokens


def test_hub_model_offline_names_it_and_the_way_out(monkeypatch):
    import huggingface_hub.constants

    # Opik's pytest plugin imports huggingface_hub before tests/conftest.py sets HF_HUB_OFFLINE.
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelNotAvailableError) as err:
        BlipCaptioner(CAPTION_MODEL)
    message = str(err.value)
    assert CAPTION_MODEL in message and "local directory" in message and "save_pretrained" in message


def test_missing_path_and_non_blip_checkpoint(tmp_path):
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        BlipCaptioner(str(tmp_path / "no" / "such" / "model"))
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(ModelNotAvailableError, match="is a 'bert' checkpoint, not a BLIP captioning model"):
        BlipCaptioner(str(tmp_path / "bert"))


def test_bad_device_and_batch_size(tiny_blip):  # noqa: F811
    with pytest.raises(ValueError, match="batch_size"):
        BlipCaptioner(str(tiny_blip), batch_size=0)
    with pytest.raises(ValueError, match="not a torch device"):
        BlipCaptioner(str(tiny_blip), device="gpu-please")


def test_bfloat16_captions_on_cpu(tiny_blip, one_thread):  # noqa: F811
    """Half precision runs here too: the weights are bfloat16, the description says so, captions come."""
    captioner = BlipCaptioner(str(tiny_blip), generation=FAST_GENERATION, dtype="bfloat16")
    assert next(captioner.model.parameters()).dtype is torch.bfloat16 and captioner.describe()["dtype"] == "bfloat16"
    captions = captioner.caption(_images(3))
    assert len(captions) == 3 and all(isinstance(c, str) and c for c in captions)
    with pytest.raises(ValueError, match="float16 needs a CUDA device"):
        BlipCaptioner(str(tiny_blip), dtype="float16", device="cpu")

"""Model names resolve to hub ids, local paths or packaged weights, with clear errors."""
from pathlib import Path

import pytest

from opik_metrics.neural.models.registry import ModelNotAvailableError, offline_help, resolve_model


def test_hub_id_passes_through():
    r = resolve_model("roberta-large")
    assert (r.kind, r.source, r.hub_id) == ("hub", "roberta-large", "roberta-large")
    assert resolve_model("org/model").kind == "hub"


def test_local_directory_and_gguf_file(tmp_path: Path):
    assert resolve_model(str(tmp_path)).kind == "local"
    f = tmp_path / "m.Q4.gguf"
    f.write_bytes(b"GGUF")
    r = resolve_model(str(f))
    assert (r.source, r.gguf_file) == (str(tmp_path), "m.Q4.gguf")


def test_missing_path_is_a_clear_error(tmp_path: Path):
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        resolve_model(str(tmp_path / "nope"))


def test_packaged_minilm_points_at_real_weights():
    r = resolve_model("packaged:minilm")
    assert r.kind == "packaged" and (Path(r.source) / "config.json").is_file()
    assert r.hub_id == "sentence-transformers/all-MiniLM-L6-v2"


def test_packaged_smollm2_is_a_gguf_file():
    r = resolve_model("packaged:smollm2")
    assert r.gguf_file and r.gguf_file.endswith(".gguf")
    assert (Path(r.source) / r.gguf_file).stat().st_size > 50_000_000


def test_unknown_alias_and_bad_names():
    with pytest.raises(ValueError, match="known: packaged:minilm, packaged:smollm2"):
        resolve_model("packaged:gpt5")
    with pytest.raises(ValueError, match="non-empty string"):
        resolve_model("  ")


def test_offline_help_says_what_to_do():
    msg = offline_help("roberta-large")
    assert "roberta-large" in msg and "save_pretrained" in msg and "packaged:minilm" in msg
    encoder = offline_help("roberta-large", packaged=("minilm",), kind="text encoder")
    assert "holding a text encoder" in encoder and "packaged:minilm" in encoder and "smollm2" not in encoder
    clip = offline_help("openai/clip-vit-base-patch32", packaged=(), kind="CLIP checkpoint")
    assert "CLIP checkpoint" in clip and "no packaged model can do this" in clip and "packaged:" not in clip

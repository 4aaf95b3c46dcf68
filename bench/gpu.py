"""The model-backed benchmarks on one GPU: ours against its reference on the same card, inputs
and model in one run, each row naming the card and the peak GPU memory of both sides.

    timeout 540 .venv/bin/python -m bench --only gpu      # on the GPU machine, from the repo root

(about 5 minutes on an H100 with the model builds, by estimate: it has not run on a GPU yet; the
timeout leaves room under 9 minutes. ``--n N`` caps every section's items. Nothing is downloaded:
every model is built from its config with random weights, as the CPU benchmarks do.) Rows:

- BERTScore, a random roberta-large-shaped model cut at bert_score's layer 17 (built by
  ``bench_bertscore.roberta_large_shape``), 20,000 ``realistic_pairs``: ``BERTScore.score_batch``
  against bert_score on the same model object (``bert_score.utils.bert_cos_score_idf``, the
  function ``BERTScorer.score`` calls, given our loaded encoder and bert_score's own tokenizer;
  equal to 1e-6, target 1.5x); against the bare forward pass over our tokens in our batches
  (``bench_bertscore.floor``, target 0.9); ours with ``dtype="bfloat16"`` against bert_score in
  float32 (target 3x; the row names the largest absolute F1 difference, "identical" means within
  ``BF16_F1_TOL``).
- Perplexity, a random model of SmolLM2-135M's shape (30 layers, hidden 576, vocab 49,152; a small
  byte-level BPE as its tokenizer): ``Perplexity.score_batch`` against the bare forward calls over
  the same batches (``bench_perplexity.bare_forward``, target 0.9) and against ``evaluate``'s loop
  (``bench_perplexity.evaluate_loop``, target 1); tokens per second.
- CLIPScore, a random CLIP of ViT-B/32's shape (``bench_clipscore.build_clip_b32``), 2,000 items
  with 5 references, images fetched from 127.0.0.1 (``DELAY`` s a request; 250 distinct JPEGs under
  2,000 URLs, and fresh URLs for every run, so every run fetches every image): ``score_batch`` against
  the bare batched forward passes (``bench_clipscore.Bare``, fetching each batch's images 8 at a
  time, as our fetcher does; target 0.9).
- The caption pipeline, a random BLIP of blip-image-captioning-base's shape
  (``bench_caption.build_blip_base``), 256 JPEGs from 127.0.0.1: ``opik-metrics caption`` end to
  end in a child process against a bare batched ``generate`` loop in another
  (``bench_caption.run_ours`` / ``run_bare``; target 0.9), start to exit and steady state, images/s.

Timing: wall seconds, with ``torch.cuda.synchronize()`` before a clock is read; one warm-up per side
on a few items, then ``repeats`` runs, sides alternating, the best counts. ratio = reference time /
our time. Peak memory of a side (MB): the weights of the model(s) it uses plus the most it
allocated above what was on the card when it started (``torch.cuda.max_memory_allocated`` after
``reset_peak_memory_stats``), so the other side's model, held at the same time, does not count; the
caption children report ``max_memory_allocated`` of their own process. On the CPU: "-".

Without CUDA, ``main()`` runs tiny shapes on a handful of items (the test suite does, so this file
cannot rot): the rows and agreement checks then mean something, the speeds nothing.

Why ``make bench`` leaves it out: on a CPU machine it would repeat the CPU benchmarks on toy models,
and on a GPU machine its 20,000-pair sizes are a separate, explicit run; ``--only gpu`` runs it.
"""
from __future__ import annotations

import os

import bench.offline  # noqa: F401  (before anything reads the environment)

import io  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Sequence  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench import bench_bertscore, bench_caption, bench_clipscore, bench_perplexity  # noqa: E402
from opik_metrics.core.table import format_table  # noqa: E402
from tests.corpus import realistic_pairs  # noqa: E402

TARGET_VS_BERT_SCORE = 1.5
TARGET_FLOOR = 0.9          # every "vs the bare forward pass / loop" row: at least 0.9 of its speed
TARGET_BF16 = 3.0
TARGET_EVALUATE = 1.0
TOL = 1e-6                  # float32 BERTScore against bert_score, absolute
BF16_F1_TOL = 0.01          # bfloat16 BERTScore F1 against bert_score's float32 F1, absolute
DELAY = 0.03                # seconds the image server waits before each answer (a real fetch's latency)
FETCH_WORKERS = 8           # the bare CLIP loop's parallel downloads (our ImageFetcher's default)
SECTIONS = ("bertscore", "perplexity", "clipscore", "caption")
# Runs the console script (so the command is the user's) and records the process's peak GPU memory.
_PEAK_WRAPPER = ("import json, runpy, sys\n"
                 "peak_file, script = sys.argv[1], sys.argv[2]\n"
                 "sys.argv = [script, *sys.argv[3:]]\n"
                 "try:\n"
                 "    runpy.run_path(script, run_name='__main__')\n"
                 "finally:\n"
                 "    torch = sys.modules.get('torch')\n"
                 "    cuda = torch is not None and torch.cuda.is_available()\n"
                 "    with open(peak_file, 'w') as f:\n"
                 "        json.dump(torch.cuda.max_memory_allocated() / 2**20 if cuda else None, f)\n")


@dataclass(frozen=True)
class Sizes:
    """How many items each section scores."""

    pairs: int              # BERTScore pairs
    texts: int              # perplexity texts
    images: int             # CLIPScore items (one image, a caption and 5 references each)
    distinct_images: int    # distinct JPEGs behind the CLIPScore URLs
    captions: int           # images captioned by the caption pipeline

    def capped(self, n: int | None) -> "Sizes":
        if n is None:
            return self
        return Sizes(*(min(v, n) for v in (self.pairs, self.texts, self.images, self.distinct_images, self.captions)))


FULL = Sizes(pairs=20_000, texts=4_000, images=2_000, distinct_images=250, captions=256)
TINY = Sizes(pairs=16, texts=16, images=8, distinct_images=4, captions=4)


class Device:
    """The card every row runs on: the first CUDA device when present, else the CPU."""

    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available()
        self.torch = "cuda" if self.cuda else "cpu"
        self.name = torch.cuda.get_device_name(0) if self.cuda else "cpu"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def clock(self) -> float:
        """Wall seconds once the GPU has finished what it was given."""
        self.sync()
        return time.perf_counter()

    def side(self, fn: Callable[[], Any], peaks: dict[str, float], key: str, weights_mb: float) -> Callable[[], Any]:
        """``fn`` ending only when the GPU is done, recording its peak memory under ``peaks[key]``
        (the highest over runs): ``weights_mb`` plus the most allocated above the start."""
        def run() -> Any:
            if not self.cuda:
                return fn()
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            out = fn()
            torch.cuda.synchronize()
            used = weights_mb + (torch.cuda.max_memory_allocated() - before) / 2**20
            peaks[key] = max(peaks.get(key, 0.0), used)
            return out
        return run


def weights_mb(*models: Any) -> float:
    """MB of the parameters and buffers of ``models`` (a tensor shared between them counted once)."""
    seen: dict[int, int] = {}
    for model in models:
        for t in [*model.parameters(), *model.buffers()]:
            seen[t.data_ptr()] = t.numel() * t.element_size()
    return sum(seen.values()) / 2**20


def _row(name: str, count: int, ours_s: float, ref_s: float, target: float, identical: bool, dev: Device,
         peaks: tuple[float | None, float | None], **extra: Any) -> dict:
    """One result in the format of the other benchmarks, plus the card and both sides' peak memory."""
    return {"benchmark": name, "ours_per_s": count / ours_s, "reference_per_s": count / ref_s,
            "ratio": ref_s / ours_s, "target": target, "identical": bool(identical), "device": dev.name,
            "peak_memory_mb": list(peaks), **extra}


# --- BERTScore ------------------------------------------------------------------------------------

def _bertscore_array(results: list[list[Any]]) -> np.ndarray:
    rows = [{s.name: s.value for s in item} for item in results]
    return np.array([[r["BERTPrecision"], r["BERTRecall"], r["BERTF1"]] for r in rows], dtype=np.float64)


def bertscore_rows(dev: Device, tiny: bool, sizes: Sizes, repeats: int, tmp: Path) -> list[dict]:
    from collections import defaultdict

    from bert_score.utils import bert_cos_score_idf, get_tokenizer

    from opik_metrics import BERTScore

    n = sizes.pairs
    preds, refs = realistic_pairs(n)
    start = time.perf_counter()
    if tiny:
        from tests.neural.tiny_models import build_roberta
        folder, layer, shape = str(build_roberta(tmp / "roberta", layers=3)), 2, "tiny random RoBERTa, layer 2"
    else:
        folder, layer = bench_bertscore.roberta_large_shape(tmp / "roberta-large-shape"), 17
        shape = "random roberta-large shape, layer 17"
    ours = BERTScore(model=folder, num_layers=layer, device=dev.torch, track=False)
    half = BERTScore(model=folder, num_layers=layer, device=dev.torch, dtype="bfloat16", track=False)
    model = ours.engine.embedder.encoder.model
    tokenizer = get_tokenizer(folder, use_fast=False)          # as BERTScorer loads it
    idf = defaultdict(lambda: 1.0)                             # as BERTScorer.score builds it without idf
    idf[tokenizer.sep_token_id] = 0
    idf[tokenizer.cls_token_id] = 0
    print(f"  [bertscore] built and loaded {shape} in {time.perf_counter() - start:.1f}s", flush=True)

    def theirs(p: list[str], r: list[str]) -> np.ndarray:
        """bert_score's P, R, F on our loaded model (BERTScorer.score's call, single references)."""
        return bert_cos_score_idf(model, r, p, tokenizer, idf, batch_size=64, device=dev.torch).double().numpy()

    def run(metric: Any, p: list[str], r: list[str]) -> np.ndarray:
        metric.engine.clear_cache()
        return _bertscore_array(metric.score_batch(p, r))

    w = min(n, 8)          # warm-up: first-call allocations and kernels
    run(ours, preds[:w], refs[:w])
    run(half, preds[:w], refs[:w])
    theirs(preds[:w], refs[:w])
    floor = bench_bertscore.floor(ours.engine, preds + refs)
    w32, w16 = weights_mb(model), weights_mb(half.engine.embedder.encoder.model)
    peaks: dict[str, float] = {}
    best, out = bench_bertscore.race({
        "ours": dev.side(lambda: run(ours, preds, refs), peaks, "ours", w32),
        "bert_score": dev.side(lambda: theirs(preds, refs), peaks, "bert_score", w32),
        "floor": dev.side(floor, peaks, "floor", w32),
        "bfloat16": dev.side(lambda: run(half, preds, refs), peaks, "bfloat16", w16)}, repeats)
    want = out["bert_score"]
    diff = float(np.abs(out["ours"] - want).max())
    f1_diff = float(np.abs(out["bfloat16"][:, 2] - want[:, 2]).max())
    print(f"  [bertscore] ours {best['ours']:.2f}s, bert_score {best['bert_score']:.2f}s, bare forward "
          f"{best['floor']:.2f}s, ours bfloat16 {best['bfloat16']:.2f}s; max |diff| vs bert_score {diff:.1e}, "
          f"bfloat16 max |F1 diff| {f1_diff:.1e}", flush=True)
    label = f"{shape}, {n} pairs"
    return [
        _row(f"bertscore vs bert_score on the same model object ({label}, float32)", n, best["ours"],
             best["bert_score"], TARGET_VS_BERT_SCORE, diff <= TOL, dev,
             (peaks.get("ours"), peaks.get("bert_score")), max_abs_diff=diff),
        _row(f"bertscore vs the bare forward pass ({label}, float32)", n, best["ours"], best["floor"],
             TARGET_FLOOR, diff <= TOL, dev, (peaks.get("ours"), peaks.get("floor")), max_abs_diff=diff),
        _row(f"bertscore bfloat16 vs bert_score float32 ({label}; max |F1 diff| {f1_diff:.1e})", n,
             best["bfloat16"], best["bert_score"], TARGET_BF16, f1_diff <= BF16_F1_TOL, dev,
             (peaks.get("bfloat16"), peaks.get("bert_score")), max_abs_f1_diff=f1_diff),
    ]


# --- perplexity -----------------------------------------------------------------------------------

def build_smollm2_shape(folder: Path) -> Path:
    """A random-weight Llama of SmolLM2-135M's shape (its config's sizes; tied embeddings) with a
    small byte-level BPE tokenizer, saved for ``from_pretrained``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.neural.lm_fixtures import build_tokenizer

    tok = build_tokenizer()
    config = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                         rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = LlamaForCausalLM(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def perplexity_rows(dev: Device, tiny: bool, sizes: Sizes, repeats: int, tmp: Path) -> list[dict]:
    from opik_metrics import Perplexity
    from opik_metrics.neural.lm.perplexity import PerplexityScorer
    from opik_metrics.neural.models.causal_lm import clear_cache, load_causal_lm

    n = sizes.texts
    texts, _ = realistic_pairs(n)
    start = time.perf_counter()
    if tiny:
        from tests.neural.lm_fixtures import build_llama
        folder, shape = build_llama(tmp / "llama", layers=2, max_positions=512), "tiny random Llama"
    else:
        folder, shape = build_smollm2_shape(tmp / "smollm2-shape"), "random SmolLM2-135M shape"
    lm = load_causal_lm(str(folder), device=dev.torch)
    metric = Perplexity(model=lm, track=False)       # the metric's defaults (batch 16)
    scorer = PerplexityScorer(lm)                    # the same defaults: the batches the bare side runs
    print(f"  [perplexity] built and loaded {shape} in {time.perf_counter() - start:.1f}s", flush=True)

    w = sorted(texts, key=len)[-min(n, 16):]     # warm-up on the longest batch
    metric.score_batch(w)
    bench_perplexity.bare_forward(scorer, w, dev.clock)
    bench_perplexity.evaluate_loop(lm.model, lm.tokenizer, w)
    weights = weights_mb(lm.model)
    peaks: dict[str, float] = {}
    best, out = bench_bertscore.race({
        "ours": dev.side(lambda: metric.score_batch(texts), peaks, "ours", weights),
        "evaluate": dev.side(lambda: bench_perplexity.evaluate_loop(lm.model, lm.tokenizer, texts), peaks,
                             "evaluate", weights)}, repeats)
    bare_runs = [dev.side(lambda: bench_perplexity.bare_forward(scorer, texts, dev.clock), peaks, "bare", weights)()
                 for _ in range(repeats)]
    best["bare"], out["bare"] = min(bare_runs, key=lambda run: run[0])     # its forward calls' seconds alone
    ours = [item[0].value for item in out["ours"]]
    tokens = sum(item[0].metadata["n_tokens"] for item in out["ours"])
    rel = bench_perplexity.max_rel_diff
    d_bare, d_eval = rel(ours, out["bare"]), rel(ours, out["evaluate"])
    print(f"  [perplexity] ours {best['ours']:.2f}s, bare forward calls {best['bare']:.2f}s, evaluate's loop "
          f"{best['evaluate']:.2f}s; max relative difference: bare {d_bare:.1e}, evaluate {d_eval:.1e}", flush=True)
    clear_cache()        # the model goes when this function returns
    label = f"{shape}, {n} texts, {tokens} tokens, tokens/s"
    return [
        _row(f"perplexity vs the bare forward calls ({label})", tokens, best["ours"], best["bare"], TARGET_FLOOR,
             d_bare < bench_perplexity.RTOL, dev, (peaks.get("ours"), peaks.get("bare")), max_rel_diff=d_bare),
        _row(f"perplexity vs evaluate's loop ({label})", tokens, best["ours"], best["evaluate"], TARGET_EVALUATE,
             d_eval < bench_perplexity.RTOL, dev, (peaks.get("ours"), peaks.get("evaluate")), max_rel_diff=d_eval),
    ]


# --- CLIPScore ------------------------------------------------------------------------------------

def _jpeg(image: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def clipscore_rows(dev: Device, tiny: bool, sizes: Sizes, repeats: int, tmp: Path, delay: float) -> list[dict]:
    import requests
    from PIL import Image

    from opik_metrics import CLIPScore
    from opik_metrics.images.fetch import CACHE_ENV
    from opik_metrics.neural.clip.model import clear_cache
    from opik_metrics.pipelines.captioning.offline import ImageServer

    n = sizes.images
    start = time.perf_counter()
    if tiny:
        from tests.neural.tiny_clip import build_tiny_clip
        folder, shape = str(build_tiny_clip(tmp / "clip", seed=2)), "tiny random CLIP"
    else:
        folder, shape = str(bench_clipscore.build_clip_b32(tmp / "clip-b32-shape")), "random ViT-B/32 shape"
    old_cache = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp / "clip-image-cache")    # ours caches what it fetches here
    try:
        metric = CLIPScore(model=folder, device=dev.torch, track=False)
        bare = bench_clipscore.Bare(folder, metric.engine.batch_size, device=dev.torch)
        caps, refs = bench_clipscore.distinct_caption_sets(n, bare.tokenizer)
        bodies = [_jpeg(bench_clipscore.make_image(k)) for k in range(min(n, sizes.distinct_images))]
        print(f"  [clipscore] built and loaded {shape} (both sides), {n} items and {len(bodies)} distinct JPEGs in "
              f"{time.perf_counter() - start:.1f}s", flush=True)
        w = min(n, 16)
        tags = ["warm-ours", "warm-bare"] + [f"{side}-{rep}" for rep in range(repeats) for side in ("ours", "bare")]
        routes = {f"/{tag}/{k:05d}.jpg": (200, {"Content-Type": "image/jpeg"}, bodies[k % len(bodies)], delay)
                  for tag in tags for k in range(n)}
        pool = ThreadPoolExecutor(FETCH_WORKERS)

        def get(url: str) -> Image.Image:
            response = requests.get(url, timeout=30)
            response.raise_for_status()
            return Image.open(io.BytesIO(response.content)).convert("RGB")

        def open_chunk(urls: Sequence[str]) -> list[Image.Image]:
            return list(pool.map(get, urls))

        weights = {"ours": weights_mb(metric.engine.clip.model), "bare": weights_mb(bare.model)}
        peaks: dict[str, float] = {}
        best = {"ours": float("inf"), "bare": float("inf")}
        out: dict[str, np.ndarray] = {}
        with pool, ImageServer(routes, lifetime_s=3600.0, max_requests=len(routes) + 100) as server:
            def urls(tag: str, count: int) -> list[str]:
                return [server.url(f"/{tag}/{k:05d}.jpg") for k in range(count)]

            bench_clipscore.ours_scores(metric, caps[:w], refs[:w], urls("warm-ours", w))
            bare(caps[:w], refs[:w], urls("warm-bare", w), open_chunk=open_chunk)
            for rep in range(repeats):
                for side in (["ours", "bare"] if rep % 2 == 0 else ["bare", "ours"]):
                    these = urls(f"{side}-{rep}", n)
                    if side == "ours":
                        fn = lambda: bench_clipscore.ours_scores(metric, caps, refs, these)  # noqa: E731
                    else:
                        fn = lambda: bare(caps, refs, these, open_chunk=open_chunk)  # noqa: E731
                    t = time.perf_counter()
                    out[side] = dev.side(fn, peaks, side, weights[side])()
                    best[side] = min(best[side], time.perf_counter() - t)
        diff = float(np.abs(out["ours"] - out["bare"]).max())
        print(f"  [clipscore] ours {best['ours']:.2f}s, bare {best['bare']:.2f}s; max |diff| {diff:.1e}", flush=True)
        clear_cache()    # the models go when this function returns
    finally:
        if old_cache is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = old_cache
    name = (f"clipscore vs bare CLIP forward passes ({shape}, {n} items x {bench_clipscore.REFS_PER_ITEM} refs, "
            f"images from 127.0.0.1 at {delay * 1000:.0f} ms a request)")
    return [_row(name, n, best["ours"], best["bare"], TARGET_FLOOR, diff <= bench_clipscore.TOLERANCE, dev,
                 (peaks.get("ours"), peaks.get("bare")), max_abs_diff=diff)]


# --- the caption pipeline -------------------------------------------------------------------------

def caption_rows(dev: Device, tiny: bool, sizes: Sizes, repeats: int, tmp: Path, delay: float) -> list[dict]:
    from opik_metrics.pipelines.captioning.offline import ImageServer, build_tiny_blip, write_caption_tsv
    from tests.captions import caption_sets

    n, batch = sizes.captions, bench_caption.BATCH
    start = time.perf_counter()
    if tiny:
        folder, shape = build_tiny_blip(tmp / "blip"), "tiny random BLIP"
    else:
        folder, shape = bench_caption.build_blip_base(tmp / "blip-base-shape"), "random BLIP-base shape"
    routes = {f"/img/{k:04d}.jpg": (200, {"Content-Type": "image/jpeg"}, bench_caption.jpeg(k), delay)
              for k in range(n)}
    print(f"  [caption] built {shape} and {n} JPEGs in {time.perf_counter() - start:.1f}s", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "bare": []}
    with ImageServer(routes, lifetime_s=3600.0, max_requests=4 * n * repeats + 100) as server:
        urls = [server.url(path) for path in routes]
        references, _ = caption_sets(n, 1, seed=5)
        tsv = write_caption_tsv(tmp / "captions.tsv", zip(references, urls))
        for rep in range(repeats):
            for side in (["ours", "bare"] if rep % 2 == 0 else ["bare", "ours"]):
                if side == "ours":
                    work = tmp / f"caption-ours-{rep}"
                    work.mkdir()
                    peak_file = work / "peak.json"
                    got = bench_caption.run_ours(folder, tsv, work, n, batch, launcher=(
                        sys.executable, "-c", _PEAK_WRAPPER, str(peak_file), bench_caption.CLI))
                    got["peak_memory_mb"] = json.loads(peak_file.read_text(encoding="utf-8"))
                else:
                    got = bench_caption.run_bare(folder, urls, tmp, batch)
                runs[side].append(got)
    ours, bare = bench_caption.best_run(runs["ours"]), bench_caption.best_run(runs["bare"])
    same = sum(ours["captions"].get(u) == c for u, c in bare["captions"].items())
    print(f"  [caption] ours {ours['wall']:.1f}s start to exit (run {ours['run']:.1f}s, generation "
          f"{ours['generate']:.1f}s), bare {bare['wall']:.1f}s (loop {bare['loop']:.1f}s, generation "
          f"{bare['generate']:.1f}s); captions equal on {same}/{n} images", flush=True)
    peaks = (ours["peak_memory_mb"], bare["peak_memory_mb"])
    label = f"{shape}, {n} JPEGs from 127.0.0.1 at {delay * 1000:.0f} ms a request, images/s"
    return [_row(f"caption command vs bare generate loop ({label}), {what}", n, o, b, TARGET_FLOOR, same == n,
                 dev, peaks, seconds=[o, b])
            for what, o, b in [("start to exit", ours["wall"], bare["wall"]),
                               ("steady state", ours["run"], bare["loop"])]]


# --- the run --------------------------------------------------------------------------------------

def _memory(row: dict) -> str:
    return " / ".join("-" if v is None else f"{v:,.0f}" for v in row["peak_memory_mb"])


def main(n: int | None = None, tiny: bool | None = None, repeats: int = 1, sections: Sequence[str] = SECTIONS,
         delay: float = DELAY) -> list[dict]:
    """Run the ``sections``; print and return the rows. ``tiny``: small models on a handful of
    items (default: when there is no CUDA); ``n`` caps every section's item count."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    dev = Device()
    if tiny is None:
        tiny = not dev.cuda
        if tiny:
            print("no CUDA here: tiny models on a handful of items, on the CPU (the rows and their checks "
                  "run; the speeds mean nothing)", flush=True)
    sizes = (TINY if tiny else FULL).capped(n)
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"sections: unknown {sorted(unknown)}; choose from {list(SECTIONS)}")
    print(f"device: {dev.name}; torch {torch.__version__}; sizes {sizes}; repeats {repeats}", flush=True)
    rows: list[dict] = []
    failed: list[str] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for section in sections:
            t = time.perf_counter()
            try:
                if section == "bertscore":
                    rows += bertscore_rows(dev, tiny, sizes, repeats, tmp)
                elif section == "perplexity":
                    rows += perplexity_rows(dev, tiny, sizes, repeats, tmp)
                elif section == "clipscore":
                    rows += clipscore_rows(dev, tiny, sizes, repeats, tmp, delay)
                else:
                    rows += caption_rows(dev, tiny, sizes, repeats, tmp, delay)
            except Exception:  # noqa: BLE001 - one section's failure must not lose the others' rows
                traceback.print_exc()
                failed.append(section)
            print(f"  [{section}] {time.perf_counter() - t:.0f}s (all so far {time.perf_counter() - started:.0f}s)",
                  flush=True)
    print(format_table(["benchmark", "device", "ours/s", "reference/s", "ratio", "target", "identical",
                        "peak MB ours / reference"],
                       [[r["benchmark"], r["device"], r["ours_per_s"], r["reference_per_s"], r["ratio"], r["target"],
                         "yes" if r["identical"] else "NO", _memory(r)] for r in rows], digits=2), flush=True)
    if failed:
        raise RuntimeError(f"bench/gpu.py: sections failed (see above): {', '.join(failed)}")
    return rows


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))

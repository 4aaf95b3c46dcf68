"""Cost of our CLIPScore over the bare CLIP forward passes on the same inputs: the path a user calls,
``CLIPScore(model=folder, track=False).score_batch(captions, references, images=images)``, against
a computation written here with transformers alone (the issue's target: at most 1.2x the bare time).

The bare side does all the work ours must do to get the same numbers, and nothing more: the same
image processor (``AutoImageProcessor(backend="pil")``, as the engine loads it), ``get_image_features``
on ``batch`` images at a time, the prompt "A photo depicts " before every caption and reference,
the same tokenizer with truncation to CLIP's 77-token window, ``get_text_features`` on ``batch``
texts at a time (sorted by length, as ours batches them, so both pad alike), then in torch: unit
vectors, cosine, CLIP-S = 2.5 * max(cos, 0) and RefCLIP-S = harmonic mean of CLIP-S and the best
caption-reference cosine floored at 0. Row 1 hands both sides PIL images; row 2 JPEG file paths
(the bare side opens them with ``Image.open(path).convert("RGB")``).

Model: no hub here, so a random-weight CLIP of openai/clip-vit-base-patch32's shape (ViT-B/32
vision tower, 12-layer 512-wide text tower, 512-d projections, vocab 49408) saved with
``save_pretrained`` into a temporary folder with a CLIP tokenizer (the byte-level BPE of
``tests/neural/tiny_clip.py``, with whole-word merges for the caption words so that captions take
about as many tokens as under real CLIP) and an image processor configured like openai's.

Inputs: ``n`` images of COCO-like sizes (320x240 to 1024x768), each with a caption and 5
references from ``tests.captions.caption_sets``. Ours embeds each distinct text and image once, so
every text here tokenises differently from every other (items with a repeat are skipped) and every
image is its own object/file: no side gets work for free.

Timing: ``torch.set_num_threads(threads)`` for both; one warm-up run per side on the first block;
then items go in blocks of ``block``, and per block the sides alternate (rotating who goes first)
``repeats`` times and the best run counts (load on a shared machine comes in bursts); a side's time
is the sum over blocks. ratio = our time / bare time: a cost, lower is better (``lower_is_better``).
Printed beside it, as checks on the noise: the CPU-time ratio (process time, same best-of), and
each side's best time outside ``get_image_features``/``get_text_features`` (timed by wrapping them
on the model instances): the part of the cost that is not the forward passes themselves.
"""
from __future__ import annotations

import os

import bench.offline  # noqa: F401  (before anything reads the environment)

import re  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Sequence  # noqa: E402
from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from tests import captions as caption_words  # noqa: E402
from tests.captions import caption_sets  # noqa: E402
from tests.neural import tiny_clip  # noqa: E402

TARGET = 1.2          # ours at most 1.2x the bare forward passes
TOLERANCE = 1e-5      # absolute, on CLIP-S (0..2.5), RefCLIP-S and the raw cosines
PROMPT = "A photo depicts "
WEIGHT = 2.5
REFS_PER_ITEM = 5
SIZES = [(640, 480), (480, 640), (640, 427), (500, 375), (640, 360), (800, 600), (1024, 768), (320, 240),
         (427, 640), (612, 612)]
OPENAI_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_STD = [0.26862954, 0.26130258, 0.27577711]


# --- the model --------------------------------------------------------------------------------

def _caption_vocabulary_words() -> tuple[str, ...]:
    """tiny_clip's merged words plus every word of the caption generator's phrases."""
    phrases = (PROMPT, *caption_words.SUBJECTS, *caption_words.VERBS, *caption_words.OBJECTS, *caption_words.EXTRAS)
    words = [w for p in phrases for w in re.findall(r"[a-z]+", p.lower())]
    return tuple(dict.fromkeys([*tiny_clip.MERGED_WORDS, *words]))


def build_clip_b32(folder: str | Path, seed: int = 0) -> Path:
    """A random-weight CLIP of ViT-B/32's shape with its tokenizer and openai-style image
    processor, saved in ``folder`` for ``from_pretrained``."""
    import json

    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPProcessor, CLIPTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # tiny_clip.vocabulary() builds its merges from the module's MERGED_WORDS: give it the caption words
    with mock.patch.object(tiny_clip, "MERGED_WORDS", _caption_vocabulary_words()):
        vocab, merges = tiny_clip.vocabulary()
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    tokenizer = CLIPTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"),
                              model_max_length=tiny_clip.WINDOW)
    images = CLIPImageProcessorPil(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224},
                                   do_center_crop=True, do_resize=True, resample=3, image_mean=OPENAI_MEAN,
                                   image_std=OPENAI_STD, do_convert_rgb=True)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    vocab_size = 49408
    assert vocab_size >= len(tokenizer), (vocab_size, len(tokenizer))
    text = dict(vocab_size=vocab_size, hidden_size=512, intermediate_size=2048, num_hidden_layers=12,
                num_attention_heads=8, max_position_embeddings=tiny_clip.WINDOW,
                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                pad_token_id=tokenizer.pad_token_id)
    vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                  image_size=224, patch_size=32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=512))
    model.eval().save_pretrained(folder)
    return folder


# --- the inputs -------------------------------------------------------------------------------

def make_image(k: int) -> Image.Image:
    """A COCO-sized RGB picture: a colour gradient with noise and a few shapes."""
    rng = np.random.default_rng(k)
    w, h = SIZES[k % len(SIZES)]
    x = np.linspace(0.0, 1.0, w)[None, :, None]
    y = np.linspace(0.0, 1.0, h)[:, None, None]
    base = rng.uniform(0, 255, 3) * (1 - x) + rng.uniform(0, 255, 3) * y
    arr = np.clip(base + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)
    image = Image.fromarray(arr, "RGB")
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
        box = [x0, y0, x0 + int(rng.integers(10, w // 3)), y0 + int(rng.integers(10, h // 3))]
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill)
    return image


def distinct_caption_sets(n: int, tokenizer: Any, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """``n`` items (caption + 5 references) from ``caption_sets`` whose texts all tokenise
    differently (ours embeds equal token sequences once; items with a repeat are skipped)."""
    seen: set[tuple[int, ...]] = set()
    caps: list[str] = []
    refs: list[list[str]] = []
    pool_c, pool_r = caption_sets(20 * n + 100, REFS_PER_ITEM, seed=seed)
    for cap, group in zip(pool_c, pool_r):
        texts = [cap, *group]
        keys = [tuple(ids) for ids in tokenizer([PROMPT + t for t in texts], truncation=True,
                                                max_length=tiny_clip.WINDOW)["input_ids"]]
        if len(set(keys)) < len(keys) or seen.intersection(keys):
            continue
        seen.update(keys)
        caps.append(cap)
        refs.append(list(group))
        if len(caps) == n:
            return caps, refs
    raise RuntimeError(f"only {len(caps)} items with distinct texts; ask for fewer than {n}")


# --- the two sides ----------------------------------------------------------------------------

def _pooled(output: Any) -> torch.Tensor:
    """transformers 5's get_*_features return an output object; earlier versions the tensor."""
    return output if isinstance(output, torch.Tensor) else output.pooler_output


class Bare:
    """CLIPScore and RefCLIP-S computed with transformers and torch only."""

    def __init__(self, folder: str, batch: int, device: str = "cpu") -> None:
        from transformers import AutoImageProcessor, AutoTokenizer, CLIPModel

        self.device = torch.device(device)
        self.model = CLIPModel.from_pretrained(folder).eval().to(self.device)
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.processor = AutoImageProcessor.from_pretrained(folder, backend="pil")
        self.pad_id = self.tokenizer.pad_token_id
        self.batch = batch

    def __call__(self, captions: list[str], references: list[list[str]], images: Sequence[Any],
                 opener: Callable[[Any], Image.Image] | None = None,
                 open_chunk: Callable[[Sequence[Any]], list[Image.Image]] | None = None) -> np.ndarray:
        """``[n, 4]``: cosine, CLIP-S, best reference cosine, RefCLIP-S per item. ``opener`` opens
        one input at a time; ``open_chunk`` a batch's inputs at once (bench/gpu.py: URLs fetched
        in parallel)."""
        b = self.batch
        with torch.inference_mode():
            feats = []
            for lo in range(0, len(images), b):
                chunk = images[lo:lo + b]
                if open_chunk is not None:
                    chunk = open_chunk(chunk)
                elif opener is not None:
                    chunk = [opener(x) for x in chunk]
                pixels = self.processor(images=chunk, return_tensors="pt")["pixel_values"].to(self.device)
                feats.append(_pooled(self.model.get_image_features(pixel_values=pixels)))
            img = torch.nn.functional.normalize(torch.cat(feats), dim=-1)

            texts = [PROMPT + c for c in captions] + [PROMPT + r for group in references for r in group]
            ids = self.tokenizer(texts, truncation=True, max_length=tiny_clip.WINDOW)["input_ids"]
            order = sorted(range(len(ids)), key=lambda k: len(ids[k]), reverse=True)
            txt = torch.empty((len(ids), img.shape[1]), device=self.device)
            for lo in range(0, len(order), b):
                rows = order[lo:lo + b]
                seqs = [torch.tensor(ids[k]) for k in rows]
                input_ids = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=self.pad_id)
                mask = torch.nn.utils.rnn.pad_sequence([torch.ones_like(s) for s in seqs], batch_first=True)
                out = _pooled(self.model.get_text_features(input_ids=input_ids.to(self.device),
                                                           attention_mask=mask.to(self.device)))
                txt[rows] = torch.nn.functional.normalize(out, dim=-1)

            n = len(captions)
            cap, ref = txt[:n], txt[n:].view(n, REFS_PER_ITEM, -1)
            cos = (img * cap).sum(-1)
            clip = WEIGHT * cos.clamp_min(0)
            ref_cos = torch.einsum("nd,nrd->nr", cap, ref).amax(-1)
            r = ref_cos.clamp_min(0)
            total = clip + r
            ref_clip = torch.where(total > 0, 2 * clip * r / total.where(total > 0, torch.ones_like(total)),
                                   torch.zeros_like(total))
            return torch.stack([cos, clip, ref_cos, ref_clip], 1).double().cpu().numpy()


def ours_scores(metric: Any, captions: list[str], references: list[list[str]], images: Sequence[Any]) -> np.ndarray:
    """The user's path; the same four numbers per item, from the results and their metadata."""
    out = []
    for clip, ref in metric.score_batch(captions, references, images=images):
        out.append([clip.metadata["cosine"], clip.value, ref.metadata["ref_cosine"], ref.value])
    return np.array(out, dtype=np.float64)


# --- timing -----------------------------------------------------------------------------------

class ForwardTimer:
    """Wraps a CLIP model's ``get_image_features``/``get_text_features`` (on the instance) and
    adds up the seconds spent in them, so a run splits into forward passes and everything else."""

    def __init__(self, model: Any) -> None:
        self.seconds = 0.0
        for name in ("get_image_features", "get_text_features"):
            setattr(model, name, self._timed(getattr(model, name)))

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        return run


def _race(sides: dict[str, tuple[Callable[[], object], ForwardTimer]],
          repeats: int) -> tuple[dict[str, dict[str, float]], dict[str, object]]:
    """Best-of-``repeats`` seconds per side (wall, CPU, outside the forward passes), sides
    alternating (rotating who goes first)."""
    names = list(sides)
    best = {k: {"wall": float("inf"), "cpu": float("inf"), "outside": float("inf")} for k in names}
    out: dict[str, object] = {}
    for rep in range(repeats):
        for k in names[rep % len(names):] + names[:rep % len(names)]:
            run, timer = sides[k]
            timer.seconds = 0.0
            start, cpu = time.perf_counter(), time.process_time()
            out[k] = run()
            wall = time.perf_counter() - start
            got = {"wall": wall, "cpu": time.process_time() - cpu, "outside": wall - timer.seconds}
            best[k] = {m: min(best[k][m], got[m]) for m in got}
    return best, out


def _row(name: str, n: int, times: dict[str, dict[str, float]], ours: np.ndarray, bare: np.ndarray) -> dict:
    diff = float(np.abs(ours - bare).max()) if ours.shape == bare.shape else float("inf")
    identical = diff <= TOLERANCE
    o, b = times["ours"], times["bare"]
    row = {"benchmark": name, "ours_per_s": n / o["wall"], "reference_per_s": n / b["wall"],
           "ratio": o["wall"] / b["wall"], "target": TARGET, "identical": identical, "lower_is_better": True}
    print(f"{name}: ours {row['ours_per_s']:.1f} items/s ({o['wall']:.2f}s), bare forward passes "
          f"{row['reference_per_s']:.1f} items/s ({b['wall']:.2f}s), cost ratio {row['ratio']:.3f}x "
          f"(target <= {TARGET}x; CPU-time ratio {o['cpu'] / b['cpu']:.3f}x; outside the forward passes: "
          f"ours {o['outside']:.3f}s, bare {b['outside']:.3f}s), max |diff| {diff:.1e}, "
          f"equal to {TOLERANCE:g}: {identical}", flush=True)
    return row


def main(n: int = 32, repeats: int = 3, threads: int | None = None, batch: int = 64, block: int = 16,
         paths: bool = True) -> list[dict]:
    """CLIPScore batch vs the bare forward passes on ``n`` items (5 references each), raced in
    blocks of ``block`` items; one row for PIL images and, with ``paths``, one for JPEG paths."""
    from transformers.utils import logging as hf_logging

    from opik_metrics.metrics.clipscore import CLIPScore

    hf_logging.disable_progress_bar()  # "Loading weights" bars; this runs in its own process
    threads = threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        folder = str(build_clip_b32(Path(tmp) / "clip-b32-shape"))
        metric = CLIPScore(model=folder, track=False, batch_size=batch)
        bare = Bare(folder, batch)
        timers = {"ours": ForwardTimer(metric.engine.clip.model), "bare": ForwardTimer(bare.model)}
        caps, refs = distinct_caption_sets(n, bare.tokenizer)
        images = [make_image(k) for k in range(n)]
        files = []
        if paths:
            for k, image in enumerate(images):
                files.append(str(Path(tmp) / f"image{k:04d}.jpg"))
                image.save(files[-1], quality=90)
        lengths = [len(x) for x in bare.tokenizer([PROMPT + t for t in caps + sum(refs, [])])["input_ids"]]
        print(f"  built and loaded a random ViT-B/32-shape CLIP in {time.perf_counter() - start:.1f}s; {n} items, "
              f"{n * (1 + REFS_PER_ITEM)} distinct texts ({np.mean(lengths):.1f} tokens on average, "
              f"max {max(lengths)}), torch threads {threads}, batch {batch}, blocks of {block} items", flush=True)

        w = min(n, block)  # warm-up: first-call allocations and kernels, once per side
        ours_scores(metric, caps[:w], refs[:w], images[:w])
        bare(caps[:w], refs[:w], images[:w])

        settings = [("PIL images", images, None)]
        if paths:
            settings.append(("JPEG paths", files, lambda p: Image.open(p).convert("RGB")))
        for label, inputs, opener in settings:
            # Blocks of items, each raced separately: on a shared machine load comes in bursts, and
            # short alternating runs give both sides the same exposure to them.
            times = {k: {"wall": 0.0, "cpu": 0.0, "outside": 0.0} for k in timers}
            got, want = [], []
            for lo in range(0, n, block):
                c, r, i = caps[lo:lo + block], refs[lo:lo + block], inputs[lo:lo + block]
                best, out = _race({"ours": (lambda c=c, r=r, i=i: ours_scores(metric, c, r, i), timers["ours"]),
                                   "bare": (lambda c=c, r=r, i=i: bare(c, r, i, opener), timers["bare"])}, repeats)
                for k in times:
                    for m in times[k]:
                        times[k][m] += best[k][m]
                got.append(out["ours"])
                want.append(out["bare"])
            rows.append(_row(f"clipscore batch vs bare CLIP forward ({label}, {n} items x {REFS_PER_ITEM} refs)",
                             n, times, np.vstack(got), np.vstack(want)))
    return rows


if __name__ == "__main__":
    main()

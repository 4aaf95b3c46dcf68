"""CLIPScore engine (Hessel et al. 2021, as their released code computes it): every caption and
reference is prefixed with the prompt ("A photo depicts "), tokenised with truncation to CLIP's
window; CLIP-S = w * max(cos(image, caption), 0); RefCLIP-S = harmonic mean of CLIP-S and the best
caption-reference cosine (floored at 0). Each distinct image and text is embedded once per call.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Iterator, Sequence

import torch

from opik_metrics.core import MetricInputError, Signature, ours, package_version
from opik_metrics.images import ImageFetcher, check_image_input, is_url, open_image
from opik_metrics.neural.clip.embed import ClipEmbedder, TextTokens
from opik_metrics.neural.clip.formulas import best_reference, check_weight, clip_s, ref_clip_s
from opik_metrics.neural.clip.keys import image_key
from opik_metrics.neural.clip.model import LoadedClip, load_clip

DEFAULT_MODEL = "openai/clip-vit-base-patch32"
DEFAULT_PROMPT = "A photo depicts "
DEFAULT_WEIGHT = 2.5


@dataclass(frozen=True)
class ClipScore:
    """One item's CLIPScore, the cosines behind it and why a value is what it is, if odd."""

    clip_score: float                         # w * max(cosine, 0)
    cosine: float                             # raw image-caption cosine (may be negative)
    ref_clip_score: float | None = None       # None when the item has no references
    ref_cosine: float | None = None           # raw best caption-reference cosine
    best_reference: int | None = None         # index of the reference with the highest cosine
    n_references: int = 0
    output_truncated: bool = False
    truncated_references: tuple[int, ...] = ()
    notes: tuple[str, ...] = field(default=())      # about CLIP-S (output truncated, negative cosine)
    ref_notes: tuple[str, ...] = field(default=())  # about the references (truncated, negative cosine)

    @property
    def reason(self) -> str | None:
        """Why CLIP-S took a defined value or was computed on cut text (None: nothing odd)."""
        return "; ".join(self.notes) if self.notes else None

    @property
    def ref_reason(self) -> str | None:
        """The same for RefCLIP-S, which also depends on CLIP-S."""
        notes = tuple(dict.fromkeys(self.notes + self.ref_notes))
        return "; ".join(notes) if notes else None

    @property
    def truncated(self) -> bool:
        return self.output_truncated or bool(self.truncated_references)


class ClipScoreEngine:
    """Scores captions against images (and optionally reference captions) with a CLIP model.

    ``model`` is a hub id, a local directory or a ``packaged:`` alias; ``fetcher`` reads image
    URLs through its disk cache (default: an :class:`ImageFetcher` on the default cache folder).
    """

    def __init__(self, model: str = DEFAULT_MODEL, prompt: str = DEFAULT_PROMPT, weight: float = DEFAULT_WEIGHT,
                 batch_size: int = 64, device: str | torch.device | None = None,
                 dtype: str | torch.dtype | None = None, fetcher: ImageFetcher | None = None) -> None:
        if not isinstance(prompt, str):
            raise ValueError(f"prompt must be a string (CLIPScore's is {DEFAULT_PROMPT!r}), got {prompt!r}")
        self.prompt = prompt
        self.weight = check_weight(weight)
        self.model_name = model
        self.clip: LoadedClip = load_clip(model, device=device, dtype=dtype)
        self.embedder = ClipEmbedder(self.clip, batch_size=batch_size)
        self._fetcher = fetcher
        self.signature = self._signature()

    @property
    def batch_size(self) -> int:
        return self.embedder.batch_size

    @property
    def fetcher(self) -> ImageFetcher:
        if self._fetcher is None:
            self._fetcher = ImageFetcher()
        return self._fetcher

    # --- configuration -------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """What makes a number reproducible, as plain values (goes into ScoreResult metadata)."""
        resolved = self.clip.resolved
        return {
            "model": self.model_name,
            "hub_id": resolved.hub_id,
            "model_source": resolved.source,
            "prompt": self.prompt,
            "weight": self.weight,
            "max_length": self.clip.window,
            "image_preprocessing": f"rgb+{self.clip.image_preprocessing}",   # convert("RGB"), then the processor
            "dtype": str(self.clip.dtype).removeprefix("torch."),
            "versions": {"transformers": package_version("transformers"), "torch": package_version("torch"),
                         "opik-metrics": ours()},
        }

    def _signature(self) -> Signature:
        s = self.settings()
        fields: dict[str, Any] = {"clipscore": s["model"]}
        if s["hub_id"] and s["hub_id"] != s["model"]:
            fields["hub"] = s["hub_id"]
        fields.update({"prompt": s["prompt"], "w": s["weight"], "max_len": s["max_length"],
                       "img": s["image_preprocessing"], "dtype": s["dtype"], "attn": self.clip.attn_implementation,
                       **s["versions"]})
        return Signature(fields, formats={"prompt": "prompt:{!r}"})

    # --- scoring ---------------------------------------------------------------------------
    def score(self, captions: Sequence[str], images: Sequence[Any],
              references: Sequence[str | Sequence[str] | None] | None = None, *,
              items: Sequence[int | None] | None = None, progress: bool | None = None) -> list[ClipScore]:
        """One :class:`ClipScore` per caption.

        ``images[i]`` is a local path, an http(s) URL, bytes or a PIL image; ``references[i]`` a
        string, a list of strings, or None (no RefCLIP-S for that item). ``items`` labels the
        positions in error messages (default 0, 1, ...; None: no item number).
        """
        caps, imgs, refs = _check_batch(captions, images, references)
        labels = list(range(len(caps))) if items is None else list(items)
        if len(labels) != len(caps):
            raise ValueError(f"items: got {len(labels)} labels for {len(caps)} captions")
        for k, image in enumerate(imgs):
            check_image_input(image, "image", labels[k])
        if not caps:
            return []
        image_rows, image_vectors = self._embed_images(imgs, labels, progress)
        texts = [self.prompt + c for c in caps] + [self.prompt + r for group in refs if group for r in group]
        text_vectors = self.embedder.embed_texts(texts, progress)
        return [self._item(image_vectors[image_rows[k]], caps[k], refs[k], text_vectors) for k in range(len(caps))]

    def _embed_images(self, images: list[Any], labels: Sequence[int | None],
                      progress: bool | None) -> tuple[list[int], torch.Tensor]:
        """Each item's row in the embeddings of the distinct images (each read and embedded once)."""
        rows: dict[Hashable, int] = {}
        first: list[int] = []       # position of each distinct image's first occurrence
        item_rows = []
        for k, image in enumerate(images):
            key = image_key(image)
            if key not in rows:
                rows[key] = len(first)
                first.append(k)
            item_rows.append(rows[key])
        urls = list(dict.fromkeys(images[k].strip() for k in first if is_url(images[k])))
        fetcher = self.fetcher if urls else None
        if fetcher is not None and len(urls) > 1:
            fetcher.fetch_many(urls, progress=bool(progress))  # in parallel into the disk cache

        def opened() -> Iterator[Any]:
            for k in first:
                # upright=False: converted to RGB only, as Hessel et al.'s code reads images (no EXIF
                # rotation, alpha dropped rather than flattened on white): their numbers, not BLIP's view
                yield open_image(images[k], field="image", item=labels[k], fetcher=fetcher, upright=False)

        return item_rows, self.embedder.embed_images(opened(), len(first), progress)

    def _item(self, image_vec: torch.Tensor, caption: str, refs: list[str] | None,
              texts: dict[str, tuple[torch.Tensor, TextTokens]]) -> ClipScore:
        cap_vec, cap_tokens = texts[self.prompt + caption]
        cosine = _cosine(image_vec, cap_vec)
        value = clip_s(cosine, self.weight)
        notes = []
        if not caption.strip():
            notes.append("output is empty: the prompt alone was scored")
        if cap_tokens.truncated:
            notes.append(f"output truncated to {self.clip.window} tokens (the model's window, prompt included)")
        if cosine < 0:
            notes.append(f"image-caption cosine {cosine:.4f} is negative: CLIP-S is 0 (w * max(cos, 0))")
        if refs is None:
            return ClipScore(value, cosine, output_truncated=cap_tokens.truncated, notes=tuple(notes))
        ref_notes, cut, cosines = [], [], []
        for k, ref in enumerate(refs):
            ref_vec, ref_tokens = texts[self.prompt + ref]
            cosines.append(_cosine(cap_vec, ref_vec))
            label = "reference" if len(refs) == 1 else f"reference {k}"
            if not ref.strip():
                ref_notes.append(f"{label} is empty: the prompt alone was compared")
            if ref_tokens.truncated:
                cut.append(k)
                ref_notes.append(f"{label} truncated to {self.clip.window} tokens "
                                 "(the model's window, prompt included)")
        best, ref_cosine = best_reference(cosines)
        ref_value = ref_clip_s(value, ref_cosine)
        if ref_cosine < 0:
            ref_notes.append(f"best caption-reference cosine {ref_cosine:.4f} is negative: counted as 0")
        if value == 0 and max(ref_cosine, 0.0) == 0:
            ref_notes.append("CLIP-S and the reference similarity are both 0: RefCLIP-S is 0")
        return ClipScore(value, cosine, ref_value, ref_cosine, best, len(refs), cap_tokens.truncated, tuple(cut),
                         tuple(notes), tuple(ref_notes))


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine of two unit vectors, kept within [-1, 1] (rounding can pass 1 by an ulp)."""
    return min(max(float(a @ b), -1.0), 1.0)


def _check_batch(captions: Any, images: Any,
                 references: Any) -> tuple[list[str], list[Any], list[list[str] | None]]:
    if isinstance(captions, str) or not isinstance(captions, Sequence):
        raise MetricInputError("captions: expected a list of strings")
    if isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
        raise MetricInputError("images: expected a list (one image per caption)")
    if len(images) != len(captions):
        raise MetricInputError(f"got {len(captions)} captions but {len(images)} images; they must pair up one to one")
    caps = []
    for i, c in enumerate(captions):
        if not isinstance(c, str):
            raise MetricInputError(f"item {i}, field 'output': expected a string, got {type(c).__name__}")
        caps.append(c)
    if references is None:
        return caps, list(images), [None] * len(caps)
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise MetricInputError("references: expected a list (one string, list of strings or None per caption)")
    if len(references) != len(caps):
        raise MetricInputError(f"got {len(caps)} captions but {len(references)} references; "
                               "they must pair up one to one")
    refs: list[list[str] | None] = []
    for i, r in enumerate(references):
        group = [r] if isinstance(r, str) else r
        if group is not None and (not isinstance(group, (list, tuple)) or not group
                                  or not all(isinstance(x, str) for x in group)):
            raise MetricInputError(f"item {i}, field 'reference': expected a string or a non-empty list of strings")
        refs.append(None if group is None else list(group))
    return caps, list(images), refs

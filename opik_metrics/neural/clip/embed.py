"""CLIP embeddings, unit-normalised: texts tokenised with truncation to the model's window and
batched by length, images batched as they are opened; one forward pass per ``batch_size`` inputs
under ``inference_mode``, with a progress bar when there is more than one batch.

A text's embedding comes from its end-of-text position under a causal mask, and an image's from
its own pixels, so padding and batch composition do not change the numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import torch
from tqdm.auto import tqdm

from opik_metrics.neural.clip.model import LoadedClip
from opik_metrics.neural.models.host_copies import to_device


@dataclass(frozen=True)
class TextTokens:
    """A text's token ids (special tokens included) and whether they were cut at the window."""

    ids: tuple[int, ...]
    truncated: bool


def _features(output: Any) -> torch.Tensor:
    """Projected features from ``get_*_features``: transformers 5 returns an output object whose
    ``pooler_output`` holds them; earlier versions return the tensor itself."""
    if isinstance(output, torch.Tensor):
        return output
    features = getattr(output, "pooler_output", None)
    if not isinstance(features, torch.Tensor):
        raise TypeError(f"get_*_features returned {type(output).__name__} without a pooler_output tensor")
    return features


def _unit(features: torch.Tensor) -> torch.Tensor:
    """Rows as float64 unit vectors on the CPU (cosines are then exact dot products)."""
    rows = features.detach().to("cpu", torch.float64)
    return rows / rows.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class ClipEmbedder:
    """Unit text and image embeddings of a :class:`LoadedClip`, ``batch_size`` inputs per pass."""

    def __init__(self, clip: LoadedClip, batch_size: int = 64) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        self.clip = clip
        self.batch_size = batch_size

    # --- texts ----------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]) -> list[TextTokens]:
        """Token ids cut at the window by the tokenizer itself (it keeps the end-of-text token);
        a first pass one token longer tells which texts were cut."""
        if not texts:
            return []
        window = self.clip.window
        with self.clip.tokenizer_lock:
            probe = self.clip.tokenizer(list(texts), truncation=True, max_length=window + 1)["input_ids"]
            long = [k for k, ids in enumerate(probe) if len(ids) > window]
            cut = self.clip.tokenizer([texts[k] for k in long], truncation=True, max_length=window)["input_ids"] \
                if long else []
        out = [TextTokens(tuple(ids), False) for ids in probe]
        for k, ids in zip(long, cut):
            out[k] = TextTokens(tuple(ids), True)
        return out

    def embed_texts(self, texts: Sequence[str],
                    progress: bool | None = None) -> dict[str, tuple[torch.Tensor, TextTokens]]:
        """Unit embedding and tokens of each distinct text, keyed by the text; texts that tokenise
        alike (the tokenizer lowercases and folds whitespace) share one forward pass."""
        unique = list(dict.fromkeys(texts))
        tokens = self.tokenize(unique)
        distinct = list(dict.fromkeys(t.ids for t in tokens))
        distinct.sort(key=len, reverse=True)  # similar lengths together: little padding
        # features stay on the device until every batch is done: the loop never waits for it
        features = [self._text_forward(chunk)
                    for chunk in self._chunks(distinct, len(distinct), "CLIP texts", "text", progress)]
        vectors = dict(zip(distinct, _unit(torch.cat(features)) if features else []))
        return {text: (vectors[tok.ids], tok) for text, tok in zip(unique, tokens)}

    def _text_forward(self, id_lists: Sequence[Sequence[int]]) -> torch.Tensor:
        width = max(len(ids) for ids in id_lists)
        input_ids = torch.full((len(id_lists), width), self.clip.pad_id, dtype=torch.long)
        mask = torch.zeros((len(id_lists), width), dtype=torch.long)
        for row, ids in enumerate(id_lists):
            input_ids[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, :len(ids)] = 1
        with torch.inference_mode():
            features = self.clip.model.get_text_features(input_ids=to_device(input_ids, self.clip.device),
                                                         attention_mask=to_device(mask, self.clip.device))
            return _features(features)

    # --- images ---------------------------------------------------------------------------
    def embed_images(self, images: Iterable[Any], total: int, progress: bool | None = None) -> torch.Tensor:
        """Unit embeddings ``[total, dim]`` of ``images`` (PIL images, consumed lazily so that only
        one batch of decoded images is held at a time), in order."""
        rows: list[torch.Tensor] = []      # on the device until the last batch (see embed_texts)
        for batch in self._chunks(images, total, "CLIP images", "image", progress):
            pixels = self.clip.image_processor(images=batch, return_tensors="pt")["pixel_values"]
            with torch.inference_mode():
                features = self.clip.model.get_image_features(
                    pixel_values=to_device(pixels, self.clip.device).to(self.clip.dtype))
                rows.append(_features(features))
        if not rows:
            return torch.zeros((0, 0), dtype=torch.float64)
        return _unit(torch.cat(rows))

    def _chunks(self, items: Iterable[Any], total: int, desc: str, unit: str,
                progress: bool | None) -> Iterator[list[Any]]:
        """``items`` in lists of ``batch_size``, with a bar when there is more than one batch."""
        show = total > self.batch_size if progress is None else progress
        with tqdm(total=total, desc=desc, unit=unit, disable=not show, leave=False) as bar:
            batch: list[Any] = []
            for item in items:
                batch.append(item)
                if len(batch) == self.batch_size:
                    yield batch
                    bar.update(len(batch))
                    batch = []
            if batch:
                yield batch
                bar.update(len(batch))

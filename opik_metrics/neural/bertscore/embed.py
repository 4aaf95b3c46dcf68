"""Token embeddings at the chosen layer, unit-normalised: unique texts only, sorted by length and
batched with little padding (a count of texts on CPU, a token budget on a GPU), under
inference_mode, with a bounded cache keyed by text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from opik_metrics.neural.bertscore.tokens import Tokens, needs_prefix_space, tokenize
from opik_metrics.neural.bertscore.embedding_cache import EmbeddingCache
from opik_metrics.neural.models.encoders import LoadedEncoder
from opik_metrics.neural.models.host_copies import to_device
from opik_metrics.neural.models.length_batches import length_batches, token_budget, validate_count


@dataclass(frozen=True)
class TextEmbedding:
    """A text's tokens and one unit vector per token ([n_tokens, hidden], float32, on the device)."""

    tokens: Tokens
    vectors: torch.Tensor


def _nbytes(e: TextEmbedding) -> int:
    return e.vectors.numel() * e.vectors.element_size() + 8 * len(e.tokens.ids)


class Embedder:
    """Turns texts into :class:`TextEmbedding` with one forward pass per batch of similar lengths."""

    def __init__(self, encoder: LoadedEncoder, batch_size: int = 64, cache_mb: float = 256,
                 batch_tokens: int | None = None) -> None:
        validate_count(batch_size, "batch_size")
        self.encoder = encoder
        # A token budget (given, or the GPU default) fills each batch to it, whatever the count of
        # texts; without one (the CPU default) a batch holds batch_size texts. On a quiet CPU,
        # ~1k-token batches were up to 15% faster than 64 texts, on a loaded one slower.
        self.max_batch_tokens = token_budget(batch_tokens, encoder.device)
        self.batch_size = batch_size if self.max_batch_tokens is None else None
        self.prefix_space = needs_prefix_space(encoder.tokenizer)
        pad = encoder.tokenizer.pad_token_id
        self.pad_id = 0 if pad is None else int(pad)
        self.cache = EmbeddingCache(int(cache_mb * 2**20), _nbytes)

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        with self.encoder.tokenizer_lock:
            return tokenize(self.encoder.tokenizer, texts, self.encoder.max_length, self.prefix_space)

    def embed(self, texts: Sequence[str]) -> dict[str, TextEmbedding]:
        """Embeddings of ``texts`` keyed by the stripped text (duplicates are embedded once)."""
        unique = list(dict.fromkeys(t.strip() for t in texts))
        found = self.cache.get_many(unique)
        missing = [t for t in unique if t not in found]
        if missing:
            fresh = dict(zip(missing, self.embed_tokens(self.tokenize(missing))))
            self.cache.put_many(fresh)
            found.update(fresh)
        return found

    def embed_tokens(self, token_lists: Sequence[Tokens]) -> list[TextEmbedding]:
        """Forward passes over ``token_lists`` in length-sorted batches; results in input order."""
        out: list[TextEmbedding | None] = [None] * len(token_lists)
        for chunk in self.batches([t.ids for t in token_lists]):
            vectors = self.forward([token_lists[i].ids for i in chunk])
            for i, vec in zip(chunk, vectors):
                out[i] = TextEmbedding(token_lists[i], vec)
        return out  # type: ignore[return-value]

    def batches(self, id_lists: Sequence[Sequence[int]]) -> list[list[int]]:
        """Indices grouped longest first: batch_size texts, or max_batch_tokens padded tokens."""
        return length_batches([len(ids) for ids in id_lists], self.batch_size, self.max_batch_tokens)

    def padded_batch(self, id_lists: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded input ids and attention mask on the model's device."""
        width = max(len(ids) for ids in id_lists)
        input_ids = torch.full((len(id_lists), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(id_lists), width), dtype=torch.long)
        for row, ids in enumerate(id_lists):
            input_ids[row, :len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, :len(ids)] = 1
        return to_device(input_ids, self.encoder.device), to_device(mask, self.encoder.device)

    def forward(self, id_lists: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """One forward pass; returns unit-norm float32 token vectors per text."""
        input_ids, mask = self.padded_batch(id_lists)
        with torch.inference_mode():
            hidden = self.encoder.model(input_ids=input_ids, attention_mask=mask)[0].float()
            hidden = hidden / hidden.norm(dim=-1, keepdim=True).clamp_min(1e-12)
            return [hidden[row, :len(ids)].clone() for row, ids in enumerate(id_lists)]

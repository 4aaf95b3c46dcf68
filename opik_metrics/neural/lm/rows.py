"""Turn texts into model rows: token ids with the start token prepended (as ``evaluate``'s
``add_start_token``) and cut into context-sized windows; one text may give several rows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from opik_metrics.core import MetricInputError, require_text
from opik_metrics.neural.lm.windows import plan_windows


@dataclass(frozen=True)
class Row:
    """One forward-pass row: ``ids`` of text ``item``; targets ``ids[score_from:]`` are scored."""

    item: int
    ids: list[int]
    score_from: int

    @property
    def n_targets(self) -> int:
        return len(self.ids) - self.score_from


@dataclass(frozen=True)
class EncodedTexts:
    """Rows for a list of texts, and how many tokens each text had (before the start token)."""

    rows: list[Row]
    text_tokens: list[int]


def resolve_start_token(tokenizer: Any, add_start_token: bool | None) -> int | None:
    """The id to prepend, or None; ``None`` means "the BOS token when the tokenizer has one"."""
    bos = tokenizer.bos_token_id if tokenizer.bos_token is not None else None
    if add_start_token is None:
        return bos
    if add_start_token and bos is None:
        raise ValueError(
            "add_start_token=True but the tokenizer has no BOS token; pass add_start_token=False "
            "(the first token of each text is then context only and is not scored)"
        )
    return bos if add_start_token else None


def encode_texts(tokenizer: Any, texts: Sequence[str], start_id: int | None,
                 max_length: int | None, stride: int | None) -> EncodedTexts:
    """Tokenise without special tokens, prepend ``start_id``, and window each text to fit."""
    if isinstance(texts, str):
        raise MetricInputError("texts: expected a list of strings, got one string")
    texts = [require_text(t, "text", k) for k, t in enumerate(texts)]   # before the tokenizer sees them
    encoded = tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []
    rows: list[Row] = []
    for item, ids in enumerate(encoded):
        full = ([start_id] if start_id is not None else []) + list(ids)
        for w in plan_windows(len(full), max_length, stride):
            if w.score_from < w.end:  # a 1-token tail window after a no-overlap stride scores nothing
                rows.append(Row(item, full[w.begin:w.end], w.score_from - w.begin))
    return EncodedTexts(rows, [len(ids) for ids in encoded])

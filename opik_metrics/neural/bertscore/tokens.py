"""Tokenise texts as bert_score does: strip, add the model's special tokens, a leading space for
byte-level BPE (RoBERTa, GPT-2) tokenizers, truncation at the model maximum (and say so).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Tokens:
    """One text's token ids (special tokens included) and whether it was cut to fit the model."""

    ids: tuple[int, ...]
    original_length: int  # tokens before truncation

    @property
    def truncated(self) -> bool:
        return self.original_length > len(self.ids)


def needs_prefix_space(tokenizer: Any) -> bool:
    """True for byte-level BPE (RoBERTa, GPT-2) tokenizers, which bert_score calls with
    add_prefix_space=True; transformers 5 ignores that call-time flag, so we prepend the space."""
    names = {cls.__name__ for cls in type(tokenizer).__mro__}
    if names & {"GPT2Tokenizer", "GPT2TokenizerFast", "RobertaTokenizer", "RobertaTokenizerFast"}:
        return True
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    try:
        pre = json.loads(backend.to_str()).get("pre_tokenizer") or {}
    except (ValueError, AttributeError):
        return False
    parts = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    return any(p.get("type") == "ByteLevel" for p in parts if isinstance(p, dict))


def special_token_ids(tokenizer: Any) -> frozenset[int]:
    """Ids bert_score weighs 0: CLS and SEP, plus whatever the tokenizer wraps a text in."""
    ids = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    ids.update(tokenizer("", add_special_tokens=True)["input_ids"])
    return frozenset(i for i in ids if i is not None)


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int | None,
             prefix_space: bool) -> list[Tokens]:
    """Token ids for each text; texts longer than ``max_length`` keep their start (as HF truncates)."""
    prepared = [t.strip() for t in texts]
    if prefix_space:
        prepared = [" " + t if t else t for t in prepared]
    if not prepared:
        return []
    enc = tokenizer(prepared, add_special_tokens=True, return_special_tokens_mask=True,
                    return_attention_mask=False, return_token_type_ids=False, verbose=False)
    out = []
    for ids, special in zip(enc["input_ids"], enc["special_tokens_mask"]):
        if max_length is None or len(ids) <= max_length:
            out.append(Tokens(tuple(ids), len(ids)))
        else:
            out.append(Tokens(_truncate(ids, special, max_length), len(ids)))
    return out


def _truncate(ids: list[int], special: list[int], max_length: int) -> tuple[int, ...]:
    """Keep the leading and trailing special tokens and the first tokens of the text between."""
    head = 0
    while head < len(ids) and special[head]:
        head += 1
    tail = 0
    while tail < len(ids) - head and special[len(ids) - 1 - tail]:
        tail += 1
    keep = max(max_length - head - tail, 0)
    return tuple(ids[:head] + ids[head:head + keep] + (ids[len(ids) - tail:] if tail else []))

"""Load an encoder-decoder LM (BART, T5, mBART, Pegasus: ``AutoModelForSeq2SeqLM``) and its tokenizer
by name (hub id, local directory), optionally with a fine-tuned state dict over it (BARTScore's
ParaBank2 ``bart.pth``); cached once per process like the causal LMs, thread-safe.
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from opik_metrics.core.signature import Signature
from opik_metrics.neural.models.causal_lm import model_signature
from opik_metrics.neural.models.encoders import resolve_device, resolve_dtype
from opik_metrics.neural.models.load_cache import LoadCache
from opik_metrics.neural.models.registry import ModelNotAvailableError, ResolvedModel, offline_help, resolve_model

#: Tokens per side that BARTScore's and UniEval's released code truncate to (``max_length=1024``).
REFERENCE_MAX_LENGTH = 1024


@dataclass(frozen=True, eq=False)
class Seq2SeqLM:
    """A loaded encoder-decoder LM, the most tokens a side may have, and a reproducibility signature."""

    name: str
    model: Any
    tokenizer: Any
    max_length: int
    signature: Signature
    #: held while tokenizing: a fast tokenizer's truncation setting is shared state, and opik.evaluate
    #: scores from many threads at once (one thread's max_length would cut another's text)
    tokenizer_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.model.config.pad_token_id or 0)

    @classmethod
    def from_objects(cls, model: Any, tokenizer: Any, name: str = "in-memory",
                     max_length: int | None = None) -> "Seq2SeqLM":
        """Wrap an already loaded model and tokenizer (a model being fine-tuned, a test's tiny one)."""
        check_seq2seq_config(name, model.config)
        limit = resolve_max_length(model, max_length)
        return cls(name, model, tokenizer, limit, model_signature(name, model, limit))


def resolve_max_length(model: Any, max_length: int | None) -> int:
    """Tokens per side: ``max_length`` when given, else the reference code's 1,024, never more than
    the model's position table (BART's 1,024; T5's relative positions have none)."""
    positions = getattr(model.config, "max_position_embeddings", None)
    limit = positions if isinstance(positions, int) and positions > 0 else None
    if max_length is None:
        return min(REFERENCE_MAX_LENGTH, limit) if limit else REFERENCE_MAX_LENGTH
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
        raise ValueError(f"max_length must be an integer >= 2, got {max_length!r}")
    if limit and max_length > limit:
        raise ValueError(f"max_length={max_length} exceeds the model's {limit} positions")
    return max_length


def check_seq2seq_config(name: str, config: Any) -> None:
    """Refuse a checkpoint that is not an encoder-decoder (a GPT-2 or a BERT): it has no p(target | source)."""
    if not getattr(config, "is_encoder_decoder", False):
        kind = (list(getattr(config, "architectures", None) or []) or [type(config).__name__])[0]
        raise ValueError(f"model {name!r} is not an encoder-decoder model (its checkpoint is a {kind}): BARTScore "
                         "and UniEval score a target given a source with a model such as BART or T5")


_CACHE: LoadCache[Seq2SeqLM] = LoadCache()


def load_seq2seq_lm(name: str, device: str | None = None, dtype: str | torch.dtype | None = None,
                    state_dict: str | None = None, max_length: int | None = None) -> Seq2SeqLM:
    """Load (or take from the process-wide cache) the encoder-decoder called ``name``; ``state_dict``:
    a ``torch.save``'d state dict loaded over its weights (BARTScore's ``+para`` checkpoint)."""
    resolved = resolve_model(name)
    if resolved.gguf_file:
        raise ValueError(f"model {name!r} is a GGUF file; encoder-decoder models load from a hub id or a folder")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    weights = _state_dict_path(state_dict)
    key = (resolved.source, str(dev), str(dt), str(weights), max_length)
    return _CACHE.get(key, lambda: _load(name, resolved, dev, dt, weights, max_length))


def clear_cache() -> None:
    """Forget every cached model (tests, or to free memory)."""
    _CACHE.clear()


def _state_dict_path(state_dict: str | None) -> Path | None:
    if state_dict is None:
        return None
    path = Path(os.path.expanduser(str(state_dict)))
    if not path.is_file():
        raise ModelNotAvailableError(f"state_dict: no file {str(state_dict)!r} (BARTScore's ParaBank2 weights are "
                                     "the bart.pth its README links; give the downloaded file's path)")
    return path


def _load(name: str, resolved: ResolvedModel, device: torch.device, dtype: torch.dtype,
          weights: Path | None, max_length: int | None) -> Seq2SeqLM:
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(resolved.source)
    except Exception as exc:
        raise ModelNotAvailableError(_failure(name, exc)) from exc
    check_seq2seq_config(name, config)
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved.source)
        model = AutoModelForSeq2SeqLM.from_pretrained(resolved.source, dtype=dtype)
    except Exception as exc:  # every loader failure becomes one clear, actionable error
        raise ModelNotAvailableError(_failure(name, exc)) from exc
    fields: dict[str, Any] = {}
    if weights is not None:
        _load_weights(name, model, weights)
        fields["weights"] = f"{weights.name}@{_sha256(weights)[:12]}"
    model.to(device).eval()
    limit = resolve_max_length(model, max_length)
    signature = model_signature(name, model, limit, resolved)
    return Seq2SeqLM(name, model, tokenizer, limit, signature.extended(**fields) if fields else signature)


def _load_weights(name: str, model: Any, path: Path) -> None:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except Exception as exc:
        raise ModelNotAvailableError(f"state_dict {str(path)!r} does not fit model {name!r} "
                                     f"({type(exc).__name__}: {str(exc).splitlines()[0][:300]})") from exc


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _failure(name: str, exc: Exception) -> str:
    cause = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return f"{offline_help(name, packaged=(), kind='encoder-decoder model (BART, T5)')} Cause: {cause}"

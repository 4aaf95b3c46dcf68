"""Load a causal LM and its tokenizer by name (hub id, local dir, GGUF file, ``packaged:`` alias).

Loaded models are cached for the whole process (loading the packaged SmolLM2 takes ~20 s), and
loading is thread-safe: two threads asking for the same model wait for one load.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import threading
from dataclasses import dataclass
from typing import Any

import torch

from opik_metrics.core.signature import Signature
from opik_metrics.core.versions import package_version
from opik_metrics.neural.models.encoders import resolve_device
from opik_metrics.neural.models.registry import ModelNotAvailableError, ResolvedModel, offline_help, resolve_model

# Tokenizers without a real limit report a huge sentinel (1e30); anything above this is "none".
_NO_LIMIT = 10_000_000


@dataclass(frozen=True, eq=False)
class CausalLM:
    """A loaded causal LM with its tokenizer, context length and a reproducibility signature."""

    name: str
    model: Any
    tokenizer: Any
    context_length: int | None
    signature: Signature
    hub_id: str | None = None

    @property
    def vocab_size(self) -> int:
        """Width of the logits (may exceed ``len(tokenizer)`` when embeddings are padded)."""
        head = self.model.get_output_embeddings()
        if head is not None and getattr(head, "weight", None) is not None:
            return int(head.weight.shape[0])
        return int(self.model.config.vocab_size)

    @property
    def bos_token_id(self) -> int | None:
        return self.tokenizer.bos_token_id if self.tokenizer.bos_token is not None else None

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @classmethod
    def from_objects(cls, model: Any, tokenizer: Any, name: str = "in-memory") -> "CausalLM":
        """Wrap an already loaded model and tokenizer (e.g. a student being trained)."""
        ctx = context_length(model, tokenizer)
        return cls(name=name, model=model, tokenizer=tokenizer, context_length=ctx,
                   signature=model_signature(name, model, ctx))


def context_length(model: Any, tokenizer: Any) -> int | None:
    """The longest sequence the model takes: its position table, or the tokenizer's limit."""
    config = model.config
    limits = [getattr(config, key, None) for key in ("max_position_embeddings", "n_positions", "n_ctx")]
    limits.append(getattr(tokenizer, "model_max_length", None))
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < _NO_LIMIT]
    return min(limits) if limits else None


def model_signature(name: str, model: Any, ctx: int | None, resolved: ResolvedModel | None = None) -> Signature:
    """A string that says which model made a number: name, hub id, GGUF file, config hash, versions."""
    config = model.config.to_dict()
    for volatile in ("_name_or_path", "transformers_version", "dtype", "torch_dtype"):
        config.pop(volatile, None)
    digest = hashlib.sha1(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:10]
    fields: dict[str, Any] = {"model": name}
    if resolved is not None and resolved.hub_id and resolved.hub_id != name:
        fields["hub"] = resolved.hub_id
    if resolved is not None and resolved.gguf_file:
        fields["gguf"] = resolved.gguf_file
    fields.update({"cfg": digest, "ctx": ctx, "dtype": str(model.dtype).replace("torch.", ""),
                   "transformers": package_version("transformers"), "torch": package_version("torch")})
    return Signature(fields)


_CACHE: dict[tuple, CausalLM] = {}
_KEY_LOCKS: dict[tuple, threading.Lock] = {}
_GUARD = threading.Lock()


def load_causal_lm(name: str, device: str | None = None, dtype: torch.dtype = torch.float32) -> CausalLM:
    """Load (or fetch from the process-wide cache) the causal LM called ``name``."""
    resolved = resolve_model(name)
    device = str(resolve_device(device))
    key = (resolved.source, resolved.gguf_file, str(device), str(dtype))
    with _GUARD:
        if key in _CACHE:
            return _CACHE[key]
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _CACHE:
            _CACHE[key] = _load(name, resolved, device, dtype)
        return _CACHE[key]


def clear_cache() -> None:
    """Forget every cached model (tests, or to free memory)."""
    with _GUARD:
        _CACHE.clear()
        _KEY_LOCKS.clear()


def _load(name: str, resolved: ResolvedModel, device: str, dtype: torch.dtype) -> CausalLM:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {}
    if resolved.gguf_file:
        _require_gguf_support(name)
        kwargs["gguf_file"] = resolved.gguf_file
    try:
        tokenizer = AutoTokenizer.from_pretrained(resolved.source, **kwargs)
        model, info = AutoModelForCausalLM.from_pretrained(resolved.source, dtype=dtype, output_loading_info=True,
                                                           **kwargs)
    except Exception as exc:  # every loader failure becomes one clear, actionable error
        raise ModelNotAvailableError(_load_failure(name, resolved, exc)) from exc
    check_causal(name, model, set((info or {}).get("missing_keys") or ()))
    model.to(device).eval()
    ctx = context_length(model, tokenizer)
    if ctx is not None:
        tokenizer.model_max_length = ctx  # GGUF tokenizers come back with 1e30
    return CausalLM(name=name, model=model, tokenizer=tokenizer, context_length=ctx,
                    signature=model_signature(name, model, ctx, resolved), hub_id=resolved.hub_id)


def check_causal(name: str, model: Any, missing: set[str]) -> None:
    """Refuse a model that is not a trained causal LM: an encoder loaded into a causal-LM class (its
    attention sees later tokens, so its perplexity means nothing) or one whose LM head was missing
    from the checkpoint (randomly initialised: transformers only warns)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    config = model.config
    architectures = list(getattr(config, "architectures", None) or [])
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    if architectures and not any(a in causal or a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures) \
            and getattr(config, "is_decoder", None) is not True:
        raise ValueError(f"model {name!r} is not a causal language model (its checkpoint is a {architectures[0]}): "
                         "perplexity and KL need a model that predicts each token from the ones before it "
                         "(e.g. GPT-2, Llama, SmolLM2); an encoder such as BERT sees the later tokens too")
    head = model.get_output_embeddings()
    prefix = next((n for n, m in model.named_modules() if m is head), None) if head is not None else None
    if prefix and any(k == prefix or k.startswith(prefix + ".") for k in missing):
        raise ValueError(f"model {name!r} has no trained language-model head: {prefix} is missing from its "
                         "checkpoint (transformers would initialise it at random); save the model with its head "
                         "(AutoModelForCausalLM.save_pretrained)")


def _require_gguf_support(name: str) -> None:
    missing = [pkg for pkg in ("gguf", "accelerate") if importlib.util.find_spec(pkg) is None]
    if missing:
        raise ModelNotAvailableError(
            f"model {name!r} is a GGUF file; loading it needs {' and '.join(missing)}: "
            "pip install 'opik-metrics[offline]'"
        )


def _load_failure(name: str, resolved: ResolvedModel, exc: Exception) -> str:
    cause = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    if resolved.gguf_file:
        return (f"could not load GGUF file {resolved.gguf_file!r} from {resolved.source!r} for model "
                f"{name!r} (corrupt or unsupported architecture?). Cause: {cause}")
    if "Unrecognized configuration class" in str(exc):
        return f"model {name!r} is not a causal language model (no LM head). Cause: {cause}"
    return f"{offline_help(name)} Cause: {cause}"

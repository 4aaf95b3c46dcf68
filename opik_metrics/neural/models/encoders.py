"""Load an encoder (model + tokenizer) once per process, truncated at a layer so no later layer
is ever computed; thread-safe, keyed by resolved source, layer, device and dtype.
"""
from __future__ import annotations

import inspect
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import torch

from opik_metrics.neural.models.load_cache import LoadCache
from opik_metrics.neural.models.registry import ModelNotAvailableError, ResolvedModel, offline_help, resolve_model

_HALF = {"float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
         "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
_FULL = {"float32": torch.float32, "fp32": torch.float32, "float": torch.float32}
_NO_LIMIT = 1_000_000  # tokenizers without a maximum report ~1e30


@dataclass(eq=False)
class LoadedEncoder:
    """A model cut at ``num_layers`` with its tokenizer and the facts scores depend on."""

    resolved: ResolvedModel
    model: Any
    tokenizer: Any
    num_layers: int
    total_layers: int
    max_length: int | None        # most tokens per text (special tokens included); None: no limit
    device: torch.device
    dtype: torch.dtype
    tokenizer_lock: threading.Lock = field(default_factory=threading.Lock)  # HF tokenizers are not re-entrant

    @property
    def attn_implementation(self) -> str:
        return str(getattr(self.model.config, "_attn_implementation", None) or "eager")


_CACHE: LoadCache[LoadedEncoder] = LoadCache()


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` means CUDA when present, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device: {device!r} is not a torch device (e.g. 'cpu', 'cuda', 'cuda:1')") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available here; use device='cpu' or None")
    return dev


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """float32 by default; bfloat16 anywhere; float16 only on a GPU (CPU kernels for it are slow
    and some are missing). Half precision changes the numbers a little: docs/metrics.md says how much."""
    if dtype is None:
        return torch.float32
    if isinstance(dtype, str):
        key = dtype.lower().removeprefix("torch.")
        if key not in _HALF and key not in _FULL:
            raise ValueError(f"dtype: {dtype!r} is not one of float32, float16, bfloat16")
        dtype = _HALF.get(key) or _FULL[key]
    if dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"dtype: {dtype} is not one of float32, float16, bfloat16")
    if dtype == torch.float16 and device.type != "cuda":
        raise ValueError(f"dtype=float16 needs a CUDA device; on {device.type} use bfloat16 or float32")
    return dtype


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` as ``"bfloat16"``: how signatures and metadata record it."""
    return str(dtype).removeprefix("torch.")


def load_encoder(name: str, num_layers: int, device: str | torch.device | None = None,
                 dtype: str | torch.dtype | None = None) -> LoadedEncoder:
    """The shared encoder for ``name`` cut at ``num_layers``; loaded on first use, then cached."""
    resolved = resolve_model(name)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    key = (resolved.source, resolved.gguf_file, int(num_layers), str(dev), str(dt))
    return _CACHE.get(key, lambda: _load(resolved, int(num_layers), dev, dt))


def loaded_count() -> int:
    """How many encoders this process holds (for tests and diagnostics)."""
    return len(_CACHE)


def _load(resolved: ResolvedModel, num_layers: int, device: torch.device, dtype: torch.dtype) -> LoadedEncoder:
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    extra = {"gguf_file": resolved.gguf_file} if resolved.gguf_file else {}
    try:
        config = AutoConfig.from_pretrained(resolved.source, **extra)
    except (OSError, ValueError) as exc:
        raise ModelNotAvailableError(f"{offline_help(resolved.name, packaged=('minilm',), kind='text encoder')} "
                                     f"({type(exc).__name__}: {exc})") from exc
    total = _layer_count(config)
    if total is None:
        raise ValueError(f"cannot tell how many layers {resolved.name!r} has "
                         f"(config type {type(config).__name__}); it is not a supported encoder")
    if not 0 <= num_layers <= total:
        raise ValueError(f"num_layers={num_layers} is out of range for {resolved.name!r}: it has "
                         f"{total} layers, so use 0..{total} (0 = the embedding layer)")
    config.num_hidden_layers = num_layers  # build only the first num_layers layers
    kwargs: dict[str, Any] = {"config": config, "dtype": dtype, **extra}
    if _accepts(config, "add_pooling_layer"):
        kwargs["add_pooling_layer"] = False  # the pooler is never used
    try:
        with _quiet_truncation_report():
            model = AutoModel.from_pretrained(resolved.source, **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(resolved.source, **extra)
    except OSError as exc:
        raise ModelNotAvailableError(f"{offline_help(resolved.name, packaged=('minilm',), kind='text encoder')} "
                                     f"({type(exc).__name__}: {exc})") from exc
    if len(tokenizer) <= len(set(tokenizer.all_special_ids)):
        # transformers 5 builds an empty default tokenizer when the files are missing
        raise ModelNotAvailableError(
            f"{resolved.name!r} has no tokenizer files (its tokenizer would have only special "
            f"tokens, so every word would be unknown); save the tokenizer next to the model")
    if getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        model = model.get_encoder()
    model.eval().requires_grad_(False).to(device)
    return LoadedEncoder(resolved=resolved, model=model, tokenizer=tokenizer, num_layers=num_layers,
                         total_layers=total, max_length=_max_length(model, tokenizer),
                         device=device, dtype=dtype)


def _layer_count(config: Any) -> int | None:
    try:
        value = config.num_hidden_layers
    except AttributeError:
        return None
    return int(value) if isinstance(value, int) else None


def _accepts(config: Any, arg: str) -> bool:
    """Whether the model class ``AutoModel`` builds for ``config`` takes ``arg``."""
    from transformers import MODEL_MAPPING

    try:
        model_cls = MODEL_MAPPING[type(config)]
    except KeyError:
        return False
    init = model_cls.__init__  # type: ignore[misc]  # transformers hints a tuple here: it is a model class
    return arg in inspect.signature(init).parameters


def _max_length(model: Any, tokenizer: Any) -> int | None:
    """The token limit: the tokenizer's, capped by the position table (less RoBERTa's offset)."""
    limits = []
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < _NO_LIMIT:
        limits.append(tok_max)
    positions = getattr(model.config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0 and getattr(model.config, "position_embedding_type",
                                                                "absolute") == "absolute":
        offset = 0
        table = getattr(getattr(model, "embeddings", None), "position_embeddings", None)
        padding_idx = getattr(table, "padding_idx", None)
        if padding_idx is not None:  # RoBERTa numbers positions from pad+1
            offset = padding_idx + 1
        limits.append(positions - offset)
    return min(limits) if limits else None


class _DropTruncationReport(logging.Filter):
    """Drops transformers' load report when it only lists the layers we chose not to build."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread != self.thread:
            return True
        msg = record.getMessage()
        if "LOAD REPORT" not in msg:
            return True
        return any(word in msg for word in ("MISSING", "MISMATCH", "CONVERSION"))


class _quiet_truncation_report:
    def __enter__(self) -> None:
        self.filter = _DropTruncationReport()
        self.loggers = [logging.getLogger("transformers.modeling_utils"),
                        logging.getLogger("transformers.utils.loading_report")]
        for lg in self.loggers:
            lg.addFilter(self.filter)

    def __exit__(self, *exc: Any) -> None:
        for lg in self.loggers:
            lg.removeFilter(self.filter)

"""Load a causal LM and its tokenizer by name (hub id, local dir, GGUF file, ``packaged:`` alias).

Loaded models are cached for the whole process, and loading is thread-safe: two threads asking for
the same model wait for one load. GGUF checkpoints are also converted once into an on-disk cache
(see ``model_cache_dir``): the packaged SmolLM2 takes ~30 s from its GGUF file, seconds from the cache.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from opik_metrics.core.signature import Signature
from opik_metrics.core.versions import package_version
from opik_metrics.neural.models.encoders import resolve_device, resolve_dtype
from opik_metrics.neural.models.load_cache import LoadCache
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
    limits: list[Any] = [getattr(config, key, None) for key in ("max_position_embeddings", "n_positions", "n_ctx")]
    limits.append(getattr(tokenizer, "model_max_length", None))
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < _NO_LIMIT]
    return min(limits) if limits else None


def model_signature(name: str, model: Any, ctx: int | None, resolved: ResolvedModel | None = None,
                    config: dict[str, Any] | None = None) -> Signature:
    """A string that says which model made a number: name, hub id, GGUF file, config hash, versions.
    ``config`` replaces ``model.config.to_dict()`` (a cached GGUF conversion passes its GGUF config)."""
    digest = _config_digest(model.config.to_dict() if config is None else config)
    fields: dict[str, Any] = {"model": name}
    if resolved is not None and resolved.hub_id and resolved.hub_id != name:
        fields["hub"] = resolved.hub_id
    if resolved is not None and resolved.gguf_file:
        fields["gguf"] = resolved.gguf_file
    fields.update({"cfg": digest, "ctx": ctx, "dtype": str(model.dtype).replace("torch.", ""),
                   "transformers": package_version("transformers"), "torch": package_version("torch")})
    return Signature(fields)


def _config_digest(config: dict[str, Any]) -> str:
    config = dict(config)
    for volatile in ("_name_or_path", "transformers_version", "dtype", "torch_dtype"):
        config.pop(volatile, None)
    return hashlib.sha1(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[:10]


_CACHE: LoadCache[CausalLM] = LoadCache()


def load_causal_lm(name: str, device: str | None = None, dtype: str | torch.dtype | None = None) -> CausalLM:
    """Load (or fetch from the process-wide cache) the causal LM called ``name``; ``dtype``: its
    weights' dtype, float32 by default (see ``resolve_dtype``)."""
    resolved = resolve_model(name)
    dev = resolve_device(device)
    dtype = resolve_dtype(dtype, dev)
    device = str(dev)
    key = (resolved.source, resolved.gguf_file, str(device), str(dtype))
    return _CACHE.get(key, lambda: _load(name, resolved, device, dtype))


def clear_cache() -> None:
    """Forget every cached model (tests, or to free memory)."""
    _CACHE.clear()


def _load(name: str, resolved: ResolvedModel, device: str, dtype: torch.dtype) -> CausalLM:
    signature_config = None
    if resolved.gguf_file:
        _require_gguf_support(name)
        model, tokenizer, signature_config = _load_gguf_cached(name, resolved, dtype)
    else:
        model, tokenizer = _from_pretrained(name, resolved, resolved.source, dtype)
    model.to(device).eval()
    ctx = context_length(model, tokenizer)
    if ctx is not None:
        tokenizer.model_max_length = ctx  # GGUF tokenizers come back with 1e30
    return CausalLM(name=name, model=model, tokenizer=tokenizer, context_length=ctx,
                    signature=model_signature(name, model, ctx, resolved, signature_config),
                    hub_id=resolved.hub_id)


def _from_pretrained(name: str, resolved: ResolvedModel, source: str, dtype: torch.dtype,
                     gguf_file: str | None = None) -> tuple[Any, Any]:
    """Tokenizer and model from ``source`` (a GGUF file in it when ``gguf_file``), checked causal."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    if not gguf_file:     # an encoder is refused from its config, before transformers loads and reports on it
        try:
            config = AutoConfig.from_pretrained(source)
        except Exception as exc:
            raise ModelNotAvailableError(_load_failure(name, resolved, exc)) from exc
        check_causal_config(name, config)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        loaded: Any = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, output_loading_info=True, **kwargs)
        model, info = loaded      # (model, info): transformers' hint is the model alone
    except Exception as exc:  # every loader failure becomes one clear, actionable error
        raise ModelNotAvailableError(_load_failure(name, resolved, exc)) from exc
    check_causal(name, model, set((info or {}).get("missing_keys") or ()))
    return model, tokenizer


# --- converted-model cache for GGUF checkpoints -------------------------------------------------
# transformers parses and de-quantises a GGUF file three times (tokenizer, config, weights): ~30 s for
# the packaged SmolLM2. The first load saves the converted model (safetensors) and tokenizer in a
# folder keyed by the GGUF file's sha256, the dtype and the transformers/torch versions; later loads,
# in any process, read that folder (seconds). Entries are written in a temporary folder and renamed
# into place, and only used when their manifest (written last) lists files that are all there with
# the right sizes and checksums; a broken or damaged entry is ignored and rebuilt. A cache location that cannot be written
# (read-only, full) never fails a load: the model is used straight from the GGUF file, with a warning.

_CACHE_FORMAT = 2     # 2: each file's blake2b in the manifest, checked on every load
_MANIFEST = "opik-metrics-cache.json"


def model_cache_dir() -> Path:
    """``$OPIK_METRICS_MODEL_CACHE``, else ``$XDG_CACHE_HOME/opik-metrics/models``, else
    ``~/.cache/opik-metrics/models``."""
    explicit = os.environ.get("OPIK_METRICS_MODEL_CACHE")
    if explicit:
        return Path(os.path.expanduser(explicit))
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(os.path.expanduser(xdg)) if xdg else Path.home() / ".cache"
    return base / "opik-metrics" / "models"


def gguf_cache_entry(resolved: ResolvedModel, dtype: torch.dtype = torch.float32) -> Path:
    """The cache folder for ``resolved``'s GGUF file loaded as ``dtype`` (it may not exist yet)."""
    assert resolved.gguf_file, "not a GGUF model"
    root = model_cache_dir()
    digest = _file_sha256(Path(resolved.source) / resolved.gguf_file, root)
    versions = f"{package_version('transformers')}|{package_version('torch')}|{dtype}|{_CACHE_FORMAT}"
    key = hashlib.sha256(f"{digest}|{versions}".encode()).hexdigest()[:16]
    stem = Path(resolved.gguf_file).stem.replace(os.sep, "_")
    return root / f"{stem}-{digest[:16]}-{key}"


def _file_sha256(path: Path, root: Path) -> str:
    """The full sha256 of ``path``; remembered under ``root`` by real path, size and mtime, so it
    is computed once per file version (~0.3 s for 100 MB) rather than on every load."""
    st = path.stat()
    ident = hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()
    memo = root / ".hashes" / ident
    try:
        known = memo.read_text().strip()
        if len(known) == 64:
            return known
    except OSError:
        pass
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    digest = sha.hexdigest()
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f"{ident}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(digest)
        os.replace(tmp, memo)
    except OSError:
        pass  # unwritable cache: hash again next time
    return digest


def _entry_is_complete(entry: Path) -> bool:
    """Whether every file the entry's manifest lists is there with its size and checksum (same-size
    damage included: about a second for SmolLM2's 540 MB, against the 4 s of the load itself)."""
    try:
        manifest = json.loads((entry / _MANIFEST).read_text())
        files = manifest["files"]
        return manifest["format"] == _CACHE_FORMAT and bool(files) and all(
            (entry / f).is_file() and (entry / f).stat().st_size == meta["size"]
            and _file_digest(entry / f) == meta["blake2b"] for f, meta in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _file_digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


# The saved config differs from the GGUF-loaded one in these keys only (save_pretrained sets the
# architecture; the de-quantised copy is no longer a GGUF-quantised model); the signature keeps
# the GGUF config's digest, stored in the manifest, so a number says the same in every process.
_SAVE_CHANGES = ("architectures", "quantization_config")


def _load_gguf_cached(name: str, resolved: ResolvedModel, dtype: torch.dtype) -> tuple[Any, Any, dict | None]:
    """Model, tokenizer and the GGUF config (for the signature), from the cache when it has them."""
    try:
        entry: Path | None = gguf_cache_entry(resolved, dtype)
    except (OSError, RuntimeError) as exc:  # RuntimeError: no home folder to put ~/.cache in
        warnings.warn(f"model cache unusable ({exc}); loading {resolved.gguf_file} from the GGUF file", stacklevel=5)
        entry = None
    if entry is not None and entry.is_dir():
        cached = _read_entry(name, resolved, entry, dtype)
        if cached is not None:
            return cached
    model, tokenizer = _from_pretrained(name, resolved, resolved.source, dtype, gguf_file=resolved.gguf_file)
    gguf_config = json.loads(json.dumps(model.config.to_dict(), default=str))
    if entry is not None and not any("gguf" in type(m).__name__.lower() for m in model.modules()):
        try:
            _write_entry(entry, model, tokenizer, resolved, gguf_config)
        except Exception as exc:  # read-only, disk full, ...: the GGUF-loaded model is fine as it is
            warnings.warn(f"could not write the converted-model cache {entry} ({type(exc).__name__}: {exc}); "
                          f"{name} will load from its GGUF file again next time (slow). Set "
                          "OPIK_METRICS_MODEL_CACHE to a writable folder to cache it", stacklevel=5)
    return model, tokenizer, gguf_config


def _read_entry(name: str, resolved: ResolvedModel, entry: Path, dtype: torch.dtype) -> tuple[Any, Any, dict] | None:
    """The cached model, or None (with a warning) when the entry is incomplete or unreadable."""
    if not _entry_is_complete(entry):
        warnings.warn(f"ignoring damaged or incomplete model cache entry {entry} (a file is missing, or its size "
                      "or checksum differs from the manifest); rebuilding it", stacklevel=6)
        return None
    try:
        gguf_config = json.loads((entry / _MANIFEST).read_text())["config"]
        model, tokenizer = _from_pretrained(name, resolved, str(entry), dtype)
        saved = model.config.to_dict()
        if _config_digest({k: v for k, v in saved.items() if k not in _SAVE_CHANGES}) != \
                _config_digest({k: v for k, v in gguf_config.items() if k not in _SAVE_CHANGES}):
            raise ValueError("its config differs from the GGUF file's")
    except Exception as exc:  # noqa: BLE001 - a broken cache entry is rebuilt, never fatal
        warnings.warn(f"ignoring unreadable model cache entry {entry} ({type(exc).__name__}: {exc}); "
                      "rebuilding it", stacklevel=6)
        return None
    return model, tokenizer, gguf_config


def _write_entry(entry: Path, model: Any, tokenizer: Any, resolved: ResolvedModel, gguf_config: dict) -> None:
    """Save ``model`` and ``tokenizer`` into a temporary sibling of ``entry`` and rename it into place."""
    assert resolved.gguf_file, "not a GGUF model"
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.parent / f".tmp-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        _save_dequantised(model, tmp)
        tokenizer.save_pretrained(tmp)
        files = {str(p.relative_to(tmp)): {"size": p.stat().st_size, "blake2b": _file_digest(p)}
                 for p in sorted(tmp.rglob("*")) if p.is_file()}
        manifest = {"format": _CACHE_FORMAT, "gguf": str(Path(resolved.source) / resolved.gguf_file),
                    "transformers": package_version("transformers"), "torch": package_version("torch"),
                    "files": files, "config": gguf_config}
        with open(tmp / _MANIFEST, "w") as fh:
            json.dump(manifest, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        if _entry_is_complete(entry):  # another process finished the same conversion first: use theirs
            return
        if entry.exists():  # a broken entry: move it aside (a rename, so readers never see it half gone)
            trash = entry.parent / f".trash-{entry.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                os.rename(entry, trash)
                shutil.rmtree(trash, ignore_errors=True)
            except OSError:
                pass
        try:
            os.rename(tmp, entry)
        except OSError:
            if not _entry_is_complete(entry):  # another process won the race with a good entry: fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _save_dequantised(model: Any, folder: Path) -> None:
    """``save_pretrained`` a GGUF-loaded model whose weights are already de-quantised: transformers
    refuses ("quantized with gguf, not serializable") while the GGUF quantizer is attached, so detach
    it (and the config's quantization_config) for the save; the in-memory model is left as it was."""
    config = model.config
    saved_attrs = {k: getattr(config, k) for k in ("architectures", "dtype", "quantization_config")
                   if hasattr(config, k)}
    quantizer_attrs = {k: model.__dict__[k] for k in ("hf_quantizer", "is_quantized", "quantization_method")
                       if k in model.__dict__}
    try:
        for k in quantizer_attrs:
            model.__dict__[k] = None if k != "is_quantized" else False
        if hasattr(config, "quantization_config"):
            delattr(config, "quantization_config")
        model.save_pretrained(folder, safe_serialization=True)
    finally:
        model.__dict__.update(quantizer_attrs)
        for k, v in saved_attrs.items():
            setattr(config, k, v)


def check_causal(name: str, model: Any, missing: set[str]) -> None:
    """Refuse a model that is not a trained causal LM: an encoder loaded into a causal-LM class (its
    attention sees later tokens, so its perplexity means nothing) or one whose LM head was missing
    from the checkpoint (randomly initialised: transformers only warns)."""
    check_causal_config(name, model.config)
    head = model.get_output_embeddings()
    prefix = next((n for n, m in model.named_modules() if m is head), None) if head is not None else None
    if prefix and any(k == prefix or k.startswith(prefix + ".") for k in missing):
        raise ValueError(f"model {name!r} has no trained language-model head: {prefix} is missing from its "
                         "checkpoint (transformers would initialise it at random); save the model with its head "
                         "(AutoModelForCausalLM.save_pretrained)")


def check_causal_config(name: str, config: Any) -> None:
    """Refuse a checkpoint whose config names an architecture that is not a causal LM."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architectures = list(getattr(config, "architectures", None) or [])
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    if architectures and not any(a in causal or a.endswith(("ForCausalLM", "LMHeadModel")) for a in architectures) \
            and getattr(config, "is_decoder", None) is not True:
        raise ValueError(f"model {name!r} is not a causal language model (its checkpoint is a {architectures[0]}): "
                         "perplexity and KL need a model that predicts each token from the ones before it "
                         "(e.g. GPT-2, Llama, SmolLM2); an encoder such as BERT sees the later tokens too")


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
    return f"{offline_help(name, packaged=('smollm2',), kind='causal language model')} Cause: {cause}"

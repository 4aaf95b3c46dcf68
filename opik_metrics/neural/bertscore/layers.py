"""BERTScore defaults as bert_score sets them: the model for a language and the tuned layer for
a model (bert_score's own tables), so numbers match published BERTScore settings.
"""
from __future__ import annotations

import re

from opik_metrics.neural.models.registry import ResolvedModel

# Layers bert_score's table lacks, for models this package ships (our choice: the last layer,
# the one the sentence-embedding model was trained on).
EXTRA_LAYERS = {"sentence-transformers/all-MiniLM-L6-v2": 6}

# Hub organisations that now host the models bert_score names without an owner
# ("roberta-large" is "FacebookAI/roberta-large" on today's hub).
_CANONICAL_ORGS = {"FacebookAI", "google-bert", "distilbert", "albert", "openai-community",
                   "xlnet", "FacebookAI", "google-t5"}
_HF_CACHE_DIR = re.compile(r"models--([^/\\]+?)(?:--([^/\\]+))?[/\\]snapshots")


def _tables() -> tuple[dict[str, str], dict[str, int]]:
    from bert_score.utils import lang2model, model2layers
    return lang2model, model2layers


def default_model(lang: str) -> str:
    """bert_score's model for ``lang`` (roberta-large for English, multilingual BERT otherwise)."""
    if not isinstance(lang, str) or not lang.strip():
        raise ValueError(f"lang must be a language code such as 'en', got {lang!r}")
    lang2model, _ = _tables()
    return lang2model[lang.strip().lower()]


def table_key(resolved: ResolvedModel) -> str | None:
    """The model's name in bert_score's tables (layers, baselines), or None if unknown."""
    _, model2layers = _tables()
    candidates = [resolved.hub_id, resolved.name]
    match = _HF_CACHE_DIR.search(resolved.source.replace("\\", "/"))
    if match:  # a snapshot folder of the Hugging Face cache names its hub id
        candidates.append("/".join(g for g in match.groups() if g))
    for cand in candidates:
        if not cand:
            continue
        if cand in model2layers or cand in EXTRA_LAYERS:
            return cand
        org, _, bare = cand.partition("/")
        if bare and org in _CANONICAL_ORGS and bare in model2layers:
            return bare
    return resolved.hub_id


def default_layer(resolved: ResolvedModel) -> int:
    """bert_score's tuned layer for the model; a clear error when the model is not in its table."""
    _, model2layers = _tables()
    key = table_key(resolved)
    if key in model2layers:
        return model2layers[key]
    if key in EXTRA_LAYERS:
        return EXTRA_LAYERS[key]
    known = f" (known as {key!r})" if key and key != resolved.name else ""
    raise ValueError(
        f"no default layer for model {resolved.name!r}{known}: it is not in bert_score's table of "
        "tuned layers. Pass num_layers=<layer> (e.g. the layer bert_score lists for the model this "
        "checkpoint was fine-tuned from)."
    )


def check_layer(num_layers: object) -> int:
    """Validate a user-given layer number (range is checked once the model's depth is known)."""
    if isinstance(num_layers, bool) or not isinstance(num_layers, int):
        raise ValueError(f"num_layers must be an int, got {num_layers!r}")
    if num_layers < 0:
        raise ValueError(f"num_layers must be >= 0 (0 = the embedding layer), got {num_layers}")
    return num_layers

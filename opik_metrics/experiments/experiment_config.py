"""An experiment's config: what the pipeline used, plus metric signatures and package versions,
so that runs line up (and resume only onto a run made the same way).
"""
from __future__ import annotations

import platform
from typing import Any, Mapping, Sequence

from ..versions import ours, package_version
from .scoring import as_results
from .spans import tracing_disabled

_PACKAGES = ("opik", "torch", "transformers", "pillow", "requests", "sacrebleu", "nltk", "bert-score")
_PROBE = {"output": "a small dog runs on the beach", "reference": "a dog running along a beach"}


def package_versions() -> dict[str, str]:
    """Versions of the packages results depend on."""
    return {"python": platform.python_version(), "opik-metrics": ours(),
            **{name: package_version(name) for name in _PACKAGES}}


def metric_signature(metric: Any) -> str:
    """The metric's signature string: its ``signature`` attribute, or the one its results carry."""
    own = getattr(metric, "signature", None)
    if isinstance(own, str) and own:
        return own
    try:
        with tracing_disabled():
            results = as_results(metric.score(**_PROBE))
    except Exception:
        results = []
    sigs = sorted({str(r.metadata["signature"]) for r in results
                   if isinstance(r.metadata, dict) and r.metadata.get("signature")})
    return " ; ".join(sigs) or f"{type(metric).__module__}.{type(metric).__qualname__}"


def experiment_config(base: Mapping[str, Any], metrics: Sequence[Any]) -> dict[str, Any]:
    """``base`` (model, settings, data) with ``metrics`` (name: signature) and ``versions`` added."""
    return {**base, "metrics": {m.name: metric_signature(m) for m in metrics},
            "versions": package_versions()}

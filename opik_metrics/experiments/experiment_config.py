"""An experiment's config: what the pipeline used, plus metric signatures and package versions,
so that runs line up (and resume only onto a run made the same way).
"""
from __future__ import annotations

import platform
from typing import Any, Mapping, Sequence

from opik_metrics.core.versions import ours, package_version
from opik_metrics.core import facts_of

_PACKAGES = ("opik", "torch", "transformers", "pillow", "requests", "sacrebleu", "nltk", "bert-score")


def package_versions() -> dict[str, str]:
    """Versions of the packages results depend on."""
    return {"python": platform.python_version(), "opik-metrics": ours(),
            **{name: package_version(name) for name in _PACKAGES}}


def experiment_config(base: Mapping[str, Any], metrics: Sequence[Any]) -> dict[str, Any]:
    """``base`` (model, settings, data) with ``metrics`` (name: the metric's facts, signature
    included: what a stored experiment needs to be compared right) and ``versions`` added."""
    return {**base, "metrics": {m.name: facts_of(m).as_dict() for m in metrics},
            "versions": package_versions()}

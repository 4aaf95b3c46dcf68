"""The one place the pack reaches into a Hugging Face ``evaluate`` module's own hooks: its
``_compute`` on an item's lists gives what ``compute`` gives, 20 times faster, where the Arrow
round trip of ``compute`` cannot change the inputs; and the hash ``evaluate`` gives a script.
evaluate has no public way to do either (``_compute`` is the hook every module implements)."""
from __future__ import annotations

import hashlib
import inspect
from typing import Any, Mapping


def compute_direct(module: Any, inputs: Mapping[str, Any]) -> Any:
    """What ``module.compute(**inputs)`` runs after its Arrow round trip, under the same
    temporary numpy seed (only where ``direct_compute_allowed``)."""
    from datasets.utils.py_utils import temp_seed

    with temp_seed(module.seed):
        return module._compute(**inputs)  # noqa: SLF001 - evaluate's per-module hook: no public direct call


def direct_compute_allowed(evaluate: Any, module: Any) -> bool:
    """Whether ``_compute`` on the item's own lists is exactly what ``compute`` does: string inputs
    (the Arrow round trip gives them back unchanged), no output format, one process, and the
    module keeps evaluate's own ``compute`` and data handling."""
    base = evaluate.EvaluationModule
    kept = all(getattr(type(module), m, None) is getattr(base, m) for m in
               ("compute", "add_batch", "_finalize", "_infer_feature_from_batch", "_feature_names"))
    return kept and module.info.format is None and getattr(module, "num_process", 1) == 1


def module_hash(module: Any) -> str:
    """The hash evaluate gives a loaded script, else one of the class's source code."""
    if getattr(module, "_hash", None):
        return str(module._hash)  # noqa: SLF001 - the hash evaluate gives a loaded script, public nowhere
    try:
        return "source-" + hashlib.sha256(inspect.getsource(type(module)).encode()).hexdigest()
    except (OSError, TypeError):
        return "unknown"

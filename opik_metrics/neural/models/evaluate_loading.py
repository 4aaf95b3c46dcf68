"""Load a Hugging Face ``evaluate`` module (a local metric script, or a hub name such as
``"sacrebleu"``) without ever hanging: offline, or with a hub that does not answer, the load
ends in seconds with an error naming the module and what to do.

Why: ``evaluate`` 0.4.6 reads only its own ``HF_EVALUATE_OFFLINE``, not ``HF_HUB_OFFLINE``, and
on a network that drops packets it waits up to 100 s per request over up to six requests (three
module types, two revisions), plus a 10 s download-count ping each. So with the hub marked
offline (either variable) we switch ``evaluate``'s offline mode on for the load, and otherwise
check first, in at most a few seconds, that the hub answers; either way a module cached by an
earlier online load is still found.
"""
from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any, Iterator

from opik_metrics.neural.models.hub_access import hub_offline, hub_unreachable
from opik_metrics.neural.models.registry import ModelNotAvailableError

_LOAD_LOCK = threading.Lock()      # evaluate's offline switch is process-wide: one load at a time


class EvaluateModuleNotAvailable(ModelNotAvailableError):
    """An ``evaluate`` module that cannot be loaded here; the message names it and says what to do."""


class EvaluateScriptError(ValueError):
    """An ``evaluate`` module that is there but whose own code fails: its script raises, defines no
    module class, or its ``compute`` fails on a probe item. The message names the module and the error."""


def is_local_spec(spec: str) -> bool:
    """Whether ``spec`` names a local metric script (a file, or a folder holding ``<folder>.py``)
    rather than a hub module (``name`` or ``namespace/name``)."""
    path = os.path.expanduser(spec)
    return (os.path.exists(path) or spec.endswith(".py") or spec.startswith((".", "/", "~"))
            or spec.count("/") > 1 or os.sep != "/" and os.sep in spec)


@contextlib.contextmanager
def _evaluate_settings(offline: bool) -> Iterator[None]:
    """evaluate's offline switch for one load; the download-count ping (a request that may wait
    10 s and only counts downloads) is always left out."""
    from evaluate import config

    saved = config.HF_EVALUATE_OFFLINE, config.HF_UPDATE_DOWNLOAD_COUNTS
    config.HF_EVALUATE_OFFLINE = bool(offline) or saved[0]
    config.HF_UPDATE_DOWNLOAD_COUNTS = False
    try:
        yield
    finally:
        config.HF_EVALUATE_OFFLINE, config.HF_UPDATE_DOWNLOAD_COUNTS = saved


def load_evaluate_module(spec: str, config_name: str | None = None, **load_kwargs: Any) -> Any:
    """``evaluate.load(spec, config_name, keep_in_memory=True, **load_kwargs)`` that never hangs.

    ``spec``: a local metric script (``path/to/metric.py``, or a folder holding ``<folder>.py``)
    or a hub name (``"sacrebleu"``, ``"namespace/name"``). Raises EvaluateModuleNotAvailable
    naming the module when it cannot be found or the hub cannot be reached (offline, no answer)
    and no copy is cached.
    """
    try:
        import evaluate
    except ImportError as exc:  # pragma: no cover - depends on the evaluate extra
        raise EvaluateModuleNotAvailable(
            "EvaluateMetric needs Hugging Face evaluate: pip install 'opik-metrics[evaluate]'") from exc
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"module: expected an evaluate.EvaluationModule, a metric script path or a hub name, "
                         f"got {spec!r}")
    spec = spec.strip()
    load_kwargs.setdefault("keep_in_memory", True)     # no Arrow cache files, no file locks between instances
    if is_local_spec(spec):
        path = os.path.expanduser(spec)
        folder_script = Path(path) / f"{Path(path).name}.py"
        if not (os.path.isfile(path) or folder_script.is_file()):
            raise EvaluateModuleNotAvailable(
                f"evaluate module {spec!r}: no metric script there (a .py file, or a folder holding "
                f"{Path(path).name}.py)")
        with _LOAD_LOCK, _evaluate_settings(offline=False):
            try:
                return evaluate.load(path, config_name=config_name, **load_kwargs)
            except Exception as exc:  # the script's own code: whatever it raises, it is named as its failure
                raise EvaluateScriptError(_script_failure(spec, exc)) from exc
    from evaluate import config as evaluate_config

    why = hub_offline(("HF_EVALUATE_OFFLINE", "HF_HUB_OFFLINE")) or hub_unreachable(evaluate_config.HF_ENDPOINT)
    try:
        with _LOAD_LOCK, _evaluate_settings(offline=why is not None):
            return evaluate.load(spec, config_name=config_name, **load_kwargs)
    except (FileNotFoundError, ConnectionError) as exc:
        if why is not None:
            cause = (f"the Hugging Face hub cannot be reached ({why}) and no copy of it is cached "
                     f"(evaluate caches a module it once loaded online)")
        else:
            cause = f"evaluate could not find it ({exc})"
        raise EvaluateModuleNotAvailable(
            f"could not load the evaluate module {spec!r}: {cause}. Pass the path of a local metric "
            f"script (e.g. {spec.split('/')[-1]}.py from the module's hub repository), or an "
            "evaluate.EvaluationModule you built, or load it once with network access.") from None


def _script_failure(spec: str, exc: Exception) -> str:
    if isinstance(exc, TypeError) and "'NoneType' object is not callable" in str(exc):
        # evaluate looks the module class up in the script and calls what it found: nothing
        return (f"the evaluate module {spec!r} defines no module class: its script needs a subclass of "
                "evaluate.Metric (or evaluate.EvaluationModule)")
    return f"the evaluate module {spec!r} failed to load: its script raised {type(exc).__name__}: {exc}"

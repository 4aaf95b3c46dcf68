"""Whether the Hugging Face hub can be reached, asked once in about a second, so that a hub model
without a network fails at once with a one-line hint instead of after transformers' retries.

Why: with no network and ``HF_HUB_OFFLINE`` unset, ``from_pretrained`` retries each file for
about 30 s before its error (transformers 5, huggingface_hub 1.x). A short probe of the hub's
endpoint tells the cases apart first: offline and cached -> load the cached snapshot; offline and
not cached -> say so now, naming ``HF_HUB_OFFLINE=1``.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from opik_metrics.neural.models.errors import ModelNotAvailableError

#: Seconds the hub gets to answer (connect, then read) before it counts as unreachable.
HUB_PROBE_TIMEOUT = (2.0, 3.0)
#: Seconds a probe's answer is reused: one probe for the several loads of one run.
PROBE_REUSE_SECONDS = 60.0
_TRUE = {"1", "ON", "YES", "TRUE"}
_probes: dict[str, tuple[float, str | None]] = {}
_probe_lock = threading.Lock()


class HubUnreachableError(ModelNotAvailableError):
    """A hub model asked for while the hub does not answer and no copy is cached."""


def hub_offline(variables: tuple[str, ...] = ("HF_HUB_OFFLINE",)) -> str | None:
    """Why the hub counts as offline (the variable that says so), or None."""
    for var in variables:
        if os.environ.get(var, "").upper() in _TRUE:
            return f"{var}={os.environ[var]}"
    try:
        import huggingface_hub.constants as hub_constants
        if getattr(hub_constants, "HF_HUB_OFFLINE", False):
            return "huggingface_hub offline mode"
    except ImportError:  # pragma: no cover - transformers and evaluate depend on huggingface_hub
        pass
    return None


def hub_unreachable(endpoint: str, timeout: tuple[float, float] = HUB_PROBE_TIMEOUT) -> str | None:
    """Why ``endpoint`` does not answer within ``timeout`` (the error), or None when it answers
    (any HTTP status counts: the hub is there). Honours the proxy variables, as requests does."""
    import requests

    try:
        requests.head(endpoint, timeout=timeout, allow_redirects=False)
    except requests.RequestException as exc:
        return f"{endpoint} did not answer: {type(exc).__name__}, after at most {sum(timeout):g} s"
    return None


def hub_endpoint() -> str:
    """The endpoint huggingface_hub downloads from (``HF_ENDPOINT``, else huggingface.co)."""
    import huggingface_hub.constants as hub_constants

    return str(hub_constants.ENDPOINT)


def why_hub_unreachable() -> str | None:
    """The probe's answer for the hub endpoint, reused for PROBE_REUSE_SECONDS."""
    endpoint = hub_endpoint()
    with _probe_lock:
        asked = _probes.get(endpoint)
        if asked is not None and time.monotonic() - asked[0] < PROBE_REUSE_SECONDS:
            return asked[1]
        why = hub_unreachable(endpoint)
        _probes[endpoint] = (time.monotonic(), why)
        return why


def cached_snapshot(repo_id: str) -> Path | None:
    """The folder of ``repo_id``'s cached snapshot (the one holding its ``config.json``), or None."""
    import huggingface_hub
    import huggingface_hub.constants as hub_constants

    try:
        found = huggingface_hub.try_to_load_from_cache(repo_id, "config.json",
                                                       cache_dir=hub_constants.HF_HUB_CACHE)
    except ValueError:          # not a valid repo id: let from_pretrained say so
        return None
    return Path(found).parent if isinstance(found, str) else None


def hub_source(repo_id: str) -> str:
    """What ``from_pretrained`` should load for the hub model ``repo_id``: the id itself when the
    hub answers or offline mode is on (transformers then reads its cache at once), the cached
    snapshot when the hub does not answer. Raises HubUnreachableError when it does not answer and
    nothing is cached."""
    if hub_offline(("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")) is not None:
        return repo_id
    why = why_hub_unreachable()
    if why is None:
        return repo_id
    snapshot = cached_snapshot(repo_id)
    if snapshot is not None:
        return str(snapshot)
    raise HubUnreachableError(
        f"model {repo_id!r} is not in the local Hugging Face cache and the hub cannot be reached "
        f"({why}); set HF_HUB_OFFLINE=1 to use cached models without asking the hub, or pass a "
        f"local directory (save_pretrained) or a packaged model (packaged:minilm, a text encoder; "
        f"packaged:smollm2, a causal LM)")

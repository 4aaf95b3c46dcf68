"""Which backend an experiment goes to: an Opik server when one is configured (explicitly,
``OPIK_URL_OVERRIDE``, ``OPIK_API_KEY``, ``opik.configure`` or its config file) and answers a
short health check; the local store when none is configured. Asked for but down: a clear error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

HEALTH_TIMEOUT_S = 3.0
BACKENDS = ("auto", "local", "opik")


class OpikServerUnavailable(RuntimeError):
    """An Opik server was asked for but does not answer; the message says how to go on."""


@dataclass(frozen=True)
class Backend:
    """Where results go: ``kind`` is "opik" or "local"; ``reason`` says why; ``url`` for Opik."""

    kind: str
    reason: str
    url: str | None = None


def _opik_config() -> Any:
    import opik.config

    return opik.config.OpikConfig()


def configured_by(cfg: Any) -> str | None:
    """What configured an Opik server (for messages), or None when nothing did."""
    set_fields = getattr(cfg, "model_fields_set", set())
    if "url_override" in set_fields:
        return "OPIK_URL_OVERRIDE / opik.configure"
    if "api_key" in set_fields or getattr(cfg, "api_key", None):
        return "OPIK_API_KEY / opik.configure"
    if getattr(cfg, "config_file_exists", False):
        return f"the Opik config file {cfg.config_file_fullpath}"
    return None


def ping_url(base_url: str) -> str:
    """Opik's health-check URL under its API base URL."""
    return base_url.rstrip("/") + "/is-alive/ping"


LOCAL_ADVICE = "pass --backend local to keep results in the local store and push them later"


def check_server(url: str, timeout: float = HEALTH_TIMEOUT_S, why: str = "", local_advice: str = LOCAL_ADVICE) -> None:
    """Raise OpikServerUnavailable unless the Opik API at ``url`` answers its ping within ``timeout``."""
    advice = f"Start the server or fix the URL (OPIK_URL_OVERRIDE, `opik configure`), or {local_advice}."
    where = f"Opik server at {url}" + (f" (configured by {why})" if why else "")
    try:
        response = requests.get(ping_url(url), timeout=timeout)
    except requests.Timeout:
        raise OpikServerUnavailable(f"{where} did not answer within {timeout:g} s. {advice}") from None
    except requests.RequestException as exc:
        reason = type(exc).__name__ + (": connection refused" if "refused" in str(exc).lower() else "")
        raise OpikServerUnavailable(f"{where} is not reachable ({reason}). {advice}") from None
    healthy = False
    if response.status_code == 200:
        try:
            healthy = response.json().get("healthy", True) is not False
        except ValueError:
            healthy = False
    if not healthy:
        raise OpikServerUnavailable(f"{where} answered its health check with HTTP {response.status_code} "
                                    f"instead of a healthy Opik backend. {advice}")


def choose_backend(requested: "str | Backend" = "auto", timeout: float = HEALTH_TIMEOUT_S,
                   local_advice: str = LOCAL_ADVICE) -> Backend:
    """``local``: the store. ``opik``: the configured server, which must answer. ``auto``: the
    server when one is configured (it must answer: being configured is asking for it), else the store.
    """
    if isinstance(requested, Backend):
        return requested
    if requested not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {requested!r}")
    if requested == "local":
        return Backend("local", "local store requested")
    cfg = _opik_config()
    why = configured_by(cfg)
    if why is None and requested == "auto":
        return Backend("local", "no Opik server configured (OPIK_URL_OVERRIDE, OPIK_API_KEY, `opik configure`)")
    check_server(cfg.url_override, timeout, why or "the default Opik URL", local_advice)
    return Backend("opik", f"Opik server at {cfg.url_override}", cfg.url_override)

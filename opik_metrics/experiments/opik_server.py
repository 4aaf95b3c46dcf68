"""Which backend an experiment goes to: an Opik server when one is configured (explicitly,
``OPIK_URL_OVERRIDE``, ``OPIK_API_KEY``, ``opik.configure`` or its config file) and answers a
short health check (its deadline holds however slowly the server answers); the local store when
none is configured. Asked for but down: a clear error. A server whose API then refuses a request
(HTTP 401, 404, 500) is a clear one-line error too, naming the server and the status.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Iterator

import requests
import urllib3.exceptions

from opik_metrics.metric_kit.opik_settings import opik_settings

HEALTH_TIMEOUT_S = 3.0
SERVER_TIMEOUT_ENV = "OPIK_METRICS_SERVER_TIMEOUT"
MAX_SERVER_TIMEOUT_S = 3600.0
DEFAULT_SERVER_TIMEOUT_S = 30.0
BACKENDS = ("auto", "local", "opik")


class OpikServerUnavailable(RuntimeError):
    """An Opik server was asked for but does not answer; the message says how to go on."""


class OpikServerError(OpikServerUnavailable):
    """The Opik server answered its health check, but its API refused a request (HTTP 401, 404,
    500 ...) or broke off; the message is one line naming the server URL and the HTTP status."""

    def __init__(self, message: str, url: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


@dataclass(frozen=True)
class Backend:
    """Where results go: ``kind`` is "opik" or "local"; ``reason`` says why; ``url`` for Opik."""

    kind: str
    reason: str
    url: str | None = None


def _opik_config() -> Any:
    """Opik's server settings, read without importing opik where it can be (``opik_settings``)."""
    return opik_settings()


def configured_by(cfg: Any) -> str | None:
    """What configured an Opik server (for messages), or None when nothing did."""
    set_fields: set[str] = getattr(cfg, "model_fields_set", set())
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


# How to go on without the server, in the words of where the error is raised (the end of the
# advice "Start the server or fix the URL (...), <this>."): a Python call, a command with --backend,
# a command that only talks to the server (push, publish) and so has no local way to offer.
LOCAL_ADVICE = 'or pass backend="local" to keep results in the local store and push them later'
CLI_LOCAL_ADVICE = ("or pass --backend local to keep results in the local store and push them later "
                    "(opik-metrics experiments push)")
PUSH_ADVICE = "then push again: nothing was sent, and the experiment stays in the local store"
PUBLISH_ADVICE = "then publish again: nothing was written (a dry run shows what would be)"
NOTHING_CONFIGURED = ("no server is configured (OPIK_URL_OVERRIDE, OPIK_API_KEY and `opik configure` are unset), "
                      "so this is opik's default URL")


_PING_MAX_BYTES = 64 * 1024


class _PingTimeout(Exception):
    pass


def _ping(url: str, timeout: float) -> tuple[int, bytes]:
    """GET ``url``: (status, body), all within ``timeout`` seconds in total. The request runs in a
    daemon thread that the caller waits for at most ``timeout``, so no phase of it (name lookup,
    connecting, headers or a body trickling in) can hold the caller longer; the thread stops
    reading at the deadline too. Raises _PingTimeout, or the request's own exception."""
    deadline = time.monotonic() + timeout
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            with requests.get(url, timeout=timeout, stream=True) as response:
                body = bytearray()
                while True:
                    if time.monotonic() > deadline:
                        raise _PingTimeout
                    chunk = response.raw.read1(1024, decode_content=True)   # what has arrived
                    if not chunk or len(body) > _PING_MAX_BYTES:
                        break
                    body.extend(chunk)
                outcome["answer"] = (response.status_code, bytes(body))
        except urllib3.exceptions.ReadTimeoutError:
            outcome["error"] = _PingTimeout()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="opik-metrics-health-check", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        raise _PingTimeout
    if "error" in outcome:
        raise outcome["error"]
    return outcome["answer"]


def check_server(url: str, timeout: float = HEALTH_TIMEOUT_S, why: str = "", local_advice: str = LOCAL_ADVICE) -> None:
    """Raise OpikServerUnavailable unless the Opik API at ``url`` answers its ping within ``timeout``
    seconds in total (a server answering slowly, byte by byte, fails it too). ``why``: what points
    at this URL (in parentheses after it); ``local_advice``: how to go on without the server, in
    the words of the caller (``LOCAL_ADVICE``, ``CLI_LOCAL_ADVICE``, ``PUSH_ADVICE``)."""
    advice = f"Start the server or fix the URL (OPIK_URL_OVERRIDE, `opik configure`), {local_advice}."
    where = f"Opik server at {url}" + (f" ({why})" if why else "")
    if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
        raise OpikServerUnavailable(f"Opik server URL {url!r}" + (f" ({why})" if why else "")
                                    + f" is not an http(s) URL. {advice}")
    try:
        status, body = _ping(ping_url(url), timeout)
    except (_PingTimeout, requests.Timeout):
        raise OpikServerUnavailable(f"{where} did not answer within {timeout:g} s. {advice}") from None
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        reason = type(exc).__name__ + (": connection refused" if "refused" in str(exc).lower() else "")
        raise OpikServerUnavailable(f"{where} is not reachable ({reason}). {advice}") from None
    healthy = False
    if status == 200:
        try:
            answer = json.loads(body.decode("utf-8"))
            healthy = not isinstance(answer, dict) or answer.get("healthy", True) is not False
        except ValueError:
            healthy = False
    if not healthy:
        raise OpikServerUnavailable(f"{where} answered its health check with HTTP {status} "
                                    f"instead of a healthy Opik backend. {advice}")


_STATUS_ADVICE = {
    401: "check the API key and workspace (OPIK_API_KEY, OPIK_WORKSPACE, `opik configure`)",
    403: "check the API key and workspace (OPIK_API_KEY, OPIK_WORKSPACE, `opik configure`)",
    404: "the server answers its health check but not this API: check that the URL is the Opik API "
         "(OPIK_URL_OVERRIDE ends in /api) and that the server's version matches the opik package",
}


def _body_detail(body: Any) -> str:
    """The server's own short explanation from an error body, on one line ('' when none)."""
    detail: Any = body
    if isinstance(body, dict):
        detail = body.get("errors") or body.get("message") or body.get("error") or ""
    if isinstance(detail, (list, tuple)):
        detail = "; ".join(str(d) for d in detail)
    text = " ".join(str(detail or "").split())
    return text if len(text) <= 160 else text[:157] + "..."


def api_failure(exc: BaseException, url: str | None, doing: str, transport: bool = True) -> OpikServerError | None:
    """The one-line OpikServerError for an error of Opik's REST client (``ApiError``: the server
    answered with an HTTP error; with ``transport``, also an httpx error: it stopped answering),
    or None for any other exception. ``doing`` says what was being done ("creating the dataset")."""
    where = f"Opik server at {url}" if url else "the Opik server"
    try:
        from opik.rest_api.core.api_error import ApiError
    except ImportError:  # pragma: no cover - opik is a dependency
        return None
    if isinstance(exc, ApiError):
        status = exc.status_code
        try:
            phrase = HTTPStatus(status).phrase if status is not None else ""
        except ValueError:
            phrase = ""
        advice = (_STATUS_ADVICE.get(status) if status is not None else None) or (
            "the server failed; see its logs and run the command again" if status and status >= 500 else "")
        detail = _body_detail(exc.body)
        return OpikServerError(f"{where} refused {doing}: HTTP {status}{' ' + phrase if phrase else ''}"
                               + (f" ({detail})" if detail else "") + (f"; {advice}" if advice else ""),
                               url, status)
    if transport:
        try:
            import httpx
        except ImportError:  # pragma: no cover - opik depends on httpx
            return None
        if isinstance(exc, httpx.HTTPError):
            reason = " ".join(str(exc).split())
            return OpikServerError(f"{where} stopped answering while {doing}: {type(exc).__name__}"
                                   + (f": {reason[:160]}" if reason else ""), url, None)
    return None


def client_url(client: Any) -> str | None:
    """The server URL an Opik client talks to (None when it cannot tell: a stand-in client)."""
    try:
        url = client.config.url_override if client is not None else None
    except Exception:  # noqa: BLE001 - a stand-in client without Opik's config
        return None
    return url if isinstance(url, str) else None


@contextlib.contextmanager
def server_errors(url: str | None, doing: str, transport: bool = True) -> Iterator[None]:
    """Turn an error of Opik's REST client inside the block into a one-line OpikServerError."""
    try:
        yield
    except Exception as exc:
        converted = answer_failure(exc, url, doing, transport)
        if converted is None:
            raise
        raise converted from None


def server_timeout() -> float:
    """Seconds one request to the Opik server may wait for its answer: ``OPIK_METRICS_SERVER_TIMEOUT``
    (default 30). Opik's SDK tries a request that times out 3 times (about 11 s apart in all), so a
    server that stops answering fails a request after at most 3 x this + 11 s; a streamed read we
    make (experiments, spans) ends within this in total, however slowly the answer trickles in."""
    raw = os.environ.get(SERVER_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_SERVER_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_SERVER_TIMEOUT_S:      # a larger one overflows timestamps, or waits without end
        raise OpikServerUnavailable(f"{SERVER_TIMEOUT_ENV} must be a number of seconds above 0 and at most "
                                    f"{MAX_SERVER_TIMEOUT_S:g}, got {raw!r}")
    return value


_timeout_hook_installed = False


def use_server_timeout() -> None:
    """Make every HTTP client Opik's SDK builds from now on wait at most ``server_timeout()`` for
    each phase of a request (connecting, sending, each read), instead of its own 20 s / 100 s.
    Through the SDK's public hook (``opik.hooks.add_httpx_client_hook``); installed once, it reads
    the setting each time a client is built. Call it before creating an ``opik.Opik``."""
    global _timeout_hook_installed
    server_timeout()                      # a bad setting is one line now, not when a client is built
    if _timeout_hook_installed:
        return
    import httpx
    import opik.hooks

    class _ServerTimeout(opik.hooks.HttpxClientHook):
        def update_init_arguments(self, kwargs: dict[str, Any]) -> dict[str, Any]:
            kwargs["timeout"] = httpx.Timeout(server_timeout())
            return kwargs

    opik.hooks.add_httpx_client_hook(_ServerTimeout(client_modifier=None, client_init_arguments=None))
    _timeout_hook_installed = True


def _from_opik_rest_api(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while Opik's REST client read an answer (not by a user's code)."""
    import opik.rest_api

    root = os.path.dirname(os.path.abspath(opik.rest_api.__file__)) + os.sep
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(root):
            return True
        tb = tb.tb_next
    return False


def answer_failure(exc: BaseException, url: str | None, doing: str, transport: bool = True) -> OpikServerError | None:
    """``api_failure``, and the one-line OpikServerError for the failures the server causes that are
    not an HTTP error status: no answer within ``server_timeout()`` (with ``transport``), an answer
    that is not JSON (the SDK's ApiError with a 2xx status), or JSON of another shape than Opik's
    API gives (a pydantic ValidationError or a JSON decode error raised inside Opik's REST client).
    Without ``transport`` an httpx error still counts when Opik's REST client raised it.
    Each says that nothing about the step was finished and that running the command again does it."""
    where = f"Opik server at {url}" if url else "the Opik server"
    rerun = "run the command again once the server answers: it redoes this step"
    version = ("check that the URL is the Opik API (OPIK_URL_OVERRIDE ends in /api) and that the server's "
               "version matches the opik package")
    try:
        import httpx
        import pydantic
        from opik.rest_api.core.api_error import ApiError
    except ImportError:  # pragma: no cover - opik is a dependency
        return None
    if not transport and isinstance(exc, httpx.HTTPError) and _from_opik_rest_api(exc):
        transport = True                  # Opik's own request, not one of a user's task or metric
    if isinstance(exc, ApiError) and exc.status_code is not None and 200 <= exc.status_code < 300:
        sample = " ".join(str(exc.body or "").split())[:60]
        return OpikServerError(f"{where} answered {doing} with HTTP {exc.status_code} but a body that is not "
                               f"JSON ({sample!r}); {version}; {rerun}", url, exc.status_code)
    if transport and isinstance(exc, httpx.TimeoutException):
        return OpikServerError(f"{where} did not answer within {server_timeout():g} s ({SERVER_TIMEOUT_ENV}) "
                               f"while {doing} ({type(exc).__name__}); {rerun}", url, None)
    if isinstance(exc, (pydantic.ValidationError, json.JSONDecodeError)) and _from_opik_rest_api(exc):
        if isinstance(exc, pydantic.ValidationError):
            first: Any = exc.errors()[0] if exc.errors() else {}
            where_in = ".".join(str(part) for part in first.get("loc", ())) or "the answer"
            what = (f"JSON of another shape than Opik's API gives ({exc.title}: {where_in}: "
                    f"{' '.join(str(first.get('msg', '')).split())[:80]})")
        else:
            what = f"a body that is not JSON ({exc.msg} at character {exc.pos})"
        return OpikServerError(f"{where} answered {doing} with {what}; {version}; {rerun}", url, None)
    return api_failure(exc, url, doing, transport)


def within_deadline(call: Any, url: str | None, doing: str, timeout: float | None = None) -> Any:
    """``call()``, ended after ``timeout`` (default ``server_timeout()``) seconds in total with a
    one-line OpikServerError: for a read whose answer could trickle in without end (a streamed
    answer, where each byte arriving in time resets the SDK's read timeout). The read runs in a
    daemon thread, left to end on its own timeouts; nothing is written by such a read. Errors
    of the read become one line as ``answer_failure`` words them."""
    limit = server_timeout() if timeout is None else timeout
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="opik-metrics-server-read", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        where = f"Opik server at {url}" if url else "the Opik server"
        raise OpikServerError(f"{where} did not finish answering within {limit:g} s ({SERVER_TIMEOUT_ENV}) "
                              f"while {doing}; run the command again once the server answers: it redoes "
                              "this step", url, None)
    if "error" in outcome:
        exc = outcome["error"]
        converted = answer_failure(exc, url, doing) if isinstance(exc, Exception) else None
        if converted is None:
            raise exc
        raise converted from None
    return outcome["value"]


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
    check_server(cfg.url_override, timeout, f"configured by {why}" if why else NOTHING_CONFIGURED, local_advice)
    use_server_timeout()
    return Backend("opik", f"Opik server at {cfg.url_override}", cfg.url_override)

"""A requests session whose requests end at a total deadline while the status line and headers
arrive: http.client's timeout is per socket read, so a server that sends its head a byte at a
time would otherwise hold a request as long as it likes. At the deadline the connection's socket
is shut down, and the waiting read returns at once."""
from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_current = threading.local()


@contextmanager
def deadline(at: float) -> Iterator[None]:
    """Requests made by this thread inside the block end by ``at`` (``time.monotonic()`` seconds)."""
    previous = getattr(_current, "at", None)
    _current.at = at
    try:
        yield
    finally:
        _current.at = previous


class _CutAtDeadline:
    """Arms a timer around ``getresponse`` (the head of the answer) that shuts the socket down at
    the thread's deadline; the body is read by the caller, which checks the deadline itself. The
    socket is kept as ``body_socket`` for that reader: http.client forgets it once the server says
    it will close the connection, and offers no public handle on the response's."""

    body_socket: Any = None

    def getresponse(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.body_socket = getattr(self, "sock", None)
        at = getattr(_current, "at", None)
        if at is None:
            return super().getresponse(*args, **kwargs)  # type: ignore[misc]
        timer = threading.Timer(max(0.0, at - time.monotonic()), self._cut)
        timer.daemon = True
        timer.start()
        try:
            return super().getresponse(*args, **kwargs)  # type: ignore[misc]
        finally:
            timer.cancel()

    def _cut(self) -> None:
        sock = getattr(self, "sock", None)
        # HTTPS through an HTTPS proxy: urllib3's SSLTransport wraps the socket in ``.socket``
        sock = sock if isinstance(sock, socket.socket) else getattr(sock, "socket", None)
        if isinstance(sock, socket.socket):
            try:   # the plain socket's shutdown: an SSL socket's own would drop its state under the reader
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass


class _Connection(_CutAtDeadline, HTTPConnection):
    pass


class _TLSConnection(_CutAtDeadline, HTTPSConnection):
    pass


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


class _DeadlineAdapter(HTTPAdapter):
    """requests' adapter with pools of deadline-aware connections, proxied ones included."""

    _POOLS = {"http": _Pool, "https": _TLSPool}

    def init_poolmanager(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(self._POOLS)

    def proxy_manager_for(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        manager = super().proxy_manager_for(*args, **kwargs)
        if manager.pool_classes_by_scheme.get("http") is HTTPConnectionPool:   # not SOCKS: its pools are its own
            manager.pool_classes_by_scheme = dict(self._POOLS)
        return manager


def deadline_session() -> requests.Session:
    """A session whose requests honour ``deadline(...)`` blocks."""
    session = requests.Session()
    adapter = _DeadlineAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def response_socket(raw: Any) -> socket.socket | None:
    """The socket under a streamed response of a ``deadline_session`` (while its body is unread), or
    None: the body loop sets its timeout to what is left of the deadline."""
    sock = getattr(getattr(raw, "connection", None), "body_socket", None)
    sock = sock if isinstance(sock, socket.socket) else getattr(sock, "socket", None)   # TLS through a TLS proxy
    return sock if isinstance(sock, socket.socket) else None

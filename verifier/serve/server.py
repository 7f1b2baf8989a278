"""The uvicorn server around the app: connection limit, header and keep-alive timeouts, bounded shutdown.

:func:`create_server` is what ``python -m verifier serve`` runs (and what the
tests start on a loopback port). What it adds to a plain ``uvicorn.Server``:

* **a connection limit** (``max_connections``, lowered with a warning to what
  the process's file-descriptor limit leaves): a connection over it is
  answered ``503`` (JSON, ``busy``) and closed as soon as it is accepted, so
  slow or idle clients can never use up the descriptors ``accept()`` needs.
  asyncio accepts up to ``backlog`` connections in one go before any of them
  is looked at, so the listen backlog is sized from the same descriptor
  budget (:func:`connection_limits`): ``accept()`` never fails with EMFILE
  because of connections;
* **a header timeout** (``header_timeout_s``): a connection must deliver a
  request's complete headers within it, counted from the connection's start or
  from the previous response — slowly trickled headers, or the rest of a
  refused body, do not hold it forever; uvicorn's ``timeout_keep_alive``
  (``keep_alive_s``) closes idle keep-alive connections;
* **a bounded shutdown**: on SIGTERM the listening socket closes and
  :meth:`verifier.serve.service.Service.begin_shutdown` gives requests in
  flight ``shutdown_grace_s`` to finish (then 503 ``shutting_down``, queued
  model work cancelled); uvicorn's own ``timeout_graceful_shutdown`` is only a
  backstop ten seconds later.

* **a head limit** (:data:`MAX_HEAD_BYTES`): a request line plus headers over
  16 KiB is answered 431 and the connection closed, however the bytes arrive.
  h11's ``max_incomplete_event_size`` alone only bounds a head still
  incomplete in its buffer, so a 100 KB head sent in one write was accepted.

HTTP/1.1 is spoken by uvicorn's h11 protocol (its default without
``httptools``), subclassed here for the limit and the header timeout.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import math
import os
import socket
from typing import Any, ClassVar, Optional

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .app import create_app
from .metrics import Metrics
from .service import ServerSettings, Service

__all__ = ["HttpServer", "create_server", "stderr_log_config", "connection_limits", "FD_RESERVE", "DEFAULT_BACKLOG", "MAX_HEAD_BYTES"]

_LOG = logging.getLogger("verifier.serve")

#: File descriptors kept free of connections (model files, logs, the event loop, threads).
FD_RESERVE = 64
#: uvicorn's default listen backlog (also the most connections asyncio accepts in one go).
DEFAULT_BACKLOG = 2048
#: Seconds after ``shutdown_grace_s`` at which uvicorn cancels whatever is still running.
_BACKSTOP_S = 10
#: Largest request head (request line, headers, the blank line) in bytes: h11's and uvicorn's default
#: incomplete-event bound, 16 KiB (docs/serving.md, "Errors and limits"); larger heads get 431.
MAX_HEAD_BYTES = 16 * 1024


class _HeadLimitedConnection(h11.Connection):
    """h11's server connection refusing (431) a request head over ``max_head_bytes`` even when it arrived whole."""

    def __init__(self, max_head_bytes: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head_bytes)
        self.max_head_bytes = max_head_bytes
        self.refused_status: Optional[int] = None

    def next_event(self) -> Any:
        expecting_head = self.their_state is h11.IDLE
        before = len(self.trailing_data[0]) if expecting_head else 0
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:  # h11's own "Receive buffer too long" carries the 431 hint
            self.refused_status = exc.error_status_hint
            raise
        if expecting_head and isinstance(event, h11.Request):
            size = before - len(self.trailing_data[0])  # the bytes this head took from the buffer
            if size > self.max_head_bytes:
                self.refused_status = 431
                raise h11.RemoteProtocolError(f"request head of {size} bytes, over {self.max_head_bytes}", 431)
        return event


def _open_descriptors() -> int:
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder))
        except OSError:
            continue
    return 0


def connection_limits(max_connections: int, backlog: int = DEFAULT_BACKLOG) -> tuple[int, int]:
    """``(max_connections, backlog)`` as the soft ``RLIMIT_NOFILE`` allows them.

    Of the descriptors not open now, :data:`FD_RESERVE` stay free; the backlog
    gets at most an eighth of the rest (at least 8), and the connections what
    remains after two bursts of accepts (a refused connection's descriptor is
    closed a loop turn after it was accepted). Unlimited: both as requested.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return max_connections, backlog
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections, backlog
    headroom = int(soft) - _open_descriptors() - FD_RESERVE
    backlog = max(8, min(backlog, headroom // 8))
    return max(1, min(max_connections, headroom - 2 * backlog)), backlog


class _Guard:
    """What the connections of one server share: the limit, the header timeout, the metrics."""

    def __init__(self, metrics: Metrics, max_connections: int, header_timeout_s: float) -> None:
        self.metrics = metrics
        self.max_connections = max_connections
        self.header_timeout_s = header_timeout_s
        body = json.dumps({"error": {
            "type": "busy",
            "message": f"too many open connections (max_connections={max_connections}); retry later",
            "limit": f"max_connections={max_connections}",
        }}).encode()
        self.busy_response = (
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n".encode()
            + b"retry-after: 1\r\nconnection: close\r\n\r\n" + body
        )


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the connection limit and the header timeout of :class:`_Guard`."""

    guard: ClassVar[_Guard]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _HeadLimitedConnection(MAX_HEAD_BYTES)
        self._header_timer: Optional[asyncio.TimerHandle] = None
        self._refused = False
        self._counted = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's
        super().connection_made(transport)
        guard = self.guard
        if len(self.connections) > guard.max_connections:
            self._refused = True
            guard.metrics.connection_closed("over_limit")
            self.transport.write(guard.busy_response)
            self.transport.close()
            return
        self._counted = True
        guard.metrics.connection_opened()
        self._arm()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._disarm()
        if self._counted:
            self._counted = False
            self.guard.metrics.connection_lost()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self._header_timer is not None and self._serving():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and not self._serving():
            self._arm()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 refuses: 431 for a head over :data:`MAX_HEAD_BYTES`, else its 400."""
        conn = self.conn
        if not isinstance(conn, _HeadLimitedConnection) or conn.refused_status != 431:
            super().send_400_response(msg)
            return
        body = json.dumps({"error": {
            "type": "headers_too_large",
            "message": f"request headers over {conn.max_head_bytes} bytes",
            "limit": f"max_head_bytes={conn.max_head_bytes}",
        }}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        for event in (h11.Response(status_code=431, headers=headers, reason=b"Request Header Fields Too Large"),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(conn.send(event) or b"")
        self.transport.close()

    def _serving(self) -> bool:
        """A request's headers arrived and its response is not complete."""
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.guard.header_timeout_s, self._header_timeout)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self._serving():
            return
        self.guard.metrics.connection_closed("header_timeout")
        self.transport.close()


class HttpServer(uvicorn.Server):
    """A ``uvicorn.Server`` whose shutdown first tells the service (so the grace deadline starts)."""

    def __init__(self, config: uvicorn.Config, service: Service) -> None:
        super().__init__(config)
        self.service = service

    async def shutdown(self, sockets: Optional[list[socket.socket]] = None) -> None:
        """Stop accepting, start the service's shutdown grace, then uvicorn's graceful shutdown."""
        self.service.begin_shutdown()
        await super().shutdown(sockets=sockets)


def _protocol_class(guard: _Guard) -> type[GuardedH11Protocol]:
    class Protocol(GuardedH11Protocol):
        pass

    Protocol.guard = guard
    return Protocol


def stderr_log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration (``uvicorn.config.LOGGING_CONFIG``), every handler on stderr."""
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    for handler in config["handlers"].values():
        if handler.get("stream") == "ext://sys.stdout":
            handler["stream"] = "ext://sys.stderr"
    return config


def create_server(settings: ServerSettings, *, host: str = "127.0.0.1", port: int = 8080, log_level: str = "info",
                  **uvicorn_options: Any) -> HttpServer:
    """The server for ``settings`` on ``host:port`` (``port=0``: a free port); start it with ``.run()``.

    ``uvicorn_options`` go to ``uvicorn.Config`` (e.g. ``log_config``, ``access_log``);
    the options this module sets (``http``, ``backlog``, ``timeout_keep_alive``,
    ``timeout_graceful_shutdown``) cannot be overridden. Without a ``log_config``,
    uvicorn's own is used with its access log moved from stdout to stderr: every
    message goes to stderr, results to stdout (README).
    """
    if "log_config" not in uvicorn_options:
        uvicorn_options["log_config"] = stderr_log_config()
    app = create_app(settings)
    service: Service = app.state.service
    limit, backlog = connection_limits(settings.max_connections)
    service.max_connections = limit
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level, **uvicorn_options,
        http=_protocol_class(_Guard(service.metrics, limit, settings.header_timeout_s)), backlog=backlog,
        timeout_keep_alive=settings.keep_alive_s,  # type: ignore[arg-type]  # a float is fine (call_later)
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_s) + _BACKSTOP_S,
    )
    if limit < settings.max_connections:
        _LOG.warning("max_connections=%d lowered to %d (listen backlog %d): the file-descriptor limit (ulimit -n) "
                     "leaves no more", settings.max_connections, limit, backlog)
    return HttpServer(config, service)

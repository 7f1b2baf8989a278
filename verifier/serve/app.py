"""The Starlette app of ``python -m verifier serve``: routes, middleware, lifespan.

The server's state (settings, model loading, the verification pool) is
:mod:`verifier.serve.service`; the endpoints are :mod:`verifier.serve.routes`;
the uvicorn server around the app (timeouts, connection limit, shutdown) is
:mod:`verifier.serve.server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import AsyncIterator, Optional

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ApiError, error_response
from .metrics import Metrics
from .routes import ROUTES, handle_http_error, handle_unexpected
from .service import Exchange, ServerSettings, Service, shutting_down_error

__all__ = ["ServerSettings", "Service", "create_app"]


class _Observe:
    """ASGI middleware: request counts and latency by route and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: frozenset[str]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        route = path if path in self.routes else "other"
        status = {"code": 500}
        started = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self.metrics.observe_request(route, status["code"], time.perf_counter() - started)


class _Drain:
    """ASGI middleware: each request runs as a task the service can answer 503 at its shutdown deadline.

    When ``shutdown_grace_s`` after :meth:`Service.begin_shutdown` is over, a
    request whose response has not started is cancelled and answered 503
    ``shutting_down``. (New requests cannot arrive by then: uvicorn closes the
    listening socket and every connection not inside a request.)
    """

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        service = self.service
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange: Optional[Exchange] = None

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and exchange is not None:
                exchange.started = True
            await send(message)

        task = asyncio.ensure_future(self.app(scope, receive, sending))
        exchange = service.open_exchange(task)
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            service.close_exchange(exchange)
        if task.cancelled() and exchange.cancelled_by_shutdown and not exchange.started:
            grace = service.settings.shutdown_grace_s
            error = shutting_down_error(f"the server shut down before this request finished (shutdown_grace_s={grace:g})")
            await error_response(error)(scope, receive, send)
            return
        task.result()


def create_app(settings: ServerSettings) -> Starlette:
    """The Starlette app for ``settings``; the model loads in the background at startup."""
    service = Service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        service.start_loading()
        try:
            yield
        finally:
            service.stop_grace_timer()
            await asyncio.to_thread(service.close)

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc)

    app = Starlette(
        routes=ROUTES,
        lifespan=lifespan,
        exception_handlers={ApiError: api_error, 404: handle_http_error, 405: handle_http_error, Exception: handle_unexpected},
    )
    app.state.service = service
    app.add_middleware(_Drain, service=service)
    app.add_middleware(_Observe, metrics=service.metrics, routes=frozenset(route.path for route in ROUTES))
    return app

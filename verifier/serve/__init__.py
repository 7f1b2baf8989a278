"""HTTP server of the claim verifier (``python -m verifier serve``; docs/serving.md).

Needs the ``server`` extra (starlette, uvicorn, prometheus-client); ``import
verifier`` never imports this package.

Modules: :mod:`~verifier.serve.service` (settings, model loading and
readiness, the worker pool, shutdown), :mod:`~verifier.serve.app` (middleware,
lifespan), :mod:`~verifier.serve.server` (the uvicorn server: connection
limit, header and keep-alive timeouts, bounded shutdown),
:mod:`~verifier.serve.routes` (the endpoints), :mod:`~verifier.serve.body`
(request bodies: caps, deadline, bounded JSON parsing),
:mod:`~verifier.serve.metrics` (Prometheus), :mod:`~verifier.serve.auth`
(bearer key), :mod:`~verifier.serve.errors` (JSON error bodies),
:mod:`~verifier.serve.logs` (log flood control).
"""

from __future__ import annotations

from .app import create_app
from .server import HttpServer, create_server
from .service import ServerSettings, Service

__all__ = ["HttpServer", "ServerSettings", "Service", "create_app", "create_server"]

"""HTTP server of the claim verifier (``python -m verifier serve``; docs/serving.md).

Needs the ``server`` extra (starlette, uvicorn, prometheus-client); ``import
verifier`` never imports this package.

Modules: :mod:`~verifier.serve.app` (settings, model loading and readiness,
middleware, lifespan), :mod:`~verifier.serve.routes` (the endpoints),
:mod:`~verifier.serve.metrics` (Prometheus), :mod:`~verifier.serve.auth`
(bearer key), :mod:`~verifier.serve.errors` (JSON error bodies).
"""

from __future__ import annotations

from .app import create_app
from .service import ServerSettings, Service

__all__ = ["ServerSettings", "Service", "create_app"]

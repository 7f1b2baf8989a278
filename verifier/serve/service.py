"""The server's state: settings, model loading and readiness, the verification pool.

:class:`Service` loads the model in a background thread at startup (the
manifest is verified and ``golden.json`` re-scored: ``verify_golden``), then
wraps the engine in a :class:`verifier.engine.coalesce.CoalescingScorer` and builds
one :class:`verifier.claim_verifier.ClaimVerifier` over it. Verifications run in a
bounded thread pool; their scorer calls meet in the coalescer's shared passes.

Shutdown (:meth:`Service.begin_shutdown`, called by
:class:`verifier.serve.server.HttpServer` on SIGTERM): requests in flight may
finish for ``shutdown_grace_s``; then those still unanswered get a JSON 503
``shutting_down``, the coalescer's queued work fails at once
(``ScorerClosed``), verifications not yet started are cancelled, and only the
pass already running is waited for.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TypeVar

import numpy as np

from ..engine.coalesce import (
    DEFAULT_MAX_QUEUE_PAIRS,
    DEFAULT_MAX_WAIT_MS,
    CoalescingScorer,
    EngineProxy,
    PassReport,
    ScorerClosed,
)
from ..claim_verifier import ClaimVerifier
from ..options import RuntimeOptions
from ..types import ClaimVerificationConfig
from .auth import check_api_key
from .body import BodyReader
from .errors import ApiError
from .metrics import Metrics

__all__ = ["ServerSettings", "Service", "DirectScorer", "Exchange", "shutting_down_error"]

_LOG = logging.getLogger("verifier.serve")
T = TypeVar("T")


@dataclass(frozen=True)
class ServerSettings:
    """Everything the server is started with (none of it is digested).

    Attributes:
        model_dir: exported model directory.
        config: decision settings (``model``/``revision`` come from the manifest).
        runtime: engine settings; ``verify_golden`` is always on (readiness needs it).
        coalesce: merge concurrent callers into shared passes (off: each request
            scores on its own, for comparison).
        max_wait_ms, max_queue_pairs: the coalescer's (see :class:`CoalescingScorer`).
        score_timeout_s: deadline of one scorer call (queue wait included).
        max_batch_claims: most claims in one ``/v1/verify/batch`` request.
        max_predict_pairs: most pairs in one ``/predict`` request.
        max_inflight: most verification requests running or waiting at once; more get 503.
        worker_threads: threads that run verifications (each waits on the coalescer).
        api_key: bearer key required on every route but the health probes (``None``: open);
            compared as UTF-8 bytes, so it must not contain control characters.
        shutdown_grace_s: after SIGTERM, how long requests in flight may still finish;
            then the rest are answered 503 ``shutting_down`` and queued model work is cancelled.
        header_timeout_s: longest wait for a request's headers, from the connection's start
            or the previous response (then the connection is closed).
        keep_alive_s: an idle keep-alive connection is closed after this (uvicorn's ``timeout_keep_alive``).
        body_timeout_s: the whole body must arrive within this (408 otherwise); ``None``: no deadline.
        max_connections: most open connections; more are answered 503 and closed at once
            (lowered, with a warning, to what the process's file-descriptor limit allows).
        max_json_values: most JSON values (containers and members) in one body; more: 413 before parsing.
        parse_workers: threads that parse large bodies (never the event loop).
    """

    model_dir: Path
    config: Optional[ClaimVerificationConfig] = None
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    coalesce: bool = True
    max_wait_ms: float = DEFAULT_MAX_WAIT_MS
    max_queue_pairs: int = DEFAULT_MAX_QUEUE_PAIRS
    score_timeout_s: Optional[float] = 60.0
    max_batch_claims: int = 256
    max_predict_pairs: int = 1024
    max_inflight: int = 512
    worker_threads: int = 64
    api_key: Optional[str] = None
    shutdown_grace_s: float = 30.0
    header_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    body_timeout_s: Optional[float] = 60.0
    max_connections: int = 1024
    max_json_values: int = 1_000_000
    parse_workers: int = 2

    def __post_init__(self) -> None:
        for name in ("shutdown_grace_s", "header_timeout_s", "keep_alive_s", "body_timeout_s"):
            value = getattr(self, name)
            if value is None and name == "body_timeout_s":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86_400:
                raise ValueError(f"{name} must be a number of seconds in (0, 86400], got {value!r}")
        for name, low in (("max_connections", 1), ("max_json_values", 65_536), ("parse_workers", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.api_key is not None:
            check_api_key(self.api_key)


class DirectScorer(EngineProxy):
    """The engine without coalescing (each call its own pass), measured like the coalescer."""

    def __init__(self, engine: Any, metrics: Metrics) -> None:
        self.engine = engine
        self._metrics = metrics

        self.closed = False

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Probabilities of ``pairs``, scored alone (:class:`ScorerClosed` after :meth:`close`)."""
        if self.closed:
            raise ScorerClosed("the server is shutting down and accepts no new model work")
        started = time.perf_counter()
        encoded = self.engine.encode(pairs)
        self._metrics.tokenized(len(encoded), time.perf_counter() - started)
        started = time.perf_counter()
        probabilities, run = self.engine.score_encoded(encoded)
        elapsed = time.perf_counter() - started
        self._metrics.finished_pass(
            PassReport(1, len(encoded), run.real_tokens, run.padded_tokens, run.batches, elapsed, (0.0,))
        )
        return np.asarray(probabilities)

    async def score_async(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Async twin of :meth:`score` (in a worker thread)."""
        return await asyncio.to_thread(self.score, pairs)

    def close(self, *, drain: bool = True, timeout: Optional[float] = None) -> None:
        """Refuse new calls (a call already running finishes)."""
        self.closed = True


class Service:
    """The loaded model, its scorer and verifier, readiness, the worker pool and the metrics."""

    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self.metrics = Metrics()
        self.runtime = settings.runtime.model_copy(update={"model_dir": Path(settings.model_dir), "verify_golden": True})
        self.engine: Any = None
        self.scorer: Any = None
        self.verifier: Optional[ClaimVerifier] = None
        self.load_error: Optional[str] = None
        self._ready = threading.Event()
        self._loader: Optional[threading.Thread] = None
        self._pool = ThreadPoolExecutor(max_workers=settings.worker_threads, thread_name_prefix="claim-verifier-http")
        self._inflight = 0
        self._inflight_lock = threading.Lock()
        self.body = BodyReader(max_bytes=self.runtime.limits.max_request_bytes, max_values=settings.max_json_values,
                               timeout_s=settings.body_timeout_s, parse_workers=settings.parse_workers)
        #: SIGTERM came (:meth:`begin_shutdown`); requests in flight have ``shutdown_grace_s`` to finish.
        self.shutting_down = False
        #: ``shutdown_grace_s`` passed: what was still unanswered got 503, queued model work was cancelled.
        self.grace_over = False
        self._exchanges: dict[Exchange, None] = {}
        #: The connection limit in force (``max_connections``, or lower: set by :func:`~verifier.serve.server.create_server`).
        self.max_connections = settings.max_connections
        self._grace_timer: Optional[asyncio.TimerHandle] = None

    @property
    def ready(self) -> bool:
        """Model loaded, manifest verified, golden logits reproduced."""
        return self._ready.is_set()

    def start_loading(self) -> None:
        """Load the model in a background thread (readiness turns on when it succeeds)."""
        self._loader = threading.Thread(target=self._load, name="claim-verifier-load", daemon=True)
        self._loader.start()

    def wait_loaded(self, timeout: Optional[float] = None) -> bool:
        """Wait for the load to finish (either way); whether the server is ready."""
        if self._loader is not None:
            self._loader.join(timeout)
        return self.ready

    def _load(self) -> None:
        try:
            base = ClaimVerifier.from_model_dir(self.settings.model_dir, self.settings.config, runtime=self.runtime)
            engine = base.scorer
            load = getattr(engine, "load", None)
            if load is not None:
                load()  # verifies the manifest and the files, re-scores golden.json
            if self.settings.coalesce:
                scorer: Any = CoalescingScorer(
                    engine,  # type: ignore[arg-type]
                    max_batch_tokens=self.runtime.max_batch_tokens,
                    max_wait_ms=self.settings.max_wait_ms,
                    max_queue_pairs=self.settings.max_queue_pairs,
                    timeout_s=self.settings.score_timeout_s,
                    observer=self.metrics,
                )
            else:
                scorer = DirectScorer(engine, self.metrics)
            self.engine, self.scorer = engine, scorer
            self.metrics.watch_score_store(engine)  # --score-cache counters on /metrics (docs/score-store.md)
            self.verifier = ClaimVerifier(base.config, scorer=scorer, runtime=base.runtime)
        except Exception as exc:  # reported by /health/ready and every model route
            self.load_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            _LOG.error("model not loaded: %s", self.load_error)
            return
        self.metrics.ready.set(1)
        self._ready.set()
        _LOG.info("ready: %s", self.settings.model_dir)

    def require_ready(self) -> ClaimVerifier:
        """The verifier, or 503 while the model is loading or failed to load."""
        if not self._ready.is_set() or self.verifier is None:
            if self.load_error is not None:
                raise ApiError(503, "model_unavailable", f"the model failed to load: {self.load_error}")
            raise ApiError(503, "not_ready", "the model is still loading; retry shortly", headers={"Retry-After": "1"})
        return self.verifier

    async def run(self, function: Callable[[], T]) -> T:
        """Run ``function`` in the worker pool, refusing (503) beyond ``max_inflight``."""
        if self.grace_over:
            raise shutting_down_error()
        with self._inflight_lock:
            if self._inflight >= self.settings.max_inflight:
                self.metrics.refused("busy")
                raise ApiError(
                    503, "busy", f"too many requests in flight (max_inflight={self.settings.max_inflight}); retry later",
                    headers={"Retry-After": "1"},
                )
            self._inflight += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, function)
        finally:
            with self._inflight_lock:
                self._inflight -= 1

    # ------------------------------------------------------------------ shutdown

    def open_exchange(self, task: "asyncio.Task[Any]") -> "Exchange":
        """Register a request being served (its response not started yet)."""
        exchange = Exchange(task)
        self._exchanges[exchange] = None
        return exchange

    def close_exchange(self, exchange: "Exchange") -> None:
        """The request finished, one way or another."""
        self._exchanges.pop(exchange, None)

    def begin_shutdown(self) -> None:
        """Stop taking requests; give those in flight ``shutdown_grace_s`` (call on the event loop)."""
        if self.shutting_down:
            return
        self.shutting_down = True
        grace = self.settings.shutdown_grace_s
        _LOG.info("shutting down: %d requests in flight may finish within shutdown_grace_s=%g", len(self._exchanges), grace)
        self._grace_timer = asyncio.get_running_loop().call_later(grace, self._end_grace)

    def _end_grace(self) -> None:
        """The grace is over: answer what is unanswered (503), fail queued model work, cancel pending verifications."""
        self.grace_over = True
        unanswered = [exchange for exchange in self._exchanges if not exchange.started]
        if unanswered:
            _LOG.warning("shutdown_grace_s=%g passed: %d requests answered 503 shutting_down, queued model work cancelled",
                         self.settings.shutdown_grace_s, len(unanswered))
        for exchange in unanswered:
            exchange.cancelled_by_shutdown = True
            exchange.task.cancel()
        close = getattr(self.scorer, "close", None)
        if close is not None:
            close(drain=False, timeout=0)  # queued calls fail with ScorerClosed; a running pass finishes
        self._pool.shutdown(wait=False, cancel_futures=True)

    def stop_grace_timer(self) -> None:
        """Cancel the grace timer (everything finished in time; call on the event loop)."""
        if self._grace_timer is not None:
            self._grace_timer.cancel()

    def close(self) -> None:
        """Drain accepted work: the coalescer first, then the pool (after the grace: only the running pass)."""
        drain = not self.grace_over
        close = getattr(self.scorer, "close", None)
        if close is not None:
            close(drain=drain)
        self._pool.shutdown(wait=True, cancel_futures=not drain)
        self.body.close()
        release = getattr(self.engine, "close", None)  # the score store's file is final at exit (docs/score-store.md)
        if release is not None:
            release()


class Exchange:
    """One request being served: its task, and whether its response has started."""

    __slots__ = ("task", "started", "cancelled_by_shutdown")

    def __init__(self, task: "asyncio.Task[Any]") -> None:
        self.task = task
        self.started = False
        self.cancelled_by_shutdown = False


def shutting_down_error(message: str = "the server is shutting down; retry on another instance") -> ApiError:
    """503 ``shutting_down`` (the connection is closed after it)."""
    return ApiError(503, "shutting_down", message, headers={"Retry-After": "1", "Connection": "close"})

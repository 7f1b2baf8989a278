"""The server's state: settings, model loading and readiness, the verification pool.

:class:`Service` loads the model in a background thread at startup (the
manifest is verified and ``golden.json`` re-scored: ``verify_golden``), then
wraps the engine in a :class:`verifier.engine.coalesce.CoalescingScorer` and builds
one :class:`verifier.claim_verifier.ClaimVerifier` over it. Verifications run in a
bounded thread pool; their scorer calls meet in the coalescer's shared passes.
Shutdown (uvicorn's, on SIGTERM) first lets in-flight requests finish, then
drains the coalescer and the pool.
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

from ..engine.coalesce import DEFAULT_MAX_QUEUE_PAIRS, DEFAULT_MAX_WAIT_MS, CoalescingScorer, EngineProxy, PassReport
from ..claim_verifier import ClaimVerifier
from ..options import RuntimeOptions
from ..types import ClaimVerificationConfig
from .errors import ApiError
from .metrics import Metrics

__all__ = ["ServerSettings", "Service", "DirectScorer"]

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
        api_key: bearer key required on every route but the health probes (``None``: open).
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


class DirectScorer(EngineProxy):
    """The engine without coalescing (each call its own pass), measured like the coalescer."""

    def __init__(self, engine: Any, metrics: Metrics) -> None:
        self.engine = engine
        self._metrics = metrics

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Probabilities of ``pairs``, scored alone."""
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

    def close(self) -> None:
        """Drain accepted work: the coalescer first, then the pool."""
        close = getattr(self.scorer, "close", None)
        if close is not None:
            close(drain=True)
        self._pool.shutdown(wait=True)

"""Prometheus metrics of the server, on a registry of its own (several servers may share a process).

:class:`Metrics` is also the :class:`verifier.engine.coalesce.CoalescerObserver` of the
server's scorer: queue wait, tokenization and inference are timed separately,
and every pass reports its rows, tokens and padding.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import CONTENT_TYPE_LATEST as _CONTENT_TYPE
from prometheus_client.core import CounterMetricFamily

from ..engine.coalesce import PassReport

__all__ = ["Metrics", "CONTENT_TYPE"]

CONTENT_TYPE = _CONTENT_TYPE

_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
_TOKENS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
_OVERHEAD = (1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0)


class Metrics:
    """The server's counters, gauges and histograms (names start with ``claim_verifier_``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "claim_verifier_requests", "HTTP requests by route and status", ["route", "status"], registry=r
        )
        self.request_seconds = Histogram(
            "claim_verifier_request_seconds", "HTTP request latency by route", ["route"], buckets=_SECONDS, registry=r
        )
        self.queue_wait_seconds = Histogram(
            "claim_verifier_queue_wait_seconds", "time a scorer call waited for its pass", buckets=_SECONDS, registry=r
        )
        self.tokenization_seconds = Histogram(
            "claim_verifier_tokenization_seconds", "time to tokenize one scorer call", buckets=_SECONDS, registry=r
        )
        self.inference_seconds = Histogram(
            "claim_verifier_inference_seconds", "time of one shared pass", buckets=_SECONDS, registry=r
        )
        self.batch_rows = Histogram("claim_verifier_batch_rows", "pairs per pass", buckets=_ROWS, registry=r)
        self.batch_tokens = Histogram(
            "claim_verifier_batch_tokens", "padded tokens per pass", buckets=_TOKENS, registry=r
        )
        self.padding_overhead = Histogram(
            "claim_verifier_padding_overhead", "padded / real tokens per pass", buckets=_OVERHEAD, registry=r
        )
        self.pass_failures = Counter("claim_verifier_pass_failures", "passes that failed", registry=r)
        self.queue_depth_pairs = Gauge("claim_verifier_queue_depth", "pairs waiting for a pass", registry=r)
        self.refused_work = Counter(
            "claim_verifier_refused", "work refused or abandoned, by reason", ["reason"], registry=r
        )
        self.ready = Gauge("claim_verifier_ready", "1 once the model is loaded and its golden pairs reproduced", registry=r)
        self.connections = Gauge("claim_verifier_connections", "open HTTP connections", registry=r)
        self.connections_closed = Counter(
            "claim_verifier_connections_closed",
            "connections the server closed on its own, by reason (header_timeout, over_limit)",
            ["reason"],
            registry=r,
        )

    # ------------------------------------------------------------------ CoalescerObserver

    def tokenized(self, pairs: int, seconds: float) -> None:
        """A scorer call's pairs were tokenized."""
        self.tokenization_seconds.observe(seconds)

    def refused(self, reason: str) -> None:
        """A call was refused or abandoned."""
        self.refused_work.labels(reason=reason).inc()

    def finished_pass(self, report: PassReport) -> None:
        """A shared pass finished."""
        for wait in report.queue_wait_s:
            self.queue_wait_seconds.observe(wait)
        if not report.ok:
            self.pass_failures.inc()
            return
        self.inference_seconds.observe(report.inference_s)
        self.batch_rows.observe(report.rows)
        self.batch_tokens.observe(report.padded_tokens)
        if report.real_tokens:
            self.padding_overhead.observe(report.padded_tokens / report.real_tokens)

    def queue_depth(self, pairs: int) -> None:
        """The queue depth changed."""
        self.queue_depth_pairs.set(pairs)

    # ------------------------------------------------------------------ HTTP

    def observe_request(self, route: str, status: int, seconds: float) -> None:
        """One HTTP request finished."""
        self.requests.labels(route=route, status=str(status)).inc()
        self.request_seconds.labels(route=route).observe(seconds)

    def connection_opened(self) -> None:
        """A connection was accepted."""
        self.connections.inc()

    def connection_lost(self) -> None:
        """A connection ended."""
        self.connections.dec()

    def connection_closed(self, reason: str) -> None:
        """The server closed a connection on its own (``header_timeout``, ``over_limit``)."""
        self.connections_closed.labels(reason=reason).inc()

    # ------------------------------------------------------------------ score store (docs/score-store.md)

    def watch_score_store(self, engine: object) -> None:
        """Export the score-store counters of ``engine.stats`` (read at each scrape), when it has a store."""
        if getattr(engine, "score_cache_status", None) is not None:
            self.registry.register(_ScoreStoreCollector(engine))

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


class _ScoreStoreCollector:
    """``claim_verifier_score_store_{hits,misses,rejected,errors}_total`` from the engine's :class:`ScorerStats`."""

    _HELP = {
        "hits": "distinct pairs served from the score store (not run)",
        "misses": "distinct pairs looked up in the score store and run",
        "rejected": "stored rows that failed their MAC, size or finiteness (rescored)",
        "errors": "score store operations that failed and were skipped",
    }

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def collect(self) -> Iterator[CounterMetricFamily]:
        stats = self.engine.stats
        for name, text in self._HELP.items():
            yield CounterMetricFamily(f"claim_verifier_score_store_{name}", text, value=getattr(stats, f"store_{name}", 0))

"""Coalescing scorer: pairs from concurrent callers merged into shared, length-sorted, token-budgeted passes.

:class:`CoalescingScorer` wraps an :class:`verifier.engine.scorer.OnnxScorer` (or
anything with its ``encode`` / ``score_encoded`` methods) and is itself a
scorer (``score(pairs) -> ndarray (n, 3)``), so
``ClaimVerifier(scorer=CoalescingScorer(engine))`` works, and so does
calling :meth:`CoalescingScorer.score` from many threads or
:meth:`CoalescingScorer.score_async` from many asyncio tasks at once.

How a call flows::

    caller thread / task:  validate + tokenize its pairs (OnnxScorer.encode)
                           ─▶ queue (bounded, in pairs; full: QueueFull at once)
    one worker thread:     waits until the queued tokens fill max_batch_tokens, or
                           max_wait_ms since the oldest queued call, then takes
                           whole calls FIFO up to the budget, concatenates them and
                           runs them as one pass (OnnxScorer.score_encoded: sorted by
                           length, cut into token-budgeted padded batches)
                           ─▶ each caller gets exactly its own rows, in its own order

A pair's probabilities do not depend on the other pairs of its pass
(tests/test_coalesce.py checks bit equality across layouts), so results
never depend on load.

A caller whose ``timeout`` passes, or whose task is cancelled, before its
pass starts has its pairs removed from the queue; once its pass has started
the pass finishes and the rows are dropped. :meth:`CoalescingScorer.close`
refuses new work and drains what was accepted.

Exceptions (all :class:`~verifier.types.ClaimVerificationError`)::

    ScorerBusy       the queue is full: retry later (HTTP 503 with Retry-After)
    ScorerClosed     the scorer is shutting down or closed
    ScorerTimeout    the call's deadline passed before its rows came back
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Sequence

import numpy as np

from .batching import BatchedLogits, EncodedPairs
from ..types import ClaimVerificationError

__all__ = [
    "EngineProxy",
    "CoalescingScorer",
    "CoalescerObserver",
    "PassReport",
    "ScorerBusy",
    "ScorerClosed",
    "ScorerTimeout",
    "DEFAULT_MAX_WAIT_MS",
    "DEFAULT_MAX_QUEUE_PAIRS",
]

#: Default wait of the oldest queued call before a pass starts without a full budget.
DEFAULT_MAX_WAIT_MS = 5.0
#: Default bound of the queue, in pairs.
DEFAULT_MAX_QUEUE_PAIRS = 8192


class ScorerBusy(ClaimVerificationError):
    """The coalescing queue is full; nothing of the call was queued. Retry after :attr:`retry_after_s`."""

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ScorerClosed(ClaimVerificationError):
    """The coalescing scorer is shutting down (or closed) and accepts no new work."""


class ScorerTimeout(ClaimVerificationError):
    """A call's deadline passed before its rows came back (its queued pairs were removed)."""


class _Engine(Protocol):
    def encode(self, pairs: Sequence[tuple[str, str]]) -> EncodedPairs: ...

    def score_encoded(self, encoded: EncodedPairs) -> tuple[np.ndarray, BatchedLogits]: ...


@dataclass(frozen=True)
class PassReport:
    """One shared pass, for observers.

    Attributes:
        calls: callers whose pairs ran in it.
        rows: pairs run (before deduplication).
        real_tokens: tokens of the distinct pairs.
        padded_tokens: tensor cells fed to the model.
        batches: onnxruntime runs.
        inference_s: seconds the pass took (padding, onnxruntime, softmax).
        queue_wait_s: per caller, seconds from being queued to the pass start.
        ok: whether the pass succeeded.
    """

    calls: int
    rows: int
    real_tokens: int
    padded_tokens: int
    batches: int
    inference_s: float
    queue_wait_s: tuple[float, ...]
    ok: bool = True


class CoalescerObserver(Protocol):
    """Receives measurements (e.g. Prometheus metrics); every method must be quick and must not raise."""

    def tokenized(self, pairs: int, seconds: float) -> None:
        """A caller's pairs were tokenized in ``seconds``."""

    def refused(self, reason: str) -> None:
        """A call was refused (``busy``, ``closed``) or abandoned (``timeout``, ``cancelled``)."""

    def finished_pass(self, report: PassReport) -> None:
        """A pass finished."""

    def queue_depth(self, pairs: int) -> None:
        """The queue now holds ``pairs`` pairs."""


@dataclass(eq=False)
class _Job:
    encoded: EncodedPairs
    tokens: int
    queued_at: float
    future: "Future[np.ndarray]" = field(default_factory=Future)


class EngineProxy:
    """A scorer that wraps an engine (``self.engine``) and forwards the optional scorer attributes
    the verifier reads: ``resolved_revision`` and anything else public (e.g. ``truncated``)."""

    engine: Any

    @property
    def resolved_revision(self) -> Optional[str]:
        """The engine's ``resolved_revision`` (the commit actually loaded), when it has one."""
        revision = getattr(self.engine, "resolved_revision", None)
        return str(revision) if revision else None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "engine":
            raise AttributeError(name)
        return getattr(self.engine, name)


class CoalescingScorer(EngineProxy):
    """A scorer that merges concurrent callers' pairs into shared passes of one inference worker thread.

    Args:
        engine: an :class:`~verifier.engine.scorer.OnnxScorer` (``encode`` and ``score_encoded``).
        max_batch_tokens: a pass starts as soon as the queued calls hold this many
            tokens (default 8192, the engine's default budget); the engine cuts each
            pass into its own token-budgeted batches.
        max_wait_ms: longest wait of the oldest queued call before a pass starts
            anyway (default :data:`DEFAULT_MAX_WAIT_MS`; 0 runs whatever is queued
            at once).
        max_queue_pairs: bound of the queue in pairs; a call that would exceed it is
            refused at once with :class:`ScorerBusy` (a call larger than the bound is
            accepted only when the queue is empty).
        timeout_s: default deadline of one call (``None``: none).
        observer: optional :class:`CoalescerObserver`.

    Raises:
        ValueError: an argument out of range.
    """

    def __init__(
        self,
        engine: _Engine,
        *,
        max_batch_tokens: int = 8192,
        max_wait_ms: float = DEFAULT_MAX_WAIT_MS,
        max_queue_pairs: int = DEFAULT_MAX_QUEUE_PAIRS,
        timeout_s: Optional[float] = None,
        observer: Optional[CoalescerObserver] = None,
    ) -> None:
        if isinstance(max_batch_tokens, bool) or int(max_batch_tokens) < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens!r}")
        if not (isinstance(max_wait_ms, (int, float)) and 0 <= max_wait_ms <= 60_000):
            raise ValueError(f"max_wait_ms must be between 0 and 60000, got {max_wait_ms!r}")
        if isinstance(max_queue_pairs, bool) or int(max_queue_pairs) < 1:
            raise ValueError(f"max_queue_pairs must be >= 1, got {max_queue_pairs!r}")
        if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise ValueError(f"timeout_s must be > 0 or None, got {timeout_s!r}")
        self.engine = engine
        self.max_batch_tokens = int(max_batch_tokens)
        self.max_wait_s = float(max_wait_ms) / 1000.0
        self.max_queue_pairs = int(max_queue_pairs)
        self.timeout_s = timeout_s
        self._observer = observer
        self._cond = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._queued_pairs = 0
        self._queued_tokens = 0
        self._closing = False
        self._passes = 0
        self._worker = threading.Thread(target=self._work, name="claim-verifier-coalesce", daemon=True)
        self._worker.start()


    @property
    def queued_pairs(self) -> int:
        """Pairs waiting for a pass now."""
        with self._cond:
            return self._queued_pairs

    @property
    def passes(self) -> int:
        """Passes run so far."""
        with self._cond:
            return self._passes

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closing

    # ------------------------------------------------------------------ scoring

    def score(self, pairs: Sequence[tuple[str, str]], *, timeout: Optional[float] = None) -> np.ndarray:
        """Probabilities (n, 3) of ``pairs`` (entailment, contradiction, neutral), rows in caller order.

        Blocks until the pass holding these pairs finished.

        Raises:
            ValueError: a pair is not a 2-tuple of str.
            ScorerBusy, ScorerClosed, ScorerTimeout: see the module docstring.
            ClaimVerificationError: the model failed (every caller of the pass gets it).
        """
        job = self._submit(pairs)
        if job is None:
            return np.zeros((0, 3), dtype=np.float64)
        deadline = timeout if timeout is not None else self.timeout_s
        try:
            return job.future.result(deadline)
        except FutureTimeout:
            self._withdraw(job, "timeout")
            raise ScorerTimeout(
                f"no scores for {len(job.encoded)} pairs within {deadline:g} s (queued pairs removed)"
            ) from None

    async def score_async(self, pairs: Sequence[tuple[str, str]], *, timeout: Optional[float] = None) -> np.ndarray:
        """Async twin of :meth:`score`; cancelling the task removes its queued pairs.

        Tokenization runs in a worker thread, so the event loop never blocks on it.
        """
        job = await asyncio.to_thread(self._submit, pairs)
        if job is None:
            return np.zeros((0, 3), dtype=np.float64)
        deadline = timeout if timeout is not None else self.timeout_s
        waiter = asyncio.wrap_future(job.future)
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), deadline)
        except asyncio.TimeoutError:
            self._withdraw(job, "timeout")
            raise ScorerTimeout(
                f"no scores for {len(job.encoded)} pairs within {deadline:g} s (queued pairs removed)"
            ) from None
        except asyncio.CancelledError:
            self._withdraw(job, "cancelled")
            raise

    def close(self, *, drain: bool = True, timeout: Optional[float] = None) -> None:
        """Refuse new work; with ``drain`` run every accepted call, else fail the queued ones with
        :class:`ScorerClosed`. Waits up to ``timeout`` s for the worker to finish."""
        with self._cond:
            self._closing = True
            if not drain:
                while self._queue:
                    job = self._queue.popleft()
                    job.future.set_exception(ScorerClosed("the coalescing scorer was closed before this call ran"))
                self._queued_pairs = self._queued_tokens = 0
            self._cond.notify_all()
        if self._worker is not threading.current_thread():
            self._worker.join(timeout)

    def __enter__(self) -> "CoalescingScorer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _note(self, method: str, *args: Any) -> None:
        if self._observer is not None:
            try:
                getattr(self._observer, method)(*args)
            except Exception:  # an observer must never break scoring
                pass

    def _submit(self, pairs: Sequence[tuple[str, str]]) -> Optional[_Job]:
        if self._closing:
            self._note("refused", "closed")
            raise ScorerClosed("the coalescing scorer is shutting down and accepts no new work")
        started = time.perf_counter()
        encoded = self.engine.encode(pairs)
        self._note("tokenized", len(encoded), time.perf_counter() - started)
        if not len(encoded):
            return None
        job = _Job(encoded=encoded, tokens=encoded.tokens, queued_at=time.perf_counter())
        with self._cond:
            if self._closing:
                self._note("refused", "closed")
                raise ScorerClosed("the coalescing scorer is shutting down and accepts no new work")
            if self._queued_pairs and self._queued_pairs + len(encoded) > self.max_queue_pairs:
                self._note("refused", "busy")
                raise ScorerBusy(
                    f"scoring queue full: {self._queued_pairs} pairs queued, {len(encoded)} more would exceed "
                    f"max_queue_pairs={self.max_queue_pairs}; retry later"
                )
            self._queue.append(job)
            self._queued_pairs += len(encoded)
            self._queued_tokens += job.tokens
            depth = self._queued_pairs
            self._cond.notify_all()
        self._note("queue_depth", depth)
        return job

    def _withdraw(self, job: _Job, reason: str) -> None:
        """Remove ``job`` from the queue if its pass has not started (its rows are dropped otherwise)."""
        with self._cond:
            try:
                self._queue.remove(job)
            except ValueError:
                removed = False
            else:
                removed = True
                self._queued_pairs -= len(job.encoded)
                self._queued_tokens -= job.tokens
            depth = self._queued_pairs
        if removed:
            job.future.cancel()
            self._note("queue_depth", depth)
        self._note("refused", reason)

    def _take(self) -> Optional[list[_Job]]:
        """Wait for a pass's worth of calls (or shutdown with an empty queue: ``None``)."""
        with self._cond:
            while True:
                if not self._queue:
                    if self._closing:
                        return None
                    self._cond.wait()
                    continue
                if self._closing or self._queued_tokens >= self.max_batch_tokens:
                    break
                remaining = self._queue[0].queued_at + self.max_wait_s - time.perf_counter()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            jobs = [self._queue.popleft()]
            tokens = jobs[0].tokens
            while self._queue and tokens + self._queue[0].tokens <= self.max_batch_tokens:
                job = self._queue.popleft()
                tokens += job.tokens
                jobs.append(job)
            self._queued_pairs -= sum(len(job.encoded) for job in jobs)
            self._queued_tokens -= tokens
            depth = self._queued_pairs
        self._note("queue_depth", depth)
        return jobs

    def _work(self) -> None:
        while (jobs := self._take()) is not None:
            jobs = [job for job in jobs if job.future.set_running_or_notify_cancel()]
            if not jobs:
                continue
            started = time.perf_counter()
            waits = tuple(started - job.queued_at for job in jobs)
            rows = sum(len(job.encoded) for job in jobs)
            try:
                probabilities, run = self.engine.score_encoded(EncodedPairs.concat([job.encoded for job in jobs]))
            except BaseException as exc:  # handed to every caller of the pass
                error = exc if isinstance(exc, Exception) else ClaimVerificationError(f"scoring interrupted: {exc!r}")
                for job in jobs:
                    job.future.set_exception(error)
                self._note("finished_pass", PassReport(len(jobs), rows, 0, 0, 0, time.perf_counter() - started, waits, False))
                continue
            finally:
                with self._cond:
                    self._passes += 1
            elapsed = time.perf_counter() - started
            offset = 0
            for job in jobs:
                count = len(job.encoded)
                job.future.set_result(probabilities[offset : offset + count].copy())
                offset += count
            self._note(
                "finished_pass",
                PassReport(len(jobs), rows, run.real_tokens, run.padded_tokens, run.batches, elapsed, waits),
            )

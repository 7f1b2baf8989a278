"""How the staged procedure's premises reach a scorer: one claim or many, sync or async.

:class:`~verifier.decision.procedure.Verification` yields the premises it
needs; this module decides how that model work is batched, never what is
decided:

- :class:`Running` drives one procedure's generator (with the eager schedule's
  cache of premises scored ahead of need);
- :class:`Round` is one scorer call's worth of work over many running procedures;
- :class:`ClaimDriver` validates requests, starts their procedures and runs
  rounds in lockstep, so every claim's singles go to the scorer in one call,
  then pairs only for undecided claims, then rechecks (the ``eager`` schedule
  also scores every candidate pair with the singles when the candidates do not
  depend on ranking).

Whatever the driver, the result is exactly what the staged procedure yields
for the same scores. It sees only the :class:`~verifier.scoring.Scorer`
protocol and never imports onnxruntime.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence, Union

import numpy as np
from pydantic import ValidationError

from ..engine_identity import EngineIdentity
from ..options import RuntimeOptions
from ..scoring import Scorer, validate_scores
from ..types import ClaimRequest, ClaimVerification, ClaimVerificationConfig, ClaimVerificationError
from ..messages import describe_validation_error
from ..validation import InputError, ValidRequest, validate_request
from .procedure import Procedure, Verification

__all__ = ["ClaimDriver", "Running", "Round", "RequestInput", "call_with_deadline"]

#: What the many-claims calls accept per claim.
RequestInput = Union[ValidRequest, ClaimRequest, Mapping[str, Any]]


def call_with_deadline(score: Callable[[list[tuple[str, str]]], Any], pairs: list[tuple[str, str]], timeout: float) -> Any:
    """``score(pairs)`` in a daemon thread; its result, or ``ClaimVerificationError`` after ``timeout`` s.

    A Python thread cannot be stopped: a scorer that never returns keeps its
    thread (and whatever it holds) until it does. The caller is released at
    the deadline either way.
    """
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = score(pairs)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=target, name="claim-verifier-score", daemon=True).start()
    if not finished.wait(timeout):
        raise ClaimVerificationError(
            f"scorer did not return {len(pairs)} scores within score_timeout_s={timeout:g} s "
            "(the call keeps running in the background)"
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@dataclass
class Running:
    """One procedure being driven: its generator, pending request and eager cache."""

    claim: str
    generator: Procedure
    request: Optional[list[str]] = None
    cache: Optional[dict[str, np.ndarray]] = None
    prefetch: list[str] = field(default_factory=list)
    result: Optional[ClaimVerification] = None

    def advance(self, value: Optional[np.ndarray]) -> None:
        """Send scores (or start) and run until the next unserved request or the result."""
        try:
            request = self.generator.send(value) if value is not None else next(self.generator)
            while self.cache is not None and all(premise in self.cache for premise in request):
                request = self.generator.send(np.stack([self.cache[premise] for premise in request]))
            self.request = request
        except StopIteration as stop:
            self.request = None
            self.result = stop.value

    def needed(self) -> list[str]:
        """Premises the pending request needs scored (deduplicated when caching)."""
        assert self.request is not None
        if self.cache is None:
            return self.request
        return [premise for premise in dict.fromkeys(self.request) if premise not in self.cache]

    def take_prefetch(self, needed: Sequence[str]) -> list[str]:
        """Premises to score ahead of need along with ``needed`` (eager schedule; once)."""
        if self.cache is None or not self.prefetch:
            return []
        wanted = set(needed)
        extra = [p for p in dict.fromkeys(self.prefetch) if p not in self.cache and p not in wanted]
        self.prefetch = []
        return extra

    def receive(self, premises: Sequence[str], scores: np.ndarray) -> None:
        """Deliver scores for ``premises`` (the needed ones, maybe more) and advance."""
        if self.cache is None:
            self.advance(scores)
            return
        for premise, row in zip(premises, scores):
            self.cache[premise] = row
        assert self.request is not None
        self.advance(np.stack([self.cache[premise] for premise in self.request]))


@dataclass
class Round:
    """One scorer call's worth of work over the active procedures."""

    active: list[Running]
    needed: list[list[str]]
    extra: list[list[str]]

    def pairs(self, with_extra: bool) -> tuple[list[str], list[str]]:
        """(claims, premises) for the call, needed premises first per procedure."""
        claims: list[str] = []
        premises: list[str] = []
        for item, needed, extra in zip(self.active, self.needed, self.extra):
            batch = needed + extra if with_extra else needed
            claims.extend(item.claim for _ in batch)
            premises.extend(batch)
        return claims, premises

    def deliver(self, scores: np.ndarray, with_extra: bool) -> None:
        offset = 0
        for item, needed, extra in zip(self.active, self.needed, self.extra):
            batch = needed + extra if with_extra else needed
            item.receive(batch, scores[offset : offset + len(batch)])
            offset += len(batch)


class VerifierHost(Protocol):
    """What :class:`ClaimDriver` reads from its owner (a :class:`~verifier.claim_verifier.ClaimVerifier`)."""

    config: ClaimVerificationConfig
    runtime: RuntimeOptions

    @property
    def scorer(self) -> Scorer: ...

    @property
    def has_scorer(self) -> bool: ...

    @property
    def _resolved_revision(self) -> Optional[str]: ...

    def engine_identity(self) -> Optional[EngineIdentity]: ...

    def predict(self, pairs: list[tuple[str, str]]) -> Any: ...


class ClaimDriver:
    """Validates requests, runs their procedures in lockstep rounds and scores each round once.

    Args:
        host: supplies ``config``, ``runtime`` and ``scorer`` (read when needed,
            so a scorer built lazily by the host is built on first model need).
    """

    def __init__(self, host: VerifierHost) -> None:
        self.host = host
        self._stats_lock = threading.Lock()
        self._model_calls = 0
        self._pairs_scored = 0
        self._signing: Optional[tuple[Any, Any]] = None
        self.signer()  # a sign_key that cannot be read fails when the verifier is made

    @property
    def stats(self) -> dict[str, int]:
        """Counters: ``model_calls`` (scorer invocations) and ``pairs_scored``."""
        with self._stats_lock:
            return {"model_calls": self._model_calls, "pairs_scored": self._pairs_scored}

    def score(self, claims: Sequence[str], premises: Sequence[str]) -> np.ndarray:
        """One scorer call for ``(premise, claim)`` pairs, its scores validated.

        Raises:
            ClaimVerificationError: the scorer failed, missed ``score_timeout_s`` or
                returned invalid scores.
        """
        pairs = [(premise, claim) for premise, claim in zip(premises, claims)]
        predict = self.host.predict
        try:
            timeout = self.host.runtime.score_timeout_s
            raw = predict(pairs) if timeout is None else call_with_deadline(predict, pairs, timeout)
        except ClaimVerificationError:
            raise
        except Exception as exc:  # any scorer failure is an inference failure (docs/decision.md §1)
            raise ClaimVerificationError(f"scorer failed: {type(exc).__name__}: {exc}") from exc
        scores = validate_scores(raw, len(pairs))
        with self._stats_lock:
            self._model_calls += 1
            self._pairs_scored += len(pairs)
        return scores

    def resolved_revision(self) -> Optional[str]:
        """The commit the scorer reports it loaded (its ``resolved_revision``), or ``None``.

        ``None`` when the scorer does not know one — a smoke or local export, an
        identity only stated by the user (``manifest.identity``), a scripted
        scorer — or when no scorer was ever built (the host's ``predict`` was
        replaced, as PRME's tests do): a result never names a resolved revision
        nobody resolved (PRME too reports ``None`` when it has no commit hash).
        A value a PRME-style test set as the host's ``_resolved_revision`` wins, as in PRME.
        """
        return self.host._resolved_revision

    def _truncation(self, pairs: list[tuple[str, str]]) -> Sequence[bool]:
        """The scorer's optional ``truncated(pairs)`` (docs/policy.md); no method: nothing truncated."""
        query = getattr(self.host.scorer, "truncated", None)
        if not callable(query):
            return [False] * len(pairs)
        return query(pairs)  # type: ignore[no-any-return]

    def start(self, request: RequestInput) -> Running:
        """Validate one request and start its procedure (not yet advanced)."""
        config, runtime = self.host.config, self.host.runtime
        valid = validate_request(request, config, runtime.limits)
        strict = "strict" in (config.entailment_policy, config.refutation_policy)
        procedure = Verification(
            valid.claim, valid.evidence, config, as_of=valid.as_of, truncated=self._truncation if strict else None
        )
        running = Running(claim=valid.claim, generator=procedure.run(valid.requires_complete_set))
        if runtime.schedule == "eager":
            running.cache = {}
            running.prefetch = procedure.prefetch()
        return running

    def signer(self) -> Any:
        """The runtime's ``sign_key`` loaded (:class:`verifier.decision.signing.PrivateKey`; once per key file), or ``None``.

        Raises:
            ValueError: the key file cannot be read or is not an Ed25519 private key (names ``sign_key``).
            ImportError: the ``sign`` extra is not installed.
        """
        path = self.host.runtime.sign_key
        if path is None:
            return None
        with self._stats_lock:
            if self._signing is None or self._signing[0] != path:
                from .signing import load_private_key

                try:
                    self._signing = (path, load_private_key(path))
                except ValueError as exc:
                    raise ValueError(f"sign_key: {exc}") from None
            return self._signing[1]

    def finish(self, running: Running) -> ClaimVerification:
        """The finished result, naming the scorer's resolved revision (if any) when the model was called,
        signed when the runtime has a ``sign_key`` (docs/audit.md "Signatures")."""
        result = running.result
        assert result is not None
        if result.model_called:
            result = result.model_copy(
                update={"resolved_revision": self.resolved_revision(), "engine": self.host.engine_identity()}
            )
        signer = self.signer()
        return signer.sign(result) if signer is not None else result

    def plan(self, requests: Iterable[RequestInput]) -> list[Running]:
        """Validate every request (all before any model call) and start its procedure.

        Raises:
            ValueError: ``requests`` is not a list of requests (``None``, a string,
                a single request or mapping: :class:`~verifier.validation.InputError`
                with ``field="requests"``), or a request is invalid (with more than one,
                an ``InputError`` whose message and ``field`` name its index,
                ``requests.3.claim``).
        """
        if (
            requests is None
            or isinstance(requests, (str, bytes, Mapping, ClaimRequest, ValidRequest))
            or not isinstance(requests, Iterable)
        ):
            raise InputError(
                f"requests must be a list of claim requests (ClaimRequest or mappings), got {type(requests).__name__}",
                field="requests",
            )
        items = list(requests)
        self.signer()  # a key that cannot be read fails before any model work
        running = []
        for index, request in enumerate(items):
            try:
                running.append(self.start(request))
            except ValueError as exc:
                if len(items) == 1:
                    raise
                inner = describe_validation_error(exc)[0] if isinstance(exc, ValidationError) else getattr(exc, "field", None)
                field = f"requests.{index}" + (f".{inner}" if inner else "")
                raise InputError(f"request {index}: {exc}", field=field) from exc
        for item in running:
            item.advance(None)
        return running

    @staticmethod
    def next_round(running: Sequence[Running]) -> Optional[Round]:
        """The next scorer call's work over the procedures still running; ``None`` when all are done."""
        active = [item for item in running if item.request is not None]
        if not active:
            return None
        needed = [item.needed() for item in active]
        extra = [item.take_prefetch(batch) for item, batch in zip(active, needed)]
        return Round(active, needed, extra)

    def score_round(self, work: Round) -> tuple[np.ndarray, bool]:
        """Score one round; returns the scores and whether prefetched premises were included.

        Premises scored ahead of need (eager schedule) must never change the
        outcome: if the call with them fails or returns invalid scores, the
        round is scored again with only the needed premises, exactly as the
        staged schedule would.
        """
        if any(work.extra):
            claims, premises = work.pairs(with_extra=True)
            try:
                return self.score(claims, premises), True
            except ClaimVerificationError:
                pass
        claims, premises = work.pairs(with_extra=False)
        return (self.score(claims, premises) if premises else np.zeros((0, 3))), False

    def run_sync(
        self, requests: Iterable[RequestInput], progress: Optional[Callable[[int], None]] = None
    ) -> list[ClaimVerification]:
        """Every request to its result, in input order (see :meth:`ClaimVerifier.verify_many_sync`)."""
        running = self.plan(requests)
        if progress is not None:
            progress(sum(item.result is not None for item in running))
        while (work := self.next_round(running)) is not None:
            scores, with_extra = self.score_round(work)
            work.deliver(scores, with_extra)
            if progress is not None:
                progress(sum(item.result is not None for item in running))
        return [self.finish(item) for item in running]

    async def run_async(self, requests: Iterable[RequestInput]) -> list[ClaimVerification]:
        """Async twin of :meth:`run_sync`: each round's model work runs in a worker thread."""
        running = self.plan(requests)
        while (work := self.next_round(running)) is not None:
            scores, with_extra = await asyncio.to_thread(self.score_round, work)
            work.deliver(scores, with_extra)
        return [self.finish(item) for item in running]

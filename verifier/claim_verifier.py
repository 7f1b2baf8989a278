"""The public :class:`ClaimVerifier`: it drives the staged procedure and owns the scorer.

The procedure itself (docs/decision.md §3) lives in :mod:`verifier.decision.procedure`,
as a generator that yields the premises it needs scored. This module decides
how that model work is batched, never what is decided:

- :meth:`ClaimVerifier.verify_sync` / :meth:`ClaimVerifier.verify` drive one
  procedure (sync, or async with the scorer run in a worker thread);
- :meth:`ClaimVerifier.verify_many_sync` / :meth:`ClaimVerifier.verify_many`
  drive many procedures in lockstep, so every claim's singles go to the scorer
  in one call, then pairs only for undecided claims, then rechecks;
- the ``eager`` schedule scores singles and every candidate pair in one pass
  ahead of need (when the candidates do not depend on ranking) and serves the
  procedure from that cache.

Whatever the driver, the result is exactly what the staged procedure yields
for the same scores. Every request is validated once, by
:func:`verifier.validation.validate_request`. This module never imports
onnxruntime: the default ONNX engine is imported lazily, on first need.
"""

from __future__ import annotations

import asyncio
import os
import threading
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Mapping,
    Optional,
    Sequence,
    Union,
)

import numpy as np

from .engine.identity import read_manifest_if_present, resolve, where
from .options import RuntimeOptions
from .decision.procedure import Round, Running, Verification
from .scoring import Scorer, validate_scores
from .types import (
    ClaimEvidence,
    ClaimRequest,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
)
from .validation import (
    InputError,
    ValidRequest,
    as_of_input,
    validate_claim,
    validate_evidence,
    validate_request,
)

if TYPE_CHECKING:  # pragma: no cover
    from .decision.bundle import ContextBundle

__all__ = ["ClaimVerifier", "EvidenceInput", "RequestInput"]

EvidenceInput = Union[ClaimEvidence, Mapping[str, Any]]
#: What the many-claims calls accept per claim.
RequestInput = Union[ValidRequest, ClaimRequest, Mapping[str, Any]]



def _call_with_deadline(score: Callable[[list[tuple[str, str]]], Any], pairs: list[tuple[str, str]], timeout: float) -> Any:
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


class ClaimVerifier:
    """Verify one declarative claim against exact evidence passages (docs/decision.md §1–§7).

    Args:
        config: the decision configuration (digested); defaults to
            :class:`ClaimVerificationConfig` ``()``.
        scorer: any :class:`verifier.scoring.Scorer`. Without one, the ONNX
            engine (:class:`verifier.engine.scorer.OnnxScorer`) for ``runtime`` is
            created lazily, once, on the first verification that needs the model;
            its directory and the identity results name are resolved at
            construction (:mod:`verifier.engine.identity`): a manifest in the directory
            supplies ``model`` and ``revision`` unless ``config`` sets them, in
            which case they must match it.
        runtime: runtime settings (model directory, threads, providers,
            schedule, limits); never part of a digest.

    Raises:
        ClaimVerificationError: at construction, the directory's manifest is
            unreadable or names another model or revision than ``config``; from
            the verify methods, the model could not be loaded or scored, or a
            scorer returned invalid scores. Never a status.

    Example:
        >>> from uuid import UUID
        >>> from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
        >>> scorer = ScriptedScorer({"The deployment date is May 4.": (0.98, 0.01)}, default=(0.02, 0.01))
        >>> verifier = ClaimVerifier(scorer=scorer)
        >>> result = verifier.verify_sync(
        ...     "The deployment is on May 4.",
        ...     [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The deployment date is May 4.")],
        ... )
        >>> result.status.value, result.supporting_basis
        ('supported', 'model_entailment')
    """

    def __init__(
        self,
        config: Optional[ClaimVerificationConfig] = None,
        *,
        scorer: Optional[Scorer] = None,
        runtime: Optional[RuntimeOptions] = None,
    ) -> None:
        runtime = runtime if runtime is not None else RuntimeOptions()
        if scorer is None:  # the ONNX engine: resolve its directory and identity now (verifier.engine.identity)
            resolved = resolve(config, runtime)
            self.config, self.runtime = resolved.config, resolved.runtime
        else:
            self.config = config if config is not None else ClaimVerificationConfig()
            self.runtime = runtime
        self._scorer: Optional[Scorer] = scorer
        self._scorer_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._model_calls = 0
        self._pairs_scored = 0

    @classmethod
    def from_model_dir(
        cls,
        model_dir: Union[str, "os.PathLike[str]"],
        config: Optional[ClaimVerificationConfig] = None,
        *,
        runtime: Optional[RuntimeOptions] = None,
    ) -> "ClaimVerifier":
        """A verifier for an exported model directory, named as its manifest names it.

        The configuration's ``model`` and ``revision`` are taken from the
        directory's ``manifest.json`` (:attr:`verifier.engine.manifest.Manifest.revision`:
        requested revision, else resolved commit, else ``sha256:<model file>``);
        every other decision field comes from ``config``. Nothing heavy is loaded
        until the first verification that needs the model.

        Args:
            model_dir: a directory written by ``python -m export``.
            config: decision settings to keep (thresholds, policies, ...).
            runtime: runtime settings; its ``model_dir`` is replaced by ``model_dir``.

        Raises:
            ClaimVerificationError: the directory has no readable manifest (the
                message says how to create one).

        Example:
            >>> verifier = ClaimVerifier.from_model_dir("models/tiny-deberta-v2-smoke-seed0")  # doctest: +SKIP
        """
        from pathlib import Path

        from .engine.manifest import MANIFEST_NAME

        directory = Path(model_dir)
        if read_manifest_if_present(directory) is None:
            raise ClaimVerificationError(
                f"{where(directory / MANIFEST_NAME)} not found: export a model there first "
                "(`python -m export --model <hub id or local dir> --output <dir>`, or `python -m export --smoke`)"
            )
        base = config if config is not None else ClaimVerificationConfig()
        unnamed = ClaimVerificationConfig.model_validate(base.model_dump(exclude={"model", "revision"}))
        options = (runtime if runtime is not None else RuntimeOptions()).model_copy(update={"model_dir": directory})
        return cls(unnamed, runtime=options)

    # ----------------------------------------------------------------- engine

    @property
    def scorer(self) -> Scorer:
        """The injected scorer, or the ONNX engine (created on first access, once)."""
        if self._scorer is None:
            with self._scorer_lock:
                if self._scorer is None:
                    self._scorer = self._build_engine()
        return self._scorer

    @property
    def has_scorer(self) -> bool:
        """Whether a scorer exists yet: injected, or the ONNX engine once built (never builds one)."""
        return self._scorer is not None

    def _build_engine(self) -> Scorer:
        """The ONNX engine for this configuration; it loads (and checks that its manifest
        names the configured model and revision) on first use."""
        from .engine.scorer import (
            OnnxScorer,  # lazy: keeps `import verifier` free of onnxruntime
        )

        return OnnxScorer.from_options(
            self.runtime, self.config.model, self.config.revision, max_batch_size=self.config.batch_size
        )

    @property
    def stats(self) -> dict[str, int]:
        """Counters: ``model_calls`` (scorer invocations) and ``pairs_scored``."""
        with self._stats_lock:
            return {"model_calls": self._model_calls, "pairs_scored": self._pairs_scored}

    def _score(self, claims: Sequence[str], premises: Sequence[str]) -> np.ndarray:
        pairs = [(premise, claim) for premise, claim in zip(premises, claims)]
        scorer = self.scorer
        try:
            timeout = self.runtime.score_timeout_s
            raw = scorer.score(pairs) if timeout is None else _call_with_deadline(scorer.score, pairs, timeout)
        except ClaimVerificationError:
            raise
        except Exception as exc:  # any scorer failure is an inference failure (docs/decision.md §1)
            raise ClaimVerificationError(f"scorer failed: {type(exc).__name__}: {exc}") from exc
        scores = validate_scores(raw, len(pairs))
        with self._stats_lock:
            self._model_calls += 1
            self._pairs_scored += len(pairs)
        return scores

    def _resolved_revision(self) -> str:
        revision = getattr(self.scorer, "resolved_revision", None)
        return str(revision) if revision else self.config.revision

    # ----------------------------------------------------------------- planning

    def _truncation(self, pairs: list[tuple[str, str]]) -> Sequence[bool]:
        """The scorer's optional ``truncated(pairs)`` (docs/policy.md); no method: nothing truncated."""
        query = getattr(self.scorer, "truncated", None)
        if not callable(query):
            return [False] * len(pairs)
        return query(pairs)  # type: ignore[no-any-return]

    def _start(self, request: RequestInput) -> Running:
        valid = validate_request(request, self.config, self.runtime.limits)
        as_of = valid.as_of
        strict = "strict" in (self.config.entailment_policy, self.config.refutation_policy)
        procedure = Verification(
            valid.claim, valid.evidence, self.config, as_of=as_of, truncated=self._truncation if strict else None
        )
        running = Running(claim=valid.claim, generator=procedure.run(valid.requires_complete_set))
        if self.runtime.schedule == "eager":
            running.cache = {}
            running.prefetch = procedure.prefetch()
        return running

    def _one(
        self,
        claim: str,
        evidence: Iterable[EvidenceInput],
        requires_complete_set: bool,
        as_of: Optional[datetime] = None,
    ) -> ValidRequest:
        """One claim's arguments, validated once (its errors are not prefixed with a request index)."""
        if not isinstance(requires_complete_set, bool):
            raise InputError(
                f"requires_complete_set must be True or False, got {requires_complete_set!r}",
                field="requires_complete_set",
            )
        limits = self.runtime.limits
        return ValidRequest(
            claim=validate_claim(claim, limits),
            evidence=validate_evidence(evidence, self.config, limits),
            requires_complete_set=requires_complete_set,
            max_evidence=self.config.max_evidence,
            limits=limits,
            as_of=as_of_input(as_of),
        )

    def _finish(self, running: Running) -> ClaimVerification:
        result = running.result
        assert result is not None
        if result.model_called:
            return result.model_copy(update={"resolved_revision": self._resolved_revision()})
        return result

    def _plan(self, requests: Iterable[RequestInput]) -> list[Running]:
        """Validate every request (all before any model call) and start its procedure.

        Raises:
            ValueError: ``requests`` is not a list of requests (``None``, a string,
                a single request or mapping), or a request is invalid (the message
                names its index when there is more than one).
        """
        if (
            requests is None
            or isinstance(requests, (str, bytes, Mapping, ClaimRequest, ValidRequest))
            or not isinstance(requests, Iterable)
        ):
            raise ValueError(
                f"requests must be a list of claim requests (ClaimRequest or mappings), got {type(requests).__name__}"
            )
        items = list(requests)
        running = []
        for index, request in enumerate(items):
            try:
                running.append(self._start(request))
            except ValueError as exc:
                if len(items) == 1:
                    raise
                raise ValueError(f"request {index}: {exc}") from exc
        for item in running:
            item.advance(None)
        return running

    @staticmethod
    def _next_round(running: Sequence[Running]) -> Optional[Round]:
        active = [item for item in running if item.request is not None]
        if not active:
            return None
        needed = [item.needed() for item in active]
        extra = [item.take_prefetch(batch) for item, batch in zip(active, needed)]
        return Round(active, needed, extra)

    def _score_round(self, work: Round) -> tuple[np.ndarray, bool]:
        """Score one round; returns the scores and whether prefetched premises were included.

        Premises scored ahead of need (eager schedule) must never change the
        outcome: if the call with them fails or returns invalid scores, the
        round is scored again with only the needed premises, exactly as the
        staged schedule would.
        """
        if any(work.extra):
            claims, premises = work.pairs(with_extra=True)
            try:
                return self._score(claims, premises), True
            except ClaimVerificationError:
                pass
        claims, premises = work.pairs(with_extra=False)
        return (self._score(claims, premises) if premises else np.zeros((0, 3))), False

    # ----------------------------------------------------------------- sync API

    def verify_many_sync(
        self,
        requests: Iterable[RequestInput],
        *,
        progress: Optional[Callable[[int], None]] = None,
    ) -> list[ClaimVerification]:
        """Verify many claims, batching model work across them; results in input order.

        All requests are validated before any model call. Every claim's singles
        go to the scorer in one call, then pairs for the undecided claims, then
        rechecks. Each result equals :meth:`verify_sync` on that claim alone.

        Args:
            requests: :class:`ClaimRequest` objects, mappings with its fields, or
                :class:`~verifier.validation.ValidRequest` objects (not checked again).
            progress: called with the number of finished claims after each round.

        Raises:
            ValueError: an invalid request (the message names its index).
            ClaimVerificationError: model load or inference failed.
        """
        running = self._plan(requests)
        if progress is not None:
            progress(sum(item.result is not None for item in running))
        while (work := self._next_round(running)) is not None:
            scores, with_extra = self._score_round(work)
            work.deliver(scores, with_extra)
            if progress is not None:
                progress(sum(item.result is not None for item in running))
        return [self._finish(item) for item in running]

    def verify_sync(
        self,
        claim: str,
        evidence: Iterable[EvidenceInput] = (),
        *,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Verify one claim against evidence passages (docs/decision.md §3), synchronously.

        Args:
            claim: the declarative claim (the NLI hypothesis); stripped.
            evidence: passages in caller order (:class:`ClaimEvidence` or mappings).
            requires_complete_set: an exhaustive count/list claim: returns
                ``incomplete`` without a model call.
            as_of: the timezone-aware date the claim is verified at; read by the
                strict policy's validity rules (docs/policy.md). When set, the
                result is schema 4 and ``as_of`` enters ``evaluation_id``.

        Raises:
            ValueError: invalid input (docs/decision.md §2), before any model call.
            ClaimVerificationError: model load or inference failed, or invalid scores.
        """
        return self.verify_many_sync([self._one(claim, evidence, requires_complete_set, as_of)])[0]

    def verify_bundle_sync(
        self,
        claim: str,
        bundle: "ContextBundle",
        *,
        evidence_refs: Optional[Sequence[str]] = None,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Verify a claim against the cited candidates of a packed context bundle (docs/decision.md §7).

        Raises:
            ValueError: the bundle was rendered without citations, or an unknown
                ``evidence_refs`` entry; plus everything :meth:`verify_sync` raises.
        """
        evidence = self._bundle_evidence(bundle, evidence_refs)
        return self.verify_sync(claim, evidence, requires_complete_set=requires_complete_set, as_of=as_of)

    def _bundle_evidence(self, bundle: "ContextBundle", evidence_refs: Optional[Sequence[str]]) -> tuple[ClaimEvidence, ...]:
        from .decision.bundle import bundle_evidence

        return bundle_evidence(bundle, evidence_refs, max_evidence=self.config.max_evidence)

    @staticmethod
    def bundle_evidence(
        bundle: "ContextBundle", evidence_refs: Optional[Sequence[str]] = None
    ) -> tuple[ClaimEvidence, ...]:
        """The evidence a bundle yields under the citation rules of docs/decision.md §7 (see :mod:`verifier.decision.bundle`)."""
        from .decision.bundle import bundle_evidence

        return bundle_evidence(bundle, evidence_refs)

    # ----------------------------------------------------------------- async API

    async def verify_many(self, requests: Iterable[RequestInput]) -> list[ClaimVerification]:
        """Async twin of :meth:`verify_many_sync`: model work runs in a worker thread."""
        running = self._plan(requests)
        while (work := self._next_round(running)) is not None:
            scores, with_extra = await asyncio.to_thread(self._score_round, work)
            work.deliver(scores, with_extra)
        return [self._finish(item) for item in running]

    async def verify(
        self,
        claim: str,
        evidence: Iterable[EvidenceInput] = (),
        *,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Async twin of :meth:`verify_sync` (same arguments, errors and result)."""
        return (await self.verify_many([self._one(claim, evidence, requires_complete_set, as_of)]))[0]

    async def verify_bundle(
        self,
        claim: str,
        bundle: "ContextBundle",
        *,
        evidence_refs: Optional[Sequence[str]] = None,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Async twin of :meth:`verify_bundle_sync`."""
        evidence = self._bundle_evidence(bundle, evidence_refs)
        return await self.verify(claim, evidence, requires_complete_set=requires_complete_set, as_of=as_of)

"""The staged decision procedure of SPEC §3 and the public :class:`ClaimVerifier`.

The procedure is written once, as a generator that *yields* the premises it
needs scored against the claim and receives their probabilities back. Drivers
decide how model work is batched, never what is decided:

- :meth:`ClaimVerifier.verify_sync` / :meth:`ClaimVerifier.verify` drive one
  procedure (sync, or async with the scorer run in a worker thread);
- :meth:`ClaimVerifier.verify_many_sync` / :meth:`ClaimVerifier.verify_many`
  drive many procedures in lockstep, so every claim's singles go to the scorer
  in one call, then pairs only for undecided claims, then rechecks;
- the ``eager`` schedule scores singles and every candidate pair in one pass
  ahead of need (when the candidates do not depend on ranking) and serves the
  procedure from that cache.

Whatever the driver, the result is exactly what the staged procedure yields
for the same scores. This module never imports onnxruntime: the default ONNX
engine is imported lazily, on first need.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generator,
    Iterable,
    Mapping,
    Optional,
    Sequence,
    Union,
)
from uuid import UUID

import numpy as np

from . import audit
from .guards import PassageView, Provenance, entailment_guard, exact_negation, localize, refutation_guard
from .guards import join_premise
from .options import RuntimeOptions
from .scoring import Scorer, validate_scores
from .types import (
    SCHEMA_VERSION,
    ClaimEvidence,
    ClaimRequest,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
    ClaimVerificationStatus,
    EvidenceGroupScore,
    LocalizedEvidenceAssessment,
)

if TYPE_CHECKING:  # pragma: no cover
    from .bundle import ContextBundle

__all__ = ["ClaimVerifier", "EvidenceInput"]

EvidenceInput = Union[ClaimEvidence, Mapping[str, Any]]

_ENTAILMENT_LIMITATION = "uncorroborated_model_entailment"
_CONTRADICTION_LIMITATION = "uncorroborated_model_contradiction"
_COMPLETE_SET_LIMITATION = "complete_set_requires_structured_aggregation"

# A procedure yields premises (the hypothesis is always the claim) and receives
# their (n, 3) probabilities; it returns the finished result.
_Procedure = Generator[list[str], np.ndarray, ClaimVerification]


# --------------------------------------------------------------------------- validation


def _validate(
    claim: str, evidence: Iterable[EvidenceInput], config: ClaimVerificationConfig
) -> tuple[str, tuple[ClaimEvidence, ...]]:
    """SPEC §2: strip the claim, validate evidence, enforce the maximum and uniqueness.

    Raises:
        ValueError: empty claim, too many passages (names the maximum), a repeated
            reference or memory id (names it), or an invalid passage (pydantic's
            ``ValidationError``, a ``ValueError``, naming the field).
    """
    if not isinstance(claim, str):
        raise ValueError(f"claim must be a string, got {type(claim).__name__}")
    stripped = claim.strip()
    if not stripped:
        raise ValueError("claim must not be empty")
    try:
        stripped.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"claim is not valid Unicode text ({exc.reason} at position {exc.start})") from None
    if evidence is None or isinstance(evidence, (str, bytes, Mapping)) or not isinstance(evidence, Iterable):
        raise ValueError(
            f"evidence must be a list of passages (ClaimEvidence or mappings), got {type(evidence).__name__}"
        )
    items = tuple(
        item if isinstance(item, ClaimEvidence) else ClaimEvidence.model_validate(item) for item in evidence
    )
    if len(items) > config.max_evidence:
        raise ValueError(
            f"evidence has {len(items)} passages, more than max_evidence={config.max_evidence}"
        )
    references: set[str] = set()
    memory_ids: set[UUID] = set()
    for item in items:
        if item.reference in references:
            raise ValueError(f"evidence reference {item.reference!r} is repeated")
        if item.memory_id in memory_ids:
            raise ValueError(f"evidence memory_id {item.memory_id} is repeated")
        references.add(item.reference)
        memory_ids.add(item.memory_id)
    return stripped, items


# --------------------------------------------------------------------------- the procedure


@dataclass(frozen=True)
class _Support:
    group: tuple[int, ...]
    probability: float
    localized: bool


@dataclass(frozen=True)
class _Refutation:
    group: tuple[int, ...]
    probability: float
    explicit: bool


@dataclass
class _Stage:
    """Decisions over one set of scored groups (singles, or one combination size)."""

    supports: list[_Support] = field(default_factory=list)
    refutations: list[_Refutation] = field(default_factory=list)
    assessments: list[LocalizedEvidenceAssessment] = field(default_factory=list)
    entailment_limited: bool = False
    contradiction_limited: bool = False

    @property
    def decided(self) -> bool:
        return bool(self.supports or self.refutations)


def _probabilities(row: np.ndarray) -> tuple[float, float, float]:
    return float(row[0]), float(row[1]), float(row[2])


class _Verification:
    """State shared by the steps of one verification."""

    def __init__(self, claim: str, evidence: tuple[ClaimEvidence, ...], config: ClaimVerificationConfig) -> None:
        self.claim = claim
        self.evidence = evidence
        self.config = config
        self.views = tuple(
            PassageView(item.text, Provenance(item.epistemic_type, item.lifecycle_state)) for item in evidence
        )

    def premise(self, group: tuple[int, ...]) -> str:
        return join_premise([self.evidence[index].text for index in group])

    def group_score(self, group: tuple[int, ...], row: np.ndarray) -> EvidenceGroupScore:
        entailment, contradiction, neutral = _probabilities(row)
        return EvidenceGroupScore(
            references=tuple(self.evidence[index].reference for index in group),
            memory_ids=tuple(self.evidence[index].memory_id for index in group),
            entailment=entailment,
            contradiction=contradiction,
            neutral=neutral,
        )

    def classify(self, groups: Sequence[tuple[int, ...]], scores: np.ndarray) -> Generator[list[str], np.ndarray, _Stage]:
        """SPEC §3 steps 4–5 over one set of scored groups; yields once for rechecks."""
        config = self.config
        stage = _Stage()
        # Step 4: support.
        blocked: list[tuple[int, tuple[int, ...]]] = []
        for position, group in enumerate(groups):
            if scores[position, 0] < config.entailment_threshold:
                continue
            passages = [self.views[index] for index in group]
            if config.entailment_policy == "model_only" or entailment_guard(self.claim, passages):
                stage.supports.append(_Support(group, float(scores[position, 0]), localized=False))
            else:
                blocked.append((position, group))
        if blocked:
            localized = [localize(self.claim, [self.views[index] for index in group]) for _, group in blocked]
            recheck_premises = [item.premise for item in localized if item.premise is not None]
            recheck_scores: Optional[np.ndarray] = None
            if recheck_premises:
                recheck_scores = yield recheck_premises
            cursor = 0
            for (_, group), item in zip(blocked, localized):
                references = tuple(self.evidence[index].reference for index in group)
                memory_ids = tuple(self.evidence[index].memory_id for index in group)
                if item.premise is None:
                    stage.assessments.append(
                        LocalizedEvidenceAssessment(
                            references=references,
                            memory_ids=memory_ids,
                            included_segment_numbers=item.included_segment_numbers,
                            premise_sha256=None,
                            model_called=False,
                        )
                    )
                    stage.entailment_limited = True
                    continue
                assert recheck_scores is not None
                entailment, contradiction, neutral = _probabilities(recheck_scores[cursor])
                cursor += 1
                stage.assessments.append(
                    LocalizedEvidenceAssessment(
                        references=references,
                        memory_ids=memory_ids,
                        included_segment_numbers=item.included_segment_numbers,
                        premise_sha256=audit.sha256_hex(item.premise),
                        model_called=True,
                        entailment=entailment,
                        contradiction=contradiction,
                        neutral=neutral,
                    )
                )
                if entailment >= config.entailment_threshold:
                    stage.supports.append(_Support(group, entailment, localized=True))
                else:
                    stage.entailment_limited = True
        # Step 5: refutation.
        for position, group in enumerate(groups):
            passages = [self.views[index] for index in group]
            contradiction = float(scores[position, 1])
            refutes_through_model = False
            if contradiction >= config.contradiction_threshold:
                if config.refutation_policy == "model_only" or refutation_guard(self.claim, passages):
                    refutes_through_model = True
                else:
                    stage.contradiction_limited = True
            if refutes_through_model:
                stage.refutations.append(_Refutation(group, contradiction, explicit=False))
            elif exact_negation(self.claim, passages):
                stage.refutations.append(_Refutation(group, contradiction, explicit=True))
        return stage

    def run(self, requires_complete_set: bool) -> _Procedure:
        """The whole staged procedure of SPEC §3."""
        config = self.config
        if requires_complete_set:
            return self.result(ClaimVerificationStatus.INCOMPLETE, limitations=(_COMPLETE_SET_LIMITATION,))
        if not self.evidence:
            return self.result(ClaimVerificationStatus.INSUFFICIENT)

        singles = [(index,) for index in range(len(self.evidence))]
        single_scores = yield [self.premise(group) for group in singles]
        group_scores = [self.group_score(group, row) for group, row in zip(singles, single_scores)]
        stages = [(yield from self.classify(singles, single_scores))]

        if not stages[0].decided and config.max_group_size > 1:
            ranked = sorted(
                range(len(self.evidence)),
                key=lambda index: (
                    -max(float(single_scores[index, 0]), float(single_scores[index, 1])),
                    str(self.evidence[index].memory_id),
                ),
            )
            candidates = sorted(ranked[: config.group_candidate_limit])
            for size in range(2, config.max_group_size + 1):
                groups = list(itertools.combinations(candidates, size))
                if not groups:
                    break
                scores = yield [self.premise(group) for group in groups]
                group_scores.extend(self.group_score(group, row) for group, row in zip(groups, scores))
                stage = yield from self.classify(groups, scores)
                stages.append(stage)
                if stage.decided:
                    break

        supports = [support for stage in stages for support in stage.supports]
        refutations = [refutation for stage in stages for refutation in stage.refutations]
        limitations = []
        if any(stage.entailment_limited for stage in stages):
            limitations.append(_ENTAILMENT_LIMITATION)
        if any(stage.contradiction_limited for stage in stages):
            limitations.append(_CONTRADICTION_LIMITATION)

        if supports and refutations:
            status = ClaimVerificationStatus.CONTESTED
        elif supports:
            status = ClaimVerificationStatus.SUPPORTED
        elif refutations:
            status = ClaimVerificationStatus.REFUTED
        else:
            status = ClaimVerificationStatus.INSUFFICIENT

        best_support = min(supports, key=lambda item: self._rank(item.group, item.probability), default=None)
        best_refutation = min(
            refutations, key=lambda item: self._rank(item.group, item.probability), default=None
        )
        return self.result(
            status,
            supporting_group=self._ids(best_support.group) if best_support else (),
            refuting_group=self._ids(best_refutation.group) if best_refutation else (),
            supporting_basis=(
                ("localized_model_entailment" if best_support.localized else "model_entailment")
                if best_support
                else None
            ),
            refuting_basis=(
                ("explicit_negation_overlap" if best_refutation.explicit else "model_contradiction")
                if best_refutation
                else None
            ),
            group_scores=tuple(group_scores),
            localized_assessments=tuple(item for stage in stages for item in stage.assessments),
            limitations=tuple(limitations),
            model_called=True,
        )

    def _ids(self, group: tuple[int, ...]) -> tuple[UUID, ...]:
        return tuple(self.evidence[index].memory_id for index in group)

    def _rank(self, group: tuple[int, ...], probability: float) -> tuple[int, float, tuple[str, ...]]:
        """SPEC §3 step 8: smallest group, then highest probability, then memory ids as strings."""
        return (len(group), -probability, tuple(str(memory_id) for memory_id in self._ids(group)))

    def result(
        self,
        status: ClaimVerificationStatus,
        *,
        supporting_group: tuple[UUID, ...] = (),
        refuting_group: tuple[UUID, ...] = (),
        supporting_basis: Optional[str] = None,
        refuting_basis: Optional[str] = None,
        group_scores: tuple[EvidenceGroupScore, ...] = (),
        localized_assessments: tuple[LocalizedEvidenceAssessment, ...] = (),
        limitations: tuple[str, ...] = (),
        model_called: bool = False,
    ) -> ClaimVerification:
        configuration_digest = audit.configuration_sha256(self.config)
        claim_digest = audit.claim_sha256(self.claim)
        evidence_digest = audit.evidence_sha256(self.evidence)
        evaluation = audit.evaluation_id(
            claim_digest=claim_digest,
            configuration_digest=configuration_digest,
            evidence_digest=evidence_digest,
            schema_version=SCHEMA_VERSION,
        )
        digest = audit.result_sha256(
            evaluation=evaluation,
            status=status.value,
            supporting_group=supporting_group,
            refuting_group=refuting_group,
            supporting_basis=supporting_basis,
            refuting_basis=refuting_basis,
            group_scores=group_scores,
            localized_assessments=localized_assessments,
            limitations=limitations,
        )
        return ClaimVerification(
            schema_version=SCHEMA_VERSION,
            claim=self.claim,
            status=status,
            supporting_group=supporting_group,
            refuting_group=refuting_group,
            supporting_basis=supporting_basis,  # type: ignore[arg-type]
            refuting_basis=refuting_basis,  # type: ignore[arg-type]
            group_scores=group_scores,
            localized_assessments=localized_assessments,
            limitations=limitations,  # type: ignore[arg-type]
            model=self.config.model,
            requested_revision=self.config.revision,
            resolved_revision=None,  # filled in by the verifier after a model call
            model_called=model_called,
            configuration_sha256=configuration_digest,
            claim_sha256=claim_digest,
            evidence_sha256=evidence_digest,
            evaluation_id=evaluation,
            result_sha256=digest,
        )

    def prefetch(self) -> list[str]:
        """Premises the eager schedule scores with the singles: every pair, when the
        candidates cannot depend on ranking (all passages fit the candidate limit)."""
        count = len(self.evidence)
        if self.config.max_group_size < 2 or count < 2 or count > self.config.group_candidate_limit:
            return []
        return [self.premise(group) for group in itertools.combinations(range(count), 2)]


# --------------------------------------------------------------------------- drivers


@dataclass
class _Running:
    """One procedure being driven: its generator, pending request and eager cache."""

    claim: str
    generator: _Procedure
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
class _Round:
    """One scorer call's worth of work over the active procedures."""

    active: list[_Running]
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


class ClaimVerifier:
    """Verify one declarative claim against exact evidence passages (SPEC §1–§7).

    Args:
        config: the decision configuration (digested); defaults to
            :class:`ClaimVerificationConfig` ``()``.
        scorer: any :class:`verifier.scoring.Scorer`. Without one, the ONNX
            engine (:class:`verifier.engine.OnnxScorer`) for ``runtime`` is
            created lazily, once, on the first verification that needs the model.
        runtime: runtime settings (model directory, threads, providers,
            schedule); never part of a digest.

    Raises:
        ClaimVerificationError: (from the verify methods) the model could not be
            loaded or scored, or a scorer returned invalid scores. Never a status.

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
        self.config = config if config is not None else ClaimVerificationConfig()
        self.runtime = runtime if runtime is not None else RuntimeOptions()
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
        directory's ``manifest.json`` (:attr:`verifier.manifest.Manifest.revision`:
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

        from .manifest import MANIFEST_NAME, read_manifest

        directory = Path(model_dir)
        try:
            manifest = read_manifest(directory)
        except FileNotFoundError as exc:
            raise ClaimVerificationError(
                f"{directory / MANIFEST_NAME} not found: export a model there first "
                "(`python -m export --model <hub id or local dir> --output <dir>`, or `python -m export --smoke`)"
            ) from exc
        except ValueError as exc:
            raise ClaimVerificationError(f"{directory / MANIFEST_NAME} is not a valid manifest: {exc}") from exc
        base = config if config is not None else ClaimVerificationConfig()
        named = ClaimVerificationConfig.model_validate(
            {**base.model_dump(), "model": manifest.model, "revision": manifest.revision}
        )
        options = (runtime if runtime is not None else RuntimeOptions()).model_copy(update={"model_dir": directory})
        return cls(named, runtime=options)

    # ----------------------------------------------------------------- engine

    @property
    def scorer(self) -> Scorer:
        """The injected scorer, or the ONNX engine (created on first access, once)."""
        if self._scorer is None:
            with self._scorer_lock:
                if self._scorer is None:
                    self._scorer = self._build_engine()
        return self._scorer

    def _build_engine(self) -> Scorer:
        """The ONNX engine for this configuration; it loads (and checks that its manifest
        names the configured model and revision) on first use."""
        from .engine import OnnxScorer  # lazy: keeps `import verifier` free of onnxruntime

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
            raw = scorer.score(pairs)
        except ClaimVerificationError:
            raise
        except Exception as exc:  # any scorer failure is an inference failure (SPEC §1)
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

    def _start(self, request: Union[ClaimRequest, Mapping[str, Any]]) -> _Running:
        item = request if isinstance(request, ClaimRequest) else ClaimRequest.model_validate(request)
        claim, evidence = _validate(item.claim, item.evidence, self.config)
        procedure = _Verification(claim, evidence, self.config)
        running = _Running(claim=claim, generator=procedure.run(item.requires_complete_set))
        if self.runtime.schedule == "eager":
            running.cache = {}
            running.prefetch = procedure.prefetch()
        return running

    def _finish(self, running: _Running) -> ClaimVerification:
        result = running.result
        assert result is not None
        if result.model_called:
            return result.model_copy(update={"resolved_revision": self._resolved_revision()})
        return result

    def _plan(self, requests: Sequence[Union[ClaimRequest, Mapping[str, Any]]]) -> list[_Running]:
        running = []
        for index, request in enumerate(requests):
            try:
                running.append(self._start(request))
            except ValueError as exc:
                if len(requests) == 1:
                    raise
                raise ValueError(f"request {index}: {exc}") from exc
        for item in running:
            item.advance(None)
        return running

    @staticmethod
    def _next_round(running: Sequence[_Running]) -> Optional[_Round]:
        active = [item for item in running if item.request is not None]
        if not active:
            return None
        needed = [item.needed() for item in active]
        extra = [item.take_prefetch(batch) for item, batch in zip(active, needed)]
        return _Round(active, needed, extra)

    def _score_round(self, work: _Round) -> tuple[np.ndarray, bool]:
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
        requests: Sequence[Union[ClaimRequest, Mapping[str, Any]]],
        *,
        progress: Optional[Callable[[int], None]] = None,
    ) -> list[ClaimVerification]:
        """Verify many claims, batching model work across them; results in input order.

        All requests are validated before any model call. Every claim's singles
        go to the scorer in one call, then pairs for the undecided claims, then
        rechecks. Each result equals :meth:`verify_sync` on that claim alone.

        Args:
            requests: :class:`ClaimRequest` objects or mappings with its fields.
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
    ) -> ClaimVerification:
        """Verify one claim against evidence passages (SPEC §3), synchronously.

        Args:
            claim: the declarative claim (the NLI hypothesis); stripped.
            evidence: passages in caller order (:class:`ClaimEvidence` or mappings).
            requires_complete_set: an exhaustive count/list claim: returns
                ``incomplete`` without a model call.

        Raises:
            ValueError: invalid input (SPEC §2), before any model call.
            ClaimVerificationError: model load or inference failed, or invalid scores.
        """
        _, items = _validate(claim, evidence, self.config)
        request = ClaimRequest(claim=claim, evidence=items, requires_complete_set=requires_complete_set)
        return self.verify_many_sync([request])[0]

    def verify_bundle_sync(
        self,
        claim: str,
        bundle: "ContextBundle",
        *,
        evidence_refs: Optional[Sequence[str]] = None,
        requires_complete_set: bool = False,
    ) -> ClaimVerification:
        """Verify a claim against the cited candidates of a packed context bundle (SPEC §7).

        Raises:
            ValueError: the bundle was rendered without citations, or an unknown
                ``evidence_refs`` entry; plus everything :meth:`verify_sync` raises.
        """
        evidence = self.bundle_evidence(bundle, evidence_refs)
        return self.verify_sync(claim, evidence, requires_complete_set=requires_complete_set)

    @staticmethod
    def bundle_evidence(
        bundle: "ContextBundle", evidence_refs: Optional[Sequence[str]] = None
    ) -> tuple[ClaimEvidence, ...]:
        """The evidence a bundle yields under the citation rules of SPEC §7 (see :mod:`verifier.bundle`)."""
        from .bundle import bundle_evidence

        return bundle_evidence(bundle, evidence_refs)

    # ----------------------------------------------------------------- async API

    async def verify_many(
        self, requests: Sequence[Union[ClaimRequest, Mapping[str, Any]]]
    ) -> list[ClaimVerification]:
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
    ) -> ClaimVerification:
        """Async twin of :meth:`verify_sync` (same arguments, errors and result)."""
        _, items = _validate(claim, evidence, self.config)
        request = ClaimRequest(claim=claim, evidence=items, requires_complete_set=requires_complete_set)
        return (await self.verify_many([request]))[0]

    async def verify_bundle(
        self,
        claim: str,
        bundle: "ContextBundle",
        *,
        evidence_refs: Optional[Sequence[str]] = None,
        requires_complete_set: bool = False,
    ) -> ClaimVerification:
        """Async twin of :meth:`verify_bundle_sync`."""
        evidence = self.bundle_evidence(bundle, evidence_refs)
        return await self.verify(claim, evidence, requires_complete_set=requires_complete_set)

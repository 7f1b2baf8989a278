"""The staged decision procedure (docs/decision.md §3).

The procedure is written once, as a generator (:meth:`Verification.run`) that
*yields* the premises it needs scored against the claim and receives their
(n, 3) probabilities back; it returns the finished
:class:`~verifier.types.ClaimVerification`. :mod:`verifier.decision.driver`
decides how those premises are scored (sync, async, many claims at once),
never what is decided.

This module never imports onnxruntime and never calls a scorer itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generator, Optional, Sequence
from uuid import UUID

import numpy as np

from . import audit
from .guards import PassageView, Provenance, entailment_guard, exact_negation, join_premise, localize, refutation_guard
from ..types import (
    SCHEMA_VERSION,
    STRICT_SCHEMA_VERSION,
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationStatus,
    EvidenceGroupScore,
    LocalizedEvidenceAssessment,
    StrictRuling,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from . import strict

__all__ = ["Procedure", "Verification"]

ENTAILMENT_LIMITATION = "uncorroborated_model_entailment"
CONTRADICTION_LIMITATION = "uncorroborated_model_contradiction"
COMPLETE_SET_LIMITATION = "complete_set_requires_structured_aggregation"

STRICT_LIMITATION = "strict_policy_ruling"

#: A procedure yields premises (the hypothesis is always the claim) and receives
#: their (n, 3) probabilities; it returns the finished result.
Procedure = Generator[list[str], np.ndarray, ClaimVerification]

# --------------------------------------------------------------------------- the procedure


@dataclass(frozen=True)
class _Support:
    group: tuple[int, ...]
    probability: float
    localized: bool
    #: For the strict policy (docs/policy.md): the premise scored and, for a recheck, the kept segments.
    premise: str = ""
    segments: tuple[tuple[int, ...], ...] = ()


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
    #: Raw contradictions the refutation guard dropped (read by the strict policy only).
    dropped: list[tuple[tuple[int, ...], float]] = field(default_factory=list)

    @property
    def decided(self) -> bool:
        return bool(self.supports or self.refutations)


def _probabilities(row: np.ndarray) -> tuple[float, float, float]:
    return float(row[0]), float(row[1]), float(row[2])


class Verification:
    """State shared by the steps of one verification."""

    def __init__(
        self,
        claim: str,
        evidence: tuple[ClaimEvidence, ...],
        config: ClaimVerificationConfig,
        *,
        as_of: Optional[datetime] = None,
        truncated: Optional[strict.TruncationQuery] = None,
    ) -> None:
        self.claim = claim
        self.evidence = evidence
        self.config = config
        #: The caller's verification date (schema 4, docs/policy.md); read by the strict policy.
        self.as_of = as_of
        #: Which (premise, claim) pairs the model sees truncated; asked by the strict policy only.
        self.truncated = truncated
        self.strict = config.entailment_policy == "strict" or config.refutation_policy == "strict"
        self.schema_version = STRICT_SCHEMA_VERSION if self.strict or as_of is not None else SCHEMA_VERSION
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
        """docs/decision.md §3 steps 4–5 over one set of scored groups; yields once for rechecks."""
        config = self.config
        stage = _Stage()
        # Step 4: support.
        blocked: list[tuple[int, tuple[int, ...]]] = []
        for position, group in enumerate(groups):
            if scores[position, 0] < config.entailment_threshold:
                continue
            passages = [self.views[index] for index in group]
            if config.entailment_policy == "model_only" or entailment_guard(self.claim, passages):
                stage.supports.append(
                    _Support(group, float(scores[position, 0]), localized=False, premise=self.premise(group))
                )
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
                    stage.supports.append(
                        _Support(group, entailment, True, premise=item.premise, segments=item.included_segment_numbers)
                    )
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
                    stage.dropped.append((group, contradiction))
            if refutes_through_model:
                stage.refutations.append(_Refutation(group, contradiction, explicit=False))
            elif exact_negation(self.claim, passages):
                stage.refutations.append(_Refutation(group, contradiction, explicit=True))
        return stage

    def run(self, requires_complete_set: bool) -> Procedure:
        """The whole staged procedure of docs/decision.md §3."""
        config = self.config
        if requires_complete_set:
            return self.result(ClaimVerificationStatus.INCOMPLETE, limitations=(COMPLETE_SET_LIMITATION,))
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
            limitations.append(ENTAILMENT_LIMITATION)
        if any(stage.contradiction_limited for stage in stages):
            limitations.append(CONTRADICTION_LIMITATION)
        rulings: Optional[tuple[StrictRuling, ...]] = None
        if self.strict:
            supports, refutations, rulings = self._strict(stages, supports, refutations)
            if rulings:
                limitations.append(STRICT_LIMITATION)

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
            strict_rulings=rulings,
        )

    def _strict(
        self, stages: Sequence[_Stage], supports: list[_Support], refutations: list[_Refutation]
    ) -> tuple[list[_Support], list[_Refutation], tuple[StrictRuling, ...]]:
        """The strict policy over the reference decisions (docs/policy.md; :func:`verifier.decision.strict.decide`)."""
        # imported here: the strict policy's modules are ~15 % of the library's import time and only
        # strict configurations use them (docs/performance.md, "Import time")
        from . import strict

        config = self.config
        outcome = strict.decide(
            self.claim,
            self.evidence,
            entailment=config.entailment_policy == "strict",
            refutation=config.refutation_policy == "strict",
            supports=[strict.Support(s.group, s.probability, s.localized, s.premise, s.segments) for s in supports],
            refutations=[strict.Refutation(r.group, r.probability, r.explicit) for r in refutations],
            dropped=[strict.Dropped(group, p) for stage in stages for group, p in stage.dropped],
            as_of=self.as_of,
            truncated=self.truncated,
        )
        rulings = tuple(
            StrictRuling(
                action=ruling.action,  # type: ignore[arg-type]
                rule=ruling.rule,  # type: ignore[arg-type]
                references=tuple(self.evidence[index].reference for index in ruling.group),
                memory_ids=self._ids(ruling.group),
                localized=ruling.localized,
                sentence=ruling.sentence,
                trigger=ruling.trigger,
            )
            for ruling in outcome.rulings
        )
        return (
            [_Support(s.group, s.probability, s.localized, s.premise, s.segments) for s in outcome.supports],
            [_Refutation(r.group, r.probability, r.explicit) for r in outcome.refutations],
            rulings,
        )

    def _ids(self, group: tuple[int, ...]) -> tuple[UUID, ...]:
        return tuple(self.evidence[index].memory_id for index in group)

    def _rank(self, group: tuple[int, ...], probability: float) -> tuple[int, float, tuple[str, ...]]:
        """docs/decision.md §3 step 8: smallest group, then highest probability, then memory ids as strings."""
        return (len(group), -probability, tuple(str(memory_id) for memory_id in self._ids(group)))

    def result(self, status: ClaimVerificationStatus, **fields: Any) -> ClaimVerification:
        """The finished, digested record (:func:`verifier.decision.audit.seal`) for this claim and evidence."""
        return audit.seal(
            self.claim, self.evidence, self.config, status, schema_version=self.schema_version, as_of=self.as_of, **fields
        )

    def prefetch(self) -> list[str]:
        """Premises the eager schedule scores with the singles: every pair, when the
        candidates cannot depend on ranking (all passages fit the candidate limit)."""
        count = len(self.evidence)
        if self.config.max_group_size < 2 or count < 2 or count > self.config.group_candidate_limit:
            return []
        return [self.premise(group) for group in itertools.combinations(range(count), 2)]

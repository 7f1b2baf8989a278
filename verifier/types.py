"""The public contract of the verifier (docs/decision.md §1): frozen pydantic v2 models.

Every model here is frozen and rejects unknown fields (``extra="forbid"``), so
a typo in a field name, an out-of-range threshold or a NaN is a
:class:`pydantic.ValidationError` (a :class:`ValueError`) naming the field and
the limit.

Exceptions::

    RuntimeError
     └── ClaimVerificationError   model load / integrity / inference failure,
                                  or a scorer that returned invalid scores
    ValueError
     └── pydantic.ValidationError bad input (names the field and the limit)

The field names of :class:`ClaimEvidence`, :class:`EvidenceGroupScore`,
:class:`LocalizedEvidenceAssessment` and :class:`ClaimVerificationConfig` are
part of the audit digests (docs/audit.md): never rename them or add a field
with a default that would be dumped (canonical JSON sorts keys, so their order
does not matter; the order of passages and groups does).
"""

from __future__ import annotations

import math
import numbers
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal, Optional
from uuid import UUID

from .engine_identity import EngineIdentity
from .fields import Reference, check_text, has_visible_text
from .fields import StrippedNonEmpty as _StrippedNonEmpty
from .fields import Text as _Text
from pydantic import (
    AfterValidator,
    BeforeValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_REVISION",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "PROBABILITY_SUM_TOLERANCE",
    "ClaimVerificationError",
    "ClaimVerificationStatus",
    "SourceType",
    "EpistemicType",
    "LifecycleState",
    "EntailmentPolicy",
    "RefutationPolicy",
    "SupportingBasis",
    "RefutingBasis",
    "Limitation",
    "DEFAULT_NLI_MODEL",
    "DEFAULT_NLI_REVISION",
    "CLAIM_VERIFICATION_SCHEMA_VERSION",
    "ClaimVerificationDecisionBasis",
    "ClaimVerificationLimitation",
    "ClaimVerificationConfig",
    "ClaimEvidence",
    "EvidenceGroupScore",
    "LocalizedEvidenceAssessment",
    "ClaimVerification",
    "ClaimRequest",
    "STRICT_SCHEMA_VERSION",
    "StrictRule",
    "StrictAction",
    "StrictRuling",
    "RecordSignature",
    "check_as_of",
    "has_visible_text",
    "check_text",
]

#: Default NLI cross-encoder (Sentence Transformers model table: 90.04 MNLI-mismatched accuracy).
DEFAULT_MODEL = "cross-encoder/nli-deberta-v3-base"
#: Immutable Hugging Face revision of :data:`DEFAULT_MODEL` pinned by the contract.
DEFAULT_REVISION = "6c749ce3425cd33b46d187e45b92bbf96ee12ec7"
#: Schema version written into new results (docs/decision.md §1; schema 3 adds localized rechecks).
SCHEMA_VERSION: Literal[3] = 3
#: Schema versions that still validate when results are read back.
SUPPORTED_SCHEMA_VERSIONS = (1, 2, 3, 4)
#: Schema version of results that carry the strict policy's fields (``as_of``,
#: ``strict_rulings``; docs/policy.md). Reference results stay at :data:`SCHEMA_VERSION`.
STRICT_SCHEMA_VERSION: Literal[4] = 4
#: Probabilities of one group must sum to 1 within this tolerance (docs/decision.md §1).
PROBABILITY_SUM_TOLERANCE = 1e-5


class ClaimVerificationError(RuntimeError):
    """Model load, integrity or inference failed, or a scorer returned invalid scores.

    It is never turned into a verification status: callers see an exception,
    not ``insufficient``.
    """


class ClaimVerificationStatus(str, Enum):
    """Outcome of one verification (docs/decision.md §1, §3 step 7)."""

    SUPPORTED = "supported"
    REFUTED = "refuted"
    CONTESTED = "contested"
    INSUFFICIENT = "insufficient"
    INCOMPLETE = "incomplete"


class SourceType(str, Enum):
    """Where a memory came from."""

    USER_STATED = "user_stated"
    USER_DEMONSTRATED = "user_demonstrated"
    SYSTEM_INFERRED = "system_inferred"
    EXTERNAL_DOCUMENT = "external_document"
    TOOL_OUTPUT = "tool_output"


class EpistemicType(str, Enum):
    """How a memory is known (docs/decision.md §4.2 uses hypothetical, conditional, deprecated, unverified)."""

    OBSERVED = "observed"
    ASSERTED = "asserted"
    INFERRED = "inferred"
    HYPOTHETICAL = "hypothetical"
    CONDITIONAL = "conditional"
    DEPRECATED = "deprecated"
    UNVERIFIED = "unverified"


class LifecycleState(str, Enum):
    """Lifecycle of a memory (superseded, deprecated and archived never decide, docs/decision.md §4.2)."""

    TENTATIVE = "tentative"
    STABLE = "stable"
    CONTESTED = "contested"
    SUPERSEDED = "superseded"
    DEPRECATED = "deprecated"
    ARCHIVED = "archived"


#: ``strict`` is opt-in and never adds a support (docs/policy.md).
EntailmentPolicy = Literal["speech_act_guarded", "model_only", "strict"]
RefutationPolicy = Literal["explicit_corroboration", "model_only", "strict"]
SupportingBasis = Literal["model_entailment", "localized_model_entailment"]
RefutingBasis = Literal["model_contradiction", "explicit_negation_overlap"]
#: The decision bases of a result (both kinds), PRME 0.15.0's ``ClaimVerificationDecisionBasis``.
ClaimVerificationDecisionBasis = Literal[
    "model_entailment", "localized_model_entailment", "model_contradiction", "explicit_negation_overlap"
]
Limitation = Literal[
    "complete_set_requires_structured_aggregation",
    "uncorroborated_model_entailment",
    "uncorroborated_model_contradiction",
    "strict_policy_ruling",
]
#: PRME 0.15.0's names for the same things (``prme.retrieval.claim_verification``), for drop-in imports.
ClaimVerificationLimitation = Limitation
DEFAULT_NLI_MODEL = DEFAULT_MODEL
DEFAULT_NLI_REVISION = DEFAULT_REVISION
CLAIM_VERIFICATION_SCHEMA_VERSION = SCHEMA_VERSION
#: The rules of the strict policy (docs/policy.md), as named in :class:`StrictRuling`.
StrictRule = Literal[
    "strict_speech_act",
    "strict_negation",
    "framing_dropped",
    "strict_withdrawal",
    "value_mismatch",
    "dropped_contradiction",
    "expired",
    "not_yet_valid",
    "contested_lifecycle",
    "truncated_pair",
    "negation_scope",
    "value_superset",
    "value_format",
    "aggregate_total",
    "strict_corroboration",
]
#: What a strict rule did to a group.
StrictAction = Literal["vetoed_support", "vetoed_refutation", "added_refutation"]

_Probability = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
#: Strict: a threshold given as a string or a bool is a caller's mistake, not a number.
_Threshold = Annotated[float, Field(ge=0.5, le=1.0, allow_inf_nan=False, strict=True)]
_Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def _integral(value: Any) -> Any:
    """A size given as an integral number of another type is that int, as PRME's config takes it
    (``2.0``, ``numpy.int64(2)``, ``numpy.array(2)``, ``Decimal("2")``); a bool or a string stays a caller's mistake
    (docs/compatibility.md, "What the project refuses in addition")."""
    if type(value).__name__ == "ndarray" and getattr(value, "ndim", None) == 0:  # numpy.array(2), as PRME takes it
        value = value.item()
    if isinstance(value, (bool, str, bytes)) or type(value).__name__ == "bool_":
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and float(value).is_integer():  # NaN and inf are not
        return int(float(value))
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    return value


#: Size fields: ints in their bounds, integral numbers of other types taken as that int.
_Size256 = Annotated[int, BeforeValidator(_integral), Field(ge=1, le=256, strict=True)]
_GroupSize = Annotated[int, BeforeValidator(_integral), Field(ge=1, le=3, strict=True)]
_CandidateLimit = Annotated[int, BeforeValidator(_integral), Field(ge=2, le=16, strict=True)]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ClaimVerificationConfig(BaseModel):
    """The decision configuration (docs/decision.md §1). All ten fields, and only these, are digested.

    ``model`` and ``revision`` are meant to be changed together: a revision is
    an immutable Hugging Face commit of that model. Runtime settings (model
    directory, threads, execution providers, schedule) live in
    :class:`verifier.RuntimeOptions` and never change a digest.

    Raises:
        pydantic.ValidationError: a field outside its limit (e.g. a threshold
            below 0.5), a NaN/inf, an empty model or revision, or an unknown field.
    """

    model_config = _FROZEN

    model: _StrippedNonEmpty = DEFAULT_MODEL
    revision: _StrippedNonEmpty = DEFAULT_REVISION
    entailment_threshold: _Threshold = 0.80
    contradiction_threshold: _Threshold = 0.80
    batch_size: _Size256 = 32
    max_evidence: _Size256 = 64
    max_group_size: _GroupSize = 2
    group_candidate_limit: _CandidateLimit = 8
    entailment_policy: EntailmentPolicy = "speech_act_guarded"
    refutation_policy: RefutationPolicy = "explicit_corroboration"


class ClaimEvidence(BaseModel):
    """One evidence passage (a retrieved memory) with its typed provenance.

    Field names are digested (docs/audit.md): ``evidence_sha256`` covers all nine
    fields, nulls included, passages in caller order.
    """

    model_config = _FROZEN

    reference: Reference
    memory_id: UUID
    text: _Text
    source_type: Optional[SourceType] = None
    epistemic_type: Optional[EpistemicType] = None
    lifecycle_state: Optional[LifecycleState] = None
    event_time: Optional[datetime] = None
    valid_from: Optional[datetime] = None
    valid_to: Optional[datetime] = None


def _check_distribution(entailment: float, contradiction: float, neutral: float) -> None:
    total = entailment + contradiction + neutral
    if not math.isclose(total, 1.0, rel_tol=PROBABILITY_SUM_TOLERANCE, abs_tol=PROBABILITY_SUM_TOLERANCE):
        raise ValueError(
            f"NLI probabilities must sum to one: entailment + contradiction + neutral must be 1 within "
            f"{PROBABILITY_SUM_TOLERANCE:g} (relative and absolute), got {total!r}"
        )


class EvidenceGroupScore(BaseModel):
    """Model probabilities for one evidence group, passages in premise order."""

    model_config = _FROZEN

    references: tuple[str, ...] = Field(min_length=1)
    memory_ids: tuple[UUID, ...] = Field(min_length=1)
    entailment: _Probability
    contradiction: _Probability
    neutral: _Probability

    @model_validator(mode="after")
    def _consistent(self) -> "EvidenceGroupScore":
        if len(self.references) != len(self.memory_ids):
            raise ValueError("references and memory_ids must have the same length")
        _check_distribution(self.entailment, self.contradiction, self.neutral)
        return self


class LocalizedEvidenceAssessment(BaseModel):
    """One localized recheck of a guard-blocked entailing group (docs/decision.md §5, schema 3).

    ``included_segment_numbers`` holds one sorted tuple of one-based segment
    numbers per passage of the group (empty when nothing of that passage was
    kept). Probabilities are all ``None`` when no model call was made, and all
    present (summing to 1) when one was.
    """

    model_config = _FROZEN

    references: tuple[str, ...] = Field(min_length=1)
    memory_ids: tuple[UUID, ...] = Field(min_length=1)
    included_segment_numbers: tuple[tuple[Annotated[int, Field(ge=1)], ...], ...]
    premise_sha256: Optional[_Sha256] = None
    model_called: bool
    entailment: Optional[_Probability] = None
    contradiction: Optional[_Probability] = None
    neutral: Optional[_Probability] = None

    @model_validator(mode="after")
    def _consistent(self) -> "LocalizedEvidenceAssessment":
        n = len(self.memory_ids)
        if len(self.references) != n or len(self.included_segment_numbers) != n:
            raise ValueError(
                "references, memory_ids and included_segment_numbers must have the same length"
            )
        for numbers in self.included_segment_numbers:
            if list(numbers) != sorted(set(numbers)):
                raise ValueError("included_segment_numbers must be sorted and unique per passage")
        probabilities = (self.entailment, self.contradiction, self.neutral)
        if self.model_called:
            if any(p is None for p in probabilities) or self.premise_sha256 is None:
                raise ValueError("a recheck with model_called=True needs premise_sha256 and all three probabilities")
            _check_distribution(*probabilities)  # type: ignore[arg-type]
        elif any(p is not None for p in probabilities):
            raise ValueError("a recheck without a model call has no probabilities")
        return self


class StrictRuling(BaseModel):
    """One decision of the strict policy (docs/policy.md): which rule did what to which group.

    ``localized`` is true when the vetoed support was a localized recheck. ``sentence`` is the
    sentence the decision rested on (the support sentence: the group's sentence with the most
    claim stems, as the strict rules read it) and ``trigger`` the text that made the rule fire
    (a cue, a frame, a negated clause, a value, a validity field). Both are ``None`` only in
    records written before they existed; they are digested only when set (docs/policy.md, "The
    record").
    """

    model_config = _FROZEN

    action: StrictAction
    rule: StrictRule
    references: tuple[str, ...] = Field(min_length=1)
    memory_ids: tuple[UUID, ...] = Field(min_length=1)
    localized: bool = False
    sentence: Optional[str] = None
    trigger: Optional[str] = None

    @model_validator(mode="after")
    def _consistent(self) -> "StrictRuling":
        if len(self.references) != len(self.memory_ids):
            raise ValueError("references and memory_ids must have the same length")
        if self.localized and self.action != "vetoed_support":
            raise ValueError("only a vetoed support can be localized")
        return self


class RecordSignature(BaseModel):
    """An Ed25519 signature of a result record (opt-in, docs/audit.md "Signatures"; :mod:`verifier.decision.signing`).

    ``key_id``: sha256 hex of the signer's raw 32-byte public key; ``value``:
    the 64-byte signature, standard base64. Covered by no digest.
    """

    model_config = _FROZEN

    algorithm: Literal["ed25519"] = "ed25519"
    key_id: _Sha256
    value: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9+/]{86}==$")]


def check_as_of(value: Optional[datetime]) -> Optional[datetime]:
    """The ``as_of`` rule: ``None`` or a timezone-aware datetime (docs/policy.md).

    Raises:
        ValueError: a naive datetime, or not a datetime.
    """
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValueError(f"as_of must be a timezone-aware datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("as_of must be timezone-aware (give it an offset, e.g. UTC)")
    return value


_AsOf = Annotated[Optional[datetime], AfterValidator(check_as_of)]


class ClaimVerification(BaseModel):
    """The auditable result of one verification (docs/decision.md §1, §3; digests: docs/audit.md).

    Schema 3 results are written by the reference policies; schema 4 results
    (the strict policy, or a caller's ``as_of``) add ``as_of`` and
    ``strict_rulings`` (docs/policy.md). Schema 1 and 2 results (without
    ``localized_assessments``, and for schema 1 without the bases) still
    validate when read back. Below schema 4 the two schema 4 fields are left
    out of dumps, so a reference result serialises exactly as before.
    """

    model_config = _FROZEN

    schema_version: Literal[1, 2, 3, 4] = SCHEMA_VERSION
    claim: _StrippedNonEmpty
    status: ClaimVerificationStatus
    supporting_group: tuple[UUID, ...] = ()
    refuting_group: tuple[UUID, ...] = ()
    supporting_basis: Optional[SupportingBasis] = None
    refuting_basis: Optional[RefutingBasis] = None
    group_scores: tuple[EvidenceGroupScore, ...] = ()
    localized_assessments: tuple[LocalizedEvidenceAssessment, ...] = ()
    limitations: tuple[Limitation, ...] = ()
    #: Schema 4 only: the date the claim was verified at, when the caller gave one.
    as_of: _AsOf = None
    #: Schema 4 only: what the strict policy vetoed or added, in decision order (docs/policy.md).
    strict_rulings: tuple[StrictRuling, ...] = ()
    model: _StrippedNonEmpty
    requested_revision: _StrippedNonEmpty
    resolved_revision: Optional[str] = None
    model_called: bool
    configuration_sha256: _Sha256
    claim_sha256: _Sha256
    evidence_sha256: _Sha256
    evaluation_id: _Sha256
    result_sha256: _Sha256
    #: Which engine scored it (docs/audit.md, "Engine identity"): set by the ONNX engine after a model
    #: call, ``None`` otherwise. In no digest (PRME's are unchanged); left out of dumps when unset.
    engine: Optional[EngineIdentity] = None
    #: Opt-in (``sign_key``): who made the record. In no digest; left out of dumps when unset.
    signature: Optional[RecordSignature] = None

    @field_validator("limitations")
    @classmethod
    def _unique_limitations(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError("limitations must not repeat")
        return value

    @model_validator(mode="before")
    @classmethod
    def _schema4_fields_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("schema_version") == STRICT_SCHEMA_VERSION and "strict_rulings" not in data:
            raise ValueError("a schema_version 4 result must carry strict_rulings (an empty list when none)")
        return data

    @model_validator(mode="after")
    def _schema_fields(self) -> "ClaimVerification":
        if self.schema_version < 3 and self.localized_assessments:
            raise ValueError("localized_assessments need schema_version 3")
        if self.schema_version < 2 and (self.supporting_basis or self.refuting_basis):
            raise ValueError("supporting_basis/refuting_basis need schema_version 2 or later")
        if self.schema_version < 4 and (self.as_of is not None or self.strict_rulings):
            raise ValueError("as_of and strict_rulings need schema_version 4")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.schema_version < STRICT_SCHEMA_VERSION:
            data.pop("as_of", None)
            data.pop("strict_rulings", None)
        for name in ("engine", "signature"):
            if getattr(self, name) is None:
                data.pop(name, None)
        return data


class ClaimRequest(BaseModel):
    """One claim to verify in a many-claims call or one JSON Lines input row.

    ``id`` is the caller's own label, echoed by the command line; it is not
    part of any digest.
    """

    model_config = _FROZEN

    id: Optional[str] = None
    claim: str
    evidence: tuple[ClaimEvidence, ...] = ()
    #: Strict: ``"yes"`` or ``1`` is refused rather than read as true.
    requires_complete_set: Annotated[bool, Field(strict=True)] = False
    #: The date the caller verifies at (timezone-aware; read by the strict policy's
    #: validity rules). Digested only when set (docs/policy.md).
    as_of: _AsOf = None

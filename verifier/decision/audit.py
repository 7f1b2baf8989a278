"""Canonical JSON and the audit digests (docs/audit.md).

``canonical(x)`` is JSON with sorted keys, separators ``(",", ":")`` and
non-ASCII kept; every digest is the lower-case hex sha256 of its UTF-8 bytes.
Digests are fed only by ``model_dump(mode="json")`` of the contract models, so
identical inputs and scores give identical digests on any machine and batch
layout.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Optional, Sequence
from uuid import UUID

from pydantic import TypeAdapter

from ..types import (
    STRICT_SCHEMA_VERSION,
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationStatus,
    EvidenceGroupScore,
    LocalizedEvidenceAssessment,
    StrictRuling,
)

_AS_OF: TypeAdapter[datetime] = TypeAdapter(datetime)

__all__ = [
    "canonical",
    "sha256_hex",
    "configuration_sha256",
    "claim_sha256",
    "evidence_sha256",
    "evaluation_id",
    "result_sha256",
    "seal",
]


def canonical(value: Any) -> str:
    """Canonical JSON (docs/audit.md): sorted keys, ``(",", ":")`` separators, non-ASCII kept.

    Raises:
        ValueError: ``value`` holds NaN or infinity (not valid JSON).
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_hex(text: str) -> str:
    """Lower-case hex sha256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def configuration_sha256(config: ClaimVerificationConfig) -> str:
    """sha256 of the canonical decision configuration (its ten fields)."""
    return sha256_hex(canonical(config.model_dump(mode="json")))


def claim_sha256(claim: str) -> str:
    """sha256 of the stripped claim."""
    return sha256_hex(claim.strip())


def evidence_sha256(evidence: Sequence[ClaimEvidence]) -> str:
    """sha256 of the canonical list of evidence dumps (all nine fields, nulls included), caller order."""
    return sha256_hex(canonical([item.model_dump(mode="json") for item in evidence]))


def evaluation_id(
    *,
    claim_digest: str,
    configuration_digest: str,
    evidence_digest: str,
    schema_version: int,
    as_of: Optional[datetime] = None,
) -> str:
    """sha256 of canonical ``{claim_sha256, configuration_sha256, evidence_sha256, schema_version}``.

    ``as_of`` (schema 4, docs/policy.md) adds the key ``"as_of"`` (its ISO 8601
    form as pydantic writes it) only when it is set, so every other result keeps
    its digest.
    """
    record: dict[str, Any] = {
        "claim_sha256": claim_digest,
        "configuration_sha256": configuration_digest,
        "evidence_sha256": evidence_digest,
        "schema_version": schema_version,
    }
    if as_of is not None:
        record["as_of"] = _AS_OF.dump_python(as_of, mode="json")
    return sha256_hex(canonical(record))


def result_sha256(
    *,
    evaluation: str,
    status: str,
    supporting_group: Sequence[UUID],
    refuting_group: Sequence[UUID],
    supporting_basis: Optional[str],
    refuting_basis: Optional[str],
    group_scores: Sequence[EvidenceGroupScore],
    localized_assessments: Sequence[LocalizedEvidenceAssessment],
    limitations: Sequence[str],
    strict_rulings: Optional[Sequence[StrictRuling]] = None,
) -> str:
    """sha256 of the canonical decision record (docs/audit.md; groups as lists of id strings).

    ``strict_rulings`` (schema 4, docs/policy.md) adds the key ``"strict_rulings"``
    only when given (``None`` for schema 1–3 records, so their digests never change).
    """
    record: dict[str, Any] = {
        "evaluation_id": evaluation,
        "group_scores": [score.model_dump(mode="json") for score in group_scores],
        "localized_assessments": [item.model_dump(mode="json") for item in localized_assessments],
        "limitations": list(limitations),
        "refuting_basis": refuting_basis,
        "refuting_group": [str(memory_id) for memory_id in refuting_group],
        "status": status,
        "supporting_basis": supporting_basis,
        "supporting_group": [str(memory_id) for memory_id in supporting_group],
    }
    if strict_rulings is not None:
        # Unset evidence fields (records written before they existed) are left out: their digests stay.
        record["strict_rulings"] = [ruling.model_dump(mode="json", exclude_none=True) for ruling in strict_rulings]
    return sha256_hex(canonical(record))


def seal(
    claim: str,
    evidence: Sequence[ClaimEvidence],
    config: ClaimVerificationConfig,
    status: ClaimVerificationStatus,
    *,
    schema_version: int,
    as_of: Optional[datetime] = None,
    supporting_group: tuple[UUID, ...] = (),
    refuting_group: tuple[UUID, ...] = (),
    supporting_basis: Optional[str] = None,
    refuting_basis: Optional[str] = None,
    group_scores: tuple[EvidenceGroupScore, ...] = (),
    localized_assessments: tuple[LocalizedEvidenceAssessment, ...] = (),
    limitations: tuple[str, ...] = (),
    model_called: bool = False,
    strict_rulings: Optional[tuple[StrictRuling, ...]] = None,
) -> ClaimVerification:
    """The finished result record for ``claim`` over ``evidence``, with its five digests (docs/audit.md).

    ``resolved_revision`` is left ``None``: the verifier fills it in after a model call.
    """
    schema = schema_version
    if schema == STRICT_SCHEMA_VERSION and strict_rulings is None:
        strict_rulings = ()
    configuration_digest = configuration_sha256(config)
    claim_digest = claim_sha256(claim)
    evidence_digest = evidence_sha256(evidence)
    evaluation = evaluation_id(
        claim_digest=claim_digest,
        configuration_digest=configuration_digest,
        evidence_digest=evidence_digest,
        schema_version=schema,
        as_of=as_of,
    )
    digest = result_sha256(
        evaluation=evaluation,
        status=status.value,
        supporting_group=supporting_group,
        refuting_group=refuting_group,
        supporting_basis=supporting_basis,
        refuting_basis=refuting_basis,
        group_scores=group_scores,
        localized_assessments=localized_assessments,
        limitations=limitations,
        strict_rulings=strict_rulings,
    )
    return ClaimVerification(
        schema_version=schema,  # type: ignore[arg-type]
        as_of=as_of,
        strict_rulings=strict_rulings or (),
        claim=claim,
        status=status,
        supporting_group=supporting_group,
        refuting_group=refuting_group,
        supporting_basis=supporting_basis,  # type: ignore[arg-type]
        refuting_basis=refuting_basis,  # type: ignore[arg-type]
        group_scores=group_scores,
        localized_assessments=localized_assessments,
        limitations=limitations,  # type: ignore[arg-type]
        model=config.model,
        requested_revision=config.revision,
        resolved_revision=None,  # filled in by the verifier after a model call
        model_called=model_called,
        configuration_sha256=configuration_digest,
        claim_sha256=claim_digest,
        evidence_sha256=evidence_digest,
        evaluation_id=evaluation,
        result_sha256=digest,
    )

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
from typing import Any, Optional, Sequence
from uuid import UUID

from .types import (
    ClaimEvidence,
    ClaimVerificationConfig,
    EvidenceGroupScore,
    LocalizedEvidenceAssessment,
)

__all__ = [
    "canonical",
    "sha256_hex",
    "configuration_sha256",
    "claim_sha256",
    "evidence_sha256",
    "evaluation_id",
    "result_sha256",
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
    *, claim_digest: str, configuration_digest: str, evidence_digest: str, schema_version: int
) -> str:
    """sha256 of canonical ``{claim_sha256, configuration_sha256, evidence_sha256, schema_version}``."""
    return sha256_hex(
        canonical(
            {
                "claim_sha256": claim_digest,
                "configuration_sha256": configuration_digest,
                "evidence_sha256": evidence_digest,
                "schema_version": schema_version,
            }
        )
    )


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
) -> str:
    """sha256 of the canonical decision record (docs/audit.md; groups as lists of id strings)."""
    return sha256_hex(
        canonical(
            {
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
        )
    )

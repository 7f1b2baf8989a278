"""docs/audit.md digests, schema versions and JSON round-trips."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from uuid import UUID

import pytest
from pydantic import ValidationError

from verifier import (
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerifier,
    EpistemicType,
    ScriptedScorer,
    SourceType,
)
from verifier.decision.audit import canonical, configuration_sha256, evidence_sha256

EVIDENCE = [
    ClaimEvidence(
        reference="m1",
        memory_id=UUID("00000000-0000-4000-8000-000000000001"),
        text="The launch is Tuesday.",
        source_type=SourceType.USER_STATED,
        epistemic_type=EpistemicType.OBSERVED,
        event_time=datetime(2026, 5, 4, 9, 30, tzinfo=timezone.utc),
    ),
    ClaimEvidence(
        reference="m2",
        memory_id=UUID("00000000-0000-4000-8000-000000000002"),
        text="Die Einführung ist nicht am Dienstag; it is Wednesday.",
    ),
]
SCORES = {EVIDENCE[0].text: (0.95, 0.01), EVIDENCE[1].text: (0.01, 0.97)}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def verify(scores: dict = SCORES, claim: str = "The launch is Tuesday.", **config: object) -> ClaimVerification:
    verifier = ClaimVerifier(ClaimVerificationConfig(**config), scorer=ScriptedScorer(scores, default=(0.02, 0.01)))  # type: ignore[arg-type]
    return verifier.verify_sync(claim, EVIDENCE)


def test_canonical_json() -> None:
    assert canonical({"b": 1, "a": ["é", None, 0.5]}) == '{"a":["é",null,0.5],"b":1}'
    with pytest.raises(ValueError):
        canonical({"x": float("nan")})


def test_digests_follow_spec_section_6_independently() -> None:
    result = verify()
    config = {
        "batch_size": 32,
        "contradiction_threshold": 0.8,
        "entailment_policy": "speech_act_guarded",
        "entailment_threshold": 0.8,
        "group_candidate_limit": 8,
        "max_evidence": 64,
        "max_group_size": 2,
        "model": "cross-encoder/nli-deberta-v3-base",
        "refutation_policy": "explicit_corroboration",
        "revision": "6c749ce3425cd33b46d187e45b92bbf96ee12ec7",
    }
    dumps = lambda value: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # noqa: E731
    assert result.configuration_sha256 == sha(dumps(config))
    assert result.claim_sha256 == sha("The launch is Tuesday.")
    evidence = [
        {
            "reference": "m1",
            "memory_id": "00000000-0000-4000-8000-000000000001",
            "text": "The launch is Tuesday.",
            "source_type": "user_stated",
            "epistemic_type": "observed",
            "lifecycle_state": None,
            "event_time": "2026-05-04T09:30:00Z",
            "valid_from": None,
            "valid_to": None,
        },
        {
            "reference": "m2",
            "memory_id": "00000000-0000-4000-8000-000000000002",
            "text": "Die Einführung ist nicht am Dienstag; it is Wednesday.",
            "source_type": None,
            "epistemic_type": None,
            "lifecycle_state": None,
            "event_time": None,
            "valid_from": None,
            "valid_to": None,
        },
    ]
    assert result.evidence_sha256 == sha(dumps(evidence))
    evaluation = sha(
        dumps(
            {
                "claim_sha256": result.claim_sha256,
                "configuration_sha256": result.configuration_sha256,
                "evidence_sha256": result.evidence_sha256,
                "schema_version": 3,
            }
        )
    )
    assert result.evaluation_id == evaluation
    record = {
        "evaluation_id": evaluation,
        "group_scores": [
            {"references": ["m1"], "memory_ids": ["00000000-0000-4000-8000-000000000001"], "entailment": 0.95, "contradiction": 0.01, "neutral": 1.0 - 0.95 - 0.01},
            {"references": ["m2"], "memory_ids": ["00000000-0000-4000-8000-000000000002"], "entailment": 0.01, "contradiction": 0.97, "neutral": 1.0 - 0.01 - 0.97},
        ],
        "localized_assessments": [],
        "limitations": [],
        "refuting_basis": "model_contradiction",
        "refuting_group": ["00000000-0000-4000-8000-000000000002"],
        "status": "contested",
        "supporting_basis": "model_entailment",
        "supporting_group": ["00000000-0000-4000-8000-000000000001"],
    }
    assert result.result_sha256 == sha(dumps(record))


def test_digests_are_pinned() -> None:
    """Literal digests: a change here is a break of every stored audit record."""
    result = verify()
    assert result.configuration_sha256 == configuration_sha256(ClaimVerificationConfig())
    assert result.configuration_sha256 == "9faa7c1331cee125c599e42dbf33c3a82056759cbba8a6ac015be86b12b9006d"
    assert result.evidence_sha256 == evidence_sha256(EVIDENCE)
    assert result.evidence_sha256 == "7a9b5a775b95ae77ed2ee7b566d539835bf0b40ef547fc564ee1f2e36d72f36a"
    assert result.result_sha256 == "befade8eb7d25e77660183cd80c2cc2023317abf591e75ab9323be690531b1ed"


def test_same_inputs_same_digests_and_any_change_differs() -> None:
    base = verify()
    assert verify() == base
    changed_score = verify({**SCORES, EVIDENCE[0].text: (0.951, 0.01)})
    changed_claim = verify(claim="The launch is on Tuesday.")
    changed_config = verify(batch_size=16)
    assert changed_score.evaluation_id == base.evaluation_id
    assert changed_score.result_sha256 != base.result_sha256
    assert changed_claim.evaluation_id != base.evaluation_id
    assert changed_claim.result_sha256 != base.result_sha256
    assert changed_config.configuration_sha256 != base.configuration_sha256
    assert changed_config.result_sha256 != base.result_sha256
    assert changed_config.status == base.status


def test_results_round_trip_through_json() -> None:
    result = verify()
    text = result.model_dump_json()
    assert ClaimVerification.model_validate_json(text) == result
    assert ClaimVerification.model_validate_json(text).model_dump_json() == text


def test_schema_one_and_two_still_validate() -> None:
    result = verify().model_dump(mode="json")
    v2 = {**result, "schema_version": 2}
    del v2["localized_assessments"]
    assert ClaimVerification.model_validate(v2).schema_version == 2
    v1 = {key: value for key, value in v2.items() if key not in ("supporting_basis", "refuting_basis")}
    v1["schema_version"] = 1
    assert ClaimVerification.model_validate(v1).supporting_basis is None
    with pytest.raises(ValidationError, match="supporting_basis/refuting_basis need schema_version 2"):
        ClaimVerification.model_validate({**result, "schema_version": 1})
    with pytest.raises(ValidationError):
        ClaimVerification.model_validate({**result, "schema_version": 4})


def test_config_limits_name_the_field() -> None:
    with pytest.raises(ValidationError, match="entailment_threshold"):
        ClaimVerificationConfig(entailment_threshold=0.4)
    with pytest.raises(ValidationError, match="contradiction_threshold"):
        ClaimVerificationConfig(contradiction_threshold=float("nan"))
    with pytest.raises(ValidationError, match="max_group_size"):
        ClaimVerificationConfig(max_group_size=4)
    with pytest.raises(ValidationError, match="group_candidate_limit"):
        ClaimVerificationConfig(group_candidate_limit=1)
    with pytest.raises(ValidationError, match="batch_size"):
        ClaimVerificationConfig(batch_size=0)
    with pytest.raises(ValidationError, match="extra"):
        ClaimVerificationConfig(threads=4)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="model"):
        ClaimVerificationConfig(model="  ")
    assert ClaimVerificationConfig(model=" x/y ").model == "x/y"

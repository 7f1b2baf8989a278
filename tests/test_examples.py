"""The examples/ folder: every row validates, and many-claims verification equals one-by-one."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from verifier.decision.bundle import BundleClaimRequest, bundle_evidence
from verifier.claim_verifier import ClaimVerifier
from verifier.options import RuntimeOptions
from verifier.types import ClaimRequest, ClaimVerificationConfig, ClaimVerificationStatus

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def claim_requests() -> list[ClaimRequest]:
    return [ClaimRequest.model_validate(row) for row in lines(EXAMPLES / "claims.jsonl")]


def bundle_requests() -> list[ClaimRequest]:
    requests = []
    for row in lines(EXAMPLES / "bundles.jsonl"):
        bundled = BundleClaimRequest.model_validate(row)
        requests.append(
            ClaimRequest(
                id=bundled.id,
                claim=bundled.claim,
                evidence=bundle_evidence(bundled.bundle, bundled.evidence_refs),
                requires_complete_set=bundled.requires_complete_set,
            )
        )
    return requests


# ---------------------------------------------------------------- the files


def test_every_claim_row_validates_and_passes_input_checks() -> None:
    rows = lines(EXAMPLES / "claims.jsonl")
    assert len(rows) >= 30
    ids = [row["id"] for row in rows]
    assert len(set(ids)) == len(ids)
    config = ClaimVerificationConfig()
    for row in rows:
        request = ClaimRequest.model_validate(row)
        assert request.claim == request.claim.strip() != ""
        assert len(request.evidence) <= config.max_evidence
        assert len({e.reference for e in request.evidence}) == len(request.evidence)
        assert len({e.memory_id for e in request.evidence}) == len(request.evidence)
        # Round trip: the rows are written in canonical field order, nothing is lost.
        assert ClaimRequest.model_validate_json(request.model_dump_json()) == request


def test_examples_cover_the_documented_categories() -> None:
    rows = lines(EXAMPLES / "claims.jsonl")
    prefixes = Counter(row["id"].split("-")[0] for row in rows)
    for prefix in ("decision", "role", "schedule", "preference", "plan", "correction", "numeric", "date", "count", "composition"):
        assert prefixes[prefix] >= 1, prefix
    assert sum(bool(row.get("requires_complete_set")) for row in rows) >= 4
    assert sum(len(row["evidence"]) >= 2 for row in rows) >= 10
    assert any(not row["evidence"] for row in rows)
    provenance = {key for row in rows for e in row["evidence"] for key in e if key not in ("reference", "memory_id", "text")}
    assert provenance == {"source_type", "epistemic_type", "lifecycle_state", "event_time", "valid_from", "valid_to"}


def test_memory_ids_are_fixed_per_memory() -> None:
    """The same memory text has the same memory id wherever it appears (and vice versa)."""
    text_of: dict[str, str] = {}
    for row in lines(EXAMPLES / "claims.jsonl"):
        for e in row["evidence"]:
            assert text_of.setdefault(e["memory_id"], e["text"]) == e["text"]
    assert len(set(text_of.values())) == len(text_of)


def test_bundle_examples_validate_and_follow_citation_rules() -> None:
    whole = json.loads((EXAMPLES / "bundle.json").read_text(encoding="utf-8"))
    assert whole == lines(EXAMPLES / "bundles.jsonl")
    launch, checklist, owner = (BundleClaimRequest.model_validate(row) for row in whole)
    assert [e.reference for e in bundle_evidence(launch.bundle)] == ["M1", "M2", "M3"]
    (rendered,) = bundle_evidence(checklist.bundle, checklist.evidence_refs)
    assert rendered.text == "Launch checklist: complete except the status page update."
    assert [e.reference for e in bundle_evidence(owner.bundle)] == ["mem-7", "mem-8"]
    for request in (launch, checklist, owner):
        assert BundleClaimRequest.model_validate_json(request.model_dump_json()) == request


# ---------------------------------------------------------------- verify_many == one by one


class HashScorer:
    """Deterministic pseudo-random probabilities per (premise, claim); some decisive, most neutral."""

    def __init__(self) -> None:
        self.calls = 0

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        self.calls += 1
        rows = []
        for premise, claim in pairs:
            digest = hashlib.sha256(f"{premise}\x00{claim}".encode()).digest()
            kind = digest[0] % 4
            strong = 0.80 + digest[1] / 255 * 0.19
            weak = digest[2] / 255 * 0.3
            if kind == 0:
                rows.append((strong, weak * (1 - strong), 1 - strong - weak * (1 - strong)))
            elif kind == 1:
                rows.append((weak * (1 - strong), strong, 1 - strong - weak * (1 - strong)))
            else:
                rows.append((weak, weak / 2, 1 - 1.5 * weak))
        return np.asarray(rows, dtype=np.float64)


@pytest.mark.parametrize("schedule", ["staged", "eager"])
@pytest.mark.parametrize("max_group_size", [1, 2, 3])
def test_verify_many_equals_one_by_one(schedule: str, max_group_size: int) -> None:
    requests = claim_requests() + bundle_requests()
    config = ClaimVerificationConfig(max_group_size=max_group_size)
    runtime = RuntimeOptions(schedule=schedule)  # type: ignore[arg-type]
    many_scorer = HashScorer()
    many = ClaimVerifier(config, scorer=many_scorer, runtime=runtime).verify_many_sync(requests)
    single = ClaimVerifier(config, scorer=HashScorer(), runtime=RuntimeOptions())
    alone = [
        single.verify_sync(r.claim, r.evidence, requires_complete_set=r.requires_complete_set) for r in requests
    ]
    assert many == alone
    assert [r.model_dump_json() for r in many] == [r.model_dump_json() for r in alone]
    statuses = Counter(r.status for r in many)
    # The hash scorer exercises every status, so the equality above is not vacuous.
    assert set(statuses) == set(ClaimVerificationStatus), statuses
    # Batched across claims: a handful of scorer calls, not one per claim.
    assert many_scorer.calls <= 2 + max_group_size


def test_async_verify_many_and_progress() -> None:
    requests = claim_requests()
    verifier = ClaimVerifier(scorer=HashScorer())
    seen: list[int] = []
    synced = verifier.verify_many_sync(requests, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == len(requests)
    assert asyncio.run(ClaimVerifier(scorer=HashScorer()).verify_many(requests)) == synced

"""Property tests: decisions never depend on batch layout or schedule; policy invariants hold."""

from __future__ import annotations

import hashlib
from typing import Sequence
from uuid import UUID

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier import (
    ClaimEvidence,
    ClaimVerificationConfig,
    ClaimVerificationStatus,
    ClaimVerifier,
    EpistemicType,
    LifecycleState,
    RuntimeOptions,
)

SENTENCES = [
    "The launch is Tuesday.",
    "The launch is not Tuesday; it is Wednesday.",
    "I want to deploy after the tests pass.",
    "Ravi no longer owns ingestion; Tessa owns it.",
    "Ravi owns the ingestion pipeline.",
    "The service listens on port 8443.",
    "We might move the review to May.",
    "If the audit passes, we ship.\nThe audit passed. We shipped on Friday.",
    "Did the team rotate the keys?",
    "Nadia leads the Atlas project.",
    "The team wants a quieter launch.\nThe release shipped on Tuesday.",
]
CLAIMS = [
    "The launch is Tuesday.",
    "Ravi owns the ingestion pipeline.",
    "The service listens on port 8080.",
    "The release shipped on Tuesday.",
    "The user deployed the release.",
    "The team asked whether the keys were rotated.",
]


class HashScorer:
    """Deterministic pseudo-random probabilities per (premise, hypothesis); often decisive."""

    def __init__(self, salt: int, chunk: int = 0) -> None:
        self.salt = salt
        self.chunk = chunk

    def _row(self, premise: str, hypothesis: str) -> list[float]:
        digest = hashlib.sha256(f"{self.salt}|{premise}|{hypothesis}".encode()).digest()
        logits = np.array([digest[0], digest[1], digest[2]], dtype=np.float64) / 24.0
        probabilities = np.exp(logits - logits.max())
        return list(probabilities / probabilities.sum())

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        if not self.chunk:
            return np.array([self._row(p, h) for p, h in pairs]).reshape(len(pairs), 3)
        # A different batch layout: score chunks in reverse order, then reassemble.
        out: dict[int, list[float]] = {}
        indices = list(range(len(pairs)))
        chunks = [indices[i : i + self.chunk] for i in range(0, len(indices), self.chunk)]
        for chunk in reversed(chunks):
            for index in chunk:
                out[index] = self._row(*pairs[index])
        return np.array([out[i] for i in indices]).reshape(len(pairs), 3)


provenance = st.sampled_from(
    [
        {},
        {"epistemic_type": EpistemicType.HYPOTHETICAL},
        {"epistemic_type": EpistemicType.UNVERIFIED},
        {"lifecycle_state": LifecycleState.SUPERSEDED},
        {"epistemic_type": EpistemicType.OBSERVED},
    ]
)
evidence_lists = st.lists(st.tuples(st.sampled_from(SENTENCES), provenance), min_size=0, max_size=6).map(
    lambda items: [
        ClaimEvidence(reference=f"r{i}", memory_id=UUID(int=1000 - i), text=text, **extra)  # type: ignore[arg-type]
        for i, (text, extra) in enumerate(items)
    ]
)
configs = st.builds(
    ClaimVerificationConfig,
    entailment_threshold=st.sampled_from([0.5, 0.6, 0.8]),
    contradiction_threshold=st.sampled_from([0.5, 0.6, 0.8]),
    max_group_size=st.integers(1, 3),
    group_candidate_limit=st.integers(2, 5),
    entailment_policy=st.sampled_from(["speech_act_guarded", "model_only"]),
    refutation_policy=st.sampled_from(["explicit_corroboration", "model_only"]),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(claim=st.sampled_from(CLAIMS), evidence=evidence_lists, config=configs, salt=st.integers(0, 50), chunk=st.integers(1, 5))
def test_decision_independent_of_batch_layout_and_schedule(
    claim: str, evidence: list[ClaimEvidence], config: ClaimVerificationConfig, salt: int, chunk: int
) -> None:
    staged = ClaimVerifier(config, scorer=HashScorer(salt)).verify_sync(claim, evidence)
    eager = ClaimVerifier(config, scorer=HashScorer(salt), runtime=RuntimeOptions(schedule="eager")).verify_sync(claim, evidence)
    chunked = ClaimVerifier(config, scorer=HashScorer(salt, chunk)).verify_sync(claim, evidence)
    many = ClaimVerifier(config, scorer=HashScorer(salt)).verify_many_sync(
        [{"claim": other, "evidence": evidence} for other in CLAIMS[:3]] + [{"claim": claim, "evidence": evidence}]
    )[-1]
    assert eager == staged
    assert chunked == staged
    assert many == staged


@SETTINGS
@given(claim=st.sampled_from(CLAIMS), evidence=evidence_lists, config=configs, salt=st.integers(0, 50))
def test_policy_invariants(claim: str, evidence: list[ClaimEvidence], config: ClaimVerificationConfig, salt: int) -> None:
    result = ClaimVerifier(config, scorer=HashScorer(salt)).verify_sync(claim, evidence)
    if config.entailment_policy == "model_only":
        assert "uncorroborated_model_entailment" not in result.limitations
        assert result.localized_assessments == ()
    if config.refutation_policy == "model_only":
        assert "uncorroborated_model_contradiction" not in result.limitations
    supports = result.status in (ClaimVerificationStatus.SUPPORTED, ClaimVerificationStatus.CONTESTED)
    refutes = result.status in (ClaimVerificationStatus.REFUTED, ClaimVerificationStatus.CONTESTED)
    assert bool(result.supporting_group) is supports and (result.supporting_basis is not None) is supports
    assert bool(result.refuting_group) is refutes and (result.refuting_basis is not None) is refutes
    if supports:
        # the supporting group was scored, and it reached the threshold (model or localized recheck)
        scored = {score.memory_ids: score for score in result.group_scores}
        group = scored[result.supporting_group]
        if result.supporting_basis == "model_entailment":
            assert group.entailment >= config.entailment_threshold
        else:
            assert any(
                item.memory_ids == result.supporting_group and (item.entailment or 0) >= config.entailment_threshold
                for item in result.localized_assessments
            )
    assert result.model_called is bool(evidence)
    assert len(result.group_scores) >= len(evidence)

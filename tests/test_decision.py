"""docs/decision.md §3 and every example of docs/decision.md §8, over a scripted scorer that records the premises it was sent."""

from __future__ import annotations

import asyncio
import hashlib
import re
from decimal import Decimal
from fractions import Fraction
from uuid import UUID

import numpy as np
import pytest

from verifier import (
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
    ClaimVerificationStatus,
    ClaimVerifier,
    EpistemicType,
    LifecycleState,
    RuntimeOptions,
    ScriptedScorer,
)

NEUTRAL = (0.02, 0.01)


def ev(n: int, text: str, **provenance: object) -> ClaimEvidence:
    return ClaimEvidence(reference=f"m{n}", memory_id=UUID(int=n), text=text, **provenance)  # type: ignore[arg-type]


def run(scores: dict, claim: str, evidence: list[ClaimEvidence], **config: object) -> tuple[ClaimVerification, ScriptedScorer]:
    scorer = ScriptedScorer(scores, default=NEUTRAL, resolved_revision="abc123")
    verifier = ClaimVerifier(ClaimVerificationConfig(**config), scorer=scorer)  # type: ignore[arg-type]
    return verifier.verify_sync(claim, evidence), scorer


def test_single_passage_supports_and_no_pairs_are_scored() -> None:
    evidence = [ev(1, "Topically related only."), ev(2, "The deployment date is May 4.")]
    result, scorer = run(
        {"The deployment date is May 4.": (0.98, 0.01)}, "The deployment date is May 4.", evidence
    )
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.supporting_group == (UUID(int=2),)
    assert result.supporting_basis == "model_entailment"
    assert len(result.group_scores) == 2
    assert scorer.calls == [
        [("Topically related only.", "The deployment date is May 4."),
         ("The deployment date is May 4.", "The deployment date is May 4.")]
    ]
    assert result.model_called and result.resolved_revision == "abc123"
    assert result.limitations == ()


def test_pair_supports_with_caller_order_premise() -> None:
    pair = "[E1] The trip starts in Austin.\n[E2] The next stop after Austin is Tulsa."
    evidence = [ev(1, "The trip starts in Austin."), ev(2, "The next stop after Austin is Tulsa.")]
    result, scorer = run({pair: (0.91, 0.02)}, "Tulsa follows Austin on the trip.", evidence)
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.supporting_group == (UUID(int=1), UUID(int=2))
    assert scorer.premises == [evidence[0].text, evidence[1].text, pair]
    assert [len(score.memory_ids) for score in result.group_scores] == [1, 1, 2]


def test_pair_premise_keeps_caller_order_even_when_ranking_prefers_the_second() -> None:
    """Regression: ranking selects candidates but must not reorder the premise (seed: composition misses)."""
    evidence = [ev(9, "The trip starts in Austin."), ev(1, "The next stop after Austin is Tulsa.")]
    scores = {"The next stop after Austin is Tulsa.": (0.5, 0.1)}
    result, scorer = run(scores, "Tulsa follows Austin on the trip.", evidence)
    assert scorer.premises[-1] == "[E1] The trip starts in Austin.\n[E2] The next stop after Austin is Tulsa."
    assert result.status is ClaimVerificationStatus.INSUFFICIENT


def test_entailing_and_contradicting_passages_contest() -> None:
    evidence = [ev(1, "The launch is Tuesday."), ev(2, "The launch is not Tuesday; it is Wednesday.")]
    result, _ = run(
        {evidence[0].text: (0.95, 0.01), evidence[1].text: (0.01, 0.97)}, "The launch is Tuesday.", evidence
    )
    assert result.status is ClaimVerificationStatus.CONTESTED
    assert result.supporting_group == (UUID(int=1),)
    assert result.refuting_group == (UUID(int=2),)
    assert result.refuting_basis == "model_contradiction"


def test_desire_does_not_refute_a_completed_action() -> None:
    evidence = [ev(1, "I want to deploy after the tests pass.")]
    result, _ = run({evidence[0].text: (0.01, 0.97)}, "The user deployed the release.", evidence)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.limitations == ("uncorroborated_model_contradiction",)
    assert result.group_scores[0].contradiction == 0.97
    assert result.refuting_group == () and result.refuting_basis is None


@pytest.mark.parametrize(
    ("passage", "claim"),
    [("The launch is Wednesday.", "The launch is Tuesday."), ("The service listens on port 8443.", "The service listens on port 8080.")],
)
def test_value_mismatch_corroborates_refutation(passage: str, claim: str) -> None:
    result, _ = run({passage: (0.01, 0.97)}, claim, [ev(1, passage)])
    assert result.status is ClaimVerificationStatus.REFUTED
    assert result.refuting_basis == "model_contradiction"
    assert result.limitations == ()


def test_group_labels_are_not_values() -> None:
    evidence = [ev(1, "The release train left."), ev(2, "Deployments were paused.")]
    pair = "[E1] The release train left.\n[E2] Deployments were paused."
    result, _ = run({pair: (0.01, 0.97)}, "Release 4 was deployed.", evidence)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.limitations == ("uncorroborated_model_contradiction",)
    assert len(result.group_scores) == 3


def test_desire_passage_blocked_with_uncalled_recheck() -> None:
    evidence = [ev(1, "I want to enable passkeys after the security review.")]
    result, scorer = run({evidence[0].text: (0.98, 0.01)}, "The user enabled passkeys.", evidence)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.limitations == ("uncorroborated_model_entailment",)
    (assessment,) = result.localized_assessments
    assert assessment.included_segment_numbers == ((),)
    assert assessment.model_called is False and assessment.premise_sha256 is None
    assert assessment.entailment is None
    assert len(scorer.calls) == 1


def test_localized_recheck_supports() -> None:
    text = "The team wants a quieter launch.\nThe release shipped on Tuesday.\nDid the customer receive the notice?"
    evidence = [ev(1, text)]
    result, scorer = run(
        {text: (0.98, 0.01), "The release shipped on Tuesday.": (0.96, 0.01)}, "The release shipped on Tuesday.", evidence
    )
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.supporting_basis == "localized_model_entailment"
    (assessment,) = result.localized_assessments
    assert assessment.included_segment_numbers == ((2,),)
    assert assessment.model_called is True
    assert assessment.premise_sha256 == hashlib.sha256(b"The release shipped on Tuesday.").hexdigest()
    assert assessment.entailment == 0.96
    assert scorer.premises == [text, "The release shipped on Tuesday."]
    assert result.limitations == ()


@pytest.mark.parametrize(
    ("claim", "passage"),
    [
        ("The user wants offline sync.", "I would like offline sync."),
        ("The team asked whether the keys were rotated.", "Did the team rotate the keys?"),
    ],
)
def test_claim_that_keeps_the_speech_act_is_supported(claim: str, passage: str) -> None:
    result, _ = run({passage: (0.95, 0.01)}, claim, [ev(1, passage)])
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.supporting_basis == "model_entailment"


def test_hypothetical_passage_only_supports_an_uncertain_claim() -> None:
    plain = [ev(1, "The deployment happens after approval.", epistemic_type=EpistemicType.HYPOTHETICAL)]
    result, _ = run({plain[0].text: (0.97, 0.01)}, "The deployment happens after approval.", plain)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.localized_assessments[0].included_segment_numbers == ((),)
    could = [ev(1, "The deployment could happen after approval.", epistemic_type=EpistemicType.HYPOTHETICAL)]
    result, _ = run({could[0].text: (0.97, 0.01)}, "The deployment might happen after approval.", could)
    assert result.status is ClaimVerificationStatus.SUPPORTED


def test_explicit_negation_overlap_contests_with_neutral_model() -> None:
    evidence = [ev(1, "Ravi owns the ingestion pipeline."), ev(2, "Ravi no longer owns ingestion; Tessa owns it.")]
    result, _ = run({evidence[0].text: (0.997, 0.001)}, "Ravi owns the ingestion pipeline.", evidence)
    assert result.status is ClaimVerificationStatus.CONTESTED
    assert result.refuting_basis == "explicit_negation_overlap"
    assert result.refuting_group == (UUID(int=2),)


def test_wrong_relation_negation_is_insufficient() -> None:
    evidence = [ev(1, "Nadia did not attend the Atlas project review.")]
    result, _ = run({evidence[0].text: (0.01, 0.95)}, "Nadia leads the Atlas project.", evidence)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.limitations == ("uncorroborated_model_contradiction",)


def test_negated_claim_supports_itself_without_self_refutation() -> None:
    evidence = [ev(1, "Alice does not use Jira.")]
    result, _ = run({evidence[0].text: (0.97, 0.01)}, "Alice does not use Jira.", evidence)
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.refuting_group == ()


def test_requires_complete_set_and_empty_evidence_make_no_model_call() -> None:
    scorer = ScriptedScorer({})
    verifier = ClaimVerifier(scorer=scorer)
    incomplete = verifier.verify_sync(
        "There are exactly four deployment concerns.", [ev(1, "One concern is latency.")], requires_complete_set=True
    )
    assert incomplete.status is ClaimVerificationStatus.INCOMPLETE
    assert incomplete.limitations == ("complete_set_requires_structured_aggregation",)
    assert incomplete.group_scores == () and not incomplete.model_called and incomplete.resolved_revision is None
    empty = verifier.verify_sync("The launch is Tuesday.", [])
    assert empty.status is ClaimVerificationStatus.INSUFFICIENT and not empty.model_called
    assert scorer.calls == []


def test_engine_is_never_built_without_a_model_call(tmp_path) -> None:  # type: ignore[no-untyped-def]
    verifier = ClaimVerifier(runtime=RuntimeOptions(model_dir=tmp_path / "missing"))
    result = verifier.verify_sync("All four concerns are known.", [], requires_complete_set=True)
    assert result.status is ClaimVerificationStatus.INCOMPLETE
    assert not verifier.has_scorer


def test_model_only_policies() -> None:
    evidence = [ev(1, "I want to deploy after the tests pass.")]
    result, _ = run(
        {evidence[0].text: (0.01, 0.97)}, "The user deployed the release.", evidence, refutation_policy="model_only"
    )
    assert result.status is ClaimVerificationStatus.REFUTED and result.limitations == ()
    evidence = [ev(1, "I want to enable passkeys after the security review.")]
    result, _ = run(
        {evidence[0].text: (0.98, 0.01)}, "The user enabled passkeys.", evidence, entailment_policy="model_only"
    )
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.localized_assessments == () and result.limitations == ()


def test_stops_at_first_deciding_size_and_best_group() -> None:
    texts = ["Alpha is red.", "Beta is blue.", "Gamma is green."]
    evidence = [ev(i + 1, t) for i, t in enumerate(texts)]
    p12 = "[E1] Alpha is red.\n[E2] Beta is blue."
    p13 = "[E1] Alpha is red.\n[E2] Gamma is green."
    result, scorer = run({p12: (0.85, 0.01), p13: (0.93, 0.01)}, "Colors are assigned.", evidence, max_group_size=3)
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.supporting_group == (UUID(int=1), UUID(int=3))
    assert len(scorer.calls) == 2  # singles, then pairs; no triples
    assert len(result.group_scores) == 6


def test_candidate_limit_ranks_then_restores_caller_order() -> None:
    texts = [f"Fact number {name}." for name in "abcde"]
    evidence = [ev(i + 1, t) for i, t in enumerate(texts)]
    scores = {texts[4]: (0.6, 0.1), texts[0]: (0.1, 0.5), texts[2]: (0.3, 0.2)}
    result, scorer = run(scores, "Something holds.", evidence, group_candidate_limit=3)
    pairs = scorer.calls[1]
    assert [p for p, _ in pairs] == [
        "[E1] Fact number a.\n[E2] Fact number c.",
        "[E1] Fact number a.\n[E2] Fact number e.",
        "[E1] Fact number c.\n[E2] Fact number e.",
    ]
    assert result.status is ClaimVerificationStatus.INSUFFICIENT


def test_validation_errors() -> None:
    verifier = ClaimVerifier(ClaimVerificationConfig(max_evidence=2), scorer=ScriptedScorer({}, default=NEUTRAL))
    with pytest.raises(ValueError, match="claim must not be empty"):
        verifier.verify_sync("   ", [])
    with pytest.raises(ValueError, match=re.escape("max_evidence=2")):
        verifier.verify_sync("x y", [ev(1, "a"), ev(2, "b"), ev(3, "c")])
    with pytest.raises(ValueError, match=re.escape("reference 'm1' is repeated")):
        verifier.verify_sync("x y", [ev(1, "a"), ClaimEvidence(reference="m1", memory_id=UUID(int=5), text="b")])
    with pytest.raises(ValueError, match=re.escape(f"memory_id {UUID(int=1)} is repeated")):
        verifier.verify_sync("x y", [ev(1, "a"), ClaimEvidence(reference="m9", memory_id=UUID(int=1), text="b")])


@pytest.mark.parametrize(
    "bad",
    [
        np.array([[0.5, 0.5]]),
        np.array([[np.nan, 0.5, 0.5]]),
        np.array([[1.2, -0.1, -0.1]]),
        np.array([[0.5, 0.3, 0.1]]),
    ],
)
def test_invalid_scores_raise(bad: np.ndarray) -> None:
    class Bad:
        def score(self, pairs):  # type: ignore[no-untyped-def]
            return bad

    with pytest.raises(ClaimVerificationError):
        ClaimVerifier(scorer=Bad()).verify_sync("The launch is Tuesday.", [ev(1, "Launch Tuesday.")])


def test_async_and_sync_agree() -> None:
    evidence = [ev(1, "The launch is Tuesday."), ev(2, "The launch is not Tuesday; it is Wednesday.")]
    scores = {evidence[0].text: (0.95, 0.01), evidence[1].text: (0.01, 0.97)}
    verifier = ClaimVerifier(scorer=ScriptedScorer(scores, default=NEUTRAL))
    sync = verifier.verify_sync("The launch is Tuesday.", evidence)
    result = asyncio.run(verifier.verify("The launch is Tuesday.", evidence))
    assert result == sync


def test_eager_schedule_equals_staged() -> None:
    evidence = [ev(1, "The trip starts in Austin."), ev(2, "The next stop after Austin is Tulsa."), ev(3, "Noise.")]
    pair = "[E1] The trip starts in Austin.\n[E2] The next stop after Austin is Tulsa."
    results = {}
    for schedule in ("staged", "eager"):
        scorer = ScriptedScorer({pair: (0.91, 0.02)}, default=NEUTRAL)
        verifier = ClaimVerifier(scorer=scorer, runtime=RuntimeOptions(schedule=schedule))
        results[schedule] = (verifier.verify_sync("Tulsa follows Austin on the trip.", evidence), scorer)
    assert results["eager"][0] == results["staged"][0]
    assert len(results["eager"][1].calls) == 1 and len(results["staged"][1].calls) == 2


def test_verify_many_equals_one_by_one() -> None:
    evidence = [ev(1, "The launch is Tuesday."), ev(2, "The launch is not Tuesday; it is Wednesday.")]
    scores = {evidence[0].text: (0.95, 0.01), evidence[1].text: (0.01, 0.97)}
    requests = [
        {"claim": "The launch is Tuesday.", "evidence": evidence},
        {"claim": "The launch is Friday.", "evidence": evidence},
        {"claim": "Exactly two launches.", "evidence": evidence, "requires_complete_set": True},
        {"claim": "Nothing here.", "evidence": []},
    ]
    scorer = ScriptedScorer(scores, default=NEUTRAL)
    many = ClaimVerifier(scorer=scorer).verify_many_sync(requests)
    single = [ClaimVerifier(scorer=ScriptedScorer(scores, default=NEUTRAL)).verify_sync(**r) for r in requests]
    assert many == single
    assert len(scorer.calls[0]) == 4  # both claims' singles in one call


@pytest.mark.parametrize(
    ("provenance", "claim", "status"),
    [
        ({"epistemic_type": EpistemicType.CONDITIONAL}, "The rollout proceeds after approval.", "insufficient"),
        ({"epistemic_type": EpistemicType.CONDITIONAL}, "If approved, the rollout proceeds after approval.", "supported"),
        ({"epistemic_type": EpistemicType.UNVERIFIED}, "The rollout proceeds after approval.", "insufficient"),
        ({"epistemic_type": EpistemicType.UNVERIFIED}, "Reportedly the rollout proceeds after approval.", "supported"),
        ({"epistemic_type": EpistemicType.DEPRECATED}, "Perhaps the rollout proceeds after approval.", "insufficient"),
        ({"lifecycle_state": LifecycleState.SUPERSEDED}, "The rollout proceeds after approval.", "insufficient"),
        ({"lifecycle_state": LifecycleState.ARCHIVED}, "The rollout proceeds after approval.", "insufficient"),
        ({"lifecycle_state": LifecycleState.STABLE}, "The rollout proceeds after approval.", "supported"),
    ],
)
def test_typed_provenance_gates_support(provenance: dict, claim: str, status: str) -> None:
    evidence = [ev(1, "The rollout proceeds after approval.", **provenance)]
    result, scorer = run({evidence[0].text: (0.97, 0.01)}, claim, evidence)
    assert result.status.value == status
    if status == "insufficient":
        assert result.limitations == ("uncorroborated_model_entailment",)
        assert result.localized_assessments[0].model_called is False
        assert len(scorer.calls) == 1


def test_retired_evidence_cannot_refute_either() -> None:
    evidence = [ev(1, "The launch is Wednesday.", lifecycle_state=LifecycleState.SUPERSEDED)]
    result, _ = run({evidence[0].text: (0.01, 0.97)}, "The launch is Tuesday.", evidence)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert result.limitations == ("uncorroborated_model_contradiction",)


def test_pair_recheck_numbers_remaining_passages() -> None:
    """A blocked pair is localized over both passages; the premise renumbers what remains."""
    first = "I want a calmer launch. The launch moved to Tuesday."
    second = "We plan to tell support.\nSupport was told on Monday."
    evidence = [ev(1, first), ev(2, second)]
    pair = f"[E1] {first}\n[E2] {second}"
    localized = "[E1] The launch moved to Tuesday.\n[E2] Support was told on Monday."
    result, scorer = run({pair: (0.9, 0.02), localized: (0.88, 0.02)}, "Support heard before the Tuesday launch.", evidence)
    assert scorer.premises == [first, second, pair, localized]
    assert result.status is ClaimVerificationStatus.SUPPORTED
    assert result.supporting_group == (UUID(int=1), UUID(int=2))
    assert result.supporting_basis == "localized_model_entailment"
    (assessment,) = result.localized_assessments
    assert assessment.included_segment_numbers == ((2,), (2,))
    assert assessment.entailment == 0.88


def test_failed_recheck_keeps_searching_larger_groups() -> None:
    """An unaccepted recheck decides nothing, so the search goes on to pairs; the limitation stays."""
    first = "I want the launch on Tuesday."
    evidence = [ev(1, first), ev(2, "Marketing confirmed the date.")]
    pair = f"[E1] {first}\n[E2] Marketing confirmed the date."
    result, scorer = run({first: (0.95, 0.01), pair: (0.2, 0.1)}, "The launch is on Tuesday.", evidence)
    assert result.status is ClaimVerificationStatus.INSUFFICIENT
    assert scorer.premises[-1] == pair
    assert result.limitations == ("uncorroborated_model_entailment",)


@pytest.mark.parametrize("error", [ZeroDivisionError("x"), IndexError("i"), AttributeError("a"), StopIteration()])
def test_any_scorer_exception_becomes_claim_verification_error(error: BaseException) -> None:
    """Regression: ZeroDivisionError etc. escaped raw, and StopIteration hung async verify() forever."""

    class Failing:
        def score(self, pairs):  # type: ignore[no-untyped-def]
            raise error

    evidence = [ev(1, "The launch is Tuesday.")]
    with pytest.raises(ClaimVerificationError, match=type(error).__name__):
        ClaimVerifier(scorer=Failing()).verify_sync("The launch is Tuesday.", evidence)
    with pytest.raises(ClaimVerificationError, match=type(error).__name__):
        asyncio.run(asyncio.wait_for(ClaimVerifier(scorer=Failing()).verify("The launch is Tuesday.", evidence), 30))


@pytest.mark.parametrize(
    "bad", [[[True, False, False]], [[0.9 + 0j, 0.05, 0.05]], [["0.9", "0.05", "0.05"]], [[object(), 1, 2]]]
)
def test_non_real_scores_are_refused(bad: object) -> None:
    class Odd:
        def score(self, pairs):  # type: ignore[no-untyped-def]
            return bad

    with pytest.raises(ClaimVerificationError, match="expected real numbers|not an array"):
        ClaimVerifier(scorer=Odd()).verify_sync("The launch is Tuesday.", [ev(1, "Launch Tuesday.")])


def test_a_scorer_reusing_its_output_buffer_cannot_change_the_decision() -> None:
    """Regression: the verifier kept a view of the scorer's array; a recheck call overwrote single scores."""
    scripted = ScriptedScorer(
        {
            "The release shipped on Wednesday.": (0.01, 0.95),
            "The team wants a quieter launch.\nThe release shipped on Tuesday.": (0.9, 0.02),
            "The release shipped on Tuesday.": (0.1, 0.1),
        },
        default=NEUTRAL,
    )

    class Reusing:
        buffer = np.zeros((16, 3))

        def score(self, pairs):  # type: ignore[no-untyped-def]
            self.buffer[: len(pairs)] = scripted.score(pairs)
            return self.buffer[: len(pairs)]

    evidence = [ev(1, "The release shipped on Wednesday."), ev(2, "The team wants a quieter launch.\nThe release shipped on Tuesday.")]
    expected = ClaimVerifier(scorer=scripted).verify_sync("The release shipped on Tuesday.", evidence)
    reused = ClaimVerifier(scorer=Reusing()).verify_sync("The release shipped on Tuesday.", evidence)
    assert expected.status is ClaimVerificationStatus.REFUTED
    assert reused == expected


def test_eager_never_fails_where_staged_succeeds() -> None:
    """Regression: eager prefetched pairs a staged recording never saw and raised on them."""
    from verifier import RecordedScorer

    claim = "The deployment date is May 4."
    texts = ["Topically related only.", "The deployment date is May 4."]
    recorded = RecordedScorer({(texts[0], claim): (0.02, 0.01, 0.97), (texts[1], claim): (0.98, 0.01, 0.01)})
    evidence = [ev(1, texts[0]), ev(2, texts[1])]
    staged = ClaimVerifier(scorer=recorded).verify_sync(claim, evidence)
    eager = ClaimVerifier(scorer=recorded, runtime=RuntimeOptions(schedule="eager")).verify_sync(claim, evidence)
    assert eager == staged and staged.status is ClaimVerificationStatus.SUPPORTED


def test_claim_with_lone_surrogate_is_rejected_before_any_model_call() -> None:
    scorer = ScriptedScorer({}, default=NEUTRAL)
    with pytest.raises(ValueError, match="claim is not valid Unicode text"):
        ClaimVerifier(scorer=scorer).verify_sync("Hi \ud800 there.", [ev(1, "Hi.")])
    assert scorer.calls == []


@pytest.mark.parametrize("evidence", [None, "The launch is Tuesday.", {"reference": "m1"}, 5])
def test_evidence_must_be_a_list(evidence: object) -> None:
    with pytest.raises(ValueError, match="evidence must be a list of passages"):
        ClaimVerifier(scorer=ScriptedScorer({})).verify_sync("The launch is Tuesday.", evidence)  # type: ignore[arg-type]


def test_integer_config_fields_refuse_booleans() -> None:
    with pytest.raises(ValueError, match="max_group_size"):
        ClaimVerificationConfig(max_group_size=True)


@pytest.mark.parametrize("value", [3.0, np.int64(3), np.float32(3.0), np.array(3), np.array(3.0), Decimal("3"), Decimal("3.00"), Fraction(3)])
def test_integer_config_fields_take_integral_numbers_of_other_types_as_prme_does(value: object) -> None:
    """PRME's config (pydantic's lax int) takes ``3.0``, ``numpy.int64(3)`` or ``Decimal("3")`` as 3, and a
    config built from a DataFrame or a sweep holds such values; the digest is the int's."""
    config = ClaimVerificationConfig(max_group_size=value, batch_size=value, max_evidence=value)  # type: ignore[arg-type]
    assert (config.max_group_size, config.batch_size, config.max_evidence) == (3, 3, 3)
    assert type(config.max_group_size) is int
    assert config == ClaimVerificationConfig(max_group_size=3, batch_size=3, max_evidence=3)


@pytest.mark.parametrize(
    "value", [2.5, Decimal("2.5"), Fraction(5, 2), float("nan"), float("inf"), Decimal("NaN"), "2", np.True_, np.array(True),
              np.array(2.5), np.array([3])],
)
def test_integer_config_fields_refuse_what_is_not_an_integral_number(value: object) -> None:
    with pytest.raises(ValueError, match="max_group_size"):
        ClaimVerificationConfig(max_group_size=value)  # type: ignore[arg-type]

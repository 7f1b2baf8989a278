"""The strict policy (docs/policy.md): trial table, one case per rule, audit fields, and the
property that it never adds a support.

Expectations are written out by hand from the texts and scores of each case
(docs/policy.md gives the rule each one exercises); nothing here patches a
private name.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer, check_result
from verifier.types import (
    ClaimRequest,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
    EpistemicType,
    LifecycleState,
)

ROOT = Path(__file__).resolve().parents[1]
TRIALS = json.loads((ROOT / "tests" / "data" / "policy_trials.json").read_text(encoding="utf-8"))
REFERENCE = ClaimVerificationConfig()
STRICT = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
AS_OF = datetime(2026, 6, 1, tzinfo=timezone.utc)


def mid(reference: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, reference)


class WordCountScorer(ScriptedScorer):
    """A scripted scorer whose model would cut pairs of more than 380 words (a stand-in for the
    tokenizer's 512-token limit: every trial pair is far from that line)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.truncation_calls: list[list[tuple[str, str]]] = []

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        self.truncation_calls.append(list(pairs))
        return [len(premise.split()) + len(claim.split()) > 380 for premise, claim in pairs]


def evidence_of(passages: Sequence[dict[str, Any]]) -> list[ClaimEvidence]:
    return [
        ClaimEvidence(
            reference=p["reference"],
            memory_id=mid(p["reference"]),
            text=p["text"],
            epistemic_type=p.get("epistemic_type"),
            lifecycle_state=p.get("lifecycle_state"),
            valid_from=p.get("valid_from"),
            valid_to=p.get("valid_to"),
        )
        for p in passages
    ]


def run(
    claim: str,
    passages: Sequence[dict[str, Any]],
    config: ClaimVerificationConfig = STRICT,
    *,
    premise_scores: Optional[dict[str, Sequence[float]]] = None,
    default: Sequence[float] = (0.03, 0.02),
    as_of: Optional[datetime] = None,
) -> ClaimVerification:
    scores = {p["text"]: (p["entailment"], p["contradiction"]) for p in passages}
    scores.update({k: (v[0], v[1]) for k, v in (premise_scores or {}).items()})
    scorer = WordCountScorer(scores, default=(default[0], default[1]))
    return ClaimVerifier(config, scorer=scorer).verify_sync(claim, evidence_of(passages), as_of=as_of)


def trial(row: dict[str, Any], config: ClaimVerificationConfig) -> ClaimVerification:
    as_of = datetime.fromisoformat(row["as_of"]) if row.get("as_of") else None
    return run(
        row["claim"], row["passages"], config,
        premise_scores=row["premise_scores"], default=row["default_scores"], as_of=as_of,
    )  # fmt: skip


def rulings(result: ClaimVerification) -> list[tuple[str, str]]:
    return [(r.action, r.rule) for r in result.strict_rulings]


# ---------------------------------------------------------------- the trial table

#: Rows where the strict policy cannot reach ``wanted`` or an ``acceptable`` status, and what it gives.
EXCEPTIONS = {"T16a": "insufficient", "T17a": "insufficient", "T20b": "insufficient", "E05c": "insufficient", "E12b": "insufficient"}


@pytest.mark.parametrize("row", TRIALS, ids=[row["id"] for row in TRIALS])
def test_reference_policy_gives_the_recorded_status(row: dict[str, Any]) -> None:
    assert trial(row, REFERENCE).status.value == row["reference_status"]


@pytest.mark.parametrize("row", [r for r in TRIALS if r["id"] not in EXCEPTIONS], ids=lambda r: r["id"])
def test_strict_policy_gives_wanted_or_acceptable(row: dict[str, Any]) -> None:
    status = trial(row, STRICT).status.value
    assert status == row["wanted"] or status in row["acceptable"], (status, row["wanted"], row["acceptable"])


@pytest.mark.parametrize("row_id", sorted(EXCEPTIONS))
def test_strict_policy_exceptions(row_id: str) -> None:
    """The five trial rows the strict policy does not get right, and why it cannot:

    - T16a (wanted refuted): the deciding sentence is cut by truncation and the model is
      neutral; no rule may refute without a model contradiction.
    - T17a (wanted refuted): permuted labels give "Tuesday" 0.97 entailment for a Wednesday
      claim; the value rule vetoes the support, but the contradiction score is 0.01, so there
      is nothing to corroborate.
    - T20b, E05c, E12b (wanted supported): the reference blocks the entailment (a negated
      clause) and refutes through an explicit negation that the strict negation scope rejects;
      the strict policy removes the refutation but may never add the support the reference
      did not make.
    """
    row = next(r for r in TRIALS if r["id"] == row_id)
    result = trial(row, STRICT)
    assert result.status.value == EXCEPTIONS[row_id]
    assert result.status.value != row["wanted"] and result.status.value not in row["acceptable"]


def test_trial_row_kinds_are_all_present() -> None:
    assert len(TRIALS) == 65
    assert len({row["id"] for row in TRIALS}) == 65


# ---------------------------------------------------------------- the strict policy's own trials

#: tests/data/strict_trials.json (described in tests/data/strict_trials.md): every family of step 2,
#: each with controls where the reference is right and a naive rule would be wrong.
STRICT_TRIALS = json.loads((ROOT / "tests" / "data" / "strict_trials.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", STRICT_TRIALS, ids=[row["id"] for row in STRICT_TRIALS])
def test_strict_trials(row: dict[str, Any]) -> None:
    assert trial(row, REFERENCE).status.value == row["reference_status"]
    status = trial(row, STRICT).status.value
    assert status == row["wanted"] or status in row["acceptable"], (status, row["wanted"], row["acceptable"])


def test_strict_trials_have_controls_in_every_family() -> None:
    assert len({row["id"] for row in STRICT_TRIALS}) == len(STRICT_TRIALS)
    families: dict[str, list[dict[str, Any]]] = {}
    for row in STRICT_TRIALS:
        families.setdefault(row["id"][0], []).append(row)
    assert sorted(families) == sorted("QANCVSTDKRGW")
    for family, rows in families.items():
        right = [r for r in rows if r["reference_status"] == r["wanted"] or r["reference_status"] in r["acceptable"]]
        wrong = [r for r in rows if r not in right]
        assert right and wrong, family  # a control the reference gets right, and a case it gets wrong


def test_no_unsafe_support_on_either_table() -> None:
    for row in TRIALS + STRICT_TRIALS:
        if trial(row, STRICT).status.value == "supported":
            assert row["wanted"] == "supported" or "supported" in row["acceptable"], row["id"]


# ---------------------------------------------------------------- one case per rule


def p(text: str, entailment: float, contradiction: float, reference: str = "m1", **fields: Any) -> dict[str, Any]:
    return {"reference": reference, "text": text, "entailment": entailment, "contradiction": contradiction, **fields}


CASES: list[tuple[str, str, list[dict[str, Any]], dict[str, Sequence[float]], str, str, list[tuple[str, str]]]] = [
    # id, claim, passages, premise scores, reference status, strict status, strict rulings
    ("hedge-probably", "Priya approved the budget.", [p("Priya probably approved the budget.", 0.88, 0.02)], {},
     "supported", "insufficient", [("vetoed_support", "strict_speech_act")]),
    ("hedge-expected-to", "The migration finishes on Friday.", [p("The migration is expected to finish on Friday.", 0.85, 0.03)], {},
     "supported", "insufficient", [("vetoed_support", "strict_speech_act")]),
    ("hedge-kept-by-claim", "The outage was likely caused by the DNS change.", [p("The outage was likely caused by the DNS change.", 0.95, 0.01)], {},
     "supported", "supported", []),
    ("may-chen-is-a-name", "May Chen approved the budget.", [p("May Chen approved the budget in June.", 0.95, 0.01)], {},
     "supported", "supported", []),
    ("modal-may-is-no-month", "The review is in May.", [p("The review may slip to June.", 0.03, 0.9)], {},
     "refuted", "insufficient", [("vetoed_refutation", "strict_speech_act")]),
    ("month-may-conflict", "The launch is in May.", [p("The launch is in June.", 0.01, 0.95)], {},
     "refuted", "refuted", []),
    ("framing-wish-list", "The release ships on Friday.", [p("My wish list:\nThe release ships on Friday.", 0.97, 0.01)],
     {"The release ships on Friday.": (0.96, 0.01)}, "supported", "insufficient", [("vetoed_support", "framing_dropped")]),
    ("framing-not-sure", "The release shipped on Tuesday.", [p("The release shipped on Tuesday. I'm not sure about this.", 0.95, 0.01)],
     {"The release shipped on Tuesday.": (0.96, 0.01)}, "supported", "insufficient", [("vetoed_support", "framing_dropped")]),
    ("framing-unrelated-lines", "The release shipped on Tuesday.",
     [p("The team wants a quieter launch.\nThe release shipped on Tuesday.\nDid the customer receive the notice?", 0.98, 0.01)],
     {"The release shipped on Tuesday.": (0.97, 0.01)}, "supported", "supported", []),
    ("x-comma-not-y-support-side", "The launch happens on Wednesday.", [p("The launch happens on Wednesday, not Tuesday.", 0.2, 0.05)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("x-comma-not-y-refutes", "The launch happens on Tuesday.", [p("The launch happens on Wednesday, not Tuesday.", 0.02, 0.95)], {},
     "refuted", "refuted", []),
    ("not-only", "Alice uses Jira and Confluence.", [p("Alice not only uses Jira but also Confluence.", 0.9, 0.02)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("quoted-negation-declared-false", "Ravi owns the ingestion pipeline.",
     [p('The rumour "Ravi does not own the ingestion pipeline" is false.', 0.3, 0.3)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("curly-claim-vs-straight-twin", "Alice doesn\u2019t use Jira.", [p("Alice doesn't use Jira.", 0.97, 0.01)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("curly-passage-spurious-entailment", "Alice uses Jira.", [p("Alice doesn\u2019t use Jira.", 0.85, 0.1)], {},
     "supported", "insufficient", [("vetoed_support", "strict_negation")]),
    ("port-number-token", "Port 8080 is open.", [p("Port 8443 is not open.", 0.05, 0.3)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("no-longer-still-negates", "Ravi owns the ingestion pipeline.",
     [p("Ravi owns the ingestion pipeline.", 0.997, 0.001), p("Ravi no longer owns ingestion; Tessa owns it.", 0.05, 0.1, "m2")], {},
     "contested", "contested", []),
    ("thousands-separator", "The job processed 1000 records.", [p("The job processed 1,000 records.", 0.1, 0.82)], {},
     "refuted", "insufficient", [("vetoed_refutation", "value_format")]),
    ("unicode-minus", "The freezer is set to -18 degrees.", [p("The freezer is set to \u221218 degrees.", 0.1, 0.81)], {},
     "refuted", "insufficient", [("vetoed_refutation", "value_format")]),
    ("decimal-zero", "The API version is 3.", [p("The API version is 3.0.", 0.1, 0.85)], {},
     "refuted", "insufficient", [("vetoed_refutation", "value_format")]),
    ("moved-from-to-supports-new-day", "The launch is on Wednesday.", [p("The launch moved from Tuesday to Wednesday.", 0.95, 0.02)], {},
     "supported", "supported", []),
    ("superset-without-correction", "Release 4 shipped.", [p("Release 4 shipped with 3 fixes.", 0.1, 0.85)], {},
     "refuted", "insufficient", [("vetoed_refutation", "value_superset")]),
    ("iso-date-supports", "The deployment is on May 4, 2024.", [p("The deployment date is 2024-05-04.", 0.9, 0.02)], {},
     "supported", "supported", []),
    ("year-mismatch-support", "The contract was signed in 2019.", [p("The contract was signed in 2021.", 0.84, 0.1)], {},
     "supported", "insufficient", [("vetoed_support", "value_mismatch")]),
    ("dropped-contradiction-about-something-else", "Nadia leads the Atlas project.",
     [p("Nadia did not attend the Atlas project review.", 0.02, 0.95), p("Nadia leads the Atlas project.", 0.97, 0.01, "m2")], {},
     "supported", "supported", []),
    ("dropped-contradiction-about-the-claim", "Nadia leads the Atlas project.",
     [p("Nadia leads the Atlas project.", 0.97, 0.01), p("Omar leads the Atlas project.", 0.02, 0.93, "m2")], {},
     "supported", "insufficient", [("vetoed_support", "dropped_contradiction")]),
    ("added-refutation-no", "Issues were found in the audit.", [p("No issues were found in the audit.", 0.01, 0.98)], {},
     "insufficient", "refuted", [("added_refutation", "strict_corroboration")]),
    ("added-refutation-attached-unit", "p99 latency is 120ms.", [p("p99 latency is 480ms.", 0.02, 0.93)], {},
     "insufficient", "refuted", [("added_refutation", "strict_corroboration")]),
    ("uncorroborated-stays-dropped", "Nadia leads the Atlas project.", [p("Nadia did not attend the Atlas project review.", 0.02, 0.95)], {},
     "insufficient", "insufficient", []),
    ("contested-lifecycle", "The launch is Tuesday.", [p("The launch is Tuesday.", 0.97, 0.01, lifecycle_state=LifecycleState.CONTESTED)], {},
     "supported", "insufficient", [("vetoed_support", "contested_lifecycle")]),
    ("hypothetical-could-for-might", "The deployment might happen after approval.",
     [p("The deployment could happen after approval.", 0.9, 0.02, epistemic_type=EpistemicType.HYPOTHETICAL)], {},
     "supported", "supported", []),
    # Step 2: scoped vetoes and the new families (docs/policy.md, "Scope" and the family sections).
    ("reported-question-across-a-line", "The backup ran on Friday.", [p("Ravi asked whether\nthe backup ran on Friday", 0.88, 0.03)],
     {"the backup ran on Friday": (0.93, 0.02)}, "supported", "insufficient", [("vetoed_support", "strict_speech_act")]),
    ("recheck-dropped-the-content", "The backup ran on Friday.", [p("Ravi wondered whether the backup ran on Friday. Nobody has answered yet.", 0.82, 0.04)],
     {"Nobody has answered yet.": (0.83, 0.03)}, "supported", "insufficient", [("vetoed_support", "framing_dropped")]),
    ("unapproved-draft", "The budget is $5M.", [p("According to the unapproved draft, the budget is $5M.", 0.9, 0.02)], {},
     "supported", "insufficient", [("vetoed_support", "strict_speech_act")]),
    ("not-approved-pronoun", "The budget is $5M.", [p("The draft sets the budget at $5M. It was not approved.", 0.86, 0.04)],
     {"The draft sets the budget at $5M.": (0.9, 0.02)}, "supported", "insufficient", [("vetoed_support", "strict_speech_act")]),
    ("claim-reports-the-unmerged-pr", "The PR adds retry logic.", [p("The PR adds retry logic. It has not been merged.", 0.93, 0.02)],
     {"The PR adds retry logic.": (0.95, 0.01)}, "supported", "supported", []),
    ("hedge-in-another-sentence", "Marie Curie was born in Warsaw.",
     [p("Marie Curie was born in Warsaw in 1867. Curie likely inspired generations of women in science.", 0.94, 0.02)], {},
     "supported", "supported", []),
    ("negation-about-something-else", "Ravi owns the ingestion pipeline.",
     [p("Ravi owns the ingestion pipeline, but Ravi has no access to billing.", 0.95, 0.02)], {}, "supported", "supported", []),
    ("pronoun-correction", "Alice uses Jira.", [p("Alice uses Jira. She doesn\u2019t use it anymore.", 0.85, 0.08)], {},
     "supported", "insufficient", [("vetoed_support", "strict_negation")]),
    ("negated-claim-positive-passage", "Alice does not use Jira.", [p("Alice uses Linear.", 0.82, 0.05)], {},
     "supported", "insufficient", [("vetoed_support", "strict_negation")]),
    ("negated-claim-other-tool", "Alice does not use Jira.", [p("Alice uses Linear.", 0.05, 0.88)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("quoted-self-report-refutes", "Alice uses Jira.", [p('Alice said, "I don\'t use Jira anymore."', 0.03, 0.9)], {},
     "refuted", "refuted", []),
    ("ellipsis-negation-refutes", "The tests pass on Windows.", [p("The tests pass on Linux but not on Windows.", 0.05, 0.9)], {},
     "refuted", "refuted", []),
    ("double-negation", "The vendor ships fixes on time.", [p("The vendor never fails to ship fixes on time.", 0.9, 0.03)], {},
     "refuted", "insufficient", [("vetoed_refutation", "negation_scope")]),
    ("attitude-of-someone-else", "Priya thinks the launch is on Friday.", [p("Omar thinks the launch is on Friday.", 0.84, 0.05)], {},
     "supported", "insufficient", [("vetoed_support", "strict_speech_act")]),
    ("unit-conversion-support", "The maintenance window lasted 2 hours.", [p("The maintenance window lasted 120 minutes.", 0.9, 0.03)], {},
     "supported", "supported", []),
    ("unit-conversion-refutation", "The maintenance window lasted 2 hours.", [p("The maintenance window lasted 120 minutes.", 0.1, 0.85)], {},
     "refuted", "insufficient", [("vetoed_refutation", "value_format")]),
    ("may-opens-a-sentence", "The launch happened in May.", [p("May was the month the launch happened.", 0.9, 0.02)], {},
     "supported", "supported", []),
    ("works-on-negated", "The app runs on Postgres.", [p("The app doesn't work on Postgres.", 0.03, 0.92)], {},
     "insufficient", "refuted", [("added_refutation", "strict_corroboration")]),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_rule_cases(case: tuple[Any, ...]) -> None:
    _, claim, passages, premise_scores, reference_status, strict_status, expected_rulings = case
    reference = run(claim, passages, REFERENCE, premise_scores=premise_scores)
    strict = run(claim, passages, STRICT, premise_scores=premise_scores)
    assert reference.status.value == reference_status
    assert strict.status.value == strict_status
    assert rulings(strict) == expected_rulings
    assert ("strict_policy_ruling" in strict.limitations) == bool(expected_rulings)
    assert strict.group_scores == reference.group_scores  # the raw scores stay visible
    assert strict.localized_assessments == reference.localized_assessments
    assert check_result(strict, config=STRICT, evidence=evidence_of(passages)).ok


def test_localized_veto_is_marked_localized() -> None:
    passages = [p("My wish list:\nThe release ships on Friday.", 0.97, 0.01)]
    result = run("The release ships on Friday.", passages, premise_scores={"The release ships on Friday.": (0.96, 0.01)})
    (ruling,) = result.strict_rulings
    assert ruling.localized and ruling.memory_ids == (mid("m1"),) and ruling.references == ("m1",)
    assert result.localized_assessments[0].included_segment_numbers == ((2,),)


# ---------------------------------------------------------------- validity and as_of


def test_expired_and_future_passages_do_not_support() -> None:
    expired = [p("The launch is Tuesday.", 0.97, 0.01, valid_to=datetime(2026, 1, 1, tzinfo=timezone.utc))]
    future = [p("The launch is Tuesday.", 0.97, 0.01, valid_from=datetime(2026, 7, 1, tzinfo=timezone.utc))]
    still = [p("The launch is Tuesday.", 0.97, 0.01, valid_to=datetime(2026, 12, 31, tzinfo=timezone.utc))]
    claim = "The launch is Tuesday."
    assert run(claim, expired, REFERENCE, as_of=AS_OF).status.value == "supported"
    assert rulings(run(claim, expired, as_of=AS_OF)) == [("vetoed_support", "expired")]
    assert run(claim, expired, as_of=AS_OF).status.value == "insufficient"
    assert rulings(run(claim, future, as_of=AS_OF)) == [("vetoed_support", "not_yet_valid")]
    assert run(claim, still, as_of=AS_OF).status.value == "supported"
    # Without as_of there is nothing to compare with: the passage supports.
    assert run(claim, expired).status.value == "supported"
    # A claim about the past: the closed window still speaks for its time (docs/policy.md, "Speech-act modes").
    assert run("The launch was on Tuesday.", expired, as_of=AS_OF).status.value == "supported"
    dated = [p("The launch is Tuesday.", 0.97, 0.01, valid_from=datetime(2025, 1, 1, tzinfo=timezone.utc),
               valid_to=datetime(2025, 12, 31, tzinfo=timezone.utc))]  # fmt: skip
    assert run("The launch was on Tuesday in 2025.", dated, as_of=AS_OF).status.value == "supported"
    assert rulings(run("The launch was on Tuesday in 2024.", dated, as_of=AS_OF)) == [("vetoed_support", "expired")]
    # A naive valid_to is read as UTC.
    naive = [p("The launch is Tuesday.", 0.97, 0.01, valid_to=datetime(2026, 1, 1))]
    assert rulings(run(claim, naive, as_of=AS_OF)) == [("vetoed_support", "expired")]


def test_expired_refutation_is_removed() -> None:
    passages = [p("The launch is Wednesday.", 0.01, 0.97, valid_to=datetime(2026, 1, 1, tzinfo=timezone.utc))]
    assert run("The launch is Tuesday.", passages, REFERENCE, as_of=AS_OF).status.value == "refuted"
    result = run("The launch is Tuesday.", passages, as_of=AS_OF)
    assert result.status.value == "insufficient" and rulings(result) == [("vetoed_refutation", "expired")]


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def test_as_of_enters_the_evaluation_id_only_when_set() -> None:
    passages = [p("The launch is Tuesday.", 0.97, 0.01)]
    plain = run("The launch is Tuesday.", passages, REFERENCE)
    dated = run("The launch is Tuesday.", passages, REFERENCE, as_of=AS_OF)
    assert plain.schema_version == 3 and "as_of" not in plain.model_dump() and "strict_rulings" not in plain.model_dump()
    assert dated.schema_version == 4 and dated.as_of == AS_OF and dated.strict_rulings == ()
    assert dated.status == plain.status and dated.group_scores == plain.group_scores
    expected = hashlib.sha256(
        _canonical(
            {
                "as_of": "2026-06-01T00:00:00Z",
                "claim_sha256": plain.claim_sha256,
                "configuration_sha256": plain.configuration_sha256,
                "evidence_sha256": plain.evidence_sha256,
                "schema_version": 4,
            }
        ).encode("utf-8")
    ).hexdigest()
    assert dated.evaluation_id == expected != plain.evaluation_id
    assert check_result(dated).ok and check_result(dated.model_dump_json()).ok
    assert not check_result(dated.model_copy(update={"as_of": AS_OF + timedelta(days=1)})).ok


def test_as_of_must_be_timezone_aware() -> None:
    verifier = ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.1, 0.1)))
    evidence = evidence_of([p("x y", 0.1, 0.1)])
    with pytest.raises(ValueError, match="as_of must be timezone-aware"):
        verifier.verify_sync("x y", evidence, as_of=datetime(2026, 6, 1))
    with pytest.raises(ValidationError, match="timezone-aware"):
        ClaimRequest(claim="x", as_of=datetime(2026, 6, 1))


def test_as_of_through_requests_and_bundles() -> None:
    scorer = ScriptedScorer({"The launch is Tuesday.": (0.97, 0.01)}, default=(0.02, 0.01))
    verifier = ClaimVerifier(STRICT, scorer=scorer)
    row = {"reference": "m1", "memory_id": str(mid("m1")), "text": "The launch is Tuesday.", "valid_to": "2026-01-01T00:00:00Z"}
    from_mapping, from_request = verifier.verify_many_sync(
        [
            {"claim": "The launch is Tuesday.", "evidence": [row], "as_of": "2026-06-01T00:00:00+00:00"},
            ClaimRequest(claim="The launch is Tuesday.", evidence=(ClaimEvidence.model_validate(row),), as_of=AS_OF),
        ]
    )
    assert from_mapping.status.value == from_request.status.value == "insufficient"
    assert from_mapping.evaluation_id == from_request.evaluation_id
    from verifier.decision.bundle import BundleCandidate, ContextBundle

    bundle = ContextBundle(
        rendered_context="[m1] The launch is Tuesday.",
        candidates=(
            BundleCandidate(reference="m1", memory_id=mid("m1"), rendered_text="The launch is Tuesday.",
                            valid_to=datetime(2026, 1, 1, tzinfo=timezone.utc)),
        ),
    )  # fmt: skip
    assert verifier.verify_bundle_sync("The launch is Tuesday.", bundle, as_of=AS_OF).status.value == "insufficient"
    assert verifier.verify_bundle_sync("The launch is Tuesday.", bundle).status.value == "supported"


# ---------------------------------------------------------------- truncation


class AllTruncated(ScriptedScorer):
    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        return [True] * len(pairs)


class BadTruncation(ScriptedScorer):
    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        return [True]


def test_truncated_pairs_do_not_support_when_the_cut_may_matter_and_only_supports_are_asked() -> None:
    scores = {"The launch is Tuesday.": (0.97, 0.01), "Unrelated.": (0.02, 0.01)}
    evidence = evidence_of([p("The launch is Tuesday.", 0, 0), p("Unrelated.", 0, 0, "m2")])
    # The support opens a long premise and nothing after it is about the claim: the cut cannot matter.
    filler = " ".join(["Visitors sign in at the front desk."] * 60)
    long_passage = f"The launch is Tuesday. {filler}"
    cut = ClaimVerifier(STRICT, scorer=AllTruncated({long_passage: (0.96, 0.01)})).verify_sync(
        "The launch is Tuesday.", evidence_of([p(long_passage, 0, 0)])
    )
    assert cut.status.value == "supported" and cut.strict_rulings == ()
    # A sentence past the part surely seen corrects the claim: the model may not have seen it.
    corrected = f"{long_passage} Later the launch moved to Wednesday."
    cut = ClaimVerifier(STRICT, scorer=AllTruncated({corrected: (0.95, 0.01)})).verify_sync(
        "The launch is Tuesday.", evidence_of([p(corrected, 0, 0)])
    )
    assert cut.status.value == "insufficient" and rulings(cut) == [("vetoed_support", "truncated_pair")]
    # A short premise said to be cut: only its first half counts as seen, so the support goes.
    cut = ClaimVerifier(STRICT, scorer=AllTruncated(scores)).verify_sync("The launch is Tuesday.", evidence)
    assert rulings(cut) == [("vetoed_support", "truncated_pair")]
    # A long claim may be cut itself.
    claim = " ".join(["The launch is Tuesday."] * 16)
    cut = ClaimVerifier(STRICT, scorer=AllTruncated({"The launch is Tuesday.": (0.97, 0.01)})).verify_sync(
        claim, evidence_of([p("The launch is Tuesday.", 0, 0)])
    )
    assert rulings(cut) == [("vetoed_support", "truncated_pair")]
    plain = ClaimVerifier(STRICT, scorer=ScriptedScorer(scores)).verify_sync("The launch is Tuesday.", evidence)
    assert plain.status.value == "supported" and plain.strict_rulings == ()
    counting = WordCountScorer(scores)
    ClaimVerifier(STRICT, scorer=counting).verify_sync("The launch is Tuesday.", evidence)
    assert counting.truncation_calls == [[("The launch is Tuesday.", "The launch is Tuesday.")]]
    # The reference policies never ask.
    counting = WordCountScorer(scores)
    ClaimVerifier(REFERENCE, scorer=counting).verify_sync("The launch is Tuesday.", evidence)
    assert counting.truncation_calls == []
    with pytest.raises(ClaimVerificationError, match="truncated must return 2 booleans"):
        ClaimVerifier(STRICT, scorer=BadTruncation({**scores, "The launch is Tuesday!": (0.9, 0.01)})).verify_sync(
            "The launch is Tuesday.", evidence_of([p("The launch is Tuesday.", 0, 0), p("The launch is Tuesday!", 0, 0, "m2")])
        )


def test_onnx_scorer_reports_truncated_pairs(tiny_model_dir: Path) -> None:
    from verifier.engine.scorer import OnnxScorer

    scorer = OnnxScorer(tiny_model_dir)
    assert scorer.truncated([]) == []
    assert scorer.truncated([("The launch is Tuesday.", "The launch is Tuesday."), ("word " * 600, "x")]) == [False, True]
    with pytest.raises(ValueError):
        scorer.truncated([("only one",)])  # type: ignore[list-item]


# ---------------------------------------------------------------- the record


def test_strict_record_checks_out_and_edits_are_found() -> None:
    passages = [p("Priya probably approved the budget.", 0.88, 0.02)]
    result = run("Priya approved the budget.", passages)
    assert result.schema_version == 4
    assert check_result(result, config=STRICT, evidence=evidence_of(passages)).ok
    stored = result.model_dump_json()
    assert json.loads(stored)["strict_rulings"][0]["rule"] == "strict_speech_act"
    assert check_result(stored).ok
    data = json.loads(stored)
    data["strict_rulings"][0]["rule"] = "value_mismatch"
    assert check_result(data).problems == (
        "result_sha256 does not match the record (its status, groups, bases, scores or limitations were edited)",
    )
    data = json.loads(stored)
    data["strict_rulings"] = []
    assert "strict_rulings and the strict_policy_ruling limitation disagree" in check_result(data).problems
    data = json.loads(stored)
    del data["strict_rulings"]
    with pytest.raises(ValueError, match="must carry strict_rulings"):
        check_result(data)
    data = json.loads(stored)
    data["schema_version"] = 3
    with pytest.raises(ValueError, match="need schema_version 4"):
        check_result(data)


def test_rulings_name_the_support_sentence_and_the_trigger() -> None:
    """Issue 35: a veto names its evidence. The ruling records the sentence the support rested on
    and the trigger that governs it; both are digested, and a record written before they existed
    (its rulings without them) still checks out under its own digest."""
    passages = [p("The committee met on Monday. Priya probably approved the budget. The minutes were short.", 0.9, 0.02)]
    result = run("Priya approved the budget.", passages)
    (ruling,) = result.strict_rulings
    assert (ruling.rule, ruling.sentence, ruling.trigger) == ("strict_speech_act", "Priya probably approved the budget.", "probably")
    data = json.loads(result.model_dump_json())
    data["strict_rulings"][0]["trigger"] = "likely"
    assert not check_result(data).ok
    older = json.loads(result.model_dump_json())
    for item in older["strict_rulings"]:
        del item["sentence"], item["trigger"]
    record = dict(older, strict_rulings=[{k: v for k, v in item.items()} for item in older["strict_rulings"]])
    assert set(record["strict_rulings"][0]) == {"action", "rule", "references", "memory_ids", "localized"}
    from verifier.decision import audit

    stripped = tuple(r.model_copy(update={"sentence": None, "trigger": None}) for r in result.strict_rulings)
    record["result_sha256"] = audit.result_sha256(
        evaluation=result.evaluation_id, status=result.status.value, supporting_group=result.supporting_group,
        refuting_group=result.refuting_group, supporting_basis=result.supporting_basis,
        refuting_basis=result.refuting_basis, group_scores=result.group_scores,
        localized_assessments=result.localized_assessments, limitations=result.limitations, strict_rulings=stripped,
    )  # fmt: skip
    assert check_result(record).ok


def test_trigger_elsewhere_in_a_passage_does_not_veto() -> None:
    """Issue 35: a reporting verb, a status word or a negation in a sentence that does not govern
    the support sentence is no trigger, nor is a clause that opens "was …" after an apposition a
    question (each of these cases vetoed a right support before the fix)."""
    novak = "Lukas Novak made his debut for Marlow Rovers on 4 May 2019."
    lead = "Lukas Novak is a professional footballer."
    fact = "He made his debut for Marlow Rovers on 4 May 2019 in the game against Corran City."
    cases = [
        (novak, f"{lead} {fact} A sequel was proposed in 2011 but the studio has not approved it.", f"{lead}\n{fact}"),
        (novak, f"{lead} {fact} The river is not navigable above Dunmore.", f"{lead}\n{fact}"),
        ("Clara Brennan released the album Night Ferry in 2009.",
         "Clara Brennan is a singer. Her second album, Night Ferry, was released by Clara Brennan in 2009.", None),
        ("Smith was born in 1990.", "Smith was born in 1990. This was not widely known.", "Smith was born in 1990."),
    ]  # fmt: skip
    for claim, text, premise in cases:
        scores = {premise: (0.95, 0.02)} if premise else {}
        reference = run(claim, [p(text, 0.95, 0.02)], REFERENCE, premise_scores=scores)
        result = run(claim, [p(text, 0.95, 0.02)], premise_scores=scores)
        assert reference.status.value == "supported", text
        assert result.status.value == "supported" and not result.strict_rulings, (text, result.strict_rulings)


def test_reference_results_keep_their_form() -> None:
    passages = [p("The deployment date is May 4.", 0.98, 0.01)]
    result = run("The deployment date is May 4.", passages, REFERENCE)
    assert result.schema_version == 3
    dumped = result.model_dump(mode="json")
    assert "as_of" not in dumped and "strict_rulings" not in dumped
    assert ClaimVerification.model_validate(dumped) == result
    # Mixed: only one field strict is still the strict schema.
    mixed = run("The deployment date is May 4.", passages, ClaimVerificationConfig(refutation_policy="strict"))
    assert mixed.schema_version == 4 and mixed.status.value == "supported"


# ---------------------------------------------------------------- never adds a support

POOL_TEXTS = sorted(
    {p_["text"] for row in TRIALS + STRICT_TRIALS for p_ in row["passages"] if len(p_["text"]) < 300}
    | {passage["text"] for case in CASES for passage in case[2]}
)
POOL_CLAIMS = sorted(
    {row["claim"] for row in TRIALS + STRICT_TRIALS if len(row["claim"]) < 300} | {case[1] for case in CASES}
)
SCORE_SHAPES = ((0.97, 0.01), (0.85, 0.05), (0.5, 0.45), (0.05, 0.9), (0.01, 0.97), (0.1, 0.1), (0.81, 0.02))


class HashScorer:
    """Scores every (premise, claim) pair from a seed: the same pair always scores the same."""

    def __init__(self, seed: int, truncation: bool) -> None:
        self.seed = seed
        self.truncation = truncation

    def _pick(self, premise: str, claim: str, salt: str) -> int:
        digest = hashlib.sha256(f"{self.seed}|{salt}|{premise}|{claim}".encode()).digest()
        return digest[0]

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        rows = []
        for premise, claim in pairs:
            entailment, contradiction = SCORE_SHAPES[self._pick(premise, claim, "s") % len(SCORE_SHAPES)]
            rows.append((entailment, contradiction, 1.0 - entailment - contradiction))
        return np.array(rows, dtype=np.float64)

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        return [self.truncation and self._pick(premise, claim, "t") % 4 == 0 for premise, claim in pairs]


def reference_support_groups(result: ClaimVerification, threshold: float) -> set[tuple[uuid.UUID, ...]]:
    """Every group the reference supported: direct (entailing, never rechecked) or an accepted recheck."""
    rechecked = {item.memory_ids for item in result.localized_assessments}
    direct = {g.memory_ids for g in result.group_scores if g.entailment >= threshold and g.memory_ids not in rechecked}
    accepted = {
        item.memory_ids
        for item in result.localized_assessments
        if item.entailment is not None and item.entailment >= threshold
    }
    return direct | accepted


passage_strategy = st.fixed_dictionaries(
    {
        "text": st.sampled_from(POOL_TEXTS),
        "epistemic_type": st.sampled_from([None, None, None, EpistemicType.HYPOTHETICAL, EpistemicType.OBSERVED]),
        "lifecycle_state": st.sampled_from([None, None, None, LifecycleState.CONTESTED, LifecycleState.SUPERSEDED]),
        "valid_to": st.sampled_from([None, None, datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2027, 1, 1, tzinfo=timezone.utc)]),
    }
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    claim=st.sampled_from(POOL_CLAIMS),
    passages=st.lists(passage_strategy, min_size=1, max_size=4, unique_by=lambda item: item["text"]),
    seed=st.integers(0, 10_000),
    truncation=st.booleans(),
    dated=st.booleans(),
    policies=st.sampled_from([("strict", "strict"), ("strict", "explicit_corroboration"), ("speech_act_guarded", "strict")]),
    threshold=st.sampled_from([0.8, 0.5, 0.9]),
)
def test_strict_never_adds_a_support(
    claim: str,
    passages: list[dict[str, Any]],
    seed: int,
    truncation: bool,
    dated: bool,
    policies: tuple[str, str],
    threshold: float,
) -> None:
    evidence = [
        ClaimEvidence(reference=f"m{i}", memory_id=mid(f"m{i}"), **item) for i, item in enumerate(passages, start=1)
    ]
    base = {"entailment_threshold": threshold, "contradiction_threshold": threshold}
    strict_config = ClaimVerificationConfig(**base, entailment_policy=policies[0], refutation_policy=policies[1])  # type: ignore[arg-type]
    reference_config = ClaimVerificationConfig(**base)
    as_of = AS_OF if dated else None
    scorer = HashScorer(seed, truncation)
    reference = ClaimVerifier(reference_config, scorer=scorer).verify_sync(claim, evidence)
    strict = ClaimVerifier(strict_config, scorer=scorer).verify_sync(claim, evidence, as_of=as_of)
    supports = reference_support_groups(reference, threshold)
    if reference.supporting_group:
        assert reference.supporting_group in supports  # the helper reads the reference record right
    assert strict.group_scores == reference.group_scores
    assert strict.localized_assessments == reference.localized_assessments
    if strict.status.value == "supported":
        assert reference.status.value == "supported"
    if strict.supporting_group:
        assert strict.supporting_group in supports
    for ruling in strict.strict_rulings:
        if ruling.action == "vetoed_support":
            assert ruling.memory_ids in supports
    assert check_result(strict, config=strict_config, evidence=evidence).ok


# ---------------------------------------------------------------- command line


def test_cli_strict_policy(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_cli import write_manifest

    from verifier import cli

    monkeypatch.delenv("CLAIM_VERIFIER_MODEL_DIR", raising=False)
    model_dir = tmp_path / "fake-model"
    write_manifest(model_dir)
    configs: list[ClaimVerificationConfig] = []

    def make(config: ClaimVerificationConfig, runtime: Any) -> ClaimVerifier:
        configs.append(config)
        scorer = ScriptedScorer({"The migration may finish on Friday.": (0.86, 0.03)}, default=(0.05, 0.05))
        return ClaimVerifier(config, scorer=scorer, runtime=runtime)

    argv = [
        "verify", "--model-dir", str(model_dir), "--json",
        "--claim", "The migration finishes on Friday.", "--evidence", "The migration may finish on Friday.",
    ]  # fmt: skip
    assert cli.main([*argv, "--entailment-policy", "strict", "--refutation-policy", "strict"], make_verifier=make) == 0
    (line,) = capsys.readouterr().out.splitlines()
    result = ClaimVerification.model_validate_json(line)
    assert configs[-1].entailment_policy == "strict" and configs[-1].refutation_policy == "strict"
    assert result.status.value == "insufficient" and result.schema_version == 4
    assert rulings(result) == [("vetoed_support", "strict_speech_act")]
    assert check_result(result, config=configs[-1]).ok
    assert cli.main(argv, make_verifier=make) == 0
    assert ClaimVerification.model_validate_json(capsys.readouterr().out).status.value == "supported"


def test_async_verify_takes_as_of() -> None:
    import asyncio

    scorer = ScriptedScorer({"The launch is Tuesday.": (0.97, 0.01)}, default=(0.02, 0.01))
    evidence = evidence_of([p("The launch is Tuesday.", 0, 0, valid_to=datetime(2026, 1, 1, tzinfo=timezone.utc))])
    verifier = ClaimVerifier(STRICT, scorer=scorer)
    result = asyncio.run(verifier.verify("The launch is Tuesday.", evidence, as_of=AS_OF))
    assert result == verifier.verify_sync("The launch is Tuesday.", evidence, as_of=AS_OF)
    assert rulings(result) == [("vetoed_support", "expired")]


# ---------------------------------------------------------------- import cost


def test_the_strict_modules_load_only_for_a_strict_configuration() -> None:
    """The reference policies never import the strict policy's modules (import time, docs/performance.md);
    the first strict verification does, in the same process, and its ruling is the one this file expects."""
    script = """
import json, sys, uuid
from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
from verifier.types import ClaimVerificationConfig
loaded = lambda: sorted(m for m in sys.modules if m.startswith("verifier.decision.strict"))
scorer = ScriptedScorer({"The memo says the launch is Tuesday.": (0.97, 0.01)}, default=(0.02, 0.01))
evidence = [ClaimEvidence(reference="E1", memory_id=uuid.UUID(int=1), text="The memo says the launch is Tuesday.")]
out = {"import": loaded()}
reference = ClaimVerifier(ClaimVerificationConfig(entailment_policy="model_only"), scorer=scorer)
out["reference_status"] = reference.verify_sync("The launch is Tuesday.", evidence).status.value
out["after_reference"] = loaded()
strict = ClaimVerifier(ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict"), scorer=scorer)
result = strict.verify_sync("The launch is Tuesday.", evidence)
out["strict_status"] = result.status.value
out["strict_rulings"] = [[r.action, r.rule] for r in result.strict_rulings]
out["after_strict"] = "verifier.decision.strict" in loaded()
print(json.dumps(out))
"""
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.strip().splitlines()[-1])
    assert report["import"] == [] and report["after_reference"] == []
    assert report["reference_status"] == "supported"  # model_only: the 0.97 entailment alone decides
    assert report["strict_status"] == "insufficient"  # "the memo says": a reported speech act, vetoed
    assert report["strict_rulings"] == [["vetoed_support", "strict_speech_act"]]
    assert report["after_strict"] is True


# ---------------------------------------------------------------- numbers of any length (adversarial hunt)

_HUGE = [
    ("The job takes " + "9" * 400 + "k.", "The job takes " + "8" * 400 + "k."),  # float(…) * 1000 was inf
    ("Ticket " + "1" * 4301 + " is open.", "Ticket " + "1" * 4300 + "2 is open."),  # int → str limit
    ("The job takes 1" + "0" * 4000 + " steps.", "The job takes 2" + "0" * 4000 + " steps."),  # 10.0 ** 4000
    ("It cost $" + "9" * 400 + ".", "It cost $" + "8" * 400 + "."),  # both read as $inf: equal
    ("It cost " + "9" * 400 + " million.", "It cost " + "8" * 400 + " million."),
    ("It is " + "9" * 400 + " km.", "It is " + "8" * 400 + " km."),  # both inf km: equal
]


@pytest.mark.parametrize(("claim", "passage"), _HUGE)
def test_a_number_of_any_length_is_read_exactly_and_never_raises(claim: str, passage: str) -> None:
    """Regression: a claim or passage with a number too large for a float (or for int's 4,300-digit
    string conversion) raised OverflowError or ValueError after the model call, a raw traceback in the
    CLI that no --skip-invalid skipped; and two different such amounts were both read as inf, so a
    passage stating another amount supported the claim. Now they are exact numbers: equal or not."""
    evidence = [ClaimEvidence(reference="m1", memory_id=mid("m1"), text=passage)]
    entailed = ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.95, 0.01))).verify_sync(claim, evidence)
    assert entailed.status.value == "insufficient" and [r.rule for r in entailed.strict_rulings] == ["value_mismatch"]
    same = [ClaimEvidence(reference="m1", memory_id=mid("m1"), text=claim)]
    assert ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.95, 0.01))).verify_sync(claim, same).status.value == "supported"
    for scores in ((0.01, 0.95), (0.1, 0.1)):
        ClaimVerifier(STRICT, scorer=ScriptedScorer(default=scores)).verify_sync(claim, evidence)  # raises nothing


@pytest.mark.parametrize(("claim", "passage"), [
    ("The fund holds 2,010 shares.", "The fund holds 2.01k shares."),  # 2.01 * 1000 = 2009.9999999999998
    ("The fund holds 2,010 shares.", "The fund holds 2.01 thousand shares."),
])
def test_a_scaled_number_is_its_exact_product(claim: str, passage: str) -> None:
    """Regression: "2.01k" was read as the float product 2009.9999999999998, so a passage saying 2.01k
    vetoed the claim "2,010" (value_mismatch) under the strict policy."""
    evidence = [ClaimEvidence(reference="m1", memory_id=mid("m1"), text=passage)]
    result = ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.95, 0.01))).verify_sync(claim, evidence)
    assert (result.status.value, result.strict_rulings) == ("supported", ())


# ---------------------------------------------------------------- denials, doubts and takebacks (adversarial hunt)

_NOT_ESTABLISHED = [
    ("Alice uses Jira.", "Alice uses Jira. Not anymore."),
    ("Alice uses Jira.", "Alice uses Jira. No longer."),
    ("Alice uses Jira.", "Alice uses Jira. Scratch that."),
    ("Alice uses Jira.", "Alice uses Jira. Or not."),
    ("Alice uses Jira.", "Alice uses Jira. I take that back."),
    ("Alice uses Jira.", "It is false that Alice uses Jira."),
    ("Alice uses Jira.", "It's a myth that Alice uses Jira."),
    ("Priya approved the budget.", "Priya denied that she approved the budget."),
    ("Priya approved the budget.", "Omar doubts that Priya approved the budget."),
    ("Priya approved the budget.", "Omar disputes that Priya approved the budget."),
    ("Priya approved the budget.", "Omar assumed that Priya approved the budget."),
    ("Priya approved the budget.", "Omar guessed that Priya approved the budget."),
    ("Priya approved the budget.", "Omar speculated that Priya approved the budget."),
    ("Priya approved the budget.", "Omar wrote that Priya approved the budget."),
    ("Priya approved the budget.", "The auditor denied that the board approved the budget."),
    ("The store closes at 9.", "I assumed that the store closes at 9."),
    ("The plan will work.", "I doubt that the plan will work."),
    ("The team has 4 engineers.", "The team has four hundred engineers."),
    ("The team has 4 engineers.", "The team has 4 hundred engineers."),
    # a claim merely containing "written" or "suggestion" is no report: a report does not support it
    ("The report was written in 2020.", "Omar said the report was written in 2020."),
    ("The suggestion box is by the door.", "Ana claimed the suggestion box is by the door."),
]
#: The same words where they deny or report nothing (a regression hunt over 650 memory-store notes
#: found each of these vetoed by a first, broader version of the rules).
_STILL_ESTABLISHED = [
    ("I wrote that email to Tom.", "I wrote that email to Tom."),
    ("I wrote a Medium post about burnout.", "Finally wrote that Medium post about burnout."),
    ("My visa application was denied.", "My visa application was denied that Monday; I reapplied in June."),
    ("Priya denied that request.", "Priya denied that request."),
    ("Biden assumed office in 2021.", "Biden assumed office in 2021."),
    ("Carla took the CFO role last year.", "Carla assumed that CFO role last year."),
    ("The client loved my email.", "The email I wrote that the client loved got me a raise."),
    ("The hotel Ana suggested was great.", "The hotel Ana suggested that we book was great."),
    ("Carla's dispute with her landlord was settled in May.", "The dispute that Carla had with her landlord was settled in May."),
    ("I have no doubt Carla will nail the interview.", "I have no doubt that Carla will nail the interview."),
    ("Tom suggested trying the new Thai place.", "Tom suggested that we try the new Thai place."),
    ("Sam was caught in a lie.", "Sam was caught in a lie that he'd been at the library."),
    ("Alice no longer uses Trello.", "Alice no longer uses Trello."),
    ("Alice uses Jira.", "Alice uses Jira. Not Trello."),
    ("I was a vegetarian for ten years.", "I was a vegetarian for ten years. Not anymore."),
    ("I used to live in Berlin.", "I used to live in Berlin. No longer."),
    ("The Lancet published the study in 1998.", "The Lancet published the study in 1998. Retracted."),
    ("The team has 400 engineers.", "The team has four hundred engineers."),
    ("I did four repeats at the track.", "Did four hundred-metre repeats at the track."),
    ("I found two bills in my old coat.", "Found two hundred-dollar bills in my old coat."),
    ("It was 5 degrees below zero this morning.", "It was minus 5 this morning."),
]


@pytest.mark.parametrize(("claim", "passage"), _NOT_ESTABLISHED)
def test_a_denial_doubt_or_takeback_is_never_supported(claim: str, passage: str) -> None:
    """Regression (adversarial hunt): each of these was supported under the strict policy with an entailing
    scorer, while a near twin ("Omar said that …", "That's false.", "4 thousand") was vetoed."""
    evidence = [ClaimEvidence(reference="m1", memory_id=mid("m1"), text=passage)]
    result = ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.95, 0.01))).verify_sync(claim, evidence)
    assert result.status.value == "insufficient" and result.strict_rulings, result.strict_rulings


@pytest.mark.parametrize(("claim", "passage"), _STILL_ESTABLISHED)
def test_the_same_words_that_deny_nothing_still_support(claim: str, passage: str) -> None:
    evidence = [ClaimEvidence(reference="m1", memory_id=mid("m1"), text=passage)]
    result = ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.95, 0.01))).verify_sync(claim, evidence)
    assert (result.status.value, result.strict_rulings) == ("supported", ())

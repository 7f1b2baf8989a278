"""Table tests for the pure guard functions of docs/decision.md §4–5."""

from __future__ import annotations

import pytest

from verifier.decision.guards import (
    PassageView,
    Provenance,
    concrete_values,
    content_tokens,
    entailment_guard,
    exact_negation,
    has_negated_clause,
    has_negation_or_correction_cue,
    is_compatible,
    join_premise,
    localize,
    modality_preserved,
    negated_clauses,
    refutation_guard,
    speech_act_modes,
    split_segments,
    values_conflict,
)
from verifier.types import EpistemicType, LifecycleState


def pv(text: str, epistemic: EpistemicType | None = None, lifecycle: LifecycleState | None = None) -> PassageView:
    return PassageView(text, Provenance(epistemic, lifecycle))


@pytest.mark.parametrize(
    ("text", "modes"),
    [
        ("The user wants offline sync.", {"desire"}),
        ("She wanted a refund.", {"desire"}),
        ("He is wanting more.", set()),
        ("I would like offline sync.", {"desire"}),
        ("I'd like tea.", {"desire"}),
        ("We\u2019d like tea.", {"desire"}),
        ("They hoped for rain; he needs sleep.", {"desire"}),
        ("Our aims are clear and we seek funding.", {"desire"}),
        ("We tried twice.", {"attempt"}),
        ("She is working on the migration.", {"attempt"}),
        ("She works hard.", set()),
        ("The attempted fix failed.", {"attempt"}),
        ("We planned the move and are evaluating vendors.", {"plan"}),
        ("The release is scheduled for Friday.", {"plan"}),
        ("You should rotate keys; we recommend it.", {"advice"}),
        ("It might rain.", {"uncertainty"}),
        ("It is impossible.", set()),
        ("If it rains, we stay.", {"conditional"}),
        ("Provided  that tests pass.", {"conditional"}),
        ("In case of fire.", {"conditional"}),
        ("Reportedly the CEO resigned.", {"unverified"}),
        ("Did the team rotate the keys?", {"question"}),
        ("The team asked whether the keys were rotated.", {"question", "uncertainty"}),
        ("I wonder about it.", {"question"}),
        ("The launch is Tuesday.", set()),
        ("WANTS AND PLANS", {"desire", "plan"}),
    ],
)
def test_speech_act_modes(text: str, modes: set[str]) -> None:
    assert speech_act_modes(text) == modes


@pytest.mark.parametrize(
    ("epistemic", "lifecycle", "claim_modes", "compatible"),
    [
        (None, None, set(), True),
        (EpistemicType.OBSERVED, LifecycleState.STABLE, set(), True),
        (None, LifecycleState.SUPERSEDED, set(), False),
        (None, LifecycleState.DEPRECATED, {"uncertainty"}, False),
        (None, LifecycleState.ARCHIVED, set(), False),
        (EpistemicType.DEPRECATED, None, set(), False),
        (EpistemicType.HYPOTHETICAL, None, set(), False),
        (EpistemicType.HYPOTHETICAL, None, {"uncertainty"}, True),
        (EpistemicType.HYPOTHETICAL, None, {"conditional"}, True),
        (EpistemicType.CONDITIONAL, None, {"uncertainty"}, False),
        (EpistemicType.CONDITIONAL, None, {"conditional"}, True),
        (EpistemicType.UNVERIFIED, None, set(), False),
        (EpistemicType.UNVERIFIED, None, {"unverified"}, True),
        (EpistemicType.UNVERIFIED, None, {"uncertainty"}, True),
        (None, LifecycleState.TENTATIVE, set(), True),
        (None, LifecycleState.CONTESTED, set(), True),
    ],
)
def test_typed_compatibility(
    epistemic: EpistemicType | None, lifecycle: LifecycleState | None, claim_modes: set[str], compatible: bool
) -> None:
    assert is_compatible(Provenance(epistemic, lifecycle), frozenset(claim_modes)) is compatible


@pytest.mark.parametrize(
    ("text", "clauses"),
    [
        ("Ravi no longer owns ingestion; Tessa owns it.", ["Ravi no longer owns ingestion"]),
        ("It is done. It isn't shipped!", [" It isn't shipped"]),
        ("He can\u2019t come.", []),  # curly apostrophe: the literal reference policy misses it (docs/decision.md §4.4)
        ("Nothing, notably.", []),
        ("We cannot, and won't.", ["We cannot, and won't"]),
        ("Never again", ["Never again"]),
    ],
)
def test_negated_clauses(text: str, clauses: list[str]) -> None:
    assert negated_clauses(text) == clauses
    assert has_negated_clause(text) is bool(clauses)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Ravi owns the ingestion pipeline.", {"ravi", "own", "ingestion"}),
        ("Ravi no longer owns ingestion", {"ravi", "own", "ingestion"}),
        ("The policies cover buses and classes.", {"policy", "cover", "buse", "classe"}),
        ("Ties, gas, class", {"tie", "gas", "class"}),
        ("Port 8080 on host-1 and x_y", {"port", "host-1", "x_y"}),
        ("Caf\u00e9 Stra\u00dfe", {"caf", "stra", "e"}),
    ],
)
def test_content_tokens(text: str, tokens: set[str]) -> None:
    assert content_tokens(text) == tokens


def test_concrete_values_and_conflicts() -> None:
    assert concrete_values("Port 8080, -3.5 degrees, v2 and 4th, may 4, Tuesday") == {
        "number": {"8080", "-3.5", "4"},
        "weekday": {"tuesday"},
        "month": {"may"},
    }
    assert values_conflict("The launch is Tuesday.", "The launch is Wednesday.")
    assert values_conflict("The launch is Tuesday.", "Not Tuesday; it is Wednesday.")  # superset counts (docs/decision.md §9)
    assert not values_conflict("The launch is Tuesday.", "The launch is TUESDAY.")
    assert not values_conflict("Release 4 was deployed.", "[E1] notes")  # labels are never passed in
    assert not values_conflict("Release 4 was deployed.", "Nothing numeric here.")
    assert values_conflict("We ship in May.", "We ship in June.")


@pytest.mark.parametrize(
    ("claim", "passage", "negates"),
    [
        ("Ravi owns the ingestion pipeline.", "Ravi no longer owns ingestion; Tessa owns it.", True),
        ("Ravi owns the ingestion pipeline.", "Ravi did not attend an ingestion review.", False),
        ("Alice uses Jira.", "Alice does not use Jira.", True),
        ("Alice uses Jira.", "Alice does not use Jira daily.", True),  # 3 tokens: containment
        ("Tessa drives.", "Tessa does not drive.", True),
        ("Ravi resigned.", "Ravi never resigned.", False),  # "never" is not a generic word (literal rule)
        ("Ravi resigned.", "Ravi has not resigned yet.", False),  # 2-token claims need equality
        ("Alice does not use Jira.", "Alice does not use Jira.", False),  # negated claim
        ("Jira.", "No Jira. Not Jira.", False),  # fewer than 2 content tokens
        ("Alice uses Jira.", "I want Alice to not use Jira.", False),  # modality
    ],
)
def test_exact_negation(claim: str, passage: str, negates: bool) -> None:
    assert exact_negation(claim, [pv(passage)]) is negates


def test_exact_negation_skips_incompatible_passages() -> None:
    assert not exact_negation("Alice uses Jira.", [pv("Alice does not use Jira.", lifecycle=LifecycleState.ARCHIVED)])


def test_entailment_guard() -> None:
    assert entailment_guard("The user wants offline sync.", [pv("I would like offline sync.")])
    assert not entailment_guard("The user enabled passkeys.", [pv("I want to enable passkeys.")])
    assert not entailment_guard("The build passes.", [pv("The build does not fail."), pv("Fine.")])
    assert entailment_guard("The build doesn't fail.", [pv("The build does not fail.")])
    assert modality_preserved("It might happen.", [pv("It could happen.", EpistemicType.HYPOTHETICAL)])


@pytest.mark.parametrize(
    ("claim", "passage", "passes"),
    [
        ("The launch is not on Tuesday.", "The launch is on Tuesday.", True),  # cue in the claim
        ("We switched from Jira to Linear.", "We use Jira.", True),
        ("The launch is Tuesday.", "The launch is Wednesday.", True),
        ("The launch is Tuesday.", "The launch moved.", False),
        ("The user deployed the release.", "I want to deploy after the tests pass.", False),
        ("Nadia leads the Atlas project.", "Nadia did not attend the Atlas project review.", False),
        ("Ravi owns the ingestion pipeline.", "Ravi no longer owns ingestion.", True),
    ],
)
def test_refutation_guard(claim: str, passage: str, passes: bool) -> None:
    assert refutation_guard(claim, [pv(passage)]) is passes
    assert has_negation_or_correction_cue(claim) is (passes and ("not" in claim or "switched" in claim))


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("One. Two! Three? four.", ["One.", "Two!", "Three? four."]),
        ("A line\n\nB line\r\nC", ["A line", "B line", "C"]),
        ('He said. "Quote" then. (Aside) ok. [Note] x. 3 items.', ['He said.', '"Quote" then.', "(Aside) ok.", "[Note] x.", "3 items."]),
        ("Version 2.5 is out. e.g. this", ["Version 2.5 is out. e.g. this"]),
    ],
)
def test_split_segments(text: str, segments: list[str]) -> None:
    assert split_segments(text) == segments


def test_localize_keeps_only_matching_segments_with_provenance() -> None:
    claim = "The release shipped on Tuesday."
    text = "The team wants a quieter launch.\nThe release shipped on Tuesday.\nDid the customer receive the notice?"
    result = localize(claim, [pv(text)])
    assert result.included_segment_numbers == ((2,),)
    assert result.premise == "The release shipped on Tuesday."
    two = localize(claim, [pv("I want it. It shipped. It did not slip."), pv(text)])
    assert two.included_segment_numbers == ((2,), (2,))
    assert two.premise == "[E1] It shipped.\n[E2] The release shipped on Tuesday."
    dropped = localize(claim, [pv("I want it."), pv("It shipped. Also done.")])
    assert dropped.included_segment_numbers == ((), (1, 2))
    assert dropped.premise == "It shipped.\nAlso done."
    retired = localize(claim, [pv("It shipped.", lifecycle=LifecycleState.SUPERSEDED)])
    assert retired.included_segment_numbers == ((),) and retired.premise is None


def test_join_premise() -> None:
    assert join_premise(["a"]) == "a"
    assert join_premise(["a", "b", "c"]) == "[E1] a\n[E2] b\n[E3] c"


@pytest.mark.parametrize(
    "passage",
    [
        "a" * 100_000,
        "1" * 99_999 + "a",
        "no" + " " * 100_000 + "x",
        "." + " " * 100_000 + "x",
        "work" + "\t" * 100_000,
        "aim" + "a" * 100_000,
        "x'" * 50_000,
        "Not Tuesday 4. " * 6_700,
    ],
)
def test_guards_handle_100kb_passages(passage: str) -> None:
    """Pathological 100 kB passages go through every guard (linear patterns, no nested quantifiers)."""
    claim = "Ravi owns the ingestion pipeline on Tuesday 4."
    view = [pv(passage)]
    assert isinstance(entailment_guard(claim, view), bool)
    assert isinstance(refutation_guard(claim, view), bool)
    assert isinstance(exact_negation(claim, view), bool)
    assert len(localize(claim, view).included_segment_numbers) == 1
    assert len(passage) >= 99_000


def test_localize_is_linear_in_claim_times_segments() -> None:
    """Regression: each segment re-scanned the whole claim (8 kB claim x 600 segments took seconds).

    Asserts the work done, not the time: the claim's modes are computed once per localize call.
    """
    from verifier.decision import guards

    guards.speech_act_modes.cache_clear()
    claim = "The release shipped on Tuesday. " * 250
    passage = "\n".join(f"Line {i} shipped." for i in range(600))
    result = localize(claim, [pv(passage)])
    assert len(result.included_segment_numbers[0]) == 600
    info = guards.speech_act_modes.cache_info()
    assert info.misses == 601  # the claim once, then each segment once


def test_unicode_line_separators_split_segments() -> None:
    assert split_segments("We want calm.\u2028The release shipped on Tuesday.") == [
        "We want calm.",
        "The release shipped on Tuesday.",
    ]

"""A hedge in its own sentence that points at the next (or previous) one vetoes its support under strict
(issue 49 item 7; docs/policy.md, "Scope").

Regression: since rulings were scoped to the supporting sentence, "Not verified yet. The vendor signed the
renewal." and "I can't vouch for this. The vendor signed the renewal." were an unsafe ``supported`` under
``strict``. Expectations are written by hand from the texts; the scripted scorer entails every premise.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Optional

import pytest

from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
from verifier.types import ClaimVerificationConfig

STRICT = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
CLAIM = "The vendor signed the renewal."
SUPPORT = "The vendor signed the renewal."


def _verify(text: str, claim: str = CLAIM) -> tuple[str, list[tuple[str, Optional[str], Optional[str]]]]:
    verifier = ClaimVerifier(STRICT, scorer=ScriptedScorer(default=(0.95, 0.01)))
    result = verifier.verify_sync(claim, [ClaimEvidence(reference="m1", memory_id=uuid.UUID(int=1), text=text)],
                                  as_of=datetime(2026, 6, 1, tzinfo=timezone.utc))
    return result.status.value, [(ruling.rule, ruling.sentence, ruling.trigger) for ruling in result.strict_rulings or ()]


@pytest.mark.parametrize(("text", "hedge"), [
    ("Not verified yet. The vendor signed the renewal.", "Not verified yet."),
    ("I can't vouch for this. The vendor signed the renewal.", "I can't vouch for this."),
    ("The vendor signed the renewal. Not verified yet.", "Not verified yet."),
    ("The vendor signed the renewal. Still unconfirmed, though.", "Still unconfirmed, though."),
    ("Nobody has confirmed that. The vendor signed the renewal.", "Nobody has confirmed that."),
    ("The vendor signed the renewal. I doubt it.", "I doubt it."),
    ("Not verified yet:\nThe vendor signed the renewal.", "Not verified yet:"),
])
def test_a_pointing_hedge_vetoes_the_sentence_next_to_it(text: str, hedge: str) -> None:
    """Each was an unsafe support under strict; now vetoed, the first ruling naming the support and the hedge."""
    status, rulings = _verify(text)
    assert status == "insufficient"
    # framing_dropped where the recheck left the hedge out, strict_speech_act where it kept it
    assert rulings[0] in [("framing_dropped", SUPPORT, hedge), ("strict_speech_act", SUPPORT, hedge)], rulings


@pytest.mark.parametrize("text", [
    "Budget is not confirmed yet. The vendor signed the renewal.",  # a subject of its own
    "The vendor signed the renewal. Not sure about the budget though.",  # an object of its own
    "The vendor signed the renewal. It is unclear when the budget closes.",  # a statement of its own
    "Not verified yet:\nThe budget closes in May.\nThe vendor signed the renewal.",  # introduces another line
    "The vendor signed the renewal.",
])
def test_a_hedge_about_something_else_vetoes_nothing(text: str) -> None:
    assert _verify(text) == ("supported", [])


def test_a_hedged_claim_is_not_vetoed_by_a_hedge() -> None:
    """A claim that itself says it is unconfirmed shares the mode: no veto."""
    status, rulings = _verify("Not verified yet. The vendor reportedly signed the renewal.",
                              claim="The vendor reportedly signed the renewal.")
    assert (status, rulings) == ("supported", [])

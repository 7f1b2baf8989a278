"""The strict policy on a personal memory store's prose: diary lines, contact notes, addresses, quotes.

Found by a hunt over 665 scripted cases (docs/policy.md, "A memory store's prose"): plain notes that
drop their subject ("Had lunch with Maria.", "Carla: has two kids") were read as questions; "nº 12" became the negation
"no 12" under NFKC; someone else's first-person quote (``Tom said, "I moved to Lisbon."``) supported
the user's own "I moved to Lisbon"; and ``"…," Omar said.`` (the comma inside the quote, as prose
writes it) was not read as an attribution. Each case runs under the reference policies and the strict
policy with a scorer that entails every premise, so the reference supports every row and each
strict ruling is the strict policy's own; the controls keep what the rules must still catch.
"""

from __future__ import annotations

import uuid

import pytest

from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
from verifier.types import ClaimVerificationConfig

STRICT = ClaimVerificationConfig(entailment_policy="strict", refutation_policy="strict")
ENTAILS = (0.95, 0.02)

#: (claim, passage): plain statements the strict policy must leave supported.
PLAIN = [
    ("I had lunch with Maria at Time Out Market.", "Had lunch with Maria at Time Out Market."),
    ("I was at the dentist today.", "Was at the dentist today, two fillings."),
    ("Carla has two kids.", "Carla: has two kids, works at Deloitte."),
    ("I had a great time at Ana's wedding.", "Had a great time at Ana's wedding!"),
    ("I have a dentist appointment on 14 May.", "Have a dentist appointment on 14 May at 10:00."),
    ("I live at 12 Rua Augusta.", "I live at Rua Augusta, nº 12."),
    ("I live at 12 Rua Augusta.", "I live at № 12 Rua Augusta."),
    ("I live at 12 Rua Augusta.", "I live at No. 12 Rua Augusta."),
    ("I moved to Lisbon in 2021.", "I moved to Lisbon in 2021 — no regrets!"),
    ("The flat has two bedrooms.", "The flat has two bedrooms (no balcony)."),
    ("I have two kids.", "I have two kids and no pets."),
    ("I moved to Lisbon in 2021.", "I moved to Lisbon in 2021 because I couldn't stand Berlin winters."),
    ("Tom proposed in Sintra on 12 June 2022.", "I said yes when Tom proposed in Sintra on 12 June 2022."),
    ("I moved to Lisbon in 2021.", "I said goodbye to Berlin in 2021 and moved to Lisbon."),
    ("Ana is my manager.", "Like I said, Ana is my manager."),
    # controls: a named speaker's first-person quote is still the speaker's statement about themself
    ("Tom moved to Lisbon in 2021.", 'Tom said, "I moved to Lisbon in 2021."'),
    ("Ana got the job.", 'Ana wrote: "I got the job!"'),
    # the user's own quote is the user's
    ("I moved to Lisbon in 2021.", 'I said, "I moved to Lisbon in 2021."'),
]

#: (claim, passage, the ruling's trigger): passages that do not establish the claim.
NOT_ESTABLISHED = [
    ("I moved to Lisbon in 2021.", 'Tom said, "I moved to Lisbon in 2021."', "said"),
    ("I am allergic to penicillin.", '"I am allergic to penicillin," Ana said.', "Ana said"),
    ("I got the job.", 'Ana wrote: "I got the job!"', "wrote"),
    ("We bought the flat in 2020.", 'Tom said, "We bought the flat in 2020."', "said"),
    ("The launch is on Tuesday.", '"The launch is on Tuesday," Omar said.', "Omar said"),
    ("The launch is on Tuesday.", '"The launch is on Tuesday," said Omar.', "said Omar"),
    ("I am allergic to penicillin.", "\"I'm allergic to penicillin,\" the nurse said.", "the nurse said"),
    ("I visited Japan.", "Would love to visit Japan.", "Would love to"),
    ("I met the Pope.", "Had a dream that I met the Pope.", "Had a dream that"),
    ("Tom is married.", "Tom is married, it seems.", "it seems"),
    ("Tom is married.", "Tom is married, I was told.", "I was told"),
    ("Tom is married.", "Tom is married, Ana reckons.", "Ana reckons"),
    ("Tom is married.", "Tom, I assume, is married.", "I assume"),
    ("The launch is on Tuesday.", "In theory, the launch is on Tuesday.", "In theory"),
    ("The launch is on Tuesday.", "Omar said the launch is on Tuesday.", "said"),  # a control: a report stays one
    # controls: questions put without "?" still open with an auxiliary and a subject
    ("Tom is married.", "Is Tom married", "Is T"),
    ("The dentist is on Thursday.", "Is the dentist on Thursday", "Is t"),
    ("The backup ran.", "ravi: did the backup run", "did the"),
    ("I called Ana.", "Did you call Ana", "Did you"),
    ("Dinner is at 8.", "is dinner at 8", "is d"),
    ("Cats eat grapes.", "do cats eat grapes", "do c"),
    ("I paid the rent.", "did u pay the rent", "did u"),
]


def _verify(config: ClaimVerificationConfig, claim: str, text: str):  # type: ignore[no-untyped-def]
    evidence = [ClaimEvidence(reference="m1", memory_id=uuid.uuid5(uuid.NAMESPACE_URL, text), text=text)]
    return ClaimVerifier(config, scorer=ScriptedScorer(default=ENTAILS)).verify_sync(claim, evidence)


@pytest.mark.parametrize(("claim", "text"), PLAIN)
def test_plain_memory_prose_stays_supported(claim: str, text: str) -> None:
    assert _verify(ClaimVerificationConfig(), claim, text).status.value == "supported"
    result = _verify(STRICT, claim, text)
    assert (result.status.value, [r.rule for r in result.strict_rulings]) == ("supported", [])


@pytest.mark.parametrize(("claim", "text", "trigger"), NOT_ESTABLISHED)
def test_what_does_not_establish_the_claim_is_vetoed(claim: str, text: str, trigger: str) -> None:
    assert _verify(ClaimVerificationConfig(), claim, text).status.value == "supported"
    result = _verify(STRICT, claim, text)
    assert result.status.value == "insufficient"
    assert [(r.action, r.rule, r.trigger) for r in result.strict_rulings] == [("vetoed_support", "strict_speech_act", trigger)]


#: (claim, passage, the withdrawing sentence): a fact the next sentence takes back.
WITHDRAWN = [
    ("The launch is on Tuesday.", "The launch is on Tuesday. This is false.", "This is false."),
    ("The meeting is on Thursday.", "The meeting is on Thursday. Wait, that's wrong.", "Wait, that's wrong."),
    ("Dinner with Tom is on Friday.", "Dinner with Tom is on Friday. Disregard the above.", "Disregard the above."),
    ("I moved to Lisbon in 2021.", "I moved to Lisbon in 2021. Just kidding.", "Just kidding."),
    ("The launch is on Tuesday.", "The launch is on Tuesday. Or so I was told.", "Or so I was told."),
    ("Tom is married.", "Tom is married. I think so.", "I think so."),
]


@pytest.mark.parametrize(("claim", "text", "trigger"), WITHDRAWN)
def test_a_fact_the_next_sentence_takes_back_is_vetoed(claim: str, text: str, trigger: str) -> None:
    assert _verify(ClaimVerificationConfig(), claim, text).status.value == "supported"
    result = _verify(STRICT, claim, text)
    assert result.status.value == "insufficient"
    assert [(r.rule, r.sentence, r.trigger) for r in result.strict_rulings] == [("strict_withdrawal", claim, trigger)]


@pytest.mark.parametrize("text", [
    "The launch is on Tuesday. Local papers reported that the old mill would be converted into flats.",
    "The launch is on Tuesday. That was a relief for the whole team after a difficult spring.",
    "The launch is on Tuesday. The rumour that it had been cancelled was false.",
])  # fmt: skip
def test_a_following_sentence_about_something_else_withdraws_nothing(text: str) -> None:
    result = _verify(STRICT, "The launch is on Tuesday.", text)
    assert (result.status.value, [r.rule for r in result.strict_rulings]) == ("supported", [])


@pytest.mark.parametrize(("claim", "text", "trigger"), [
    ("The flat has a balcony.", "The flat has two bedrooms (no balcony).", "no balcony"),
    ("The flat has a balcony.", "The flat has two bedrooms - no balcony.", "no balcony"),
    ("I have pets.", "I have two kids and no pets.", "no pets"),
    ("I was sick after 2020.", "I haven't been sick once since I started running in 2020.",
     "I haven't been sick once since I started running in 2020"),
])  # fmt: skip
def test_a_clause_cut_off_still_negates_what_it_names(claim: str, text: str, trigger: str) -> None:
    """Controls of the cuts at brackets, dashes and "and no": what the cut clause denies is still denied."""
    result = _verify(STRICT, claim, text)
    assert result.status.value == "insufficient"
    assert [(r.rule, r.trigger) for r in result.strict_rulings] == [("strict_negation", trigger)]


def test_the_quote_reading_follows_each_claim_not_the_last_one() -> None:
    """The first-person reading is per verification (a context variable): a first-person claim
    decided in between does not change how a third-person claim reads the same quote."""
    text = 'Tom said, "I moved to Lisbon in 2021."'
    assert _verify(STRICT, "Tom moved to Lisbon in 2021.", text).status.value == "supported"
    assert _verify(STRICT, "I moved to Lisbon in 2021.", text).status.value == "insufficient"
    assert _verify(STRICT, "Tom moved to Lisbon in 2021.", text).status.value == "supported"

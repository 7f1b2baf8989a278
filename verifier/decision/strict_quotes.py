"""Quotes under the strict policy: a named speaker's first-person quote read as the speaker's own statement.

``Alice said, "I don't use Jira"`` reads ``Alice don't use Jira``: not an attribution, and its
negation counts; except while a first-person claim is decided (:func:`reading_claim`), whose "I"
is the user's (docs/policy.md, "Normalisation and self-reports"). Re-exported by
:mod:`verifier.decision.strict_text`.
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from typing import Iterator, Optional

from .strict_values import normal_text as normalise

__all__ = ["view", "reading_claim"]

_I = re.IGNORECASE

_SPEECH_VERB = r"(?:said|says|wrote|writes|posted|replied|replies|added|adds|explained|confirmed|admitted|noted|told\s+\w+)"
_SPEAKER_NAME = r"([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
_FIRST = r"(?:I|I'm|I've|I'd|I'll|We|We're|We've|My|Our)\b"
_SELF_REPORT = re.compile(
    _SPEAKER_NAME + r"\s+" + _SPEECH_VERB + r"\s*[,:]?\s*\"(" + _FIRST + r"[^\"\n]*)\""
    r"|\"(" + _FIRST + r"[^\"\n]*?)[,.]?\"\s*,?\s*" + _SPEAKER_NAME + r"\s+" + _SPEECH_VERB + r"\b"
)
_FIRST_PERSON = re.compile(r"\b(?:I'm|I've|I'd|I'll|We're|We've|I|we|me|us|my|our|mine|ours|myself)\b", _I)
_FIRST_PERSON_FORMS = {"i'm": " is", "we're": " is", "i've": " has", "we've": " has", "i'd": " would", "i'll": " will",
                       "my": "'s", "our": "'s", "mine": "'s", "ours": "'s"}


#: The first-person claim being decided (normalised), whose "I" is the user's: a named speaker's
#: first-person quote is then the speaker's own statement only when the claim names the speaker
#: (:func:`reading_claim`). ``None``: no such claim.
_FIRST_PERSON_CLAIM_TEXT: ContextVar[Optional[str]] = ContextVar("strict_first_person_claim", default=None)
_FIRST_PERSON_CLAIM = re.compile(r"\bI\b|\b(?:me|my|mine|myself|we|our|ours|ourselves|us|My|We|Our)\b")


@contextlib.contextmanager
def reading_claim(claim: str) -> Iterator[None]:
    """While the block runs, :func:`view` reads quotes for ``claim``: a first-person claim ("I moved to
    Lisbon") is the user's, so ``Tom said, "I moved to Lisbon."`` stays Tom's report, not his own
    statement that would support the user's claim; unless the claim names Tom ("My brother Tom moved
    to Lisbon"; docs/policy.md, "Normalisation and self-reports")."""
    text = normalise(claim)
    token = _FIRST_PERSON_CLAIM_TEXT.set(text if _FIRST_PERSON_CLAIM.search(text) else None)
    try:
        yield
    finally:
        _FIRST_PERSON_CLAIM_TEXT.reset(token)


def _self_report(match: "re.Match[str]") -> str:
    speaker, quote = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
    claim = _FIRST_PERSON_CLAIM_TEXT.get()
    if claim is not None and speaker not in ("I", "We") and not re.search(r"\b" + re.escape(speaker) + r"\b", claim):
        return match.group(0)  # someone else's "I", read against the user's: an attribution
    return _FIRST_PERSON.sub(lambda m: speaker + _FIRST_PERSON_FORMS.get(m.group(0).lower(), ""), quote)


def view(text: str) -> str:
    """The text the strict rules read: :func:`normalise`, then a named speaker's first-person quote
    read as the speaker's own statement (docs/policy.md, "Normalisation and self-reports"): ``Alice said, "I don't use
    Jira"`` reads ``Alice don't use Jira`` — not an attribution, and its negation counts."""
    text = normalise(text)
    return _SELF_REPORT.sub(_self_report, text) if '"' in text else text  # a quote is needed: cheap test first

"""How far a support's trouble reaches beyond its own passage (docs/policy.md, "Support
vetoes": ``dropped_contradiction`` and ``truncated_pair``): whether a contradiction the reference dropped is about the
claim, and whether a pair the model saw cut may hide what decides the claim.

Pure functions of text, never used by the reference policies; every pattern is compiled once
and has no nested quantifiers.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

from ..types import ClaimEvidence
from .guards import Provenance, is_compatible
from .strict_frames import has_correction_cue
from .strict_scope import claim_subject, sentences
from .strict_text import (
    QUESTION,
    claim_modes,
    is_negated,
    modes_compatible,
    normalise,
    opens_question,
    polarity_clauses,
    stems,
    strict_modes,
    strict_tokens,
    strict_values,
    unit_modes,
    view,
)

__all__ = ["conflict_carrier", "strict_exact_negation", "truncation_matters", "SEEN_WORDS", "LONG_CLAIM_WORDS"]

_I = re.IGNORECASE


#: Takeovers and replacements: a sentence with one is about the claim when it names what the
#: claim says beyond its subject ("Tessa took over ingestion" against "Ravi owns ingestion").
_TAKEOVER = re.compile(
    r"\b(?:took|taken|takes|take)\s+over|\bhanded\b|\b(?:succeeded|replaced|replaces|transferred|reassigned|"
    r"inherited|moved|moves|changed|switched|rescheduled|postponed|delayed|pushed|slipped|cancell?ed|"
    r"instead|now)\b|\bno\s+longer\b|\bcalled\s+off\b|\bbrought\s+forward\b|\bfrom\b[^.;]*\bto\b",
    _I,
)


def conflict_carrier(claim: str, passages: Sequence[str]) -> bool:
    """Whether a passage has a sentence about the claim, so that a contradiction there is about
    the claim: one with two thirds of the claim's stems (at least one) that does not negate
    something else instead ("Nadia did not attend the Atlas review" is about the review, not
    about who leads Atlas), or one that takes over or replaces what the claim says beyond its
    subject ("Tessa took over ingestion in March"; "Curie moved to Paris" names only Curie)."""
    claim_stems = stems(claim)
    subject = claim_subject(claim)
    # A named subject that moves or changes is not the claim's fact ("Curie moved to Paris"); a
    # thing or event that moves is ("We pushed the launch back a week").
    named = any(word[:1].isupper() for word in view(claim).split()[:3] if stems(word) & subject)
    about = claim_stems - subject if named else claim_stems
    need = max(1, math.ceil(2 * len(claim_stems) / 3))
    for sentence in sentences(passages):
        found = sentence.words
        if _TAKEOVER.search(sentence.text) and found & about:
            return True
        if len(found & claim_stems) < need:
            continue
        off_target = any(
            clause.negated and (negated := stems(clause.text)) & claim_stems
            and not (claim_stems <= negated or negated <= claim_stems)
            for clause in polarity_clauses(sentence.text)
        )
        if not off_target:
            return True
    return False


#: Words of a premise the strict policy trusts the model to have seen when the pair was cut:
#: well inside 512 tokens, less twice the claim's words, and at most half the premise
#: (docs/policy.md, "Support vetoes").
SEEN_WORDS = 250
LONG_CLAIM_WORDS = 60


def truncation_matters(claim: str, modes: frozenset[str], premise: str) -> bool:
    """Whether a cut pair's support may rest on what the model did not see (docs/policy.md,
    "Support vetoes", ``truncated_pair``): the claim is long (it may be cut itself); no sentence
    holds a claim stem, or the one that holds most of them does not end in the part surely seen;
    or a sentence past that part names what the claim says beyond its subject, or names the
    subject and negates, corrects, hedges or gives a value of a kind the claim names."""
    claim_words = len(claim.split())
    if claim_words > LONG_CLAIM_WORDS:
        return True
    claim_stems = stems(claim)
    beyond_subject = claim_stems - claim_subject(claim)
    claim_values = strict_values(claim)
    # The model saw at least this much; a short premise flagged as cut is mostly symbols or
    # long words, so only its first half counts as seen.
    seen = min(SEEN_WORDS - 2 * claim_words, len(premise.split()) // 2)
    best, best_end, position = 0, 0, 0
    for sentence in sentences([premise]):
        begins = position
        position += len(sentence.text.split())
        found = sentence.words & claim_stems
        if len(found) > best:
            best, best_end = len(found), position
        if not found or begins < seen:
            continue
        if found & beyond_subject or is_negated(sentence.text) or has_correction_cue(sentence.text):
            return True
        question = frozenset({QUESTION}) if opens_question(sentence.text) else frozenset()
        if not modes_compatible(unit_modes(sentence.text) | question, modes):
            return True
        values = strict_values(sentence.text, frozenset(claim_values))
        if any(kind in values for kind in claim_values):
            return True
    return best == 0 or best_end > seen


_ELLIPTIC = re.compile(r"\s*(?:not|never)\b", re.IGNORECASE)


def strict_exact_negation(claim: str, passages: Sequence[ClaimEvidence]) -> bool:
    """The strict exact negation (docs/policy.md): the reference rule of docs/decision.md §4.5 over
    the strict reading of the passages (:func:`view`), strict negation scope and stems (numbers and
    every Unicode word count, so "Port 8443 is not open." does not negate "Port 8080 is open.";
    "does not work on" negates "runs on"). A claim's subject may stand in the conjunct before the
    negated one ("Alice joined in 2020 and does not use Jira")."""
    if is_negated(claim):
        return False
    modes = claim_modes(claim)
    claim_tokens = strict_tokens(claim)
    claim_stems = stems(claim)
    if len(claim_stems) < 2:
        return False
    for passage in passages:
        if not is_compatible(Provenance(passage.epistemic_type, passage.lifecycle_state), modes):
            return False
        if not modes_compatible(strict_modes(view(passage.text), claim_tokens), modes):
            return False
    subject = next((found for word in normalise(claim).split() if (found := stems(word))), frozenset())
    for passage in passages:
        for clause in polarity_clauses(view(passage.text)):
            if not clause.negated:
                continue
            found = stems(clause.text)
            if found == claim_stems if len(claim_stems) == 2 else claim_stems <= found:
                return True
            missing = claim_stems - found
            lead = stems(clause.lead)
            if len(claim_stems) >= 3 and missing == subject and missing <= lead:
                return True
            if _ELLIPTIC.match(clause.text) and found & claim_stems and missing <= lead:
                return True  # "Tests pass on Linux but not on Windows" negates "Tests pass on Windows"
    return False

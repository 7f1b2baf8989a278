"""Unapproved documents (docs/policy.md, "Scope", *unapproved documents*): drafts, proposals and
documents not approved, and the spans of a passage that report their content.

Pure functions of text, never used by the reference policies; every pattern is compiled once and
has no nested quantifiers; cheap substring tests come before the slow patterns.
"""

from __future__ import annotations

import re
from typing import Sequence

from .strict_frames import KeyIndex, Marks, Sentence
from .strict_text import stems, view

__all__ = ["approval_marks", "claim_about_approval"]

_I = re.IGNORECASE

_DOCUMENT = (
    r"(?:draft|proposal|document|doc|memo|spec|specification|rfc|plan|policy|contract|agreement|bill|"
    r"amendment|motion|resolution|budget|request|change|design|version|revision|roadmap|offer|bid|estimate|"
    r"quote|schedule|timeline|guideline|standard|charter|pr|pull\s+request|pitch|outline)s?\b"
)
_APPROVED = (
    r"(?:approved|adopted|ratified|signed(?:\s+off)?|accepted|passed|merged|finali[sz]ed|enacted|agreed|"
    r"endorsed|authori[sz]ed|sanctioned|green-?lit|confirmed)"
)
_APPROVE = r"(?:approve|adopt|ratify|sign|accept|pass|merge|finali[sz]e|enact|agree\s+to|endorse|authori[sz]e|confirm)"
#: Word classes of non-approval (docs/policy.md, "Scope"). Adjectives qualify the
#: document they precede ("the unapproved draft", "the proposed budget", "the draft budget");
#: predicates say of a document that it was not approved ("was not approved", "pending
#: sign-off") or turned it down ("was rejected", "was shelved").
_PENDING = re.compile(
    r"\bun(?:approved|signed|ratified|adopted)\b"
    r"|\b(?:the|a|an|this|that|its|their|our|his|her)\s+(?:proposed|tentative|provisional)\b"
    r"|\bdraft\s+(?=" + _DOCUMENT + r")",
    _I,
)
#: A draft or proposal as such, not said to be approved anywhere in its passage ("In the draft, …",
#: "The proposal sets …"); not "the final draft", not a sports draft ("the 2010 NFL Draft").
_PENDING_NOUN = re.compile(
    r"\b(?:[Tt]he|[Aa]n?|[Tt]his|[Tt]hat|[Oo]ur|[Tt]heir|[Hh]is|[Hh]er|[Ii]ts|\w+'s)\s+"
    r"(?:(?:new|latest|current|revised|first|second|initial|early|v\d+)\s+)?(?:draft|proposal|rfc|pitch)s?\b"
    r"(?!\s+(?:pick|round|class|lottery|approved|was\s+approved|passed|was\s+adopted)\b)"
)
_NOT_APPROVED = re.compile(
    r"(?:\bnot|\bnever|n't)\s+(?:(?:yet|been|formally|officially|actually|ever|fully)\s+){0,3}" + _APPROVED + r"\b"
    r"|\b(?:did\s+not|didn't|never|has\s+not|hasn't|have\s+not|haven't|won't|will\s+not)\s+"
    r"(?:(?:yet|formally|officially)\s+)?" + _APPROVE + r"\b"
    r"|\b(?:yet\s+to\s+be|still\s+(?:needs?|has|have)\s+to\s+be|waiting\s+to\s+be)\s+" + _APPROVED + r"\b"
    r"|(?:\bnot|\bnever|n't)\s+(?:yet\s+)?(?:voted|decided|ruled|signed)\s+on\b|\byet\s+to\s+(?:" + _APPROVE + r"|vote)\b"
    r"|\b(?:pending|awaiting|awaits|await|needs|requires|subject\s+to|without)\s+(?:\w+\s+)?"
    r"(?:approval|sign-?off|ratification|signatures?|a\s+vote)\b",
    _I,
)
#: Substrings without which _NOT_APPROVED and _TURNED_DOWN cannot match: tested first, because
#: the patterns themselves are slow on long passages (docs/performance.md).
_APPROVAL_KEYS = (
    "approv", "adopt", "ratif", "sign", "accept", "pass", "merg", "finali", "enact", "agre", "endors",
    "authori", "sanction", "green", "confirm", "vote", "decided", "ruled",
)  # fmt: skip
_PENDING_KEYS = ("unapproved", "unsigned", "unratified", "unadopted", "proposed", "tentative", "provisional", "draft")
_PENDING_NOUN_KEYS = ("draft", "proposal", "rfc", "pitch")
_REFUSAL_KEYS = ("reject", "veto", "withdrawn", "shelved", "scrapped", "overruled", "down")
_TURNED_DOWN = re.compile(
    r"(?<!not\s)(?<!n't\s)(?<!never\s)\b(?:rejected|vetoed|withdrawn|shelved|scrapped|overruled|"
    r"(?:voted|turned|struck|shot)\s+(?:(?:it|them|this|that)\s+)?down)\b",
    _I,
)
#: A status heading or label that frames what follows: "DRAFT - not approved", "Proposal:".
_STATUS_LABEL = re.compile(
    r"^\W*(?:draft|proposal|proposed|unapproved|not\s+approved|pending(?:\s+approval)?|for\s+review|rfc|wip|"
    r"work\s+in\s+progress)\b\W*(?:[-:\u2013\u2014(]|$)",
    _I,
)
_HEAD = re.compile(r"(?:\b([a-z][\w-]*)\s+)?\b(" + _DOCUMENT + r")", _I)
_NOT_HEAD = frozenset(
    "the a an this that these its their our his her unapproved unsigned proposed tentative provisional "
    "preliminary draft new old rejected approved final pending".split()
)
_APPROVAL_STATED = re.compile(
    r"(?<!not\s)(?<!n't\s)(?<!never\s)(?<!un)\b(?:approved|adopted|ratified|signed|accepted|passed|merged|"
    r"finali[sz]ed|final|enacted|official)\b",
    _I,
)
_PRONOUN_SUBJECT = re.compile(
    r"^\W*(?:it|this|that|these|those|they|which|none\s+of\s+(?:it|this|them|these)|neither)\b", _I
)
_PRONOUN_OBJECT = re.compile(r"\s+(?:(?:on|off\s+on)\s+)?(?:it|this|them)\b|\b(?:it|this|them)\b", _I)
_PLAIN_APPROVAL = re.compile(r"approv|sign|ratif|adopt", _I)
_CONTRAST = re.compile(r";|\b(?:but|however|whereas|although|though|while)\b", _I)
_PENDING_WORDS = re.compile(
    r"\b(?:draft\w*|propos\w*|rfc|motion|bill|amendment|pitch|pending|tentative\w*|provisional\w*|"
    r"un(?:approved|signed|ratified|adopted)|reject\w*|approv\w*|ratif\w*|veto\w*|scrap\w*|withdr\w*|"
    r"shelv\w*|overrul\w*|turned\s+down|voted\s+down|sign(?:ed)?[\s-]?off|merg\w*|await\w*)\b",
    _I,
)


def claim_about_approval(claim: str) -> bool:
    """Whether the claim is itself about a draft, a proposal or an approval (then the unapproved-
    document rule does not apply: "The draft sets the budget at $5M" is what the draft says)."""
    text = view(claim)
    return bool(_PENDING_WORDS.search(text) or _PENDING.search(text) or _NOT_APPROVED.search(text))


def _head(text: str) -> frozenset[str]:
    """The first document a sentence names, without its determiners and status words."""
    match = _HEAD.search(text)
    if match is None:
        return frozenset()
    return stems(" ".join(word for word in match.groups() if word and word.lower() not in _NOT_HEAD))


def _approved_in(found: Sequence[Sentence], passage: int, head: frozenset[str]) -> bool:
    """Whether some sentence of the passage names the document and states its approval."""
    return any(
        sentence.passage == passage and head <= sentence.words and _APPROVAL_STATED.search(sentence.text)
        for sentence in found
    )


def approval_marks(found: Sequence[Sentence], claim_stems: frozenset[str]) -> Marks:
    """The spans that report an unapproved document's content, by sentence: the marker's part of
    its sentence (up to a contrast), the sentence before when a predicate's subject is a pronoun
    ("It was not approved."), and the other sentences naming the same document unless they state
    its approval. A predicate needs a document ("The ship was scrapped" is about a ship); one
    about a document the claim names is left alone ("The PR adds retry logic" is true of an
    unmerged PR)."""
    marks: Marks = {}
    approved: dict[tuple[int, frozenset[str]], bool] = {}
    named: dict[tuple[int, frozenset[str]], int] = {}
    framed: set[int] = set()
    framed_first: set[int] = set()

    def approved_in(passage: int, head: frozenset[str]) -> bool:
        key = (passage, head)
        if key not in approved:
            approved[key] = _approved_in(found, passage, head)
        return approved[key]

    # Only where claim content is can a mark of a document's other sentences matter.
    about = [index for index, sentence in enumerate(found) if sentence.words & claim_stems]
    keys = KeyIndex([sentence.text for sentence in found])
    pending, nouns = keys.holding(_PENDING_KEYS), keys.holding(_PENDING_NOUN_KEYS)
    approving, refusing = keys.holding(_APPROVAL_KEYS), keys.holding(_REFUSAL_KEYS)
    # Each passage-wide reach (a heading, a document named elsewhere) is walked once per passage
    # and document: linear time on long passages (docs/performance.md).
    for index, sentence in enumerate(found):
        text = sentence.text
        label = _STATUS_LABEL.search(text)
        if label:
            # A heading ("DRAFT - not approved") frames what follows it in its passage; a label
            # ("Draft: …") the rest of its sentence (docs/policy.md, "Scope").
            rest = text[label.end() :].strip()
            heading = not (rest and len(rest.split()) > 3)
            if heading and sentence.passage in framed:
                continue
            if heading:
                framed.add(sentence.passage)
            reach = range(index + 1, len(found)) if heading else range(index, index + 1)
            for other in reach:
                if found[other].passage != sentence.passage:
                    break
                if found[other].words & claim_stems:  # only where claim content is can a mark matter
                    marks.setdefault(other, []).append((0, len(found[other].text), label.group(0).strip()))
            continue
        if not (pending[index] or nouns[index] or approving[index] or refusing[index]):
            continue  # no marker can match
        adjectives = (list(_PENDING.finditer(text)) if pending[index] else []) + [
            match
            for match in (_PENDING_NOUN.finditer(text) if nouns[index] else ())
            if not approved_in(sentence.passage, _head(match.group(0)))
        ]
        approvals = list(_NOT_APPROVED.finditer(text)) if approving[index] else []
        refusals = list(_TURNED_DOWN.finditer(text)) if refusing[index] else []
        if not adjectives and not approvals and not refusals:
            continue
        previous = index - 1 if index > 0 and found[index - 1].passage == sentence.passage else None
        head = _head(text)
        # "It" after a contrast points into its own sentence ("A sequel was proposed but the
        # studio has not approved it"), not at the sentence before.
        cuts = list(_CONTRAST.finditer(text))
        first_clause = min((m.start() for m in cuts), default=len(text))
        leading = [m for m in approvals + refusals if m.start() < first_clause]
        pronoun = previous is not None and (
            bool(_PRONOUN_SUBJECT.search(text))
            or (not head and any(_PRONOUN_OBJECT.match(text, m.end()) for m in leading))
            or (not head and any(_PRONOUN_OBJECT.search(m.group(0)) for m in leading if m in refusals))
        )
        if pronoun and previous is not None:
            head = _head(found[previous].text)
        # Without a document, only a plain approval word about "it" counts ("This has not been
        # signed off yet."); "Einstein never accepted quantum mechanics" is no approval.
        approvals_plain = [m for m in approvals if _PLAIN_APPROVAL.search(m.group(0))]
        if not adjectives:
            if head and head <= claim_stems:
                continue  # the claim reports the document itself
            if not head and not (pronoun and approvals_plain):
                continue  # a ship scrapped, an appeal rejected: no document
        for marker in adjectives + approvals + refusals:
            start = max([m.end() for m in cuts if m.end() <= marker.start()], default=0)
            end = min([m.start() for m in cuts if m.start() >= marker.end()], default=len(text))
            marks.setdefault(index, []).append((start, end, marker.group(0)))
        trigger = (adjectives + approvals + refusals)[0].group(0)
        if pronoun and previous is not None:
            marks.setdefault(previous, []).append((0, len(found[previous].text), trigger))
        if not head:
            continue
        first = named.setdefault((sentence.passage, head), index)
        if first != index:
            # The document's other sentences are marked already; only the first marker's is not.
            if first not in framed_first and not _APPROVAL_STATED.search(found[first].text):
                framed_first.add(first)
                marks.setdefault(first, []).append((0, len(found[first].text), trigger))
            continue
        for other in about:
            candidate = found[other]
            if other == index or candidate.passage != sentence.passage or not head <= candidate.words:
                continue
            if not _APPROVAL_STATED.search(candidate.text):
                marks.setdefault(other, []).append((0, len(candidate.text), trigger))
    return marks



"""Where a strict rule applies inside a passage (docs/policy.md, "Scope").

A passage is read sentence by sentence — the localized recheck's segments
(:func:`verifier.decision.guards.split_segments`), split further at sentence
ends — and each sentence clause by clause. A support veto fires only when the
problem lies where the claim's content is: a hedged, questioned or unapproved
clause vetoes when it carries claim content that no clean clause of the same
group states; a negated clause vetoes only when it negates the claim's content
rather than something next to it. So one hedged sentence does not cost a long
factual passage its support.

Pure functions of text, never used by the reference policies; every pattern is
compiled once and has no nested quantifiers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Sequence

from .guards import UNCERTAINTY
from .strict_frames import Finding, Marks, Sentence, frame_marks, has_correction_cue, mode_cue, sentences, support_targets
from .strict_text import (
    ATTITUDE,
    ATTRIBUTION,
    QUESTION,
    SCOPE_BOUNDARY,
    is_negated,
    modes_compatible,
    negation_cores,
    opens_question,
    polarity_clauses,
    stems,
    unit_modes,
    values_conflict,
    view,
)

__all__ = [
    "Sentence",
    "Finding",
    "claim_subject",
    "sentences",
    "speech_act_problem",
    "negation_problem",
    "negated_claim_unsupported",
    "negation_unrelated",
    "claim_about_approval",
    "SPEECH_ACT",
    "DROPPED",
]

SPEECH_ACT = "strict_speech_act"
DROPPED = "framing_dropped"
_I = re.IGNORECASE


def _pieces(text: str, boundary: "re.Pattern[str]") -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in boundary.finditer(text):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


_SUBJECT_SKIP = frozenset("the a an our my his her their its this that".split())


def claim_subject(claim: str) -> frozenset[str]:
    """The claim's subject, crudely: the stems of its leading capitalised words ("Marie Curie"),
    else its first content stem ("launch" of "The launch is on Tuesday")."""
    words = [word for word in re.findall(r"[^\W_][\w'-]*", view(claim))]
    while words and words[0].lower() in _SUBJECT_SKIP:
        words = words[1:]
    leading = []
    for word in words:
        if not word[0].isupper():
            break
        leading.append(word)
    found = stems(" ".join(leading))
    if found:
        return found
    return next((token for word in words if (token := stems(word))), frozenset())


# ---------------------------------------------------------------- reported questions

_Q_VERB = (
    r"\b(?:ask(?:s|ed|ing)?|wonder(?:s|ed|ing)?|inquir(?:e|es|ed|ing)|enquir(?:e|es|ed|ing)|quer(?:y|ies|ied)|"
    r"(?:want(?:s|ed)?|wanting|need(?:s|ed)?|like|tr(?:y|ies|ied|ying)|hop(?:e|es|ed|ing)|wait(?:s|ed|ing)?|"
    r"curious|eager)\s+to\s+(?:know|find\s+out|learn|check|confirm|verify|see|hear|understand)|"
    r"check(?:s|ed|ing)?|verif(?:y|ies|ied|ying)|confirm(?:s|ed|ing)?|find(?:s|ing)?\s+out|found\s+out|"
    r"figur(?:e|es|ed|ing)\s+out|see|seeing|know|knows|knew|unclear|unknown|unsure|"
    r"not\s+(?:sure|clear|known|certain)|uncertain|undecided|question(?:s|ed|ing)?|doubt(?:s|ed|ful)?|"
    r"debat(?:e|es|ed|ing)|investigat(?:e|es|ed|ing)|look(?:s|ed|ing)?\s+into|no\s+(?:one|idea)|nobody)\b"
)
#: A reported question: a verb of asking or not knowing, then "whether"/"if" (docs/policy.md).
_REPORTED_QUESTION = re.compile(_Q_VERB + r"(?:\s+[\w'-]+){0,5}?\s+(?:whether|if)\b(?:\s+or\s+not\b)?", _I)


def _question_marks(found: Sequence[Sentence]) -> Marks:
    """The complements of reported questions, by sentence: the rest of the sentence after
    "whether"/"if", or the next sentence when the question ends its own ("asked whether⏎…")."""
    marks: Marks = {}
    for index, sentence in enumerate(found):
        for match in _REPORTED_QUESTION.finditer(sentence.text):
            rest = sentence.text[match.end() :]
            if rest.strip(" \t.:;,-…"):
                marks.setdefault(index, []).append((match.end(), len(sentence.text), match.group(0)))
            elif index + 1 < len(found) and found[index + 1].passage == sentence.passage:
                marks.setdefault(index + 1, []).append((0, len(found[index + 1].text), match.group(0)))
    return marks


# ---------------------------------------------------------------- unapproved documents

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


def _approval_marks(found: Sequence[Sentence], claim_stems: frozenset[str]) -> Marks:
    """The spans that report an unapproved document's content, by sentence: the marker's part of
    its sentence (up to a contrast), the sentence before when a predicate's subject is a pronoun
    ("It was not approved."), and the other sentences naming the same document unless they state
    its approval. A predicate needs a document ("The ship was scrapped" is about a ship); one
    about a document the claim names is left alone ("The PR adds retry logic" is true of an
    unmerged PR)."""
    marks: Marks = {}
    for index, sentence in enumerate(found):
        text = sentence.text
        label = _STATUS_LABEL.search(text)
        if label:
            # A heading ("DRAFT - not approved") frames what follows it in its passage; a label
            # ("Draft: …") the rest of its sentence (docs/policy.md, "Scope").
            rest = text[label.end() :].strip()
            framed = (
                [index]
                if rest and len(rest.split()) > 3
                else [i for i in range(index + 1, len(found)) if found[i].passage == sentence.passage]
            )
            for other in framed:
                marks.setdefault(other, []).append((0, len(found[other].text), label.group(0).strip()))
            continue
        adjectives = list(_PENDING.finditer(text)) + [
            match for match in _PENDING_NOUN.finditer(text) if not _approved_in(found, sentence.passage, _head(match.group(0)))
        ]
        approvals, refusals = list(_NOT_APPROVED.finditer(text)), list(_TURNED_DOWN.finditer(text))
        if not adjectives and not approvals and not refusals:
            continue
        previous = index - 1 if index > 0 and found[index - 1].passage == sentence.passage else None
        head = _head(text)
        # "It" after a contrast points into its own sentence ("A sequel was proposed but the
        # studio has not approved it"), not at the sentence before.
        first_clause = min((m.start() for m in _CONTRAST.finditer(text)), default=len(text))
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
        cuts = list(_CONTRAST.finditer(text))
        for marker in adjectives + approvals + refusals:
            start = max([m.end() for m in cuts if m.end() <= marker.start()], default=0)
            end = min([m.start() for m in cuts if m.start() >= marker.end()], default=len(text))
            marks.setdefault(index, []).append((start, end, marker.group(0)))
        trigger = (adjectives + approvals + refusals)[0].group(0)
        if pronoun and previous is not None:
            marks.setdefault(previous, []).append((0, len(found[previous].text), trigger))
        for other, candidate in enumerate(found):
            if other == index or candidate.passage != sentence.passage or not head or not head <= candidate.words:
                continue
            if not _APPROVAL_STATED.search(candidate.text):
                marks.setdefault(other, []).append((0, len(candidate.text), trigger))
    return marks


# ---------------------------------------------------------------- attributions

_LEADING_FRAME = re.compile(
    r"\b(?:said|says|stated|told\s+\w+|claimed|argued|insisted|alleged|wrote|writes|posted)\s*[,:]\s*(?=\S)", _I
)


_HEDGE_WORD = r"(?:most\s+likely|probably|apparently|presumably|supposedly|seemingly|likely|reportedly|allegedly)"
_TRAILING_FRAME = re.compile(
    r",\s*(?:(?:or\s+)?so\s+)?(?:(?:I|we)\s+(?:think|believe|guess|suppose|reckon|heard|hear|feel)|"
    r"(?:[A-Z][\w'-]*\s+){1,2}(?:said|says|claimed|claims|thinks|believes)|(?i:" + _HEDGE_WORD + r"))\W*$"
)
_LEADING_HEDGE = re.compile(r"^\W*" + _HEDGE_WORD + r"\s*,", _I)


def _attribution_marks(found: Sequence[Sentence]) -> Marks:
    """What a sentence reports someone saying or thinking, or hedges as a whole, by sentence: the
    rest of the sentence after "Omar said,", "Omar wrote:" or "Most likely," (a quote included; a
    named speaker's first-person quote is the speaker's own statement, see :func:`view`), and
    what comes before ", I think.", ", Omar said." or ", apparently." at its end. "According to
    X, …" keeps its clause scope: it is how encyclopedias cite their sources."""
    marks: Marks = {}
    for index, sentence in enumerate(found):
        for match in [*_LEADING_FRAME.finditer(sentence.text), *_LEADING_HEDGE.finditer(sentence.text)]:
            marks.setdefault(index, []).append((match.end(), len(sentence.text), match.group(0).strip(" ,:")))
        trailing = _TRAILING_FRAME.search(sentence.text)
        if trailing:
            marks.setdefault(index, []).append((0, trailing.start(), trailing.group(0).strip(" ,.")))
    return marks


# ---------------------------------------------------------------- speech acts


@dataclass(frozen=True)
class _Unit:
    stems: frozenset[str]
    problem: Optional[str]
    negated: bool
    #: Opens with a pronoun subject ("It was paid on Monday."): it may stand for one claim word.
    pronoun: bool = False
    #: The sentence it lies in, and what makes it offend.
    sentence: int = 0
    trigger: str = ""


_PRONOUN_OPENING = re.compile(r"^\W*(?:it|this|that|they|these|those|he|she|its|their|his|her)\b", _I)


def _states(clean: _Unit, carried: frozenset[str], subject: frozenset[str], claim_stems: frozenset[str]) -> bool:
    """Whether a clean clause states what an offending one carries; a clause about the claim that
    opens with a pronoun may leave out one word, or the claim's subject ("She won 23 titles")."""
    missing = carried - clean.stems
    if not missing:
        return True
    if not clean.pronoun or not clean.stems & claim_stems:
        return False
    return len(missing) == 1 or missing <= subject


def _units(found: Sequence[Sentence], modes: frozenset[str], marks: Marks) -> list[_Unit]:
    units = []
    for index, sentence in enumerate(found):
        if not sentence.kept:
            # Dropped for a speech act (a question, a hedge): it must not carry the content alone.
            # Dropped for a negation only: the negation rule reads it.
            if not modes_compatible(unit_modes(sentence.text), modes):
                units.append(_Unit(sentence.words, DROPPED, False, sentence=index, trigger=mode_cue(sentence.text, modes)))
            continue
        question = frozenset({QUESTION}) if opens_question(sentence.text) else frozenset()
        for start, end in _pieces(sentence.text, SCOPE_BOUNDARY):
            clause = sentence.text[start:end]
            marked = [trigger for a, b, trigger in marks.get(index, ()) if a < end and start < b]
            # A question is put by its sentence, or after a speaker's label ("ravi: did the backup
            # run"): a clause opening "was released by …" after an apposition is no question.
            before = sentence.text[:start].rstrip()
            asked = question | (frozenset({QUESTION}) if before.endswith(":") and opens_question(clause) else frozenset())
            bad = bool(marked) or not modes_compatible(unit_modes(clause, questions=False) | asked, modes)
            trigger = marked[0] if marked else mode_cue(sentence.text if question else clause, modes) if bad else ""
            units.append(
                _Unit(stems(clause), SPEECH_ACT if bad else None, is_negated(clause), bool(_PRONOUN_OPENING.search(clause)),
                      index, trigger)
            )  # fmt: skip
    return units


def speech_act_problem(claim: str, modes: frozenset[str], found: Sequence[Sentence]) -> Optional[Finding]:
    """The rule a support breaks by its speech acts, if any (docs/policy.md, "Scope"), with the
    support sentence and the trigger: ``strict_speech_act`` when a clause of a support sentence
    (:func:`support_targets`) offends — a mode the claim does not share (a hedge, an attribution,
    someone else's attitude, a question) or a span that a trigger governing the sentence marks (a
    reported question's complement, an unapproved document's content, a framed report, a frame
    introducing the sentence: :func:`frame_marks`) — and carries claim content that no clean
    clause of the group states; ``framing_dropped`` when a support sentence the recheck dropped
    for a speech act does."""
    claim_stems = stems(claim)
    marks: Marks = {}
    attribution = not modes & {ATTRIBUTION, UNCERTAINTY} and not any(mode.startswith(ATTITUDE) for mode in modes)
    sources = [frame_marks(found, modes, attribution=attribution, approval=not claim_about_approval(claim))]
    if QUESTION not in modes:
        sources.append(_question_marks(found))
    if attribution:
        sources.append(_attribution_marks(found))
    if not claim_about_approval(claim):
        sources.append(_approval_marks(found, claim_stems))
    for source in sources:
        for index, spans in source.items():
            marks.setdefault(index, []).extend(spans)
    units = _units(found, modes, marks)
    clean = [unit for unit in units if unit.problem is None and not unit.negated]
    subject = claim_subject(claim)
    targets = set(support_targets(claim_stems, found))
    for rule in (SPEECH_ACT, DROPPED):
        for unit in units:
            if unit.problem != rule or unit.sentence not in targets:
                continue  # a trigger elsewhere in the passage does not govern the support sentence
            carried = unit.stems & claim_stems
            if carried and not any(_states(other, carried, subject, claim_stems) for other in clean):
                return Finding(rule, found[unit.sentence].text, unit.trigger)
    return None


# ---------------------------------------------------------------- negation


def negation_problem(claim: str, found: Sequence[Sentence]) -> Optional[Finding]:
    """A negated clause that negates the (positive) claim's content, with the support sentence
    (docs/policy.md, "Scope"). The clause must govern the support sentence — lie in it, or open
    the sentence right after it with a pronoun ("She doesn't use it anymore") — and share a stem
    with the claim and hold all of the claim's, or nothing but claim stems, or two of them while the
    claim's other stems are stated nowhere positive in the kept text ("The vendor has not shipped
    anything yet"). Anywhere else only a clause holding every claim stem counts: it denies the
    claim itself. "Alice has no access to billing" leaves "Alice owns ingestion" alone, and so
    does "He did not play again that season" beside "He made his debut on 4 May"."""
    claim_stems = stems(claim)
    targets = support_targets(claim_stems, found)
    positive: set[str] = set()
    negated: list[tuple[int, str, frozenset[str]]] = []
    for index, sentence in enumerate(found):
        for clause in polarity_clauses(sentence.text):
            if clause.negated:
                negated.append((index, clause.text, stems(clause.text)))
            elif sentence.kept:
                positive |= stems(clause.text)
    for index, text, found_stems in negated:
        if not found_stems & claim_stems:
            continue
        target = next((t for t in targets if t == index or _anaphoric(found, t, index)), None)
        if claim_stems <= found_stems:
            return Finding("strict_negation", found[target if target is not None else index].text, text.strip())
        if target is not None and (
            found_stems <= claim_stems
            or (len(found_stems & claim_stems) >= 2 and not (claim_stems - found_stems) <= positive)
        ):
            return Finding("strict_negation", found[target].text, text.strip())
    return None


def _anaphoric(found: Sequence[Sentence], target: int, index: int) -> bool:
    """Whether sentence ``index`` comes right after ``target`` in its passage and opens with a
    pronoun: what it says is said of the support sentence's subject or object."""
    return (
        index == target + 1
        and found[index].passage == found[target].passage
        and bool(_PRONOUN_OPENING.search(found[index].text))
    )


_EXCLUSIVE = re.compile(
    r"\b(?:only|exclusively|solely|stopp?(?:ed|s)?|quit|quits|dropped|left|abandon(?:ed|s)?|retired|removed|"
    r"deprecated|migrated|gave\s+up|moved\s+(?:away|off)|uninstalled|cancell?ed|discontinued|sunset)\b",
    _I,
)


def negated_claim_unsupported(claim: str, found: Sequence[Sentence]) -> bool:
    """For a negated claim: no clause of the group negates the claim's negated content, and no
    sentence about it corrects, replaces or restricts ("switched to", "no longer", "only") —
    or names another value of the negated kind ("released in 2001" for "not released in 1999"):
    a plain positive passage cannot support a negation (docs/policy.md, "Scope")."""
    negated = stems(" ".join(clause.text for clause in polarity_clauses(claim) if clause.negated)) or stems(claim)
    for sentence in found:
        if any(clause.negated and stems(clause.text) & negated for clause in polarity_clauses(sentence.text)):
            return False
        if sentence.words & negated and (has_correction_cue(sentence.text) or _EXCLUSIVE.search(sentence.text)):
            return False
        if values_conflict(claim, sentence.text):
            return False  # "released in 2001" supports "not released in 1999"
    return True


def negation_unrelated(claim: str, passages: Sequence[str]) -> bool:
    """For a negated claim: the passages do not name what the claim negates — "Alice uses Linear"
    says nothing about "Alice does not use Jira" (docs/policy.md, "Scope")."""
    named: set[str] = set()
    for text in passages:
        named |= stems(view(text))
    return any(core - named for core in negation_cores(view(claim)))

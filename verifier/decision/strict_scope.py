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
from typing import AbstractSet, Optional, Sequence

from .guards import UNCERTAINTY, UNVERIFIED
from .strict_approval import approval_marks, claim_about_approval
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
        low = sentence.text.lower()
        if "whether" not in low and "if" not in low:
            continue  # the question needs one of them (a cheap test first: docs/performance.md)
        for match in _REPORTED_QUESTION.finditer(sentence.text):
            rest = sentence.text[match.end() :]
            if rest.strip(" \t.:;,-…"):
                marks.setdefault(index, []).append((match.end(), len(sentence.text), match.group(0)))
            elif index + 1 < len(found) and found[index + 1].passage == sentence.passage:
                marks.setdefault(index + 1, []).append((0, len(found[index + 1].text), match.group(0)))
    return marks


# ---------------------------------------------------------------- attributions

_LEADING_FRAME = re.compile(
    r"\b(?:(?<!\blike\sI\s)(?<!\bas\sI\s)(?:said|says)|stated|told\s+\w+|claimed|argued|insisted|alleged|wrote|writes|"
    r"posted)\s*[,:]\s*(?=\S)",
    _I,
)  # "Like I said, …" is the user repeating themself


_HEDGE_WORD = (r"(?:most\s+likely|probably|apparently|presumably|supposedly|seemingly|likely|reportedly|allegedly|"
               r"in\s+theory|it\s+seems|it\s+appears|rumou?r\s+has\s+it)")
#: Verbs of saying and thinking after the speaker at a sentence's end (", Omar said.", ", Ana reckons.").
_TRAILING_VERB = (r"(?:said|says|claimed|claims|thinks|thought|believes|believed|reckons|reckoned|assumes|assumed|suspects|"
                  r"insists|insisted|told\s+(?:me|us|him|her|them))")
_SPEAKER = r"(?:(?:[A-Z][\w'-]*\s+){1,2}|(?i:the|my|our|his|her|their)\s+[\w'-]+\s+)"
#: ", Omar said." / ", the company said." at a sentence's end; after a closing quote (',"' as prose
#: punctuates it) also "wrote", "added", "replied" and the verb first ("said Omar"): without the quote
#: ", wrote Dracula" and ", added Teams" are what someone did, not a report.
_TRAILING_FRAME = re.compile(
    r"(?:,\s*(?:(?:or\s+)?so\s+)?(?:(?:I|we)\s+(?:think|believe|guess|suppose|reckon|heard|hear|feel|assume|suspect)|"
    r"(?:I|we)\s+(?:was|were)\s+told|(?:I|we)(?:'ve|\s+have)\s+heard|" + _SPEAKER + _TRAILING_VERB + r"|"
    r"(?i:" + _HEDGE_WORD + r"))"
    r"|[,.!?][\"']\s*(?:" + _SPEAKER + r"(?:" + _TRAILING_VERB + r"|wrote|writes|added|replied)|"
    r"(?:said|says|wrote|added|replied)\s+(?:[A-Z][\w'-]*|(?i:the|my|our|his|her|their)\s+[\w'-]+)(?:\s+[A-Z][\w'-]*)?))\W*$"
)
_LEADING_HEDGE = re.compile(r"^\W*" + _HEDGE_WORD + r"\s*,", _I)
#: "Tom, I assume, is married.": the speaker's attitude set off by commas inside the sentence marks all of it.
_PARENTHETICAL = re.compile(r",\s*(?:I|we)\s+(?:think|believe|guess|suppose|reckon|assume|suspect|hear|heard)\s*,")


def _attribution_marks(found: Sequence[Sentence], claim_stems: frozenset[str]) -> Marks:
    """What a sentence reports someone saying or thinking, or hedges as a whole, by sentence: the
    rest of the sentence after "Omar said,", "Omar wrote:" or "Most likely," (a quote included; a
    named speaker's first-person quote is the speaker's own statement, see :func:`view`), and
    what comes before ", I think.", ", Omar said." or ", apparently." at its end. "According to
    X, …" keeps its clause scope: it is how encyclopedias cite their sources."""
    marks: Marks = {}
    for index, sentence in enumerate(found):
        if not sentence.words & claim_stems:
            continue  # a mark of its own sentence matters only where claim content is
        if "," not in sentence.text and ":" not in sentence.text:
            continue  # every frame below needs one (a cheap test first: docs/policy.md, "Cost")
        for match in [*_LEADING_FRAME.finditer(sentence.text), *_LEADING_HEDGE.finditer(sentence.text)]:
            marks.setdefault(index, []).append((match.end(), len(sentence.text), match.group(0).strip(" ,:")))
        parenthetical = _PARENTHETICAL.search(sentence.text)
        if parenthetical:
            marks.setdefault(index, []).append((0, len(sentence.text), parenthetical.group(0).strip(" ,")))
        trailing = _TRAILING_FRAME.search(sentence.text)
        if trailing:
            marks.setdefault(index, []).append((0, trailing.start(), trailing.group(0).strip(" ,.\"'")))
    return marks


# ---------------------------------------------------------------- hedges of a neighbouring sentence

#: What puts a statement in doubt without stating anything: not verified, unconfirmed, can't vouch for, not
#: sure, a doubt, a rumour, may be wrong, nobody confirmed.
_HEDGE_CORE = (
    r"(?:(?:not|never|isn't|wasn't|hasn't|haven't|(?:has|have|is|was|are|were)\s+not|yet\s+to\s+be|still\s+to\s+be)"
    r"(?:\s+(?:yet|been|be|fully|independently|officially))*\s+(?:verified|confirmed|checked|corroborated|substantiated|"
    r"validated|proven)|un(?:verified|confirmed|corroborated|substantiated|proven)|"
    r"(?:can't|cannot|can\s+not|couldn't|could\s+not|won't|will\s+not)\s+(?:vouch|confirm|verify|guarantee|swear)|"
    r"not\s+(?:sure|certain)|unsure|uncertain|unclear|doubt(?:s|ful)?|grain\s+of\s+salt|rumou?r(?:ed|s)?|hearsay|"
    r"speculation|speculative|(?:may|might|could)\s+(?:be|turn\s+out)\s+(?:wrong|false|inaccurate|outdated)|"
    r"(?:nobody|no\s+one)\s+(?:has\s+)?(?:confirmed|verified|checked))"
)
_HEDGE_ANYWHERE = re.compile(r"\b" + _HEDGE_CORE + r"\b", _I)
#: A hedge that is the whole sentence, subject left out ("Not verified yet.", "Unconfirmed:", "Still unclear.").
_HEDGE_FRAGMENT = re.compile(
    r"^\W*(?:(?:but|and|still|so\s+far|as\s+yet|yet|all)\W+)*" + _HEDGE_CORE
    + r"(?:\W+(?:yet|so\s+far|though|still|either|at\s+all|for\s+now|as\s+of\s+now|by\s+any(?:one|body)|independently|"
    r"officially|really|entirely|fully))*\W*$", _I,
)
#: A word pointing at another sentence: "this", "these", "those", "that" as a pronoun, a closing "it" ("I doubt it").
_POINTER = re.compile(r"\b(?:this|these|those|the\s+following|(?:the\s+)?(?:above|below))\b|\bthat(?:\W*$|\s+(?:is|was|one|part|claim|"
                      r"report|bit|last\s+part)\b)|\bit\W*$", _I)
#: A sentence that ends on a colon or a dash introduces the next one.
_INTRODUCES = re.compile(r"(?:[:\u2014\u2013]|\s-)\s*$")
#: Words a pointing hedge may have at most: a longer sentence says something of its own.
_POINTING_WORDS = 10


def _pointing_hedge_marks(found: Sequence[Sentence], claim_stems: frozenset[str]) -> tuple[Marks, Marks]:
    """The sentences a hedge of its own sentence points at (docs/policy.md, "Scope"): a short sentence without
    claim content that puts something in doubt ("Not verified yet.", "I can't vouch for this.", "This is
    unconfirmed.") marks the sentences next to it in its passage; one ending on a colon or a dash
    ("Unconfirmed:", "I can't vouch for this —") only the next. A hedge with a subject of its own ("Budget is
    not confirmed yet.") points at nothing. The marks of hedges the recheck kept, and of those it dropped
    (a ``framing_dropped`` veto: the recheck left the frame out of the support)."""
    kept: Marks = {}
    dropped: Marks = {}
    for index, sentence in enumerate(found):
        if sentence.words & claim_stems or len(sentence.text.split()) > _POINTING_WORDS:
            continue
        text = sentence.text
        if not _HEDGE_ANYWHERE.search(text):
            continue
        forward = bool(_INTRODUCES.search(text))
        if not (forward or _HEDGE_FRAGMENT.search(text) or _POINTER.search(text)):
            continue
        marks = kept if sentence.kept else dropped
        for other in (index + 1,) if forward else (index - 1, index + 1):
            if 0 <= other < len(found) and found[other].passage == sentence.passage and found[other].words & claim_stems:
                marks.setdefault(other, []).append((0, len(found[other].text), text.strip()))
    return kept, dropped


# ---------------------------------------------------------------- speech acts


@dataclass(frozen=True)
class _Unit:
    stems: frozenset[str]
    problem: Optional[str]
    negated: bool
    #: Opens with a pronoun subject ("It was paid on Monday."): it may stand for one claim word.
    pronoun: bool = False
    #: The sentence it lies in, and what makes it offend: a mark's trigger, or (``cue``) the text
    #: whose mode cue is the trigger (found only when the unit fires).
    sentence: int = 0
    trigger: str = ""
    cue: bool = False


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


def _units(
    found: Sequence[Sentence], modes: frozenset[str], marks: Marks, claim_stems: frozenset[str], targets: AbstractSet[int],
    framed: Optional[Marks] = None,
) -> list[_Unit]:
    """The clauses that hold claim stems, with their problem: a clause without any can neither
    carry the claim's content nor state it, so it is not read (linear, cheap on long passages).
    An offending clause outside the support sentences (``targets``) is left out: it neither
    vetoes nor states anything. ``framed``: spans a frame the recheck dropped governs
    (``framing_dropped`` where nothing else offends)."""
    units = []
    for index, sentence in enumerate(found):
        if not sentence.words & claim_stems:
            continue
        target = index in targets
        if not sentence.kept:
            if not target:
                continue
            # Dropped for a speech act (a question, a hedge): it must not carry the content alone.
            # Dropped for a negation only: the negation rule reads it.
            if not modes_compatible(unit_modes(sentence.text), modes):
                units.append(_Unit(sentence.words, DROPPED, False, sentence=index, trigger=sentence.text, cue=True))
            continue
        question = frozenset({QUESTION}) if opens_question(sentence.text) else frozenset()
        for start, end in _pieces(sentence.text, SCOPE_BOUNDARY):
            clause = sentence.text[start:end]
            clause_stems = stems(clause)
            if not clause_stems & claim_stems:
                continue
            marked = [trigger for a, b, trigger in marks.get(index, ()) if a < end and start < b]
            frames = [trigger for a, b, trigger in (framed or {}).get(index, ()) if a < end and start < b]
            # A question is put by its sentence, or after a speaker's label ("ravi: did the backup
            # run"): a clause opening "was released by …" after an apposition is no question.
            before = sentence.text[:start].rstrip()
            labelled = before.endswith(":") and opens_question(sentence.text[start:])  # the rest: it may end in "."
            asked = question | (frozenset({QUESTION}) if labelled else frozenset())
            bad = bool(marked) or not modes_compatible(unit_modes(clause, questions=False) | asked, modes)
            if (bad or frames) and not target:
                continue
            if not bad and frames:
                units.append(_Unit(clause_stems, DROPPED, False, sentence=index, trigger=frames[0]))
                continue
            trigger = marked[0] if marked else (sentence.text if question else clause) if bad else ""
            units.append(
                _Unit(clause_stems, SPEECH_ACT if bad else None, not bad and is_negated(clause), bool(_PRONOUN_OPENING.search(clause)),
                      index, trigger, bad and not marked)
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
    sources = [frame_marks(found, modes, claim_stems, attribution=attribution, approval=not claim_about_approval(claim))]
    if QUESTION not in modes:
        sources.append(_question_marks(found))
    if attribution:
        sources.append(_attribution_marks(found, claim_stems))
    framed: Marks = {}
    if not modes & {UNCERTAINTY, UNVERIFIED}:
        pointed, framed = _pointing_hedge_marks(found, claim_stems)
        sources.append(pointed)
    if not claim_about_approval(claim):
        sources.append(approval_marks(found, claim_stems))
    for source in sources:
        for index, spans in source.items():
            marks.setdefault(index, []).extend(spans)
    targets = set(support_targets(claim_stems, found))
    units = _units(found, modes, marks, claim_stems, targets, framed)
    clean = [unit for unit in units if unit.problem is None and not unit.negated]
    subject = claim_subject(claim)
    stated: dict[frozenset[str], bool] = {}  # by carried stems: one scan of the clean clauses each
    for rule in (SPEECH_ACT, DROPPED):
        for unit in units:
            if unit.problem != rule or unit.sentence not in targets:
                continue  # a trigger elsewhere in the passage does not govern the support sentence
            carried = unit.stems & claim_stems
            if carried and carried not in stated:
                stated[carried] = any(_states(other, carried, subject, claim_stems) for other in clean)
            if carried and not stated[carried]:
                trigger = mode_cue(unit.trigger, modes) if unit.cue else unit.trigger
                return Finding(rule, found[unit.sentence].text, trigger)
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
    targets = set(support_targets(claim_stems, found))
    positive: set[str] = set()
    negated: list[tuple[int, str, frozenset[str]]] = []
    for index, sentence in enumerate(found):
        if not sentence.words & claim_stems:
            continue  # neither a negation of the claim nor a statement of its stems
        for clause in polarity_clauses(sentence.text):
            if clause.negated:
                negated.append((index, clause.text, stems(clause.text)))
            elif sentence.kept:
                positive |= stems(clause.text)
    for index, text, found_stems in negated:
        if not found_stems & claim_stems:
            continue
        target = index if index in targets else index - 1 if index - 1 in targets and _anaphoric(found, index - 1, index) else None
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

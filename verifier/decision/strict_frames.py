"""Sentences, the sentence a support rests on, and the frames that govern it (docs/policy.md,
"Scope: which trigger governs the support sentence").

A strict support veto names its evidence: the **support sentence** (the sentence of the group that
holds the most claim stems) and the **trigger**. A trigger counts only when it governs the support
sentence: it lies in the sentence's own clauses, or it is a frame that introduces it — a status
heading or label line above it, status sentences that open its passage, a header line ending in a
colon above it (or above the list it belongs to), or the attribution of a quote it belongs to. A
negation, reporting verb or status word elsewhere in a long passage is not a trigger.

Pure functions of text, never used by the reference policies; every pattern is compiled once and
has no nested quantifiers.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple, Optional, Sequence

from .guards import _MODE_PATTERNS as REFERENCE_MODE_PATTERNS
from .guards import UNCERTAINTY, split_segments
from .strict_reports import WORD_ON_FACT
from .strict_text import _ATTITUDE, _ATTRIBUTION, _HEDGE, _MODAL_MAY, _PAST, _QUESTION_START
from .strict_text import ATTITUDE, ATTRIBUTION, PAST, QUESTION, is_negated, is_past_claim, modes_compatible, normalise, opens_question
from .strict_text import stems, unit_modes, view

__all__ = [
    "Sentence",
    "Finding",
    "KeyIndex",
    "Marks",
    "sentences",
    "lines",
    "support_targets",
    "frame_marks",
    "is_label",
    "introduces",
    "points_back",
    "points_forward",
    "withdrawal",
    "mode_cue",
    "has_correction_cue",
    "is_framing_line",
]

_I = re.IGNORECASE
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"'])\s+")  # a closing quote may end a sentence too
_LINES = re.compile(r"(?:\r?\n)+")
#: Marked spans by sentence index: (start, end, the trigger's text).
Marks = dict[int, list[tuple[int, int, str]]]


class Sentence(NamedTuple):
    """One sentence of a group's passages, as the strict rules read it (:func:`view`)."""

    passage: int
    segment: int
    text: str
    kept: bool
    #: :func:`stems` of ``text``, computed once.
    words: frozenset[str] = frozenset()
    #: The line of its passage it lies on (lines end at a run of line feeds, as segments do).
    line: int = 0
    #: Its line is a list item (opens with "-", "*", "•" or "1.").
    item: bool = False


class Finding(NamedTuple):
    """A rule that fired, the support sentence it fired on, and the trigger's text."""

    rule: str
    sentence: str
    trigger: str


def lines(text: str) -> list[str]:
    """``text`` split at each run of line breaks (a line feed, a carriage return before it allowed), as ``_LINES`` splits."""
    if "\r" in text:
        return _LINES.split(text)
    # str.split and the runs' empty lines dropped: the same pieces, much faster on a long passage.
    parts = text.split("\n")
    return [parts[0], *filter(None, parts[1:-1]), parts[-1]] if len(parts) > 1 else parts


def sentences(texts: Sequence[str], kept: Optional[Sequence[tuple[int, ...]]] = None) -> list[Sentence]:
    """The sentences of a group's passages in order; ``kept`` (a recheck's segment numbers per
    passage) marks the sentences of the segments the recheck dropped. Segments are numbered as
    :func:`split_segments` numbers them (a line break always ends a segment)."""
    found = []
    # Sets, not the recheck's tuples: one lookup per segment keeps a long passage linear.
    keeps = None if kept is None else [frozenset(numbers) for numbers in kept]
    for index, text in enumerate(texts):
        number = 0
        for line_number, line in enumerate(lines(text)):
            item = bool(_LIST_ITEM.match(line))
            # Both splits need a sentence end: a line or segment without one is one piece.
            ends = "." in line or "!" in line or "?" in line
            for segment in split_segments(line) if ends else [line.strip()] if line.strip() else []:
                number += 1
                keep = keeps is None or number in keeps[index]
                viewed = view(segment)
                ends = "." in viewed or "!" in viewed or "?" in viewed
                for sentence in _SENTENCE_END.split(viewed) if ends else [viewed]:
                    if sentence.strip():
                        found.append(Sentence(index, number, sentence, keep, stems(sentence), line_number, item))
    return found


def support_targets(claim_stems: frozenset[str], found: Sequence[Sentence]) -> list[int]:
    """The support sentences: those holding the most claim stems (none when no sentence holds one)."""
    counts = [len(sentence.words & claim_stems) for sentence in found]
    best = max(counts, default=0)
    return [index for index, count in enumerate(counts) if best and count == best]


# ---------------------------------------------------------------- labels and headers

#: Words that give a document's status ("Draft", "Unapproved", "Not approved by Finance").
_STATUS = re.compile(
    r"\b(?:draft|proposal|proposed|unapproved|unsigned|unconfirmed|unverified|provisional|tentative|"
    r"preliminary|embargoed|rfc|wip|work\s+in\s+progress|for\s+(?:internal\s+)?review|pending|awaiting|"
    r"rumou?rs?|not\s+(?:yet\s+)?(?:approved|final|confirmed|signed(?:\s+off)?|adopted|agreed))\b",
    _I,
)
#: A finite verb or auxiliary: a label has none ("Draft proposal from J."), a statement has one.
_FINITE = re.compile(
    r"\b(?:is|are|was|were|am|be|been|has|have|had|will|would|shall|can|could|did|does|do|sets?|says?|"
    r"shows?|puts?|runs?|makes?|gives?|opens?|starts?|begins?|\w+ed)\b",
    _I,
)
_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022\u2023\u25e6]|\d{1,3}[.)])\s+")
_LABEL_WORDS = 12
#: Substrings (lower case) without which _STATUS cannot match an ASCII text.
_STATUS_KEYS = (
    "draft", "propos", "approved", "signed", "confirmed", "unverified", "provisional", "tentative", "preliminary",
    "embargoed", "rfc", "wip", "progress", "review", "pending", "awaiting", "rumo", "final", "adopted", "agreed",
)  # fmt: skip


class KeyIndex:
    """Which of many texts hold a substring, from one search of them all lowered and joined: a
    cheap test before a slow pattern on every sentence of a long passage (docs/policy.md, "Cost")."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = texts
        lowered = [text.lower() for text in texts]
        self.joined = "\0".join(lowered)
        self.starts, position = [], 0
        for text in lowered:
            self.starts.append(position)
            position += len(text) + 1

    def holding(self, keys: Sequence[str]) -> list[bool]:
        """Per text: whether ``text.lower()`` holds one of ``keys`` (lower case, without NUL)."""
        found = [False] * len(self.texts)
        for key in keys:
            position = self.joined.find(key)
            while position >= 0:
                index = bisect.bisect_right(self.starts, position) - 1
                found[index] = True
                following = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.joined)
                position = self.joined.find(key, following)
        return found

    def status_possible(self) -> list[bool]:
        """Per text: whether _STATUS may match it (a non-ASCII text always may: its case folding
        is not :meth:`str.lower`'s)."""
        return [hit or not text.isascii() for hit, text in zip(self.holding(_STATUS_KEYS), self.texts)]


def is_label(text: str) -> Optional[str]:
    """The status word of a label sentence ("Draft proposal from J.", "Not approved by Finance.",
    "DRAFT - for internal review only", "Unapproved draft for the press release:"): a short
    sentence with a status word and no finite verb. ``None`` for anything else ("A proposed dam
    was rejected in 1970." is a statement)."""
    body = text.strip().rstrip(":").strip()
    match = _STATUS.search(body)
    # The status words themselves ("Not approved", "Unconfirmed") are no verb of a statement.
    if not match or len(body.split()) > _LABEL_WORDS or _FINITE.search(_STATUS.sub(" ", body)):
        return None
    return match.group(0)


def _whole_line(found: Sequence[Sentence], index: int) -> bool:
    sentence = found[index]
    alone_before = index == 0 or (found[index - 1].passage, found[index - 1].line) != (sentence.passage, sentence.line)
    return alone_before and _ends_line(found, index)


def introduces(found: Sequence[Sentence], frame: int, target: int) -> bool:
    """Whether sentence ``frame`` is a line that introduces ``target``: it ends its line, and
    ``target`` is on the next line, or on a list item of the list that follows it."""
    head, body = found[frame], found[target]
    if head.passage != body.passage or body.line <= head.line or not _ends_line(found, frame):
        return False
    return body.line == head.line + 1 or all(found[i].item for i in range(frame + 1, target + 1))


_DEMONSTRATIVE = re.compile(r"\b(?:this|that|these|those|above)\b", _I)


_DENIAL = re.compile(r"\b(?:true|correct|right|accurate|the\s+case|confirmed)\b", _I)
#: A sentence that is only a verdict on the one before it: "Unconfirmed.", "Just kidding.", "Or so I was
#: told.", "I think?", "Maybe.", or calling all of it false: "This is false.", "Wait, that's wrong.",
#: "Disregard the above." (not "That was a mistake.", "That was wrong of him.": they judge what was done).
#: A line ending in ":" is a header over what follows, not a verdict.
_VERDICT = re.compile(
    r"^\W*(?:(?:(?:wait|no|actually|correction|sorry|oops)\W+)?(?:(?:just\s+)?kidding|jk|unconfirmed|unverified|"
    r"not\s+(?:yet\s+)?confirmed|not\s+true|false|untrue|wrong|cancell?ed|outdated|obsolete|tb[cd]|to\s+be\s+confirmed|"
    r"scratch\s+that|or\s+not|never\s?mind|(?:I|we)\s+take\s+(?:that|it)\s+back|"
    r"not\s+(?:so\s+)?sure(?:\s+though)?|or\s+so\s+(?:I|we)\s+(?:was|were|am|are)?\s*(?:told|heard|hear|think|believe)|"
    r"(?:I|we)\s+(?:think|guess|believe|suppose)(?:\s+so)?|maybe|perhaps|probably|possibly|"
    r"(?:this|that|it|all\s+(?:of\s+)?(?:this|that))(?:'s|\s+is|\s+was)\s+(?:all\s+)?(?:false|incorrect|wrong|untrue|"
    r"inaccurate|not\s+true|not\s+correct)|(?:disregard|ignore)\s+(?:this|that|the\s+above|everything\s+above)))"
    r"[\s.!?…)\]]*$",
    _I,
)


#: A sentence that only says a state has ended ("Not anymore.", "No longer!"): it takes back a statement of
#: the present ("Alice uses Jira. Not anymore."), not one of the past, which stays true ("I was a smoker for
#: 15 years. Not anymore.", "I used to live in Berlin. No longer.").
_ENDED = re.compile(r"^\W*(?:not\s+any\s?more|no\s+longer)[\s.!?…)\]]*$", _I)


def _takes_back(verdict: str, statement: str) -> bool:
    """Whether ``verdict``, the sentence right after ``statement``, is only a verdict on it (:data:`_VERDICT`,
    or :data:`_ENDED` after a statement of the present)."""
    return bool(_VERDICT.match(verdict)) or (bool(_ENDED.match(verdict)) and not is_past_claim(statement))


def points_back(found: Sequence[Sentence], index: int, target: int, modes: frozenset[str]) -> bool:
    """Whether sentence ``index``, right after ``target`` in its passage, doubts or denies it as a
    whole: it is only a verdict ("Unconfirmed.", "Just kidding.", "Or so I was told."), or it points
    back (this, that, these, those, above), names nothing of its own — no content stem of the
    target and no name — and has a mode the claim lacks or denies it ("I'm not sure about this.",
    "This isn't true."; not "The river is not navigable above Dunmore.", not "This was not widely
    known.")."""
    sentence = found[index]
    if index != target + 1 or sentence.passage != found[target].passage:
        return False
    if _takes_back(sentence.text, found[target].text):
        return True
    if _ENDED.match(sentence.text) or not _DEMONSTRATIVE.search(sentence.text):
        return False
    names = [word for word in sentence.text.split()[1:] if word[:1].isupper() and word != "I"]
    if names or sentence.words & found[target].words:
        return False
    doubts = not modes_compatible(unit_modes(sentence.text), modes)
    return doubts or (is_negated(sentence.text) and bool(_DENIAL.search(sentence.text)))


_REPORTING = re.compile(
    r"\b(?:believed?s?|thought|thinks?|taught|teach(?:es)?|claim(?:s|ed)?|said|says|argued?s?|held|assumed?s?|"
    r"predicted|expected|hoped|feared|suspected|insisted|maintained)\b",
    _I,
)


def withdrawal(found: Sequence[Sentence], claim_stems: frozenset[str], modes: frozenset[str]) -> Optional[tuple[int, str]]:
    """A sentence the model read, right after a support sentence, that withdraws or doubts it as a
    whole (:func:`points_back`: "This is false.", "Just kidding.", "Unconfirmed."): the support
    sentence's index and the withdrawing sentence. One the recheck dropped is a frame instead."""
    targets = set(support_targets(claim_stems, found))
    for index, sentence in enumerate(found):
        if not sentence.kept or index - 1 not in targets or sentence.passage != found[index - 1].passage:
            continue
        # only a verdict ("reported that …" points at nothing), on a statement: after "Aristotle taught
        # that …" or "Columbus believed …", "This is wrong." judges what was taught or believed
        if _takes_back(sentence.text, found[index - 1].text) and not _REPORTING.search(found[index - 1].text):
            return index - 1, sentence.text
    return None


_FORWARD = re.compile(r":\s*$|\b(?:the\s+following|as\s+follows)\b", _I)


def points_forward(found: Sequence[Sentence], index: int, target: int) -> bool:
    """Whether sentence ``index``, right before ``target`` in its passage, introduces it: it ends
    in ":" or announces what follows ("the following", "as follows")."""
    sentence = found[index]
    return index == target - 1 and sentence.passage == found[target].passage and bool(_FORWARD.search(sentence.text))


def _ends_line(found: Sequence[Sentence], index: int) -> bool:
    return index + 1 >= len(found) or found[index + 1].passage != found[index].passage or found[index + 1].line != found[index].line


def _frame_trigger(sentence: Sentence, modes: frozenset[str], approval: bool) -> Optional[str]:
    """What makes a header line (ending in ":") a frame: a status word, a negation, a question, or
    a mode the claim does not have ("Rumours we could not confirm:", "Things Omar claimed:")."""
    label = _STATUS.search(sentence.text) if approval else None
    if label:
        return label.group(0)
    if is_negated(sentence.text) or opens_question(sentence.text):
        return sentence.text.strip()
    if not modes_compatible(unit_modes(sentence.text), modes):
        return sentence.text.strip()
    return None


_QUOTE_FRAME = re.compile(
    r"\b(?:said|says|stated|told\s+\w+|claimed|argued|insisted|alleged|wrote|writes|posted|read|reads)\s*[,:]?\s*\"", _I
)


def frame_marks(
    found: Sequence[Sentence], modes: frozenset[str], claim_stems: frozenset[str], *, attribution: bool, approval: bool
) -> Marks:
    """The sentences holding claim stems that a frame introduces, marked whole, with the frame's trigger:

    - the label sentences that open a passage ("Draft proposal from J. Not approved by Finance.")
      frame the rest of the passage;
    - a label that is a line of its own ("DRAFT - for internal review only", "Unapproved draft
      for the press release:") frames the lines after it;
    - a header line ending in ":" with a status word, a negation, a question or a mode the claim
      lacks frames the line after it, or the list that follows it;
    Labels and status words count only with ``approval`` (the claim is not itself about a draft,
    a proposal or an approval);
    - with ``attribution`` (the claim has no attribution, uncertainty or attitude), a quote opened
      after "Omar said:" frames the sentences up to its closing quote.
    """
    marks: Marks = {}

    def mark(index: int, trigger: str) -> None:
        if found[index].words & claim_stems:  # only where claim content is can a mark matter
            marks.setdefault(index, []).append((0, len(found[index].text), trigger))

    # Each rule marks a sentence once: the first label of a passage already frames all that a
    # later one would, and so does the first of several unclosed quotes (linear time).
    opening, framed = True, -1
    status = KeyIndex([sentence.text for sentence in found]).status_possible() if approval else []
    for index, sentence in enumerate(found):
        if index and found[index - 1].passage != sentence.passage:
            opening, framed = True, -1
        # A label counts only opening its passage or alone on its line: tested first, it is cheap.
        framing = approval and status[index] and (opening or _whole_line(found, index))
        label = is_label(sentence.text) if framing else None
        if label:
            if framed < 0:
                framed = index
                for other in range(index + 1, len(found)):
                    if found[other].passage != sentence.passage:
                        break
                    mark(other, label)
            continue
        opening = False
        # A header the recheck dropped is the framing_dropped rule's (docs/policy.md).
        if sentence.kept and sentence.text.rstrip().endswith(":") and _ends_line(found, index):
            trigger = _frame_trigger(sentence, modes, approval)
            other = index + 1
            while trigger and other < len(found) and found[other].passage == sentence.passage:
                if found[other].line != sentence.line + 1 and not (found[other].item and found[index + 1].item):
                    break
                mark(other, trigger)
                other += 1
    if attribution:
        covered = 0
        for index, sentence in enumerate(found):
            match = _QUOTE_FRAME.search(sentence.text) if '"' in sentence.text else None
            if not match or '"' in sentence.text[match.end() :]:
                continue  # no quote, or one that closes in its own sentence
            for other in range(max(index + 1, covered), len(found)):
                covered = other + 1
                if found[other].passage != sentence.passage:
                    break
                mark(other, match.group(0))
                if '"' in found[other].text:
                    break
    return marks


# ---------------------------------------------------------------- triggers


def mode_cue(text: str, modes: frozenset[str]) -> str:
    """The words of ``text`` that give it a mode the claim (``modes``) does not have ("probably",
    "said", "Omar thinks", "used to", "Did"): the trigger a ruling names. The clause itself when
    no single cue can be pointed at."""
    normal = normalise(text)
    bad = unit_modes(normal) - modes
    candidates = [pattern for mode, pattern in REFERENCE_MODE_PATTERNS if mode in bad]
    if UNCERTAINTY in bad:
        candidates += [_HEDGE, _MODAL_MAY]
    if ATTRIBUTION in bad:
        candidates += [_ATTRIBUTION, WORD_ON_FACT]
    if any(mode.startswith(ATTITUDE) for mode in bad):
        candidates.append(_ATTITUDE)
    if PAST in bad:
        candidates.append(_PAST)
    if QUESTION in bad or not bad:
        candidates.append(_QUESTION_START)
    for pattern in candidates:
        match = pattern.search(normal)
        if match:
            return match.group(0).strip()
    return normal.strip()


_CORRECTION = re.compile(
    r"\b(?:moved|moves|changed|changes|rescheduled|postponed|delayed|pushed|instead|rather\s+than|replaced|"
    r"switched|corrected|actually|no\s+longer|not|never|now)\b|\bfrom\b[^.;]*\bto\b",
    _I,
)


def has_correction_cue(text: str) -> bool:
    """Whether a passage corrects or replaces a value (moved, changed, from … to, instead, not…)."""
    return bool(_CORRECTION.search(normalise(text)))


_FRAMING_WORDS = re.compile(r"\b(?:this|these|those|the\s+following|following|below|above)\b", _I)


def is_framing_line(segment: str) -> bool:
    """A segment that frames others: it ends with ``:`` or points at them (this, these, below…)."""
    text = normalise(segment).strip()
    return text.endswith(":") or bool(_FRAMING_WORDS.search(text)) or bool(_VERDICT.match(text)) or bool(_ENDED.match(text))

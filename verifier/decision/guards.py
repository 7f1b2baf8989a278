"""Deterministic speech-act, negation and value guards (docs/decision.md §4) and segmentation (docs/decision.md §5).

Pure functions of text and typed provenance: no model, no I/O, no state. All
patterns are compiled once, are case-insensitive and word-bounded where the
contract says so, and contain no nested quantifiers, so every guard runs in
time linear in the length of its input (a 100 kB passage is fine).

These rules are the *reference* behaviour that recorded results are replayed
against: they are literal on purpose (straight apostrophes only in negation
cues, "may" counted as a month, value supersets counted as conflicts). A
stricter policy must be a separately named policy, never a silent change here
(docs/decision.md §9).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence

from ..types import EpistemicType, LifecycleState

__all__ = [
    "SpeechActMode",
    "Provenance",
    "PassageView",
    "speech_act_modes",
    "is_compatible",
    "modality_preserved",
    "negated_clauses",
    "has_negated_clause",
    "content_tokens",
    "singular",
    "has_negation_or_correction_cue",
    "concrete_values",
    "values_conflict",
    "exact_negation",
    "entailment_guard",
    "refutation_guard",
    "split_segments",
    "localize",
    "LocalizedPremise",
    "join_premise",
]

#: The speech-act modes of docs/decision.md §4.1.
SpeechActMode = str
DESIRE = "desire"
ATTEMPT = "attempt"
PLAN = "plan"
ADVICE = "advice"
UNCERTAINTY = "uncertainty"
CONDITIONAL = "conditional"
UNVERIFIED = "unverified"
QUESTION = "question"

_I = re.IGNORECASE

# docs/decision.md §4.1 — one alternation per mode; "…" is the stem followed by word characters.
_MODE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        DESIRE,
        re.compile(
            r"\b(?:wants?|wanted|would\s+like|wish(?:es|ed)?|hopes?|hoped|needs?|needed|aim\w*|seek\w*)\b"
            r"|\w['\u2019]d\s+like\b",
            _I,
        ),
    ),
    (ATTEMPT, re.compile(r"\b(?:try|tries|tried|trying|attempt\w*|work(?:s|ed|ing)?\s+(?:on|to))\b", _I)),
    (PLAN, re.compile(r"\b(?:plan(?:s|ned|ning)?|intend\w*|schedul\w*|consider\w*|explor\w*|evaluat\w*)\b", _I)),
    (ADVICE, re.compile(r"\b(?:should|ought|recommend\w*|suggest\w*|advis\w*)\b", _I)),
    (
        UNCERTAINTY,
        re.compile(r"\b(?:might|maybe|perhaps|possible|possibly|potentially|uncertain|whether)\b", _I),
    ),
    (CONDITIONAL, re.compile(r"\b(?:if|unless|provided\s+that|in\s+case)\b", _I)),
    (UNVERIFIED, re.compile(r"\b(?:unverified|unconfirmed|reportedly|allegedly)\b", _I)),
    (
        QUESTION,
        re.compile(
            r"\?|\b(?:ask|asks|asked|asking|questions?|questioned|questioning|wonder(?:s|ed|ing)?|whether)\b",
            _I,
        ),
    ),
)

# docs/decision.md §4.4 — clause boundaries and negation cues (straight apostrophe only, literal).
_CLAUSE_BOUNDARY = re.compile(r"[.;!?]")
_NEGATION = re.compile(
    r"\b(?:not|never|no\s+longer|cannot|can't|isn't|aren't|wasn't|weren't|didn't|doesn't|don't|won't)\b",
    _I,
)

# docs/decision.md §4.6 — negation or correction cue in the claim.
_CORRECTION_CUE = re.compile(
    r"\b(?:no|not|never|neither|nor|without|cannot|can't|isn't|aren't|wasn't|weren't|didn't|doesn't|"
    r"don't|won't|instead|rather than|switched from|replaced|incorrect|false)\b",
    _I,
)

# docs/decision.md §4.5 — content tokens.
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_GENERIC_WORDS = frozenset(
    """a an and app application are at be by currently did do does for from in i is it longer no not
    of on pipeline project service system that team the this to user was were we will with you""".split()
)

# docs/decision.md §4.6 — concrete values.
_NUMBER = re.compile(r"(?<!\w)-?\d+(?:\.\d+)?(?!\w)")
_WEEKDAY = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _I)
_MONTH = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b", _I
)
_VALUE_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("number", _NUMBER),
    ("weekday", _WEEKDAY),
    ("month", _MONTH),
)

# docs/decision.md §5 — segment boundaries, exactly PRME 0.15.0's: a run of line feeds (each
# optionally after a carriage return), or a sentence end (. ! ?) followed by whitespace, then any
# number of straight quotes or opening brackets (" ' ( [ {) and an ASCII capital or digit.
_SEGMENT_BOUNDARY = re.compile(r"(?:\r?\n)+|(?<=[.!?])\s+(?=[\"'(\[{]*[A-Z0-9])")


@dataclass(frozen=True)
class Provenance:
    """The typed provenance fields the guards read (docs/decision.md §4.2)."""

    epistemic_type: Optional[EpistemicType] = None
    lifecycle_state: Optional[LifecycleState] = None


@dataclass(frozen=True)
class PassageView:
    """A passage as the guards see it: text plus typed provenance."""

    text: str
    provenance: Provenance = Provenance()


class CacheInfo(NamedTuple):
    """Counters of :data:`speech_act_modes`' cache (the fields of ``functools.lru_cache``'s)."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class _ModesCache:
    """The speech-act modes of ``text`` (docs/decision.md §4.1): desire, attempt, plan, advice,
    uncertainty, conditional, unverified, question.

    Call it as a function: ``speech_act_modes(text) -> frozenset``. Results for
    texts up to 2,048 characters are cached (the 256 most recent), so one
    verification that asks about the same claim and passages once per group
    scans each once; longer texts are scanned every time and never kept, so the
    cache holds at most ~2 MB whatever the inputs. ``cache_info()`` and
    ``cache_clear()`` work as for :func:`functools.lru_cache` (every scan counts
    as a miss). Thread-safe.
    """

    def __init__(self, maxsize: int = 256, max_chars: int = 2048) -> None:
        self._entries: "OrderedDict[str, frozenset[SpeechActMode]]" = OrderedDict()
        self._lock = threading.Lock()
        self._maxsize = maxsize
        self._max_chars = max_chars
        self._hits = 0
        self._misses = 0

    def __call__(self, text: str) -> frozenset[SpeechActMode]:
        cacheable = len(text) <= self._max_chars
        if cacheable:
            with self._lock:
                found = self._entries.get(text)
                if found is not None:
                    self._entries.move_to_end(text)
                    self._hits += 1
                    return found
        modes = frozenset(mode for mode, pattern in _MODE_PATTERNS if pattern.search(text))
        with self._lock:
            self._misses += 1
            if cacheable:
                self._entries[text] = modes
                if len(self._entries) > self._maxsize:
                    self._entries.popitem(last=False)
        return modes

    def cache_info(self) -> CacheInfo:
        """Hits, misses, maxsize and current size, as :func:`functools.lru_cache` reports them."""
        with self._lock:
            return CacheInfo(self._hits, self._misses, self._maxsize, len(self._entries))

    def cache_clear(self) -> None:
        """Forget every cached text and reset the counters."""
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = 0


speech_act_modes = _ModesCache()


_RETIRED_LIFECYCLES = frozenset({LifecycleState.SUPERSEDED, LifecycleState.DEPRECATED, LifecycleState.ARCHIVED})


def is_compatible(provenance: Provenance, claim_modes: frozenset[SpeechActMode]) -> bool:
    """Typed compatibility of a passage with a claim (docs/decision.md §4.2).

    Superseded, deprecated or archived lifecycle, or deprecated epistemic type:
    never. Hypothetical: only for an uncertain or conditional claim.
    Conditional: only for a conditional claim. Unverified: only for an
    unverified or uncertain claim. Otherwise compatible.
    """
    if provenance.lifecycle_state in _RETIRED_LIFECYCLES:
        return False
    epistemic = provenance.epistemic_type
    if epistemic == EpistemicType.DEPRECATED:
        return False
    if epistemic == EpistemicType.HYPOTHETICAL:
        return UNCERTAINTY in claim_modes or CONDITIONAL in claim_modes
    if epistemic == EpistemicType.CONDITIONAL:
        return CONDITIONAL in claim_modes
    if epistemic == EpistemicType.UNVERIFIED:
        return UNVERIFIED in claim_modes or UNCERTAINTY in claim_modes
    return True


def modality_preserved(claim: str, passages: Sequence[PassageView]) -> bool:
    """docs/decision.md §4.3: every passage compatible and the union of passage modes ⊆ claim modes."""
    return _modality_preserved(speech_act_modes(claim), passages)


def _modality_preserved(claim_modes: frozenset[SpeechActMode], passages: Sequence[PassageView]) -> bool:
    for passage in passages:
        if not is_compatible(passage.provenance, claim_modes):
            return False
        if not speech_act_modes(passage.text) <= claim_modes:
            return False
    return True


def negated_clauses(text: str) -> list[str]:
    """Clauses (stretches without ``. ; ! ?``) that contain a negation cue (docs/decision.md §4.4)."""
    return [clause for clause in _CLAUSE_BOUNDARY.split(text) if _NEGATION.search(clause)]


def has_negated_clause(text: str) -> bool:
    """Whether ``text`` has a negated clause (docs/decision.md §4.4)."""
    return bool(_NEGATION.search(text))


def singular(word: str) -> str:
    """The crude singular of docs/decision.md §4.5: "-ies" → "-y" over 4 letters; a final "s"
    dropped over 3 letters unless "ss"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_tokens(text: str) -> frozenset[str]:
    """Content tokens of docs/decision.md §4.5: ASCII words, case-folded, generic words removed,
    plurals crudely singularised ("-ies" → "-y" over 4 letters; final "s" dropped
    over 3 letters unless "ss")."""
    tokens = set()
    for word in _WORD.findall(text):
        folded = word.lower()
        if folded in _GENERIC_WORDS:
            continue
        tokens.add(singular(folded))
    return frozenset(tokens)


def has_negation_or_correction_cue(text: str) -> bool:
    """Whether ``text`` has a negation or correction cue (docs/decision.md §4.6)."""
    return bool(_CORRECTION_CUE.search(text))


def concrete_values(text: str) -> dict[str, frozenset[str]]:
    """Concrete values by kind (docs/decision.md §4.6): ``number`` (as written), ``weekday`` and
    ``month`` (full English names, case-folded). Kinds with no value are omitted."""
    values: dict[str, frozenset[str]] = {}
    for kind, pattern in _VALUE_KINDS:
        found = frozenset(match.casefold() for match in pattern.findall(text))
        if found:
            values[kind] = found
    return values


def values_conflict(claim: str, passages_text: str) -> bool:
    """Claim and passages both name values of one kind and the two sets differ (docs/decision.md §4.6)."""
    claim_values = concrete_values(claim)
    if not claim_values:
        return False
    passage_values = concrete_values(passages_text)
    return any(
        kind in passage_values and passage_values[kind] != found for kind, found in claim_values.items()
    )


def exact_negation(claim: str, passages: Sequence[PassageView]) -> bool:
    """docs/decision.md §4.5: the passages carry an exact negation of the claim.

    The claim has no negated clause, modality is preserved, the claim has at
    least 2 content tokens, and some compatible passage has a negated clause
    whose content tokens equal the claim's (2-token claims) or contain all of
    them (longer claims).
    """
    if has_negated_clause(claim) or not modality_preserved(claim, passages):
        return False
    claim_tokens = content_tokens(claim)
    if len(claim_tokens) < 2:
        return False
    claim_modes = speech_act_modes(claim)
    for passage in passages:
        if not is_compatible(passage.provenance, claim_modes):
            continue
        for clause in negated_clauses(passage.text):
            clause_tokens = content_tokens(clause)
            if len(claim_tokens) == 2:
                if clause_tokens == claim_tokens:
                    return True
            elif claim_tokens <= clause_tokens:
                return True
    return False


def entailment_guard(claim: str, passages: Sequence[PassageView]) -> bool:
    """docs/decision.md §4.4: modality preserved and, for a claim without a negated clause, no
    passage has one."""
    if not modality_preserved(claim, passages):
        return False
    if not has_negated_clause(claim) and any(has_negated_clause(p.text) for p in passages):
        return False
    return True


def refutation_guard(claim: str, passages: Sequence[PassageView]) -> bool:
    """docs/decision.md §4.6: modality preserved, and the claim has a negation/correction cue, or
    claim and passages (raw texts joined by line breaks) name differing values of one
    kind, or :func:`exact_negation` holds."""
    if not modality_preserved(claim, passages):
        return False
    if has_negation_or_correction_cue(claim):
        return True
    if values_conflict(claim, "\n".join(p.text for p in passages)):
        return True
    return exact_negation(claim, passages)


def join_premise(texts: Sequence[str]) -> str:
    """Join passages into one premise: ``"[E1] a\\n[E2] b"``; one passage is its bare text (docs/decision.md §3)."""
    if len(texts) == 1:
        return texts[0]
    return "\n".join(f"[E{index}] {text}" for index, text in enumerate(texts, start=1))


def split_segments(text: str) -> list[str]:
    """Split a passage into segments at line breaks and sentence ends (docs/decision.md §5).

    Exactly the reference's rule (PRME 0.15.0, docs/compatibility.md): split
    at a run of ``\n`` (``\r\n`` included; a lone ``\r``, U+2028 and other
    separators are not line breaks), and after ``.``, ``!`` or ``?`` at
    whitespace followed by any number of ``"``, ``'``, ``(``, ``[`` or ``{``
    and an ASCII capital letter or digit. Segments are stripped
    (:meth:`str.strip`); empty ones are dropped and not numbered.
    """
    return [segment.strip() for segment in _SEGMENT_BOUNDARY.split(text) if segment.strip()]


@dataclass(frozen=True)
class LocalizedPremise:
    """Result of localizing a blocked group (docs/decision.md §5).

    ``included_segment_numbers`` has one sorted tuple of one-based segment
    numbers per passage of the group; ``premise`` is ``None`` when no passage
    kept anything (then no model call is made).
    """

    included_segment_numbers: tuple[tuple[int, ...], ...]
    premise: Optional[str]


def _segment_kept(
    claim_modes: frozenset[SpeechActMode], claim_negated: bool, segment: str, provenance: Provenance
) -> bool:
    if not _modality_preserved(claim_modes, (PassageView(segment, provenance),)):
        return False
    return claim_negated or not has_negated_clause(segment)


def localize(claim: str, passages: Sequence[PassageView]) -> LocalizedPremise:
    """Build the localized recheck premise of docs/decision.md §5 for a guard-blocked group.

    A segment is kept when, alone with its passage's provenance, it preserves
    the claim's modality and — for a claim without a negated clause — has no
    negated clause. Kept segments of one passage are joined by line breaks;
    remaining passages are numbered ``[E1]``, ``[E2]``… (one remaining passage:
    its bare text).
    """
    claim_modes = speech_act_modes(claim)
    claim_negated = has_negated_clause(claim)
    numbers: list[tuple[int, ...]] = []
    kept_texts: list[str] = []
    for passage in passages:
        kept = [
            (index, segment)
            for index, segment in enumerate(split_segments(passage.text), start=1)
            if _segment_kept(claim_modes, claim_negated, segment, passage.provenance)
        ]
        numbers.append(tuple(index for index, _ in kept))
        if kept:
            kept_texts.append("\n".join(segment for _, segment in kept))
    premise = join_premise(kept_texts) if kept_texts else None
    return LocalizedPremise(tuple(numbers), premise)


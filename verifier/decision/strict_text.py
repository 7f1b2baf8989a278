"""Text analysis of the strict policy (docs/policy.md): normalisation, scoped hedges, negation scope, values.

Pure functions of text, like :mod:`verifier.decision.guards`, and never used by the
reference policies. Every pattern is compiled once and has no nested
quantifiers, so each function runs in time linear in its input.

Texts are matched after :func:`normalise`: Unicode NFKC (full-width letters
become ASCII), curly apostrophes and quotes become straight ones, and the
minus sign U+2212 becomes ``-``.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, InvalidOperation

from .guards import UNCERTAINTY, singular, speech_act_modes

__all__ = [
    "normalise",
    "strict_tokens",
    "strict_modes",
    "claim_modes",
    "negated_clauses",
    "is_negated",
    "claim_cue",
    "strict_values",
    "values_conflict",
    "has_total_cue",
    "has_correction_cue",
    "is_framing_line",
    "ATTRIBUTION",
    "PAST",
]

ATTRIBUTION = "attribution"
PAST = "past"
QUESTION = "question"

_I = re.IGNORECASE
_TRANSLATE = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"', "\u2212": "-"}
)


def normalise(text: str) -> str:
    """NFKC, straight apostrophes and quotes, ASCII minus (docs/policy.md, "Normalisation")."""
    return unicodedata.normalize("NFKC", text).translate(_TRANSLATE)


# ---------------------------------------------------------------- words and content tokens

_TOKEN = re.compile(r"[^\W_][\w'-]*(?:[.,]\d+)*")
_CONTRACTIONS = {
    "dont": "do", "doesnt": "does", "didnt": "did", "isnt": "is", "wasnt": "was", "arent": "are",
    "werent": "were", "cant": "can", "cannot": "can", "wont": "will", "hasnt": "has", "havent": "have",
    "hadnt": "had", "couldnt": "could", "shouldnt": "should", "wouldnt": "would",
}
_NEGATION_WORDS = frozenset({"not", "never", "no", "nobody", "none", "nothing", "neither", "nor"})
#: The reference's generic words (docs/decision.md §4.5) plus auxiliaries and fillers.
_GENERIC = frozenset(
    """a an and app application are at be by currently did do does for from in i is it longer no not
    of on pipeline project service system that team the this to user was were we will with you
    has have had been can anymore any""".split()
)


def _number(text: str) -> str:
    """A number as a canonical string: commas dropped, ``3.0`` → ``3``, ``-0`` → ``0``."""
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the patterns only pass digits
        return text
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f")


def strict_tokens(text: str) -> frozenset[str]:
    """Content tokens (docs/policy.md): like the reference's, but over every Unicode word and number
    (numbers canonical: ``1,000`` = ``1000``, ``3.0`` = ``3``), with contractions read as their
    auxiliary and negation words left out."""
    tokens: set[str] = set()
    for word in _TOKEN.findall(normalise(text)):
        folded = word.casefold().rstrip("'")
        if folded.endswith("'s"):
            folded = folded[:-2]
        if folded[0].isdigit():
            tokens.add(_number(folded) if re.fullmatch(r"\d[\d,]*(?:\.\d+)?", folded) else folded)
            continue
        if folded.endswith("n't"):
            folded = {"can't": "can", "won't": "will"}.get(folded, folded[:-3])
        folded = _CONTRACTIONS.get(folded, folded)
        if folded in _GENERIC or folded in _NEGATION_WORDS:
            continue
        tokens.add(singular(folded))
    return frozenset(tokens)


# ---------------------------------------------------------------- clauses and negation scope

_CLAUSE = re.compile(r"[;:!?]|[.,](?!\d)|\b(?:but|however|whereas|although|though)\b", _I)
_SCOPE = re.compile(r"[;:!?]|[.,](?!\d)|\b(?:so|because|but|and|while|although|though|whereas|however)\b", _I)
_QUOTED = re.compile(r'"[^"\n]*"')
_RELATIVE_NEGATION = re.compile(
    r"\b(?:that|which|who)\s+(?:(?:is|was|were|are|has|had|have|been|did|does|do)\s+)*"
    r"(?:not|never|\w+n't)\s+\w+",
    _I,
)
_NEGATION_CUE = re.compile(
    r"\b(?:not(?!\s+(?:only|just)\b)|never|no\s+longer|cannot|\w+n't|dont|doesnt|didnt|isnt|wasnt|arent|"
    r"werent|cant|wont|hasnt|havent|hadnt|couldnt|shouldnt|wouldnt|nobody|none|nothing|neither|nor|"
    r"(?<!\bwith\s)no(?!\s+longer)(?=\s+\w))\b",
    _I,
)


def negated_clauses(text: str) -> list[str]:
    """Clauses with an odd number of negation cues (docs/policy.md, "Negation scope").

    Quoted spans are mentions, not assertions, and are left out; a negation in
    a relative clause (``that was not tested``) is cut out with it; clauses end
    at ``. ; : ! ? ,`` and at but/however/whereas/although/though; "not only"
    and "with no" are not negations; two negations in one clause cancel.
    """
    text = _RELATIVE_NEGATION.sub(" ", _QUOTED.sub(" ", normalise(text)))
    return [clause for clause in _CLAUSE.split(text) if len(_NEGATION_CUE.findall(clause)) % 2 == 1]


def is_negated(text: str) -> bool:
    """Whether ``text`` has a negated clause in the strict sense."""
    return bool(negated_clauses(text))


_CLAIM_CUE = re.compile(
    r"\b(?:neither|nor|without|instead|rather\s+than|switched\s+from|replaced|incorrect|false)\b", _I
)


def claim_cue(claim: str) -> bool:
    """The strict negation or correction cue of a claim: the reference's cues read after
    :func:`normalise`, plus every strict negation cue (docs/policy.md)."""
    text = normalise(claim)
    return bool(_CLAIM_CUE.search(text) or _NEGATION_CUE.search(text))


# ---------------------------------------------------------------- speech acts

_MONTH_MAY_CONTEXT = re.compile(
    r"\b(?:in|of|since|until|till|by|from|early|late|mid|during|on|before|after|through)\s+may\b"
    r"|\bmay\s*\d|\d\s*may\b",
    _I,
)
_HEDGE = re.compile(
    r"\b(?:probably|likely|unlikely|could|expected\s+to|seems?|seemed|appears?\s+to|apparently|"
    r"presumably|supposedly|i\s+think|i\s+believe|i\s+guess|i\s+suppose|not\s+sure|unsure|"
    r"sounds\s+like)\b",
    _I,
)
#: The modal "may": followed by a lower-case word (so "May Chen" is a name), and not in a month context.
_MODAL_MAY = re.compile(r"\b[Mm]ay\s+(?:not\s+)?[a-z]")
_ATTRIBUTION = re.compile(
    r"\b(?:claim(?:s|ed)?\s+that|claimed|said|says|stated|states\s+that|told|according\s+to|"
    r"reported\s+that|believes?|thinks|argued|insisted|alleged|rumou?red|heard\s+that)\b",
    _I,
)
_PAST = re.compile(r"\b(?:used\s+to|formerly|former)\b", _I)
_QUESTION_START = re.compile(
    r"^\W*(?:do|does|did|is|are|was|were|can|could|would|should|has|have|had|shall)\s+(?!not\b)\w"
    r"|\b(?:can|could)\s+you\b|\bplease\s+confirm\b",
    _I,
)


def _hedged(clause: str) -> bool:
    if _HEDGE.search(clause):
        return True
    return any(
        not _MONTH_MAY_CONTEXT.search(clause[max(0, match.start() - 12) : match.end()])
        for match in _MODAL_MAY.finditer(clause)
    )


def _extra_modes(text: str, claim_tokens: frozenset[str] | None) -> set[str]:
    """The strict policy's extra modes of ``text``: hedges (as uncertainty), attribution, past
    state, questions without "?". With ``claim_tokens``, only clauses (and, for questions, lines
    and sentences) sharing a content token with the claim count: an unrelated "could" does not
    block."""
    modes: set[str] = set()
    for line in text.splitlines():
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            if _QUESTION_START.search(sentence) and (claim_tokens is None or strict_tokens(sentence) & claim_tokens):
                modes.add(QUESTION)
        for piece in [line] if claim_tokens is None else _SCOPE.split(line):
            if claim_tokens is not None and not strict_tokens(piece) & claim_tokens:
                continue
            if _hedged(piece):
                modes.add(UNCERTAINTY)
            if _ATTRIBUTION.search(piece):
                modes.add(ATTRIBUTION)
            if _PAST.search(piece):
                modes.add(PAST)
    return modes


def claim_modes(claim: str) -> frozenset[str]:
    """A claim's modes under the strict policy: the reference modes of the normalised claim plus
    every extra mode anywhere in it."""
    text = normalise(claim)
    return speech_act_modes(text) | frozenset(_extra_modes(text, None))


def strict_modes(text: str, claim_tokens: frozenset[str]) -> frozenset[str]:
    """A passage's modes under the strict policy: the reference modes of the normalised text plus
    the extra modes of the clauses that share a content token with the claim."""
    normal = normalise(text)
    return speech_act_modes(normal) | frozenset(_extra_modes(normal, claim_tokens))


# ---------------------------------------------------------------- values

_MONTHS = ("january february march april may june july august september october november december").split()
_MONTH_ABBREVIATIONS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9,
                        "Sept": 9, "Oct": 10, "Nov": 11, "Dec": 12}
_MONTH_WORD = r"(?:[Jj]anuary|[Ff]ebruary|[Mm]arch|[Aa]pril|May|[Jj]une|[Jj]uly|[Aa]ugust|[Ss]eptember|" \
              r"[Oo]ctober|[Nn]ovember|[Dd]ecember|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DATE_MD = re.compile(rf"\b({_MONTH_WORD})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?")
_DATE_DM = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_WORD})(?:,?\s+(\d{{4}})\b)?")
_UNITS = frozenset(
    "% b kb mb gb tb pb kib mib gib tib ms s sec secs second seconds min mins minute minutes h hr hrs hour "
    "hours d day days wk week weeks mo month months yr year years km m cm mm kg g mg lb lbs ghz mhz hz "
    "usd eur gbp k x rps qps".split()
)
_QUANTITY = re.compile(r"(?<![\w.])(-?)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(st|nd|rd|th)?(?:\s?(%|[A-Za-z]+))?")
_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", _I)
_WEEKDAYS = ("monday tuesday wednesday thursday friday saturday sunday").split()
_WEEKDAY = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _I)
_WEEKDAY_ABBREVIATION = re.compile(r"\b(Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b\.?")
_MONTH_NAME = re.compile(
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december)\b", _I
)


def _month_number(word: str) -> int:
    word = word.rstrip(".")
    if word in _MONTH_ABBREVIATIONS:
        return _MONTH_ABBREVIATIONS[word]
    return _MONTHS.index(word.lower()) + 1


def strict_values(text: str) -> dict[str, frozenset[str]]:
    """Values by kind after normalisation (docs/policy.md, "Values"): ``date`` (month-day, ISO
    and written forms alike; a date's year also counts as a ``number``), ``quantity`` (number
    with a unit), ``number`` (canonical; number words two…thousand), ``weekday`` (names and
    capitalised abbreviations), ``month`` (names; "may" only next to a day or after in/of/by…)."""
    text = normalise(text)
    found: dict[str, set[str]] = {}

    def add(kind: str, value: str) -> None:
        found.setdefault(kind, set()).add(value)

    def date(match: "re.Match[str]", year: str | None, month: int, day: str) -> str:
        if year:
            add("number", _number(year))
        add("date", f"{month:02d}-{int(day):02d}")
        return " "

    text = _ISO_DATE.sub(lambda m: date(m, m.group(1), int(m.group(2)), m.group(3)), text)
    text = _DATE_MD.sub(lambda m: date(m, m.group(3), _month_number(m.group(1)), m.group(2)), text)
    text = _DATE_DM.sub(lambda m: date(m, m.group(3), _month_number(m.group(2)), m.group(1)), text)
    for match in _QUANTITY.finditer(text):
        sign, digits, ordinal, unit = match.groups()
        value = _number(sign + digits)
        if ordinal is not None:
            add("number", value)
        elif unit is not None and unit.lower() in _UNITS:
            add("quantity", f"{value} {unit.lower()}")
        elif match.end(2) < len(text) and (text[match.end(2)].isalnum() or text[match.end(2)] == "_"):
            continue  # digits glued to a word that is not a unit: an identifier, not a value
        else:
            add("number", value)
    for match in _NUMBER_WORD.finditer(text):
        add("number", str(_NUMBER_WORDS[match.group(1).lower()]))
    for match in _WEEKDAY.finditer(text):
        add("weekday", match.group(0).lower())
    for match in _WEEKDAY_ABBREVIATION.finditer(text):
        prefix = match.group(1)[:3].lower()
        add("weekday", next(day for day in _WEEKDAYS if day.startswith(prefix)))
    for match in _MONTH_NAME.finditer(text):
        add("month", match.group(0).lower())
    for match in _MONTH_MAY_CONTEXT.finditer(text):
        add("month", "may")
    return {kind: frozenset(values) for kind, values in found.items()}


_TOTAL = re.compile(r"\b(?:in\s+total|total|totals|altogether|overall|combined|in\s+all|sum)\b", _I)


def has_total_cue(text: str) -> bool:
    """Whether ``text`` states an aggregate (in total, altogether, overall, combined, sum…)."""
    return bool(_TOTAL.search(normalise(text)))


def values_conflict(claim: str, passages_text: str, *, ignore_numbers: bool = False) -> bool:
    """Some kind has values in both, and a value of the claim is not among the passages'
    (a superset in the passages is no conflict)."""
    claim_values = strict_values(claim)
    passage_values = strict_values(passages_text)
    for kind, values in claim_values.items():
        if ignore_numbers and kind in ("number", "quantity"):
            continue
        if kind in passage_values and not values <= passage_values[kind]:
            return True
    return False


_CORRECTION = re.compile(
    r"\b(?:moved|moves|changed|changes|rescheduled|postponed|delayed|pushed|instead|rather\s+than|replaced|"
    r"switched|corrected|actually|no\s+longer|not|never|now)\b|\bfrom\b[^.;]*\bto\b",
    _I,
)


def has_correction_cue(text: str) -> bool:
    """Whether a passage corrects or replaces a value (moved, changed, from … to, instead, not…)."""
    return bool(_CORRECTION.search(normalise(text)))


_DEMONSTRATIVE = re.compile(r"\b(?:this|these|those|the\s+following|following|below|above)\b", _I)


def is_framing_line(segment: str) -> bool:
    """A segment that frames others: it ends with ``:`` or points at them (this, these, below…)."""
    text = normalise(segment).strip()
    return text.endswith(":") or bool(_DEMONSTRATIVE.search(text))

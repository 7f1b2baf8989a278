"""Values of the strict policy (docs/policy.md, "Values"): dates, quantities in base units, numbers,
weekdays, months.

Pure functions of text, never used by the reference policies. Every pattern is
compiled once and has no nested quantifiers. Texts are matched after
:func:`verifier.decision.strict_text.normalise` (NFKC, straight quotes, ASCII
minus), done here so callers may pass raw text.

A quantity is kept as its *family* (time, data, length, …) and its value in the
family's base unit, so ``2 hours`` and ``120 minutes`` are one value. A data
size names both its decimal and its binary reading (``1 GB`` is 10^9 or 2^30
bytes), and two sizes agree when a reading agrees.
"""

from __future__ import annotations

import math
import re
from typing import AbstractSet, Callable, Optional
import unicodedata
from decimal import Decimal, InvalidOperation

__all__ = ["normal_text", "canonical_number", "strict_values", "values_conflict", "has_total_cue", "month_may", "opens_sentence"]

_I = re.IGNORECASE
_STRAIGHT = (("\u2019", "'"), ("\u2018", "'"), ("\u02bc", "'"), ("\u2032", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u2212", "-"))
#: The two letters besides ſ and K (which NFKC folds) that ``re.IGNORECASE`` matches to an ASCII
#: letter while ``str.lower`` does not make them one: read as ``i``/``I``, so a pattern's match and
#: the lower-case tables it is looked up in agree ("mıllion" is "million", not a KeyError).
_DOTTED_I = (("\u0131", "i"), ("\u0130", "I"))


#: A number sign before a number ("nº 12", "№ 12", "No. 12"), read "number": NFKC makes "nº" and
#: "№" the word "no", which the negation rules would read (docs/policy.md, "Normalisation").
_NUMBER_SIGN = re.compile(r"№|\b[Nn]\.?[º°]|\bNo\.(?=\s*\d)")


def normal_text(text: str) -> str:
    """NFKC, straight apostrophes and quotes, ASCII minus, the Turkish ı/İ as i/I, a number sign as
    "number" (docs/policy.md, "Normalisation and self-reports")."""
    if text.isascii():  # NFKC and the replacements leave ASCII as it is
        return _NUMBER_SIGN.sub("number", text) if "No." in text else text
    text = unicodedata.normalize("NFKC", _NUMBER_SIGN.sub("number", text))
    for curly, straight in _STRAIGHT + _DOTTED_I:  # str.replace per character: much faster than str.translate
        if curly in text:
            text = text.replace(curly, straight)
    return text


def canonical_number(text: str) -> str:
    """A number as a canonical string: commas dropped, ``3.0`` → ``3``, ``-0`` → ``0``.

    Exact for any length (no float, no rounding to the decimal context's 28 digits, no int
    conversion, whose 4,300-digit limit a passage of digits would hit)."""
    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the patterns only pass digits
        return text
    if not value.is_finite():  # pragma: no cover - the patterns only pass digits
        return text
    if value.is_zero():
        return "0"
    written = format(value, "f")
    if "." in written:
        written = written.rstrip("0").rstrip(".")
    return written


def scaled_number(digits: str, scale: str, sign: str = "") -> str:
    """``sign digits × scale`` (a :data:`_SCALE` word: k, million, ...) as :func:`canonical_number`
    gives it, computed exactly: "1.1 million" is 1100000, as "1,100,000" is (a float product is
    1100000.0000000002), and a number of any length stays finite."""
    value = Decimal(sign + digits.replace(",", ""))
    shift = round(math.log10(_SCALE[scale.lower()]))
    sign_bit, figures, exponent = value.as_tuple()
    return canonical_number(str(Decimal((sign_bit, figures, int(exponent) + shift))))


def _fmt(value: float) -> str:
    return f"{value:.9g}"


# ---------------------------------------------------------------- units

_TIME = {"ms": 0.001, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "min": 60, "mins": 60,
         "minute": 60, "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
         "d": 86400, "day": 86400, "days": 86400, "wk": 604800, "week": 604800, "weeks": 604800}
_CALENDAR = {"mo": 1, "month": 1, "months": 1, "yr": 12, "year": 12, "years": 12}
_LENGTH = {"km": 1000, "m": 1, "cm": 0.01, "mm": 0.001, "kilometre": 1000, "kilometres": 1000, "kilometer": 1000,
           "kilometers": 1000, "metre": 1, "metres": 1, "meter": 1, "meters": 1, "centimetres": 0.01,
           "centimeters": 0.01, "millimetres": 0.001, "millimeters": 0.001}
_MASS = {"kg": 1000, "g": 1, "mg": 0.001, "kilogram": 1000, "kilograms": 1000, "gram": 1, "grams": 1,
         "tonne": 1e6, "tonnes": 1e6}
_FREQUENCY = {"ghz": 1e9, "mhz": 1e6, "hz": 1}
_DATA = {"b": 0, "kb": 1, "mb": 2, "gb": 3, "tb": 4, "pb": 5}
_BINARY = {"kib": 1, "mib": 2, "gib": 3, "tib": 4}
_OWN = {"%": "percent", "percent": "percent", "lb": "lb", "lbs": "lb", "usd": "usd", "eur": "eur",
        "gbp": "gbp", "x": "times", "rps": "rps", "qps": "qps", "dollars": "usd", "dollar": "usd",
        "euros": "eur", "euro": "eur"}
_SCALE = {"k": 1e3, "hundred": 1e2, "thousand": 1e3, "m": 1e6, "mm": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9,
          "billion": 1e9, "trillion": 1e12}
_UNIT_WORDS = frozenset(_TIME) | frozenset(_CALENDAR) | frozenset(_LENGTH) | frozenset(_MASS) \
    | frozenset(_FREQUENCY) | frozenset(_DATA) | frozenset(_BINARY) | frozenset(_OWN)


def _readings(value: float, unit: str) -> tuple[str, frozenset[str]] | None:
    """A quantity's family and canonical readings, or ``None`` for a word that is no unit."""
    unit = unit.lower()
    for family, table in (("time", _TIME), ("calendar", _CALENDAR), ("length", _LENGTH), ("mass", _MASS),
                          ("frequency", _FREQUENCY)):
        if unit in table:
            return family, frozenset({_fmt(value * table[unit])})
    if unit in _DATA:
        power = _DATA[unit]
        return "data", frozenset({_fmt(value * 1000**power), _fmt(value * 1024**power)})
    if unit in _BINARY:
        return "data", frozenset({_fmt(value * 1024 ** _BINARY[unit])})
    if unit in _OWN:
        return _OWN[unit], frozenset({_fmt(value)})
    return None


# ---------------------------------------------------------------- patterns

_MONTHS = ("january february march april may june july august september october november december").split()
_MONTH_ABBREVIATIONS = {"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9,
                        "Sept": 9, "Oct": 10, "Nov": 11, "Dec": 12}
_MONTH_WORD = r"(?:[Jj]anuary|[Ff]ebruary|[Mm]arch|[Aa]pril|May|[Jj]une|[Jj]uly|[Aa]ugust|[Ss]eptember|" \
              r"[Oo]ctober|[Nn]ovember|[Dd]ecember|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DATE_MD = re.compile(rf"\b({_MONTH_WORD})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?")
_DATE_DM = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_WORD})(?:,?\s+(\d{{4}})\b)?")
_DIGITS = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
_MONEY = re.compile(r"([$€£])\s?" + _DIGITS + r"(?:\s?(k|mm|m|bn|b|thousand|million|billion|trillion)\b)?", _I)
_SCALED = re.compile(
    r"(?<![\w.])(-?)" + _DIGITS + r"\s+(hundred|thousand|million|billion|trillion)\b(?!-)(?:\s+(dollars?|euros?))?", _I
)
#: A decade ("the 1990s") is a span, not a value.
_DECADE = re.compile(r"\b\d{3}0s\b")
_QUANTITY = re.compile(r"(?<![\w.])(-?)" + _DIGITS + r"(st|nd|rd|th)?(?:(?:\s?|-)(%|[A-Za-z]+))?")
_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b(?:(?:\s|-)([A-Za-z]+|%))?", _I)
_PER_CENT = re.compile(r"\bper\s+cent\b", _I)
#: Scale words after a number word: "four hundred" is 400, not 4 (but "four hundred-metre repeats" are four).
_WORD_SCALES = frozenset({"hundred", "thousand", "million", "billion", "trillion"})
_WEEKDAYS = ("monday tuesday wednesday thursday friday saturday sunday").split()
_WEEKDAY = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _I)
_WEEKDAY_ABBREVIATION = re.compile(r"\b(Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b\.?")
_MONTH_NAME = re.compile(
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december)\b", _I
)
#: "may" next to a day number or after in/of/by/since…: the month whatever its case.
MONTH_MAY_CONTEXT = re.compile(
    r"\b(?:in|of|since|until|till|by|from|early|late|mid|during|on|before|after|through)\s+may\b"
    r"|\bmay\s*\d|\d\s*may\b",
    _I,
)
#: Capitalised "May" that is not a name ("May Chen"): the month, unless it opens a sentence as a modal.
_CAPITAL_MAY = re.compile(r"\bMay\b(?!\s+[A-Z])")
_MODAL_FOLLOWER = re.compile(r"\s+(?:we|you|he|she|it|they)\b")


def opens_sentence(text: str, position: int) -> bool:
    """Whether ``position`` starts a sentence: only quotes or brackets after a line or sentence end."""
    # Walked back from ``position``, not sliced: a long passage with many "May" stays linear.
    index = position - 1
    while index >= 0 and text[index] in " \t\"'([{":
        index -= 1
    return index < 0 or text[index] in ".!?\n"


def month_may(text: str) -> bool:
    """Whether ``text`` names the month May: "may" in a month context (``in May``, ``May 4``), or a
    capitalised "May" that is not followed by a capitalised word (a name, or "May I") and does not
    open a sentence as a modal ("May we …"). Matched on normalised text."""
    if "may" not in text.lower():
        return False  # every pattern needs it (a cheap test first: docs/policy.md, "Cost")
    if MONTH_MAY_CONTEXT.search(text):
        return True
    return any(
        not (opens_sentence(text, match.start()) and _MODAL_FOLLOWER.match(text, match.end()))
        for match in _CAPITAL_MAY.finditer(text)
    )


def _month_number(word: str) -> int:
    word = word.rstrip(".")
    if word in _MONTH_ABBREVIATIONS:
        return _MONTH_ABBREVIATIONS[word]
    return _MONTHS.index(word.lower()) + 1


_QUALIFIER = re.compile(
    r"\b(over|more\s+than|above|exceeding|in\s+excess\s+of|upwards\s+of|at\s+least|greater\s+than|under|"
    r"less\s+than|below|fewer\s+than|at\s+most|up\s+to|no\s+more\s+than|about|around|approximately|roughly|"
    r"nearly|almost|some|circa|an\s+estimated|estimated)\s*[$€£]?\s*$|~\s*$",
    _I,
)
_AT_LEAST = frozenset({"over", "more than", "above", "exceeding", "in excess of", "upwards of", "at least", "greater than"})
_AT_MOST = frozenset({"under", "less than", "below", "fewer than", "at most", "up to", "no more than"})
_EXACT = (1.0, 1.0)
#: (kind, value) → the factors a claim value's readings may be scaled by and still match.
Bounds = dict[tuple[str, str], tuple[float, float]]


def _bounds(text: str, start: int, digits: str, scaled: bool) -> tuple[float, float]:
    """How loosely a claim states a number: "over 20,000" is any reading at least 20,000, "about
    6,400" one within 10 %, "$50 million" one that rounds to it (50.3 million), "21,000" one that
    rounds to the thousand; years and small numbers are exact."""
    qualifier = _QUALIFIER.search(text[max(0, start - 24) : start])
    if qualifier:
        word = " ".join((qualifier.group(1) or "~").lower().split())
        return (1.0, math.inf) if word in _AT_LEAST else (0.0, 1.0) if word in _AT_MOST else (0.9, 1.1)
    plain = digits.replace(",", "")
    raw = float(plain)
    if raw <= 0 or not math.isfinite(raw):  # too large for a float: compared exactly
        return _EXACT
    if scaled:
        tolerance = 0.5 * 10.0 ** -(len(plain.split(".")[1]) if "." in plain else 0)
    elif "." not in plain and raw >= 10000 and len(plain) - len(plain.rstrip("0")) >= 3:
        tolerance = 0.5 * 10.0 ** (len(plain) - len(plain.rstrip("0")))
    else:
        return _EXACT
    return (1 - tolerance / raw, 1 + tolerance / raw)


def strict_values(text: str, kinds: Optional[AbstractSet[str]] = None) -> dict[str, frozenset[str]]:
    """Values by kind after normalisation (docs/policy.md, "Values"): ``date`` (month-day, ISO
    and written forms alike; a date's year also counts as a ``number``), ``quantity:<family>``
    (readings in the family's base unit: ``2 hours`` = ``120 minutes``, ``$5M`` = ``$5,000,000``),
    ``number`` (canonical; number words two…fifty; ``1.5 million`` = ``1500000``), ``weekday``
    (names and capitalised abbreviations), ``month`` (names, a date's month too; "May" as
    :func:`month_may` says).

    ``kinds``: only these kinds are read and returned, each with exactly the values the whole
    reading gives it (a comparison with a claim reads only the claim's kinds: a passage's
    numbers are not parsed for a claim that names only a weekday)."""
    return _scan(text, kinds, bounded=False)[0]


_DAY_END = re.compile(r"day\b", _I)
_WEEKDAY_WORD = re.compile(r"monday|tuesday|wednesday|thursday|friday|saturday|sunday", _I)
_ABBREVIATION_ANYWHERE = re.compile(r"(?:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b")
_WORD_CHARACTER = re.compile(r"\w")


def _plain_weekdays(text: str) -> Optional[set[str]]:
    """The weekdays :data:`_WEEKDAY` and :data:`_WEEKDAY_ABBREVIATION` read in ``text``, found
    from the cheap end patterns ("day" at a word's end, an abbreviation's word end), or ``None``
    when a weekday is glued to a word or number before it ("$5Friday", "5 JanFriday"): blanking
    the value before it would free it, so the caller reads the values first."""
    days: set[str] = set()
    for match in _DAY_END.finditer(text):
        end = match.end()
        for start in range(max(0, end - 9), end - 5):  # the names have 6 to 9 letters
            if _WEEKDAY_WORD.fullmatch(text, start, end):
                if start and _WORD_CHARACTER.match(text, start - 1):
                    return None
                days.add(text[start:end].lower())
    for match in _ABBREVIATION_ANYWHERE.finditer(text):
        if match.start() and _WORD_CHARACTER.match(text, match.start() - 1):
            return None
        prefix = match.group(0)[:3].lower()
        days.add(next(day for day in _WEEKDAYS if day.startswith(prefix)))
    return days


def _scan(text: str, kinds: Optional[AbstractSet[str]] = None, *, bounded: bool = True) -> tuple[dict[str, frozenset[str]], Bounds]:
    """The values of ``text`` by kind (only ``kinds``, when given) and, with ``bounded``, how
    loosely each number is stated (:func:`_bounds`)."""
    text = _PER_CENT.sub("percent", normal_text(text))
    numeric = kinds is None or any(kind == "number" or kind.startswith("quantity:") for kind in kinds)
    months = kinds is None or "month" in kinds
    weekdays = kinds is None or "weekday" in kinds
    # Dates, money, scaled numbers and decades are read first and blanked out, so later patterns
    # do not read their parts again. A weekday never lies inside one of them, and is read the
    # same without them unless one ends right against it (docs/policy.md, "Cost").
    rewrite = numeric or months or kinds is None or "date" in kinds
    plain = None if rewrite or not weekdays else _plain_weekdays(text)
    rewrite = rewrite or (weekdays and plain is None)
    found: dict[str, set[str]] = {}
    bounds: Bounds = {}
    # Where the number being read starts, its digits, and whether a scale word follows it.
    here: list[tuple[int, str, bool]] = [(0, "0", False)]

    def add(kind: str, value: str) -> None:
        found.setdefault(kind, set()).add(value)
        if bounded and (kind == "number" or kind.startswith("quantity:")):
            start, digits, scaled = here[-1]
            loose = _bounds(text, start, digits, scaled)
            if loose != _EXACT and not (kind == "number" and "." not in value and 1000 <= float(value) <= 2100):
                bounds[(kind, value)] = loose

    def quantity(value: float, unit: str) -> bool:
        if not math.isfinite(value * 1024**5):  # too large for a float in any base unit: no quantity, an exact number
            return False
        readings = _readings(value, unit)
        if readings is None:
            return False
        family, values = readings
        # One quantity is one value: its readings are joined so any of them matches.
        add(f"quantity:{family}", "|".join(sorted(values)))
        return True

    def date(year: str | None, month: int, day: str) -> str:
        if year:
            add("number", canonical_number(year))
        add("date", f"{month:02d}-{int(day):02d}")
        add("month", _MONTHS[month - 1])  # "13 July 2016" names July too
        return " "

    def money(match: "re.Match[str]") -> str:
        symbol, digits, scale = match.groups()
        here.append((match.start(), digits, scale is not None))
        value = float(digits.replace(",", "")) * (_SCALE[scale.lower()] if scale else 1)
        if not quantity(value, {"$": "usd", "€": "eur", "£": "gbp"}[symbol]):
            add("number", scaled_number(digits, scale) if scale else canonical_number(digits))
        return " "

    def scaled(match: "re.Match[str]") -> str:
        sign, digits, scale, currency = match.groups()
        here.append((match.start(), digits, True))
        value = float(sign + digits.replace(",", "")) * _SCALE[scale.lower()]
        if currency is None or not quantity(value, currency):
            add("number", scaled_number(digits, scale, sign))
        return " "

    if rewrite:
        text = _ISO_DATE.sub(lambda m: date(m.group(1), int(m.group(2)), m.group(3)), text)
        text = _DATE_MD.sub(lambda m: date(m.group(3), _month_number(m.group(1)), m.group(2)), text)
        text = _DATE_DM.sub(lambda m: date(m.group(3), _month_number(m.group(2)), m.group(1)), text)
        text = _MONEY.sub(money, text)
        text = _DECADE.sub(" ", _SCALED.sub(scaled, text))
    if numeric:
        _numbers(text, here, add, quantity)
    if plain is not None:
        for day in plain:
            add("weekday", day)
    elif weekdays:
        for match in _WEEKDAY.finditer(text):
            add("weekday", match.group(0).lower())
        for match in _WEEKDAY_ABBREVIATION.finditer(text):
            prefix = match.group(1)[:3].lower()
            add("weekday", next(day for day in _WEEKDAYS if day.startswith(prefix)))
    if months:
        for match in _MONTH_NAME.finditer(text):
            add("month", match.group(0).lower())
        if month_may(text):
            add("month", "may")
    return {kind: frozenset(values) for kind, values in found.items() if kinds is None or kind in kinds}, bounds


def _numbers(
    text: str,
    here: list[tuple[int, str, bool]],
    add: Callable[[str, str], None],
    quantity: Callable[[float, str], bool],
) -> None:
    """The numbers and quantities of ``text`` left after dates, money and scaled numbers."""
    for match in _QUANTITY.finditer(text):
        sign, digits, ordinal, unit = match.groups()
        here.append((match.start(), digits, unit is not None and unit.lower() == "k"))
        value = canonical_number(sign + digits)
        if ordinal is not None:
            add("number", value)
        elif unit is not None and unit.lower() in _UNIT_WORDS and quantity(float(value), unit):
            continue
        elif unit is not None and unit.lower() in ("k",):
            add("number", scaled_number(value, "k"))
        elif match.end(2) < len(text) and (text[match.end(2)].isalnum() or text[match.end(2)] == "_"):
            continue  # digits glued to a word that is not a unit: an identifier, not a value
        else:
            add("number", value)
    for match in _NUMBER_WORD.finditer(text):
        number = _NUMBER_WORDS[match.group(1).lower()]
        here.append((match.start(), str(number), False))
        unit = match.group(2)
        if unit is not None and unit.lower() in _WORD_SCALES and not text.startswith("-", match.end()):
            add("number", scaled_number(str(number), unit))
        elif not (unit is not None and len(unit) > 2 and unit.lower() in _UNIT_WORDS and quantity(float(number), unit)):
            add("number", str(number))


_TOTAL = re.compile(r"\b(?:in\s+total|total|totals|altogether|overall|combined|in\s+all|sum)\b", _I)


def has_total_cue(text: str) -> bool:
    """Whether ``text`` states an aggregate (in total, altogether, overall, combined, sum…)."""
    return bool(_TOTAL.search(normal_text(text)))


def _among(value: str, values: frozenset[str], loose: tuple[float, float] = _EXACT) -> bool:
    readings = set(value.split("|"))
    if any(readings & set(other.split("|")) for other in values):
        return True
    if loose == _EXACT:
        return False
    low, high = loose
    found = [float(reading) for other in values for reading in other.split("|")]
    return any(
        float(reading) * low * (1 - 1e-9) <= number <= float(reading) * high * (1 + 1e-9)
        for reading in readings
        for number in found
    )


def values_conflict(
    claim: str, passages_text: str, *, ignore_numbers: bool = False, passage_values: Optional[dict[str, frozenset[str]]] = None
) -> bool:
    """Some kind has values in both, and a value of the claim is not among the passages'
    (a superset in the passages is no conflict). Quantities compare within their family, in
    base units: ``2 hours`` against ``120 minutes`` is no conflict, against ``2 GB`` no comparison.
    A claim's loose number matches what it allows: "over 20,000 km" 21,196 km, "$50 million"
    $50.3 million (:func:`_bounds`). ``passage_values``: :func:`strict_values` of
    ``passages_text``, when the caller has them already."""
    claim_values, bounds = _scan(claim)
    if not claim_values:
        return False
    if passage_values is None:
        passage_values = strict_values(passages_text, frozenset(claim_values))
    for kind, values in claim_values.items():
        if ignore_numbers and (kind == "number" or kind.startswith("quantity:")):
            continue
        if kind not in passage_values:
            continue
        if any(not _among(value, passage_values[kind], bounds.get((kind, value), _EXACT)) for value in values):
            return True
    return False

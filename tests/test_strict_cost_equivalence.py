"""The strict policy's cheap paths give what their definitions give (docs/policy.md, "Cost").

The value rule reads a passage only for the kinds of value the claim names
(:func:`verifier.decision.strict_values.strict_values` with ``kinds``): these tests fail if
reading fewer kinds ever gives a kind other values than the whole reading. The fast forms of
normalisation, of the sentence-start test and of the line split are checked against the
definitions they replace. tests/test_strict_rulings_recorded.py checks the rulings themselves.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from pathlib import Path

import pytest

from verifier.decision.strict_frames import lines
from verifier.decision.strict_values import normal_text, opens_sentence, strict_values, values_conflict

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _texts() -> list[str]:
    texts: list[str] = []
    for row in json.loads((DATA / "prose_corpus.json").read_text(encoding="utf-8")):
        texts += [row["claim"], row["passage"]]
    for name in ("strict_trials.json", "policy_trials.json"):
        for row in json.loads((DATA / name).read_text(encoding="utf-8")):
            texts += [row["claim"]] + [p["text"] for p in row["passages"]]
    return texts


#: Pieces that put weekdays, months and "May" right against dates, money, scaled numbers and
#: decades, the values read (and blanked out) before them.
PIECES = [
    "$5", "$5.5", "£3", "5 Jan", "5 January", "Jan 5", "Jan 5, 2024", "2024-01-05", "5th", "5 of May",
    "5 million", "5 million dollars", "2 billion euros", "1990s", "12", "3.5", "-4", "1,200", "two",
    "Friday", "friday", "FRIDAY", "Fri", "Fri.", "Mon", "Monday", "Tues", "Tue", "Thurs", "Thu", "Sat",
    "Sunday", "Wednesday", "May", "may", "we", "in", "June", "Sept", "x", "_", "k", "m", "hours",
    "GB", "%", " ", " ", " ", ".", ". ", "\n", ",", "\"", "(", "-", "\u2019", "\u2212", "Ｆｒｉｄａｙ",
]
KINDS = ["weekday", "month", "date", "number", "quantity:time", "quantity:usd", "quantity:data"]


def _fuzz(count: int) -> list[str]:
    chance = random.Random(35)
    texts = []
    for _ in range(count):
        pieces = chance.choices(PIECES, k=chance.randint(1, 8))
        glue = chance.choice(["", " ", ""])
        texts.append(glue.join(pieces))
    return texts


def _check(text: str) -> None:
    whole = strict_values(text)
    for kinds in [{kind} for kind in KINDS] + [set(whole), {"weekday", "date"}, {"weekday", "number"}, set()]:
        wanted = {kind: values for kind, values in whole.items() if kind in kinds}
        assert strict_values(text, frozenset(kinds)) == wanted, (text, sorted(kinds))


def test_kinds_read_alone_match_the_whole_reading_on_the_corpora() -> None:
    for text in _texts():
        _check(text)


def test_kinds_read_alone_match_the_whole_reading_on_glued_values() -> None:
    texts = _fuzz(4000) + ["$5Friday", "5 JanFriday", "5 million dollarsFriday", "x$5Fri", "2024-01-05Monday"]
    for text in texts:
        _check(text)


def test_a_glued_weekday_is_read_after_the_value_before_it() -> None:
    """The reason a weekday-only reading still reads values first when one touches a weekday."""
    assert strict_values("paid $5Friday", frozenset({"weekday"})) == {"weekday": frozenset({"friday"})}
    assert strict_values("paid 5Friday", frozenset({"weekday"})) == {}


@pytest.mark.parametrize("text", _fuzz(300) + ["", "May", ". May", "x\n\"(May"])
def test_opens_sentence_matches_its_definition(text: str) -> None:
    for position in range(len(text) + 1):
        before = text[:position].rstrip(" \t\"'([{")
        assert opens_sentence(text, position) == (not before or before[-1] in ".!?\n")


def test_normal_text_matches_its_definition() -> None:
    table = str.maketrans(
        {"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "\u201c": '"', "\u201d": '"', "\u2212": "-"}
        | {"\u0131": "i", "\u0130": "I"}
    )
    for text in _texts() + _fuzz(500) + ["\u201cquoted\u201d \u02bcx\u2032 \u2018y\u2019 \u22125 ﬁ ı İ"]:
        assert normal_text(text) == unicodedata.normalize("NFKC", text).translate(table)


def test_letters_the_patterns_fold_to_ascii_are_ascii_after_normalisation() -> None:
    """Every character ``re.IGNORECASE`` matches to an ASCII letter (found by asking ``re`` itself,
    over all of Unicode) is that letter after normalisation, so the rules' lower-case tables and
    substring tests agree with their patterns."""
    letter = re.compile("[a-z]", re.IGNORECASE)
    folded = [chr(code) for code in range(128, 0x110000) if letter.fullmatch(chr(code))]
    assert folded  # ı, İ, ſ and the Kelvin sign on CPython 3.11
    for character in folded:
        ascii_letter = next(a for a in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(a, character, re.IGNORECASE))
        assert normal_text(character).lower() == ascii_letter, hex(ord(character))


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("It cost $5 m\u0131llion.", "quantity:usd", "5000000"),
        ("It cost $5 M\u0130LLION.", "quantity:usd", "5000000"),
        ("She has f\u0131ve cats.", "number", "5"),
        ("S\u0130X kids", "number", "6"),
        ("We met on Fr\u0131day.", "weekday", "friday"),
    ],
)
def test_a_dotless_or_dotted_i_reads_as_i(text: str, kind: str, value: str) -> None:
    """Before, "m\u0131llion" matched the scale pattern and then raised KeyError in its table."""
    assert value in strict_values(text)[kind]


def test_value_conflicts_are_the_same_with_the_whole_reading() -> None:
    rows = json.loads((DATA / "prose_corpus.json").read_text(encoding="utf-8"))
    pairs = [(row["claim"], row["passage"]) for row in rows]
    pairs += [(claim, text) for claim in ("It shipped on Friday.", "It cost $5 million in May 2020.") for text in _fuzz(500)]
    for claim, text in pairs:
        assert values_conflict(claim, text) == values_conflict(claim, text, passage_values=strict_values(text)), (claim, text)


def test_lines_match_the_pattern_split() -> None:
    pattern = re.compile(r"(?:\r?\n)+")
    chance = random.Random(36)
    pieces = ["a", "b c", "\n", "\n", "\r\n", "\r", " ", "."]
    texts = ["", "\n", "\n\n", "a\n", "\na", "a\n\n\nb", "\r\n"] + _texts()
    texts += ["".join(chance.choices(pieces, k=chance.randint(1, 10))) for _ in range(3000)]
    for text in texts:
        assert lines(text) == pattern.split(text), repr(text)

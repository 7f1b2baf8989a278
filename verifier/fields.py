"""The text rules of the contract's string fields: stripping, visibility, NUL (docs/decision.md §1).

Stripping is Python's :meth:`str.strip`, exactly as PRME 0.15.0 strips claim,
evidence ``text`` and ``reference``, ``model`` and ``revision``
(docs/compatibility.md). :mod:`verifier.types` declares its fields with these.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, StringConstraints
from pydantic_core import PydanticCustomError

__all__ = [
    "has_visible_text",
    "check_text",
    "strip_nonempty",
    "check_reference",
    "check_raw_reference",
    "StrippedNonEmpty",
    "Reference",
    "RawReference",
    "Text",
]

#: Characters that do not make a text non-empty: whitespace, format characters (Cf:
#: zero-width space/joiners, BOM, bidi marks) and other invisible controls.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


def has_visible_text(text: str) -> bool:
    """Whether ``text`` has a character other than whitespace, format (Cf) and control (Cc) characters.

    Example:
        >>> has_visible_text("\u200b \ufeff"), has_visible_text("\u200bx")
        (False, True)
    """
    return any(not char.isspace() and unicodedata.category(char) not in _INVISIBLE_CATEGORIES for char in text)


def check_text(text: str) -> str:
    """A text field's rule: at least one visible character (:func:`has_visible_text`) and no NUL.
    (pydantic itself refuses lone surrogates in every string field.)

    Raises:
        ValueError: only invisible characters, or a NUL character (``\x00``).
    """
    if "\x00" in text:
        raise ValueError(f"must not contain a NUL character (at position {text.index(chr(0))})")
    if not has_visible_text(text):
        raise ValueError("must contain a visible character (only whitespace or invisible characters given)")
    return text


def strip_nonempty(value: str) -> str:
    """``value.strip()``, refused when nothing is left.

    Python's :meth:`str.strip` (every character for which :meth:`str.isspace` is
    true, ``\x1c``-``\x1f`` included) — the reference's stripping of claim,
    evidence ``text`` and ``reference``, ``model`` and ``revision`` (PRME 0.15.0;
    docs/compatibility.md). pydantic's own ``strip_whitespace`` strips a
    different set (Unicode White_Space) and would change digests.

    Raises:
        pydantic_core.PydanticCustomError: nothing left after stripping
            (``string_too_short``, as pydantic's ``min_length=1`` words it).
    """
    stripped = value.strip()
    if not stripped:
        raise PydanticCustomError(
            "string_too_short", "String should have at least {min_length} character", {"min_length": 1}
        )
    return stripped


def check_reference(reference: str) -> str:
    """An evidence reference's rule beyond :func:`strip_nonempty`: no NUL character.

    Raises:
        ValueError: a NUL character (``\x00``), refused as in every other text field.
    """
    if "\x00" in reference:
        raise ValueError(f"must not contain a NUL character (at position {reference.index(chr(0))})")
    return reference


#: A stripped, non-empty string. ``min_length=1`` before stripping, as the reference declares it: pydantic then also refuses
#: a lone surrogate ("unable to parse raw data as a unicode string"), as the reference does.
StrippedNonEmpty = Annotated[str, StringConstraints(min_length=1), AfterValidator(strip_nonempty)]


def check_raw_reference(reference: str) -> str:
    """A bundle candidate's reference, kept exactly as the bundle names it: non-blank once stripped, no NUL.

    The citation rules look for it unstripped (as PRME does); the evidence it
    becomes is stripped by :class:`ClaimEvidence`.

    Raises:
        pydantic_core.PydanticCustomError / ValueError: blank, or a NUL character.
    """
    strip_nonempty(reference)
    return check_reference(reference)


#: A bundle candidate's reference: unstripped (see :func:`check_raw_reference`).
RawReference = Annotated[str, StringConstraints(min_length=1), AfterValidator(check_raw_reference)]
#: An evidence reference: stripped, non-empty, no NUL.
Reference = Annotated[str, StringConstraints(min_length=1), AfterValidator(strip_nonempty), AfterValidator(check_reference)]
#: An evidence text: stripped, with a visible character, no NUL.
Text = Annotated[str, StringConstraints(min_length=1), AfterValidator(strip_nonempty), AfterValidator(check_text)]

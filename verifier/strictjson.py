"""JSON as every reader of the project parses it: a repeated key in an object is an error, never "the last wins".

Python's :func:`json.loads` keeps the last value of a repeated key; other
parsers keep the first, or refuse. A record such as
``{"status": "refuted", ..., "status": "supported"}`` would then mean one thing
to ``python -m verifier check`` and another to the next tool. Every file the
project reads — ``verify`` input rows (JSON Lines and ``.json``), stored
results for ``check``, ``--resume`` output, assay cohorts, registrations and
recorded scores, model directory manifests — goes through :func:`loads`, which
raises :class:`DuplicateKeyError` naming the key and where the second
occurrence is.

The fast path is :func:`json.loads` with an ``object_pairs_hook``; only when a
duplicate is found is the text scanned again to locate it.
"""

from __future__ import annotations

import json
import json.decoder
import re
import sys
from typing import Any, Callable, Union

__all__ = ["DuplicateKeyError", "json_type", "loads"]


class DuplicateKeyError(json.JSONDecodeError):
    """A JSON object repeats a key. ``key`` is the key; ``lineno``/``colno`` locate its second occurrence.

    A :class:`json.JSONDecodeError` (so a :class:`ValueError`): code that words
    invalid JSON words this too, as ``duplicate key 'status' in a JSON object``.
    """

    def __init__(self, key: str, document: str, position: int) -> None:
        super().__init__(f"duplicate key {key!r} in a JSON object", document, position)
        self.key = key


#: The decoder's own string scanner: ``scanstring(text, index after the quote) -> (value, index after the string)``.
_scanstring: Callable[[str, int], "tuple[str, int]"] = json.decoder.scanstring  # type: ignore[attr-defined]


class _Repeated(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages: ``object``, ``array``, ``string``, ``number``,
    ``boolean`` or ``null`` (a Python name for anything JSON does not produce)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for kind, name in ((dict, "object"), ((list, tuple), "array"), (str, "string"), ((int, float), "number")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return result


def _locate(text: str) -> "tuple[str, int] | None":
    """The first key (in text order) that repeats in its object, and the index of its second occurrence."""
    stack: list[tuple[set[str], bool]] = []  # per open container: keys seen (objects), is an object
    expecting_key = False
    index = 0
    length = len(text)
    while index < length:
        char = text[index]
        if char == '"':
            value, end = _scanstring(text, index + 1)
            if stack and stack[-1][1] and expecting_key:
                keys = stack[-1][0]
                if value in keys:
                    return value, index
                keys.add(value)
                expecting_key = False
            index = end
            continue
        if char == "{":
            stack.append((set(), True))
            expecting_key = True
        elif char == "[":
            stack.append((set(), False))
            expecting_key = False
        elif char in "}]":
            if stack:
                stack.pop()
            expecting_key = False
        elif char == ",":
            expecting_key = bool(stack and stack[-1][1])
        index += 1
    return None  # pragma: no cover - the fast path found a duplicate, so the scan does too


def loads(text: Union[str, bytes, bytearray]) -> Any:
    """:func:`json.loads`, refusing an object that repeats a key.

    Raises:
        DuplicateKeyError: an object repeats a key (the message names it).
        json.JSONDecodeError: not JSON.
        RecursionError: nested too deeply (as :func:`json.loads`).

    Example:
        >>> loads('{"a": 1, "b": [{"c": 2}]}')
        {'a': 1, 'b': [{'c': 2}]}
        >>> try:
        ...     loads('{"status": "refuted", "status": "supported"}')
        ... except DuplicateKeyError as exc:
        ...     print(exc.key, exc.lineno, exc.colno)
        status 1 23
    """
    try:
        return json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        # int() refuses a literal over sys.get_int_max_str_digits() digits (CVE-2020-10735) with a plain
        # ValueError that names no position: report it as the JSON error it is, at that literal.
        if "digits" not in str(exc):
            raise
        document = text if isinstance(text, str) else bytes(text).decode("utf-8-sig", "surrogatepass")
        limit = sys.get_int_max_str_digits()
        found = re.search(rf"-?\d{{{limit + 1},}}", document)
        raise json.JSONDecodeError(
            f"integer literal of more than {limit} digits", document, found.start() if found else 0
        ) from None
    except _Repeated as exc:
        document = text if isinstance(text, str) else bytes(text).decode("utf-8-sig", "surrogatepass")
        key, position = _locate(document) or (exc.key, 0)
        raise DuplicateKeyError(key, document, position) from None

"""Optional bearer-key authentication, compared in constant time.

The key is text, and its encoding on the wire is UTF-8: the key file is read
as UTF-8, and a request authenticates when the raw bytes of its
``Authorization`` header after ``Bearer `` (surrounding spaces and tabs
stripped) equal the UTF-8 bytes of the key. (HTTP headers are bytes;
Starlette decodes them as latin-1, under which a non-ASCII key could only be
sent as latin-1 bytes, so the raw bytes are compared instead.) A key with a
control character (``\\x00``-``\\x1f``, ``\\x7f``-``\\x9f``) cannot travel in a
header and is refused when it is loaded.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Optional

from starlette.requests import Request

from ..small_files import read_small_file
from .errors import ApiError

__all__ = ["read_api_key", "check_api_key", "check_bearer", "OPEN_PATHS"]

#: Paths served without a key (probes of an orchestrator).
OPEN_PATHS = frozenset({"/health/live", "/health/ready"})


def check_api_key(key: str) -> str:
    """``key`` if it can be sent in an ``Authorization`` header (non-empty, no control character).

    Raises:
        ValueError: empty, surrounded by whitespace, with a control character, or not encodable as UTF-8.
    """
    if not key or key != key.strip():
        raise ValueError("the API key must be non-empty, without surrounding whitespace")
    for position, char in enumerate(key):
        if ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F:
            raise ValueError(f"the API key has a control character (U+{ord(char):04X} at position {position}), "
                             "which cannot be sent in an HTTP header")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"the API key is not valid Unicode text ({exc.reason} at position {exc.start})") from None
    return key


def read_api_key(path: Path) -> str:
    """The key in ``path`` (UTF-8; surrounding whitespace stripped).

    Raises:
        ValueError: the file is empty, unreadable, not a regular file, over 64 KiB, not UTF-8, or the key
            has a control character.
    """
    try:  # bounded, never blocking: /dev/zero or a FIFO is refused (verifier/small_files.py)
        key = read_small_file(path, "API key file").decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ValueError(f"cannot read the API key file {path}: {exc}") from exc
    if not key:
        raise ValueError(f"the API key file {path} is empty")
    try:
        return check_api_key(key)
    except ValueError as exc:
        raise ValueError(f"the API key file {path}: {exc}") from None


def _authorization(request: Request) -> bytes:
    """The raw bytes of the first ``Authorization`` header (``b""`` when none)."""
    for name, value in request.scope.get("headers", ()):
        if name.lower() == b"authorization":
            return bytes(value)
    return b""


def check_bearer(request: Request, key: Optional[str]) -> None:
    """Refuse (401) a request without ``Authorization: Bearer <key>`` when a key is set."""
    if key is None or request.url.path in OPEN_PATHS:
        return
    scheme, _, given = _authorization(request).partition(b" ")
    expected = key.encode("utf-8")
    supplied = given.strip(b" \t") if scheme.lower() == b"bearer" else b""
    if not hmac.compare_digest(supplied, expected):
        raise ApiError(
            401,
            "unauthorized",
            "missing or wrong bearer key (send Authorization: Bearer <key>)",
            headers={"WWW-Authenticate": "Bearer"},
        )

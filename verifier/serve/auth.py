"""Optional bearer-key authentication, compared in constant time."""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Optional

from starlette.requests import Request

from .errors import ApiError

__all__ = ["read_api_key", "check_bearer", "OPEN_PATHS"]

#: Paths served without a key (probes of an orchestrator).
OPEN_PATHS = frozenset({"/health/live", "/health/ready"})


def read_api_key(path: Path) -> str:
    """The key in ``path`` (surrounding whitespace stripped).

    Raises:
        ValueError: the file is empty or unreadable.
    """
    try:
        key = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the API key file {path}: {exc}") from exc
    if not key:
        raise ValueError(f"the API key file {path} is empty")
    return key


def check_bearer(request: Request, key: Optional[str]) -> None:
    """Refuse (401) a request without ``Authorization: Bearer <key>`` when a key is set."""
    if key is None or request.url.path in OPEN_PATHS:
        return
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    expected = key.encode("utf-8")
    supplied = given.strip().encode("utf-8") if scheme.lower() == "bearer" else b""
    if not hmac.compare_digest(supplied, expected):
        raise ApiError(
            401,
            "unauthorized",
            "missing or wrong bearer key (send Authorization: Bearer <key>)",
            headers={"WWW-Authenticate": "Bearer"},
        )

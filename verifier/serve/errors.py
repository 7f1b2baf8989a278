"""JSON error responses of the server: one shape, never a traceback.

Every error body is ``{"error": {"type": ..., "message": ..., "field": ..., "limit": ...}}``
(``field`` and ``limit`` only when known).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import ValidationError
from starlette.responses import JSONResponse

from ..messages import describe_validation_error, strip_pydantic_links
from ..validation import InputError

__all__ = ["ApiError", "error_response", "input_problem"]

#: The limit an :class:`InputError` names: ``... more than max_evidence=64`` (whatever follows it).
_NAMED_LIMIT = re.compile(r"more than ([A-Za-z_]+=[^\s()]+)")


class ApiError(Exception):
    """An error with its HTTP status, turned into a JSON response by the app."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        *,
        field: Optional[str] = None,
        limit: Optional[str] = None,
        headers: Optional[dict[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.field = field
        self.limit = limit
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The ``error`` object."""
        error: dict[str, Any] = {"type": self.kind, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        if self.limit is not None:
            error["limit"] = self.limit
        return error


def error_response(error: ApiError) -> JSONResponse:
    """The JSON response of ``error``."""
    return JSONResponse({"error": error.body()}, status_code=error.status, headers=error.headers)


def input_problem(exc: Exception, *, prefix: str = "") -> ApiError:
    """A 422 for an invalid request (:class:`InputError`, pydantic ``ValidationError`` or ``ValueError``).

    ``prefix`` is prepended to the field path (e.g. ``"3."`` for item 3 of a batch).
    """
    field: Optional[str]
    limit: Optional[str] = None
    if isinstance(exc, ValidationError):
        location, message, count = describe_validation_error(exc)
        field = location
        message = strip_pydantic_links(message)
        if count > 1:
            message += f" (and {count - 1} more error{'s' if count > 2 else ''})"
    elif isinstance(exc, InputError):
        field, message = exc.field, str(exc)
        named = _NAMED_LIMIT.search(message)
        if named:
            limit = named.group(1)
    else:
        field, message = None, str(exc)
    if field is not None and prefix:
        field = prefix + field
    elif prefix:
        field = prefix.rstrip(".")
    return ApiError(422, "invalid_request", message, field=field, limit=limit)

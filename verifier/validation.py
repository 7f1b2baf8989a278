"""Input validation before any model work (docs/decision.md §2), done once, for the library and the CLI.

:func:`validate_request` turns one request (a :class:`~verifier.types.ClaimRequest`
or a mapping with its fields) into a :class:`ValidRequest`: the claim stripped
and non-empty, the evidence parsed, at most ``max_evidence`` passages, no
repeated reference or memory id. :class:`~verifier.decision.ClaimVerifier`
accepts a :class:`ValidRequest` without checking it again, so the command line
validates each input row once, up front, and names its line.

Errors are :class:`InputError` (a :class:`ValueError`) carrying the field
(a dotted path such as ``evidence.3.reference``) and a short reason, or
pydantic's :class:`~pydantic.ValidationError` (also a :class:`ValueError`) for
a malformed field; :func:`describe_validation_error` words the latter for users.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Union
from uuid import UUID

from pydantic import ValidationError

from .types import ClaimEvidence, ClaimRequest, ClaimVerificationConfig

__all__ = [
    "InputError",
    "ValidRequest",
    "validate_claim",
    "validate_evidence",
    "validate_request",
    "describe_validation_error",
    "strip_pydantic_links",
    "PYDANTIC_WORDS",
]

#: pydantic error types worded for users; other types keep pydantic's own message.
PYDANTIC_WORDS: dict[str, str] = {
    "missing": "required field is missing",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "uuid_type": "not a valid UUID",
    "uuid_parsing": "not a valid UUID",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "extra_forbidden": "unknown field",
}
#: The link pydantic appends to its messages ("For further information visit https://errors.pydantic.dev/...").
_PYDANTIC_URL = re.compile(r"\s*For further information visit https?://errors\.pydantic\.dev/\S*")


class InputError(ValueError):
    """A request that fails the checks of docs/decision.md §2.

    ``str(error)`` is the library's message (e.g. ``evidence reference 'm1'
    is repeated``).

    Attributes:
        field: the offending field as a dotted path (``claim``, ``evidence``,
            ``evidence.3.memory_id``), or ``None`` for the whole request.
        reason: a short reason for a message that already names the field
            (e.g. ``reference 'm1' repeats evidence.0``).
    """

    def __init__(self, message: str, *, field: Optional[str] = None, reason: Optional[str] = None) -> None:
        super().__init__(message)
        self.field = field
        self.reason = reason if reason is not None else message


@dataclass(frozen=True)
class ValidRequest:
    """A request that passed :func:`validate_request` for a given ``max_evidence``.

    Attributes:
        claim: the stripped claim.
        evidence: the parsed passages, caller order.
        requires_complete_set: the claim is an exhaustive count or list.
        id: the caller's label (never digested).
        max_evidence: the limit it was checked against (a verifier with another
            limit checks it again).
    """

    claim: str
    evidence: tuple[ClaimEvidence, ...]
    requires_complete_set: bool = False
    id: Optional[str] = None
    max_evidence: int = ClaimVerificationConfig().max_evidence


def validate_claim(claim: object) -> str:
    """Return the stripped claim.

    Raises:
        InputError: not a string, empty after stripping, or not encodable as
            UTF-8 (a lone surrogate).
    """
    if not isinstance(claim, str):
        raise InputError(f"claim must be a string, got {type(claim).__name__}", field="claim")
    stripped = claim.strip()
    if not stripped:
        raise InputError("claim must not be empty", field="claim", reason="claim is empty")
    try:
        stripped.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"claim is not valid Unicode text ({exc.reason} at position {exc.start})", field="claim"
        ) from None
    return stripped


def validate_evidence(
    evidence: Iterable[Union[ClaimEvidence, Mapping[str, Any]]], config: ClaimVerificationConfig
) -> tuple[ClaimEvidence, ...]:
    """Parse passages and enforce ``max_evidence`` and unique references and memory ids.

    Raises:
        InputError: not a list of passages, more than ``config.max_evidence``
            passages (names the maximum), or a repeated reference or memory id
            (names it and the passage it repeats).
        pydantic.ValidationError: a malformed passage (names the field).
    """
    if evidence is None or isinstance(evidence, (str, bytes, Mapping)) or not isinstance(evidence, Iterable):
        raise InputError(
            f"evidence must be a list of passages (ClaimEvidence or mappings), got {type(evidence).__name__}",
            field="evidence",
        )
    items = tuple(
        item if isinstance(item, ClaimEvidence) else ClaimEvidence.model_validate(item) for item in evidence
    )
    if len(items) > config.max_evidence:
        raise InputError(
            f"evidence has {len(items)} passages, more than max_evidence={config.max_evidence}",
            field="evidence",
            reason=f"{len(items)} passages exceed max_evidence={config.max_evidence}",
        )
    references: dict[str, int] = {}
    memory_ids: dict[UUID, int] = {}
    for index, item in enumerate(items):
        if item.reference in references:
            raise InputError(
                f"evidence reference {item.reference!r} is repeated",
                field=f"evidence.{index}.reference",
                reason=f"reference {item.reference!r} repeats evidence.{references[item.reference]}",
            )
        if item.memory_id in memory_ids:
            raise InputError(
                f"evidence memory_id {item.memory_id} is repeated",
                field=f"evidence.{index}.memory_id",
                reason=f"memory_id {item.memory_id} repeats evidence.{memory_ids[item.memory_id]}",
            )
        references[item.reference] = index
        memory_ids[item.memory_id] = index
    return items


def validate_request(
    request: Union[ValidRequest, ClaimRequest, Mapping[str, Any]], config: ClaimVerificationConfig
) -> ValidRequest:
    """Validate one request for ``config`` (docs/decision.md §2); a :class:`ValidRequest` checked
    against the same ``max_evidence`` is returned as is.

    Args:
        request: a :class:`ValidRequest`, a :class:`~verifier.types.ClaimRequest`,
            or a mapping with the fields of one.
        config: the decision configuration (its ``max_evidence`` bounds the passages).

    Raises:
        InputError: see :func:`validate_claim` and :func:`validate_evidence`.
        pydantic.ValidationError: a malformed request or passage.

    Example:
        >>> valid = validate_request({"claim": "  The launch is Tuesday. "}, ClaimVerificationConfig())
        >>> valid.claim, valid.evidence
        ('The launch is Tuesday.', ())
    """
    if isinstance(request, ValidRequest):
        if request.max_evidence == config.max_evidence:
            return request
        request = ClaimRequest(
            id=request.id,
            claim=request.claim,
            evidence=request.evidence,
            requires_complete_set=request.requires_complete_set,
        )
    item = request if isinstance(request, ClaimRequest) else ClaimRequest.model_validate(request)
    claim = validate_claim(item.claim)
    evidence = validate_evidence(item.evidence, config)
    return ValidRequest(
        claim=claim,
        evidence=evidence,
        requires_complete_set=item.requires_complete_set,
        id=item.id,
        max_evidence=config.max_evidence,
    )


def strip_pydantic_links(text: str) -> str:
    """``text`` without pydantic's "For further information visit https://errors.pydantic.dev/..." links."""
    return _PYDANTIC_URL.sub("", text)


def describe_validation_error(exc: ValidationError) -> tuple[Optional[str], str, int]:
    """The first error of ``exc`` in user words: ``(field, message, count of all errors)``.

    ``field`` is the dotted location (``evidence.0.memory_id``), ``None`` for
    the whole document; ``message`` uses :data:`PYDANTIC_WORDS` where it can
    (``must be a list``), ``invalid JSON: ...`` for a JSON syntax error, and
    pydantic's own message otherwise, without its link.
    """
    errors = exc.errors(include_url=False)
    first = errors[0]
    kind = str(first.get("type", ""))
    if kind == "json_invalid":
        detail = (first.get("ctx") or {}).get("error")
        message = f"invalid JSON: {detail}" if detail else "invalid JSON"
    else:
        message = PYDANTIC_WORDS.get(kind) or str(first.get("msg", "invalid value"))
    location = ".".join(str(part) for part in first.get("loc", ())) or None
    return location, message, len(errors)

"""Input validation before any model work (docs/decision.md §2), done once, for the library and the CLI.

:func:`validate_request` turns one request (a :class:`~verifier.types.ClaimRequest`
or a mapping with its fields) into a :class:`ValidRequest`: the claim stripped
and non-empty, the evidence parsed, at most ``max_evidence`` passages, no
repeated reference or memory id. :class:`~verifier.claim_verifier.ClaimVerifier`
accepts a :class:`ValidRequest` without checking it again, so the command line
validates each input row once, up front, and names its line.

Errors are :class:`InputError` (a :class:`ValueError`) carrying the field
(a dotted path such as ``evidence.3.reference``) and a short reason, or
pydantic's :class:`~pydantic.ValidationError` (also a :class:`ValueError`) for
a malformed field; :func:`describe_validation_error` words the latter for users.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum
from datetime import datetime
from typing import Any, Iterable, Mapping, Optional, Sized, Union
from uuid import UUID

from pydantic import TypeAdapter, ValidationError

from .messages import PYDANTIC_WORDS, describe_validation_error, strip_pydantic_links
from .options import InputLimits
from .types import (
    ClaimEvidence,
    ClaimRequest,
    ClaimVerificationConfig,
    check_as_of,
    has_visible_text,
)

__all__ = [
    "InputError",
    "ValidRequest",
    "validate_claim",
    "validate_evidence",
    "validate_request",
    "as_of_input",
    "as_evidence",
    "as_config",
    "describe_validation_error",
    "strip_pydantic_links",
    "PYDANTIC_WORDS",
]

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
        limits: the size limits it was checked against (likewise).
        as_of: the timezone-aware date the claim is verified at (docs/policy.md;
            ``None``: not given, and nothing about it enters a digest).
    """

    claim: str
    evidence: tuple[ClaimEvidence, ...]
    requires_complete_set: bool = False
    id: Optional[str] = None
    max_evidence: int = ClaimVerificationConfig().max_evidence
    limits: InputLimits = InputLimits()
    as_of: Optional[datetime] = None


_DEFAULT_LIMITS = InputLimits()


def _too_long(field: str, what: str, length: int, limit_name: str, limit: int) -> InputError:
    return InputError(
        f"{what} has {length:,} characters, more than {limit_name}={limit}",
        field=field,
        reason=f"{length:,} characters exceed {limit_name}={limit}",
    )


_AS_OF: "TypeAdapter[Optional[datetime]]" = TypeAdapter(Optional[datetime])


def as_of_input(value: Any) -> Optional[datetime]:
    """``as_of`` checked: ``None`` or a timezone-aware datetime (an ISO string is parsed; docs/policy.md).

    Raises:
        InputError: anything else, or a datetime without a timezone.
    """
    try:
        parsed = _AS_OF.validate_python(value)
    except ValidationError:
        raise InputError(f"as_of must be a timezone-aware datetime, got {value!r:.80}", field="as_of") from None
    try:
        return check_as_of(parsed)
    except ValueError as exc:
        raise InputError(str(exc), field="as_of") from None


def _foreign_model(value: object) -> bool:
    """A pydantic model of another library (e.g. PRME's ``ClaimEvidence``): has ``model_dump``, is no mapping."""
    return not isinstance(value, Mapping) and callable(getattr(value, "model_dump", None))


def _plain_values(data: Mapping[str, Any]) -> dict[str, Any]:
    """Enum members as their values (another library's ``str`` enums), everything else unchanged."""
    return {key: (value.value if isinstance(value, Enum) else value) for key, value in data.items()}


def as_evidence(item: Any) -> ClaimEvidence:
    """One passage as :class:`ClaimEvidence`: itself, a mapping, or a same-shaped model of another
    library (PRME's ``ClaimEvidence``: its ``model_dump()`` is validated; docs/compatibility.md).

    Raises:
        pydantic.ValidationError: a malformed passage (names the field).
    """
    if isinstance(item, ClaimEvidence):
        return item
    if _foreign_model(item):
        return ClaimEvidence.model_validate(_plain_values(item.model_dump()))
    return ClaimEvidence.model_validate(item)


def as_config(config: Any) -> Optional[ClaimVerificationConfig]:
    """The decision configuration: ``None``, a :class:`ClaimVerificationConfig`, a mapping of its
    fields, or a same-shaped model of another library (PRME's ``ClaimVerificationConfig``).

    Raises:
        pydantic.ValidationError: a field outside its limit, or an unknown field.
    """
    if config is None or isinstance(config, ClaimVerificationConfig):
        return config
    if _foreign_model(config):
        return ClaimVerificationConfig.model_validate(config.model_dump())
    return ClaimVerificationConfig.model_validate(config)


def validate_claim(claim: object, limits: InputLimits = _DEFAULT_LIMITS) -> str:
    """Return the stripped claim.

    Raises:
        InputError: not a string, empty after stripping, only invisible
            characters (zero-width, format, control), a NUL character, or not
            encodable as UTF-8 (a lone surrogate), or longer than
            ``limits.max_claim_chars``.
    """
    if not isinstance(claim, str):
        raise InputError(f"claim must be a string, got {type(claim).__name__}", field="claim")
    stripped = claim.strip()
    if not stripped:
        raise InputError(
            "claim must not be empty (claim must be nonempty after stripping)", field="claim", reason="claim is empty"
        )
    if len(stripped) > limits.max_claim_chars:
        raise _too_long("claim", "claim", len(stripped), "max_claim_chars", limits.max_claim_chars)
    if not has_visible_text(stripped):
        raise InputError(
            "claim must contain a visible character (only whitespace or invisible characters given)",
            field="claim",
            reason="claim has no visible character",
        )
    if "\x00" in stripped:
        raise InputError(
            f"claim must not contain a NUL character (at position {stripped.index(chr(0))})",
            field="claim",
            reason="claim contains a NUL character",
        )
    try:
        stripped.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"claim is not valid Unicode text ({exc.reason} at position {exc.start})", field="claim"
        ) from None
    return stripped


def _too_many_passages(count: str, max_evidence: int) -> InputError:
    return InputError(
        f"evidence has {count} passages, more than max_evidence={max_evidence} "
        f"(evidence count exceeds configured maximum {max_evidence})",
        field="evidence",
        reason=f"{count} passages exceed max_evidence={max_evidence}",
    )


def _bounded_evidence(request: Mapping[str, Any], max_evidence: int) -> Mapping[str, Any]:
    """``request`` whose ``evidence`` holds at most ``max_evidence`` passages, unparsed; more is refused
    before pydantic builds any passage (a list is counted, any other iterable read up to the limit + 1)."""
    evidence = request.get("evidence")
    if evidence is None or isinstance(evidence, (str, bytes, bytearray, Mapping)) or not isinstance(evidence, Iterable):
        return request  # the model's own validation names what is wrong
    if isinstance(evidence, Sized):
        if len(evidence) > max_evidence:
            raise _too_many_passages(str(len(evidence)), max_evidence)
        return request
    taken = list(itertools.islice(evidence, max_evidence + 1))
    if len(taken) > max_evidence:
        raise _too_many_passages(f"more than {max_evidence}", max_evidence)
    return {**request, "evidence": taken}


def validate_evidence(
    evidence: Iterable[Union[ClaimEvidence, Mapping[str, Any]]],
    config: ClaimVerificationConfig,
    limits: InputLimits = _DEFAULT_LIMITS,
) -> tuple[ClaimEvidence, ...]:
    """Parse passages and enforce ``max_evidence`` and unique references and memory ids.

    Raises:
        InputError: not a list of passages, more than ``config.max_evidence``
            passages (names the maximum), a text or reference longer than its
            limit, or a repeated reference or memory id (names it and the
            passage it repeats).
        pydantic.ValidationError: a malformed passage (names the field).
    """
    if evidence is None or isinstance(evidence, (str, bytes, Mapping)) or not isinstance(evidence, Iterable):
        raise InputError(
            f"evidence must be a list of passages (ClaimEvidence or mappings), got {type(evidence).__name__}",
            field="evidence",
        )
    if isinstance(evidence, Sized) and len(evidence) > config.max_evidence:  # refused before parsing any
        raise _too_many_passages(str(len(evidence)), config.max_evidence)
    items: list[ClaimEvidence] = []
    for item in evidence:
        if len(items) == config.max_evidence:  # a generator: never parse past the limit
            raise _too_many_passages(f"more than {config.max_evidence}", config.max_evidence)
        items.append(as_evidence(item))
    for index, item in enumerate(items):
        if len(item.text) > limits.max_passage_chars:
            raise _too_long(f"evidence.{index}.text", f"evidence {index} text", len(item.text), "max_passage_chars", limits.max_passage_chars)
        if len(item.reference) > limits.max_reference_chars:
            raise _too_long(
                f"evidence.{index}.reference", f"evidence {index} reference", len(item.reference),
                "max_reference_chars", limits.max_reference_chars,
            )
    references: dict[str, int] = {}
    memory_ids: dict[UUID, int] = {}
    for index, item in enumerate(items):
        if item.reference in references:
            raise InputError(
                f"evidence reference {item.reference!r} is repeated (duplicate evidence reference: {item.reference})",
                field=f"evidence.{index}.reference",
                reason=f"reference {item.reference!r} repeats evidence.{references[item.reference]}",
            )
        if item.memory_id in memory_ids:
            raise InputError(
                f"evidence memory_id {item.memory_id} is repeated (duplicate evidence memory: {item.memory_id})",
                field=f"evidence.{index}.memory_id",
                reason=f"memory_id {item.memory_id} repeats evidence.{memory_ids[item.memory_id]}",
            )
        references[item.reference] = index
        memory_ids[item.memory_id] = index
    return tuple(items)


def validate_request(
    request: Union[ValidRequest, ClaimRequest, Mapping[str, Any]],
    config: ClaimVerificationConfig,
    limits: InputLimits = _DEFAULT_LIMITS,
) -> ValidRequest:
    """Validate one request for ``config`` and ``limits`` (docs/decision.md §2); a
    :class:`ValidRequest` checked against the same ``max_evidence`` and limits is returned as is.

    Args:
        request: a :class:`ValidRequest`, a :class:`~verifier.types.ClaimRequest`,
            or a mapping with the fields of one.
        config: the decision configuration (its ``max_evidence`` bounds the passages).
        limits: size limits (default :class:`~verifier.options.InputLimits` ``()``).

    Raises:
        InputError: see :func:`validate_claim` and :func:`validate_evidence`.
        pydantic.ValidationError: a malformed request or passage.

    Example:
        >>> valid = validate_request({"claim": "  The launch is Tuesday. "}, ClaimVerificationConfig())
        >>> valid.claim, valid.evidence
        ('The launch is Tuesday.', ())
    """
    if isinstance(request, ValidRequest):
        if request.max_evidence == config.max_evidence and request.limits == limits:
            return request
        request = ClaimRequest(
            id=request.id,
            claim=request.claim,
            evidence=request.evidence,
            requires_complete_set=request.requires_complete_set,
            as_of=request.as_of,
        )
    if isinstance(request, Mapping):  # the passage count first: never parse 20,000 passages to refuse them
        request = _bounded_evidence(request, config.max_evidence)
        passages = request.get("evidence")
        if isinstance(passages, (list, tuple)) and any(map(_foreign_model, passages)):  # PRME's, as verify takes them
            request = {**request, "evidence": [as_evidence(item) if _foreign_model(item) else item for item in passages]}
    item = request if isinstance(request, ClaimRequest) else ClaimRequest.model_validate(request)
    claim = validate_claim(item.claim, limits)
    evidence = validate_evidence(item.evidence, config, limits)
    return ValidRequest(
        claim=claim,
        evidence=evidence,
        requires_complete_set=item.requires_complete_set,
        id=item.id,
        max_evidence=config.max_evidence,
        limits=limits,
        as_of=item.as_of,
    )

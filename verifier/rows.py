"""One input row of ``verify`` (an evidence row or a bundle row), validated: valid or invalid, never raised.

Shared by every bulk surface — the command line (:mod:`verifier.cli.inputs`
reads the rows), Ray Data workers (:mod:`verifier.distributed`) — so a row is
judged the same way everywhere. The row format is described in
:mod:`verifier.cli.inputs`; validation is :func:`verifier.validation.validate_request`.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import ValidationError

from .decision.bundle import BundleClaimRequest, bundle_evidence
from .options import InputLimits
from .strictjson import loads
from .types import ClaimVerificationConfig
from .validation import InputError, ValidRequest, describe_validation_error, validate_request

__all__ = ["InputRow", "InvalidRow", "decode_json", "parse_line", "parse_row", "validation_problem"]


def validation_problem(exc: ValidationError) -> tuple[Optional[str], str]:
    """The first error of ``exc`` in user words, and how many more there are.

    Returns ``(field, message)``: ``field`` is the dotted location (``None``
    for the whole document) and ``message`` ends with ``(and N more error(s)
    in this row: FIELD, ...)`` when ``exc`` holds more than one error, naming
    up to three of the other fields.
    """
    location, message, count = describe_validation_error(exc)
    if count > 1:
        others = [".".join(str(part) for part in error.get("loc", ())) or "the row" for error in exc.errors()[1:4]]
        more = ", ".join(others) + (", ..." if count > 4 else "")
        message += f" (and {count - 1} more error{'s' if count > 2 else ''} in this row: {more})"
    return location, message


@dataclass(frozen=True)
class InputRow:
    """One valid input row: its 1-based line (or item) number and the validated request it holds.

    ``request`` is a :class:`~verifier.validation.ValidRequest` (claim
    stripped, evidence parsed, checked against the configuration's
    ``max_evidence``), handed to the verifier as is.
    """

    line: int
    request: ValidRequest


@dataclass(frozen=True)
class InvalidRow:
    """One invalid input row: where, which field (``None`` for the whole row), and why.

    ``unit`` is ``"line"`` for JSON Lines and for JSON syntax errors, ``"item"``
    for an element of a whole-file ``.json`` array.
    """

    line: int
    field: Optional[str]
    message: str
    unit: str = "line"
    #: the row's ``id`` when it is a JSON object with a string ``id`` (for envelopes, shards and resume)
    id: Optional[str] = None

    def describe(self, source: str) -> str:
        """``SOURCE line N: field F: message`` on one line."""
        where = f"{source} {self.unit} {self.line}"
        if self.field:
            where += f": field {self.field}"
        return f"{where}: {self.message}"


def decode_json(line: int, text: "str | bytes", *, whole_file: bool = False) -> Any:
    """The JSON value of one input line (or a whole ``.json`` document), or an :class:`InvalidRow` saying why not.

    Parsed by :func:`verifier.strictjson.loads`: an object that repeats a key is
    invalid JSON, never "the last value wins". For a whole document the row's
    line is where the error is; else ``line``.
    """
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        return InvalidRow(exc.lineno if whole_file else line, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
    except RecursionError:
        return InvalidRow(line, None, "invalid JSON: nested too deeply")


def parse_line(
    line: int, text: str, config: ClaimVerificationConfig, limits: InputLimits = InputLimits()
) -> "InputRow | InvalidRow | None":
    """One JSON Lines input line (its newline included or not), decoded and validated; ``None`` for a blank line.

    The one reading of a line, shared by ``verify`` and the Ray workers, so
    both see the same row whatever its field types.
    """
    if not text.strip():
        return None
    value = decode_json(line, text.rstrip())
    if isinstance(value, InvalidRow):
        return value
    return parse_row(line, value, config, "line", limits)


def _from_validation_error(line: int, exc: ValidationError, unit: str = "line") -> InvalidRow:
    location, message = validation_problem(exc)
    return InvalidRow(line, location, message, unit)


def _validate(
    line: int, value: Any, config: ClaimVerificationConfig, unit: str, limits: InputLimits
) -> InputRow | InvalidRow:
    """:func:`~verifier.validation.validate_request` of one row, its errors as an :class:`InvalidRow`."""
    try:
        return InputRow(line, validate_request(value, config, limits))
    except InputError as exc:
        return InvalidRow(line, exc.field, exc.reason, unit)
    except ValidationError as exc:
        return _from_validation_error(line, exc, unit)


def parse_row(
    line: int, value: Any, config: ClaimVerificationConfig, unit: str = "line", limits: InputLimits = InputLimits()
) -> InputRow | InvalidRow:
    """Validate one decoded row (an evidence row or a bundle row): an :class:`InputRow` or an :class:`InvalidRow`.

    An invalid row that is a JSON object with a string ``id`` carries that id.
    """
    parsed = _parse_row(line, value, config, unit, limits)
    if isinstance(parsed, InvalidRow) and isinstance(value, dict) and isinstance(value.get("id"), str):
        return dataclasses.replace(parsed, id=value["id"])
    return parsed


def _parse_row(
    line: int, value: Any, config: ClaimVerificationConfig, unit: str = "line", limits: InputLimits = InputLimits()
) -> InputRow | InvalidRow:
    if not isinstance(value, dict):
        return InvalidRow(line, None, f"expected a JSON object, got {type(value).__name__}", unit)
    if "bundle" not in value:
        return _validate(line, value, config, unit, limits)
    try:
        bundled = BundleClaimRequest.model_validate(value)
    except ValidationError as exc:
        return _from_validation_error(line, exc, unit)
    try:
        evidence = bundle_evidence(bundled.bundle, bundled.evidence_refs, max_evidence=config.max_evidence,
                                   max_candidates=limits.max_bundle_candidates)
    except ValueError as exc:
        where = "evidence_refs" if "evidence_refs" in str(exc) else "bundle"
        return InvalidRow(line, where, str(exc), unit)
    request = {
        "id": bundled.id,
        "claim": bundled.claim,
        "evidence": evidence,
        "requires_complete_set": bundled.requires_complete_set,
    }
    return _validate(line, request, config, unit, limits)

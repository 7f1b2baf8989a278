"""Big inputs for ``verify INPUT``: the streaming scan, shards, envelopes and resumable output.

``verify`` reads its input twice (:mod:`verifier.cli.inputs`): :func:`scan`
validates every row and keeps only counts, the first invalid rows (for the
report) and, for ``--resume``, 32 bytes per id; the second pass re-reads the
input and verifies it in chunks of :data:`CHUNK` claims. Memory therefore does
not grow with the input, except the 32 bytes per id that ``--resume`` needs to
prove the ids unique, to check what is already written against the current
rows and to skip it.

Shards (``--shard I/N``)
    A row belongs to shard ``int(sha256(id)[:8]) % N`` (big-endian, the id as
    UTF-8); a row without a readable id (only an invalid row can lack one,
    since ``--shard`` needs an id on every valid row) belongs to shard 0. N
    processes given ``0/N`` ... ``N-1/N`` cover the input exactly once; each
    treats the rows it owns as its whole input (validation, invalid-row
    reports, ``--resume``).

Envelopes (``--output-format envelope``)
    ``{"id": ..., "line": n, "result": {...}}`` per verified row and, with
    ``--skip-invalid``, ``{"id": ..., "line": n, "error": {"field": ...,
    "message": ..., "unit": ...}}`` per skipped row, in input order. ``result``
    is the result's ``model_dump_json()`` byte for byte.

Resume (``--resume``, envelopes only; :mod:`verifier.cli.resume`)
    Every input row must have a unique string id. Pass 1 keeps, per id, 16
    bytes of its sha256 and a 16-byte :func:`row_fingerprint` (the row's line
    and, for a valid row, the digests of its claim and evidence, its ``as_of``
    and ``requires_complete_set``; for an invalid row, its error), so that a
    line already in the output is kept only when it answers the current row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator, Optional

import numpy as np

from ..decision.audit import canonical, claim_sha256, configuration_sha256, evidence_sha256
from ..types import ClaimVerification, ClaimVerificationConfig, ClaimVerificationStatus
from ..validation import ValidRequest
from .errors import UsageError
from ..envelopes import DigestSet, envelope, envelope_text, id_digest, row_id
from .inputs import MAX_REPORTED_ERRORS, InputRow, InvalidRow

__all__ = [
    "CHUNK",
    "Shard",
    "shard_type",
    "id_digest",
    "Scan",
    "scan",
    "DigestSet",
    "envelope",
    "envelope_text",
    "row_fingerprint",
    "result_fingerprint",
    "error_fingerprint",
    "row_id",
    "chunks",
    "bare",
    "check_ids",
    "configuration_digest",
    "StatusTally",
]

#: Claims per ``verify_many_sync`` call (and rows per resumable write): bounds memory
#: while keeping cross-claim batches large.
CHUNK = 1024


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``0 <= index < count``); ``Shard(0, 1)`` is the whole input."""

    index: int = 0
    count: int = 1

    def owns(self, row_id: Optional[str]) -> bool:
        """Whether the row with this id belongs to this shard (no id: shard 0)."""
        if self.count == 1:
            return True
        if row_id is None:
            return self.index == 0
        digest = hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


_SHARD = re.compile(r"([0-9]+)/([0-9]+)")


def shard_type(text: str) -> Shard:
    """argparse type of ``--shard I/N``: ``0 <= I < N``, ``1 <= N <= 1,000,000``, in plain ASCII digits.

    (``int`` alone would also take ``" 1/3"``, ``1_0/20`` and non-ASCII digits.)
    """
    found = _SHARD.fullmatch(text)
    if found is None:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/4 (ASCII digits only), got {text!r}")
    index, count = int(found.group(1)), int(found.group(2))
    if not 1 <= count <= 1_000_000 or not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < N (N at most 1,000,000), got {text!r}")
    return Shard(index, count)


@dataclass
class Scan:
    """What pass 1 kept of the rows this shard owns: counts, the first invalid rows, ids for ``--resume``."""

    valid: int = 0
    invalid: int = 0
    reported: list[InvalidRow] = field(default_factory=list)
    #: one valid request that needs the model, if any (``prepare`` checks the model directory only then)
    sample: list[ValidRequest] = field(default_factory=list)
    digests: bytearray = field(default_factory=bytearray)
    #: :func:`row_fingerprint` of each row, beside ``digests`` (``--resume``)
    fingerprints: bytearray = field(default_factory=bytearray)
    without_id: list[str] = field(default_factory=list)
    without_id_count: int = 0


def chunks(rows: Iterator["InputRow | InvalidRow"], size: int = CHUNK) -> Iterator[list["InputRow | InvalidRow"]]:
    """Rows in chunks of at most ``size`` (valid and skipped rows together, in input order)."""
    chunk: list[InputRow | InvalidRow] = []
    for item in rows:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def scan(rows: Iterator["InputRow | InvalidRow"], shard: Shard, *, need_ids: bool, source: str) -> Scan:
    """Pass 1: validate every row, keep what :class:`Scan` holds (``need_ids``: for ``--resume``).

    Raises:
        UsageError: ``--shard`` and a valid row without an id.
    """
    result = Scan()
    for item in rows:
        key = row_id(item)
        if key is None and shard.count > 1 and isinstance(item, InputRow):
            raise UsageError(f"error: --shard needs an id on every row; {source} line {item.line} has none")
        if not shard.owns(key):
            continue
        if isinstance(item, InvalidRow):
            result.invalid += 1
            if len(result.reported) < MAX_REPORTED_ERRORS:
                result.reported.append(item)
        else:
            result.valid += 1
            request = item.request
            if not result.sample and request.evidence and not request.requires_complete_set:
                result.sample.append(request)
        if need_ids:
            if key is None:
                result.without_id_count += 1
                if len(result.without_id) < 5:
                    result.without_id.append(f"{item.unit if isinstance(item, InvalidRow) else 'line'} {item.line}")
            else:
                result.digests += id_digest(key)
                result.fingerprints += row_fingerprint(item)
    return result


def check_ids(found: Scan, rows: Iterator["InputRow | InvalidRow"], shard: Shard, source: str) -> DigestSet:
    """For ``--resume``: every row this shard owns has an id and no id repeats; the ids as a :class:`DigestSet`.

    ``rows`` is a fresh read of the input, used only to name a repeated id.

    Raises:
        UsageError: a row without an id, or a repeated id.
    """
    if found.without_id_count:
        where = ", ".join(found.without_id) + (" ..." if found.without_id_count > len(found.without_id) else "")
        raise UsageError(
            f"error: --resume needs a string id on every row; {found.without_id_count} row(s) of {source} have none ({where})"
        )
    ids = DigestSet(found.digests, found.fingerprints)
    found.digests, found.fingerprints = bytearray(), bytearray()
    repeated = ids.repeated()
    if repeated:
        lines: dict[bytes, list[int]] = {}
        text: dict[bytes, str] = {}
        for item in rows:
            key = row_id(item)
            if key is None or not shard.owns(key):
                continue
            digest = id_digest(key)
            if digest in repeated:
                lines.setdefault(digest, []).append(item.line)
                text[digest] = key
        first = min(repeated, key=lambda digest: lines.get(digest, [0])[:2])
        where = " and ".join(str(line) for line in lines.get(first, [])[:2])
        raise UsageError(
            f"error: --resume needs unique ids; id {text.get(first, '?')!r} repeats in {source} (lines {where}); "
            f"{len(repeated)} repeated id(s) in all"
        )
    return ids


def _fingerprint(parts: list[Any]) -> bytes:
    return hashlib.sha256(canonical(parts).encode("utf-8", "surrogatepass")).digest()[:15] + b"\x01"


def _instant(value: Optional[datetime]) -> Optional[str]:
    return None if value is None else value.isoformat()


def row_fingerprint(item: "InputRow | InvalidRow") -> bytes:
    """16 bytes standing for what an output line must say about this input row (``--resume``).

    A valid row: its line, the sha256 of its claim and of its evidence (those
    every result carries), its ``as_of`` and ``requires_complete_set``. An
    invalid row: its line and its error. Equal to :func:`result_fingerprint` /
    :func:`error_fingerprint` of the line an uninterrupted run writes for it.
    """
    if isinstance(item, InvalidRow):
        return error_fingerprint(item.line, {"field": item.field, "message": item.message, "unit": item.unit})
    request = item.request
    return _fingerprint(
        ["result", item.line, claim_sha256(request.claim), evidence_sha256(request.evidence),
         _instant(request.as_of), bool(request.requires_complete_set)]
    )


def result_fingerprint(line: int, result: ClaimVerification) -> bytes:
    """:func:`row_fingerprint` of the row a result at ``line`` answers (``incomplete`` is a complete-set claim's)."""
    return _fingerprint(
        ["result", line, result.claim_sha256, result.evidence_sha256, _instant(result.as_of),
         result.status is ClaimVerificationStatus.INCOMPLETE]
    )


def error_fingerprint(line: int, error: dict[str, Any]) -> bytes:
    """:func:`row_fingerprint` of the invalid row an error envelope at ``line`` reports."""
    return _fingerprint(["error", line, error.get("field"), error.get("message"), error.get("unit")])


def bare(item: "InputRow | InvalidRow", result: Optional[ClaimVerification]) -> str:
    """The default format: the result's ``model_dump_json()`` and a newline; nothing for a skipped row."""
    return "" if result is None else result.model_dump_json() + "\n"


class StatusTally(list[ClaimVerification]):
    """``RunSummary.results`` for big runs: counts per status, one result kept per status.

    :func:`~verifier.cli.render.format_summary` only counts statuses and takes
    the length, so iterating yields each status's kept result as many times as
    that status occurred.
    """

    def __init__(self) -> None:
        super().__init__()
        self.kept: dict[ClaimVerificationStatus, ClaimVerification] = {}
        self.counts: dict[ClaimVerificationStatus, int] = {}

    def append(self, result: ClaimVerification) -> None:
        self.kept.setdefault(result.status, result)
        self.counts[result.status] = self.counts.get(result.status, 0) + 1

    def __len__(self) -> int:
        return sum(self.counts.values())

    def __iter__(self) -> Iterator[ClaimVerification]:
        for status, count in self.counts.items():
            for _ in range(count):
                yield self.kept[status]

    def __bool__(self) -> bool:
        return bool(self.counts)


def configuration_digest(config: ClaimVerificationConfig) -> str:
    """The ``configuration_sha256`` every result of ``config`` carries."""
    return configuration_sha256(config)

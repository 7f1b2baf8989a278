"""Big inputs for ``verify INPUT``: the streaming scan, shards, envelopes and resumable output.

``verify`` reads its input twice (:mod:`verifier.cli.inputs`): :func:`scan`
validates every row and keeps only counts, the first invalid rows (for the
report) and, for ``--resume``, 16 bytes per id; the second pass re-reads the
input and verifies it in chunks of :data:`CHUNK` claims. Memory therefore does
not grow with the input, except the 16 bytes per id that ``--resume`` needs to
prove the ids unique and to skip those already written.

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

Resume (``--resume``, envelopes only)
    The output (a regular file) is appended to one chunk at a time: each
    chunk's lines are written together, flushed and fsynced. On a restart,
    :func:`read_done` reads what is there: a last line without its newline (a
    torn write) is dropped, any other line that is not an envelope is an error,
    and every result must carry this run's ``configuration_sha256``. Every
    input row must have a unique string id; ids already written are skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterator, Optional

import numpy as np

from ..decision.audit import configuration_sha256
from ..types import ClaimVerification, ClaimVerificationConfig, ClaimVerificationStatus
from ..validation import ValidRequest
from .errors import Failure, UsageError
from .inputs import MAX_REPORTED_ERRORS, InputRow, InvalidRow

__all__ = [
    "CHUNK",
    "Shard",
    "shard_type",
    "id_digest",
    "Scan",
    "scan",
    "DigestSet",
    "read_done",
    "envelope",
    "row_id",
    "chunks",
    "bare",
    "AppendFile",
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


def shard_type(text: str) -> Shard:
    """argparse type of ``--shard I/N``: ``0 <= I < N``, ``1 <= N <= 1,000,000``."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected I/N such as 0/4, got {text!r}") from None
    if not 1 <= count <= 1_000_000 or not 0 <= index < count:
        raise argparse.ArgumentTypeError(f"expected 0 <= I < N (N at most 1,000,000), got {text!r}")
    return Shard(index, count)


def id_digest(row_id: str) -> bytes:
    """16 bytes standing for an id: 15 bytes of its sha256 and a final 0x01 (so numpy's ``S16`` keeps every byte)."""
    return hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).digest()[:15] + b"\x01"


class DigestSet:
    """A sorted array of :func:`id_digest` values: 16 bytes per id, exact membership."""

    def __init__(self, digests: "bytes | bytearray") -> None:
        self.array = np.sort(np.frombuffer(bytes(digests), dtype="S16"))

    def __len__(self) -> int:
        return int(self.array.size)

    def __contains__(self, digest: bytes) -> bool:
        index = int(np.searchsorted(self.array, digest))
        return index < self.array.size and bytes(self.array[index]) == digest

    def repeated(self) -> set[bytes]:
        """The digests present more than once."""
        same = self.array[1:] == self.array[:-1]
        return {bytes(value) for value in self.array[1:][same]}

    def missing_from(self, other: "DigestSet") -> int:
        """How many of these digests ``other`` lacks."""
        return int(np.count_nonzero(~np.isin(self.array, other.array)))


@dataclass
class Scan:
    """What pass 1 kept of the rows this shard owns: counts, the first invalid rows, ids for ``--resume``."""

    valid: int = 0
    invalid: int = 0
    reported: list[InvalidRow] = field(default_factory=list)
    #: one valid request that needs the model, if any (``prepare`` checks the model directory only then)
    sample: list[ValidRequest] = field(default_factory=list)
    digests: bytearray = field(default_factory=bytearray)
    without_id: list[str] = field(default_factory=list)
    without_id_count: int = 0


def row_id(item: "InputRow | InvalidRow") -> Optional[str]:
    """The row's input id (``None`` when it has none, or an empty one)."""
    value = item.request.id if isinstance(item, InputRow) else item.id
    return value if value else None


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
    ids = DigestSet(found.digests)
    found.digests = bytearray()
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


def read_done(path: Path, configuration_sha256: str, option: str = "-o") -> "tuple[DigestSet, int]":
    """What an interrupted ``--resume`` run already wrote to ``path``: the ids done and the byte length to keep.

    A missing or empty file is nothing done. A last line without its newline is
    a torn write and is not counted (the caller truncates the file to the
    returned length).

    Raises:
        UsageError: a line that is not an envelope, or a result made under
            another decision configuration.
        Failure: the file cannot be read.
    """
    digests = bytearray()
    keep = 0
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return DigestSet(b""), 0
    except OSError as exc:
        raise Failure(f"error: cannot read {option} {path}: {exc.strerror or exc}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                break  # a torn last line: dropped
            keep += len(raw)
            digests += id_digest(_done_id(raw, number, path, configuration_sha256))
    return DigestSet(digests), keep


def _done_id(raw: bytes, number: int, path: Path, configuration_sha256: str) -> str:
    problem = f"error: {path} line {number} is not an envelope of verify --resume"
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise UsageError(f"{problem}; give a new -o or the output of the interrupted run") from None
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or not ("result" in value or "error" in value):
        raise UsageError(f"{problem}; give a new -o or the output of the interrupted run")
    result = value.get("result")
    if isinstance(result, dict) and result.get("configuration_sha256") != configuration_sha256:
        raise UsageError(
            f"error: {path} line {number} was verified under another decision configuration "
            f"(configuration_sha256 {str(result.get('configuration_sha256'))[:12]}..., this run "
            f"{configuration_sha256[:12]}...); resume with the same options or write to a new -o"
        )
    return value["id"]


def envelope(item: "InputRow | InvalidRow", result: Optional[ClaimVerification]) -> str:
    """One envelope line (with its newline) for a verified row (``result``) or a skipped invalid row."""
    key = json.dumps(row_id(item) if isinstance(item, InvalidRow) else item.request.id)
    if isinstance(item, InvalidRow):
        error = json.dumps({"field": item.field, "message": item.message, "unit": item.unit})
        return f'{{"id": {key}, "line": {item.line}, "error": {error}}}\n'
    assert result is not None
    return f'{{"id": {key}, "line": {item.line}, "result": {result.model_dump_json()}}}\n'


def bare(item: "InputRow | InvalidRow", result: Optional[ClaimVerification]) -> str:
    """The default format: the result's ``model_dump_json()`` and a newline; nothing for a skipped row."""
    return "" if result is None else result.model_dump_json() + "\n"


class AppendFile:
    """The ``--resume`` output: truncated to what :func:`read_done` kept, then appended one fsynced chunk at a time."""

    def __init__(self, path: Path, keep: int, option: str = "-o") -> None:
        self.path, self.option = path, option
        try:
            self.handle: IO[bytes] = open(path, "ab")
            self.handle.truncate(keep)
        except OSError as exc:
            raise Failure(f"error: cannot write {option} {path}: {exc.strerror or exc}") from exc

    def write_chunk(self, text: str) -> None:
        """Append ``text`` (whole lines) with one write, then flush and fsync."""
        if not text:
            return
        try:
            self.handle.write(text.encode("utf-8", "surrogatepass"))
            self.handle.flush()
            os.fsync(self.handle.fileno())
        except OSError as exc:
            raise Failure(f"error: cannot write {self.option} {self.path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        """Close the file (what was written stays)."""
        try:
            self.handle.close()
        except OSError:  # pragma: no cover - every chunk was already fsynced
            pass


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

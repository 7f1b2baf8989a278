"""Envelopes and ids of ``verify`` output rows, shared by the CLI (:mod:`verifier.cli.bulk`) and the Ray workers.

An envelope is ``{"id": ..., "line": n, "result": {...}}`` for a verified row
or ``{"id": ..., "line": n, "error": {"field", "message", "unit"}}`` for a
skipped one (docs/bulk.md); :func:`id_digest` stands for an id in 16 bytes
(``--resume``'s sets of ids, :class:`DigestSet`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Optional

import numpy as np

from .rows import InputRow, InvalidRow
from .types import ClaimVerification

__all__ = ["id_digest", "DigestSet", "row_id", "envelope_text", "envelope"]


def id_digest(row_id: str) -> bytes:
    """16 bytes standing for an id: 15 bytes of its sha256 and a final 0x01 (so numpy's ``S16`` keeps every byte)."""
    return hashlib.sha256(row_id.encode("utf-8", "surrogatepass")).digest()[:15] + b"\x01"


class DigestSet:
    """A sorted array of :func:`id_digest` values: 16 bytes per id, exact membership.

    ``values`` (optional, 16 bytes per id in the same order as ``digests``, each
    ending in a non-zero byte) are kept beside their ids: :meth:`value`.
    """

    def __init__(self, digests: "bytes | bytearray", values: "bytes | bytearray | None" = None) -> None:
        ids = np.frombuffer(digests, dtype="S16")  # a view, not a copy: the sorted arrays below are the copies kept
        order = np.argsort(ids, kind="stable")
        self.array = ids[order]
        self.values = np.frombuffer(values, dtype="S16")[order] if values is not None else None

    def value(self, digest: bytes) -> Optional[bytes]:
        """The value kept beside ``digest`` (``None``: not a member, or no values)."""
        index = int(np.searchsorted(self.array, digest))
        if self.values is None or index >= self.array.size or bytes(self.array[index]) != digest:
            return None
        return bytes(self.values[index])

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


def row_id(item: "InputRow | InvalidRow") -> Optional[str]:
    """The row's input id (``None`` when it has none, or an empty one)."""
    value = item.request.id if isinstance(item, InputRow) else item.id
    return value if value else None


def envelope_text(key: Optional[str], line: int, *, result: Optional[str] = None, error: Optional[dict[str, Any]] = None) -> str:
    """The envelope line (with its newline) of row ``line`` with id ``key``: ``result`` (its JSON text) or ``error``."""
    if result is not None:
        return f'{{"id": {json.dumps(key)}, "line": {line}, "result": {result}}}\n'
    assert error is not None
    body = json.dumps({"field": error["field"], "message": error["message"], "unit": error["unit"]})
    return f'{{"id": {json.dumps(key)}, "line": {line}, "error": {body}}}\n'


def envelope(item: "InputRow | InvalidRow", result: Optional[ClaimVerification]) -> str:
    """One envelope line (with its newline) for a verified row (``result``) or a skipped invalid row."""
    if isinstance(item, InvalidRow):
        return envelope_text(row_id(item), item.line, error={"field": item.field, "message": item.message, "unit": item.unit})
    assert result is not None
    return envelope_text(item.request.id, item.line, result=result.model_dump_json())

"""What ``check --inputs``, ``check --rescore`` and ``verify --resume`` need beyond a record: its input row, and the model.

A result carries the digests of its passages, not the passages, so a full
replay of the decision (:func:`verifier.decision.replay.replay`) and a
re-scoring of its premises need the input row it answers.
:class:`RowIndex` finds rows by a key, or by line, from an index made in one
read of the input: a lookup reads again only the rows with the wanted key, so
matching a whole output reads the input twice whatever the output's order (a
Ray output comes back in no particular order).
"""

from __future__ import annotations

import bisect
import hashlib
from array import array
from typing import Any, Callable, Generic, Hashable, Iterator, Optional, Sequence, TypeVar

import numpy as np

from ..options import InputLimits
from ..rows import InputRow, InvalidRow
from ..types import ClaimVerificationConfig
from .inputs import iter_input, iter_placed, row_at

__all__ = ["RowIndex"]

K = TypeVar("K", bound=Hashable)
Where = Optional[Callable[["InputRow | InvalidRow"], bool]]


def _key_digest(value: object) -> bytes:
    """16 bytes standing for a key (its ``repr``; a final 0x01 so that numpy's ``S16`` keeps every byte)."""
    return hashlib.blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=15).digest() + b"\x01"


class RowIndex(Generic[K]):
    """The rows of an input file found by ``key(row)`` or by line, indexed on the first lookup.

    The index keeps 48 bytes a row (a digest of its key, its position, line, byte offset and length), not the rows: a
    lookup parses again only the rows with the wanted key. A ``.json`` input, which is read whole anyway (at
    most ``--max-line-bytes``), is kept as rows. Of several rows a lookup accepts, the one found is the one a
    forward read of the input would find: the first after the row found last, else the first of the file.

    Args:
        path: the input file (read more than once), read as ``verify`` reads it under ``config`` and ``limits``.
        source: how messages name it.
        whole_file: a ``.json`` input.
        key: a row's key.
    """

    def __init__(
        self, path: str, config: ClaimVerificationConfig, limits: InputLimits, *, source: str, whole_file: bool,
        key: Callable[["InputRow | InvalidRow"], Optional[K]],
    ) -> None:
        self._path, self._config, self._limits, self._source, self._whole = path, config, limits, source, whole_file
        self._key = key
        self._built = False
        self._after = -1  # position of the row found last by reading forward (-1: the next lookup starts at the top)

    def rows(self) -> Iterator["InputRow | InvalidRow"]:
        """Every row of the input, read afresh."""
        return iter_input(self._path, self._config, self._limits, source=self._source, whole_file=self._whole)

    def _build(self) -> None:
        digests, places, lines = bytearray(), array("q"), array("q")
        self._held: list["InputRow | InvalidRow"] = []
        placed: Iterator[tuple[int, int, "InputRow | InvalidRow"]] = (
            ((0, 0, item) for item in self.rows()) if self._whole
            else iter_placed(self._path, self._config, self._limits, source=self._source)
        )
        for offset, length, item in placed:
            digests += _key_digest(self._key(item))
            places.extend((offset, length))
            lines.append(item.line)
            if self._whole:
                self._held.append(item)
        keys = np.frombuffer(bytes(digests), dtype="S16")
        self._order = np.argsort(keys, kind="stable")  # positions by key, each key's in input order
        self._keys = keys[self._order]
        self._places = np.frombuffer(places.tobytes(), dtype=np.int64).reshape(-1, 2)  # each line's offset and length
        self._lines = np.frombuffer(lines.tobytes(), dtype=np.int64)  # increasing: rows come in input order
        self._built = True

    def _row(self, position: int) -> "Optional[InputRow | InvalidRow]":
        if self._whole:
            return self._held[position]
        offset, length = self._places[position].tolist()
        return row_at(self._path, (offset, length), int(self._lines[position]), self._config, self._limits,
                      source=self._source)

    def _pick(self, positions: Sequence[int], accepts: Callable[["InputRow | InvalidRow"], bool]) -> "Optional[InputRow | InvalidRow]":
        """The first row of ``positions`` (increasing) after the row found last that ``accepts`` takes, else the
        first of them before it (which sends the next lookup back to the top), as a forward read finds it."""
        split = bisect.bisect_right(positions, self._after)
        for position in positions[split:]:
            item = self._row(position)
            if item is not None and accepts(item):
                self._after = position
                return item
        before, self._after = positions[:split], -1
        for position in before:
            item = self._row(position)
            if item is not None and accepts(item):
                return item
        return None

    def find(self, wanted: Optional[K], where: Where = None) -> "Optional[InputRow | InvalidRow]":
        """A row whose key is ``wanted`` (and, with ``where``, that ``where`` accepts); ``None``: none."""
        if not self._built:
            self._build()
        digest = _key_digest(wanted)
        low = int(np.searchsorted(self._keys, digest, side="left"))
        high = int(np.searchsorted(self._keys, digest, side="right"))
        positions = self._order[low:high].tolist()
        return self._pick(positions, lambda item: self._key(item) == wanted and (where is None or where(item)))

    def at(self, line: int, where: Where = None) -> "Optional[InputRow | InvalidRow]":
        """The row at input line ``line`` (a ``.json`` input: item), if ``where`` accepts it; ``None``: none."""
        if not self._built:
            self._build()
        index = int(np.searchsorted(self._lines, line))
        positions = [index] if index < self._lines.size and int(self._lines[index]) == line else []
        return self._pick(positions, lambda item: where is None or where(item))

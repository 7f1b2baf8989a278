"""Reading ``INPUT`` for ``verify``: JSON Lines, a whole ``.json`` file, or stdin.

Input format
------------
``INPUT`` is JSON Lines: one JSON object per line, blank lines ignored,
line numbers counted from 1 over all lines. Two kinds of row may be mixed:

* an evidence row, validated as :class:`~verifier.types.ClaimRequest`::

      {"id": "launch-1", "claim": "The launch is Tuesday.",
       "evidence": [{"reference": "M1",
                     "memory_id": "7d8e4f6a-0c1b-4b8e-9a61-2f1d3c4b5a01",
                     "text": "The launch is on Tuesday.",
                     "source_type": "user_stated", "lifecycle_state": "stable"}],
       "requires_complete_set": false}

  ``id`` and ``requires_complete_set`` are optional; evidence fields are those
  of :class:`~verifier.types.ClaimEvidence`;

* a bundle row (any row with a ``bundle`` key), validated as
  :class:`~verifier.decision.bundle.BundleClaimRequest`::

      {"id": "launch-2", "claim": "The launch is Tuesday.",
       "bundle": {"rendered_context": "[M1] The launch moved to Wednesday.",
                  "candidates": [{"reference": "M1", "memory_id": "...",
                                  "rendered_text": "The launch moved to Wednesday."}]},
       "evidence_refs": ["M1"]}

  whose evidence is :func:`verifier.decision.bundle.bundle_evidence` of the bundle
  (docs/decision.md §7: rendered text of cited candidates only).

A file whose name ends in ``.json`` is read whole instead: one such object
(e.g. a pretty-printed bundle row) or a JSON array of them; messages then
name the 1-based ``item`` of the array (JSON syntax errors still name the line).

Input is UTF-8, with or without a byte-order mark. One line (or a whole
``.json`` file) may hold at most ``--max-line-bytes`` bytes (default 16 MiB,
:class:`~verifier.options.InputLimits`); a longer one stops the run with exit
2 before any model work, even with ``--skip-invalid``, since the rest of such
a line is never read into memory. JSON nested deeper than Python's parser
allows is an invalid row, not a crash, and so is an object that repeats a key
(``invalid JSON: duplicate key 'claim' in a JSON object``: other parsers may
read the first value where Python reads the last; :mod:`verifier.strictjson`).

Every row is validated once, by :func:`verifier.validation.validate_request`
(the checks of docs/decision.md §2: non-empty claim that is valid Unicode
text, at most ``max_evidence`` passages, no repeated reference or memory id),
before any model work; the :class:`~verifier.validation.ValidRequest` it
returns is what the verifier gets. An invalid row is reported as
``INPUT line N: field F: ...`` and the command exits with status 2 without
writing any output; with ``--skip-invalid`` each invalid row is reported on
stderr and skipped.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import sys
import tempfile
import uuid
from typing import IO, Iterator, Optional, Sequence, Union


from ..options import InputLimits
from ..types import ClaimVerificationConfig
from ..rows import InputRow, InvalidRow, decode_json, parse_line, parse_row
from .errors import UsageError, err

__all__ = [
    "CLI_EVIDENCE_NAMESPACE",
    "MAX_REPORTED_ERRORS",
    "InputRow",
    "InvalidRow",
    "cli_memory_id",
    "LineTooLong",
    "parse_row",
    "read_requests",
    "read_input",
    "iter_input",
    "iter_placed",
    "row_at",
    "is_whole_file",
    "spooled",
    "open_lines",
    "report_invalid",
]

#: Namespace of the memory ids given to ``--evidence`` passages:
#: ``uuid5(NAMESPACE_URL, "urn:claim-verifier:cli-evidence")``.
CLI_EVIDENCE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:claim-verifier:cli-evidence")

#: Invalid rows reported one by one before the rest are only counted.
MAX_REPORTED_ERRORS = 20


def cli_memory_id(text: str) -> uuid.UUID:
    """Deterministic memory id of a ``--evidence`` passage: uuid5 of its stripped text.

    Example:
        >>> str(cli_memory_id(" The launch is Tuesday. ")) == str(cli_memory_id("The launch is Tuesday."))
        True
    """
    return uuid.uuid5(CLI_EVIDENCE_NAMESPACE, text.strip())


class LineTooLong(UsageError):
    """A line (or a whole ``.json`` file) exceeds ``max_request_bytes``."""


def _lines(stream: Union[IO[str], IO[bytes]], limit: int, source: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line, each read with at most ``limit`` bytes (characters for text).

    Raises:
        LineTooLong: a line is longer than ``limit``.
        UsageError: a line is not UTF-8.
    """
    for number, _, _, text in _placed_lines(stream, limit, source):
        yield number, text


def _placed_lines(stream: Union[IO[str], IO[bytes]], limit: int, source: str) -> Iterator[tuple[int, int, int, str]]:
    """``(line number, offset, length, text)`` of every line: :func:`_lines` with where each line starts and
    its length (in bytes, for a byte stream)."""
    number = offset = 0
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        start, offset = offset, offset + len(raw)
        number += 1
        ends_line = raw.endswith(b"\n") if isinstance(raw, bytes) else raw.endswith("\n")
        if len(raw) > limit and not ends_line:
            raise LineTooLong(
                f"error: {source} line {number} is longer than --max-line-bytes={limit}; nothing written"
            )
        if isinstance(raw, bytes):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UsageError(f"error: {source} line {number} is not UTF-8 text: {exc.reason}") from None
        else:
            text = raw[1:] if number == 1 and raw.startswith("\ufeff") else raw
        yield number, start, offset - start, text


def read_requests(
    stream: Union[IO[str], IO[bytes]],
    config: ClaimVerificationConfig,
    *,
    whole_file: bool = False,
    limits: InputLimits = InputLimits(),
    source: str = "INPUT",
) -> Iterator[InputRow | InvalidRow]:
    """Parse and validate input rows (see the module docstring for the format).

    Args:
        stream: bytes (UTF-8, optional byte-order mark) or text to read.
        config: decision configuration (its ``max_evidence`` bounds each row).
        whole_file: read ``stream`` as one JSON document (an object or an array
            of objects) instead of JSON Lines.
        limits: size limits (``max_request_bytes`` bounds each line, or the whole file).
        source: how to name the input in messages.

    Yields:
        An :class:`InputRow` per valid row and an :class:`InvalidRow` per
        invalid one, in input order.

    Raises:
        LineTooLong: a line (or the whole ``.json`` file) exceeds ``limits.max_request_bytes``.
        UsageError: the input is not UTF-8.
    """
    limit = limits.max_request_bytes
    if whole_file:
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise LineTooLong(f"error: {source} is longer than --max-line-bytes={limit} (a .json file is read whole)")
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise UsageError(f"error: input file {source} is not UTF-8 text: {exc.reason}") from None
        elif data.startswith("\ufeff"):
            data = data[1:]
        document = decode_json(0, data, whole_file=True)
        if isinstance(document, InvalidRow):
            yield document
            return
        items = document if isinstance(document, list) else [document]
        for number, item in enumerate(items, start=1):
            yield parse_row(number, item, config, "item", limits)
        return
    for number, text in _lines(stream, limit, source):
        item = parse_line(number, text, config, limits)
        if item is not None:
            yield item


@contextlib.contextmanager
def _opened(source: str) -> Iterator[Union[IO[str], IO[bytes]]]:
    """``source`` opened for reading (``-``: stdin), with file errors as one-line :class:`UsageError`."""
    try:
        if source == "-":
            yield getattr(sys.stdin, "buffer", sys.stdin)  # a text stream when embedded (tests)
            return
        with open(source, "rb") as stream:
            yield stream
    except FileNotFoundError:
        raise UsageError(f"error: input file {source} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"error: input {source} is a directory; give a JSON Lines file") from None
    except OSError as exc:
        raise UsageError(f"error: cannot read {source}: {exc.strerror or exc}") from None


def open_lines(source: str, limit: int) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of ``source`` (a path, or ``-`` for stdin), each line at most ``limit`` bytes.

    Raises:
        UsageError: the file does not exist, is a directory, cannot be read, is
            not UTF-8, or has a longer line (:class:`LineTooLong`).
    """
    name = "<stdin>" if source == "-" else source
    with _opened(source) as stream:
        yield from _lines(stream, limit, name)


def is_whole_file(source: str) -> bool:
    """Whether ``source`` is read as one JSON document (a path ending in ``.json``) rather than JSON Lines."""
    return source != "-" and source.lower().endswith(".json")


def iter_input(
    path: str, config: ClaimVerificationConfig, limits: InputLimits, *, source: str, whole_file: bool
) -> Iterator[InputRow | InvalidRow]:
    """:func:`read_requests` over the file ``path``, messages naming ``source``; one row in memory at a time.

    Raises:
        UsageError: as :func:`read_input`.
    """
    with _opened(path) as stream:
        yield from read_requests(stream, config, whole_file=whole_file, limits=limits, source=source)


def iter_placed(
    path: str, config: ClaimVerificationConfig, limits: InputLimits, *, source: str
) -> Iterator[tuple[int, int, InputRow | InvalidRow]]:
    """:func:`iter_input` of a JSON Lines file, each row after the byte offset and length of its line (:func:`row_at`)."""
    with _opened(path) as stream:
        for number, offset, length, text in _placed_lines(stream, limits.max_request_bytes, source):
            item = parse_line(number, text, config, limits)
            if item is not None:
                yield offset, length, item


def row_at(
    path: str, place: tuple[int, int], number: int, config: ClaimVerificationConfig, limits: InputLimits, *, source: str
) -> "Optional[InputRow | InvalidRow]":
    """The row of line ``number`` of a JSON Lines file, read at its byte offset and length ``place``
    (:func:`iter_placed`); ``None``: that line is blank now (the file changed).

    Raises:
        UsageError: as :func:`iter_input`.
    """
    offset, length = place
    try:
        with open(path, "rb", buffering=0) as stream:  # unbuffered: one read of the line, not a buffer's worth
            stream.seek(offset)
            raw = stream.read(length) or b""
    except OSError as exc:
        raise UsageError(f"error: cannot read {source}: {exc.strerror or exc}") from None
    if number == 1 and raw.startswith(codecs.BOM_UTF8):  # as _placed_lines reads line 1
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # the file changed since it was read
        raise UsageError(f"error: {source} line {number} is not UTF-8 text: {exc.reason}") from None
    return parse_line(number, text, config, limits)


@contextlib.contextmanager
def spooled(source: str, limit: int) -> Iterator[str]:
    """A path that can be read twice holding ``source``: itself for a regular file, else a temporary copy.

    Standard input (``-``), a FIFO or a character device is copied, each line
    bounded by ``limit`` bytes (the whole input for a ``.json`` name), to a
    temporary file that is removed on every way out (an error, Ctrl-C, SIGTERM).

    Raises:
        LineTooLong: a line (or a ``.json`` input) is longer than ``limit``.
        UsageError: as :func:`read_input`.
    """
    if source != "-":
        try:
            regular = stat.S_ISREG(os.stat(source).st_mode)
        except OSError:
            regular = True  # let the reader word the error
        if regular:
            yield source
            return
    name = "<stdin>" if source == "-" else source
    handle = tempfile.NamedTemporaryFile("wb", prefix="claim-verifier-input.", suffix=".spool", delete=False)
    try:
        with handle, _opened(source) as stream:
            _copy(stream, handle, limit, name, whole_file=is_whole_file(source))
        yield handle.name
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(handle.name)


def _copy(stream: Union[IO[str], IO[bytes]], out: IO[bytes], limit: int, name: str, *, whole_file: bool) -> None:
    if whole_file:
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise LineTooLong(f"error: {name} is longer than --max-line-bytes={limit} (a .json file is read whole)")
        out.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        return
    number = 0
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        number += 1
        chunk = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
        if len(raw) > limit and not chunk.endswith(b"\n"):
            raise LineTooLong(f"error: {name} line {number} is longer than --max-line-bytes={limit}; nothing written")
        out.write(chunk)


def read_input(
    source: str, config: ClaimVerificationConfig, limits: InputLimits = InputLimits()
) -> tuple[list[InputRow], list[InvalidRow]]:
    """Read ``source`` (a path, or ``-`` for stdin; ``*.json`` is read whole): valid rows and invalid rows.

    Raises:
        UsageError: the file does not exist, is not UTF-8 text, cannot be read,
            or has a line longer than ``limits.max_request_bytes``.
    """
    whole_file = source != "-" and source.lower().endswith(".json")
    name = "<stdin>" if source == "-" else source
    with _opened(source) as stream:
        items = list(read_requests(stream, config, whole_file=whole_file, limits=limits, source=name))
    valid = [item for item in items if isinstance(item, InputRow)]
    invalid = [item for item in items if isinstance(item, InvalidRow)]
    return valid, invalid


#: The library's limit names (in :class:`verifier.validation.InputError` messages) and the option that sets each.
LIMIT_OPTIONS = {"max_claim_chars": "--max-claim-chars", "max_passage_chars": "--max-passage-chars"}


def with_fix(message: str) -> str:
    """``message`` with the command-line option that raises the limit it names, when it names one.

    Example:
        >>> with_fix("2,400 characters exceed max_claim_chars=2000")
        '2,400 characters exceed max_claim_chars=2000 (raise it with --max-claim-chars N)'
    """
    for name, option in LIMIT_OPTIONS.items():
        if f"{name}=" in message:
            return f"{message} (raise it with {option} N)"
    return message


def report_invalid(source: str, invalid: Sequence[InvalidRow], prefix: str, *, total: Optional[int] = None) -> None:
    """Print the first :data:`MAX_REPORTED_ERRORS` invalid rows as ``PREFIX: SOURCE line N: ...``, then a count.

    ``total`` is the number of invalid rows when ``invalid`` holds only the first ones (default ``len(invalid)``).
    A row over a size limit names the option that raises it (:func:`with_fix`).
    """
    for row in invalid[:MAX_REPORTED_ERRORS]:
        err(f"{prefix}: {with_fix(row.describe(source))}")
    count = len(invalid) if total is None else total
    if count > MAX_REPORTED_ERRORS:
        err(f"{prefix}: ... and {count - MAX_REPORTED_ERRORS} more invalid rows")


def refuse_invalid(source: str, invalid: Sequence[InvalidRow], total: int) -> None:
    """Report the invalid rows (:func:`report_invalid`) and the line that refuses the whole input, with its fix."""
    report_invalid(source, invalid, "error", total=total)
    err(f"error: {total} invalid row{'s' if total != 1 else ''} in {source}; nothing written "
        "(--skip-invalid verifies the valid rows and reports these)")

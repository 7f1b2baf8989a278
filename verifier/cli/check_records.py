"""Reading what ``verify`` wrote as records for ``check``: bare result lines, envelopes, ``--resume`` output,
a Ray output directory's files, or a JSON array of any of them (docs/audit.md).

Each line is decoded strictly (:mod:`verifier.strictjson`: a repeated key is refused) and kept as its
JSON text, so that a signature is verified over the values as stored, not as parsed.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from ..strictjson import json_type
from ..strictjson import loads as strict_loads
from .errors import UsageError
from .inputs import open_lines

__all__ = ["Record", "count_records", "looks_like_input", "records", "unread_entries"]

_ENVELOPE_KEYS = {"id", "line", "result", "error"}


@dataclass
class Record:
    """One line of verify's output: a result (``result``: its JSON text or decoded object), or an error row."""

    where: str
    result: Union[str, dict[str, Any], None]
    envelope: bool
    #: an envelope's ``id`` and input ``line`` (``None``: a bare result, or not given)
    id: Optional[str] = None
    line: Optional[int] = None
    #: an error row's error object
    error: Optional[dict[str, Any]] = None


def looks_like_input(item: Record) -> bool:
    """Whether a line that is no result record is one of verify's input rows: a claim and no status
    (``check INPUT`` with RESULTS and ``--inputs`` swapped)."""
    value = item.result
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return False
    return isinstance(value, dict) and "claim" in value and "status" not in value


def _read(source: str, name: str) -> bool:
    """Whether entry ``name`` of directory ``source`` is one of its record files (a regular file whose
    name does not start with ``.`` or ``_``, which mark hidden and bookkeeping files)."""
    return not name.startswith((".", "_")) and os.path.isfile(os.path.join(source, name))


def _files(source: str) -> list[Path]:
    if source != "-" and os.path.isdir(source):
        return [Path(source) / name for name in sorted(os.listdir(source)) if _read(source, name)]
    return [Path(source)]


def unread_entries(source: str) -> list[str]:
    """The names in directory ``source`` that :func:`records` does not read (sorted; empty for a file)."""
    if source == "-" or not os.path.isdir(source):
        return []
    return sorted(name for name in os.listdir(source) if not _read(source, name))


def count_records(source: str) -> Optional[int]:
    """How many records :func:`records` will yield from ``source``, for a progress line's total: its
    non-blank lines; ``None`` for stdin, a JSON array, or a file that cannot be read (its error comes later)."""
    if source == "-":
        return None
    total = 0
    try:
        for path in _files(source):
            with open(path, "rb") as stream:
                first = True
                for line in stream:
                    if line.strip():
                        if first and line.lstrip().startswith(b"["):
                            return None
                        first = False
                        total += 1
    except OSError:
        return None
    return total


def _decode(text: str) -> Any:
    try:
        return strict_loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a result record: invalid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("not a result record: JSON nested too deeply") from None


def _unwrap(value: Any, where: str, text: Optional[str]) -> Record:
    """The result (or error row) a decoded line holds.

    Raises:
        ValueError: it is neither a result record nor an envelope of one.
    """
    if not isinstance(value, dict):
        raise ValueError(f"not a result record: expected a JSON object, got {json_type(value)}")
    if not (value.keys() & {"result", "error"}) or "claim" in value:
        return Record(where, text if text is not None else value, False)
    unknown = sorted(value.keys() - _ENVELOPE_KEYS)
    if unknown:
        raise ValueError(f"not an envelope of verify: unknown key {unknown[0]!r} (no digest covers it)")
    if not isinstance(value.get("id"), (str, type(None))):
        raise ValueError("not an envelope of verify: its id is not a string")
    if "line" in value and (not isinstance(value["line"], int) or isinstance(value["line"], bool)):
        raise ValueError("not an envelope of verify: its line is not an integer")
    result, error = value.get("result"), value.get("error")
    if (result is None) == (error is None):
        raise ValueError("not an envelope of verify: it needs exactly one of a result and an error")
    if error is not None:
        if isinstance(error, str):  # a Ray row: the error as JSON text
            error = _decode(error)
        if not isinstance(error, dict):
            raise ValueError("not an envelope of verify: its error is not an object")
        return Record(where, None, True, value.get("id"), value.get("line"), error)
    if isinstance(result, str):  # a Ray row: the result as JSON text, exactly model_dump_json()
        return Record(where, result, True, value.get("id"), value.get("line"))
    if not isinstance(result, dict):
        raise ValueError("not an envelope of verify: its result is not a result record")
    return Record(where, result, True, value.get("id"), value.get("line"))


def records(source: str, limit: int) -> Iterator["Record | ValueError"]:
    """Every record of ``source`` (a file, a directory of files, or ``-``), or the reason a line is not one.

    Raises:
        UsageError: ``source`` cannot be read (or has a line over ``limit`` bytes).
    """
    for path in _files(source):
        name = "<stdin>" if str(path) == "-" else str(path)
        lines = open_lines(str(path), limit)
        first = next(lines, None)
        if first is None:
            continue
        if first[1].lstrip().startswith("["):  # a JSON array of records, read whole (at most ``limit`` bytes)
            parts = [first[1]]
            size = len(first[1].encode("utf-8", "surrogatepass"))
            for _, line in lines:
                size += len(line.encode("utf-8", "surrogatepass"))
                if size > limit:
                    raise UsageError(f"error: {name} is a JSON array longer than --max-line-bytes={limit}")
                parts.append(line)
            text = "".join(parts)
            try:
                items = _decode(text)
            except ValueError as exc:
                yield ValueError(f"{name}: {exc}")
                continue
            for index, item in enumerate(items if isinstance(items, list) else [items], start=1):
                try:
                    yield _unwrap(item, f"{name} item {index}", None)
                except ValueError as exc:
                    yield ValueError(f"{name} item {index}: {exc}")
            continue
        for number, text in itertools.chain([first], lines):
            if not text.strip():
                continue
            try:
                yield _unwrap(_decode(text), f"{name} line {number}", text.strip())
            except ValueError as exc:
                yield ValueError(f"{name} line {number}: {exc}")

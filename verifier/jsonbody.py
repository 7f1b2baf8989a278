"""Checked JSON parsing of one large request body, in a child process so the server's GIL stays free.

A server parses bodies off its event loop (``verifier.serve.body``), but a thread does not help with
the GIL: :func:`json.loads` decodes one long string (a bundle's ``rendered_context``) in a single C
call; no other thread, the event loop included, runs
meanwhile (measured in bench/RESULTS.md, "``/health/live`` while the server reads a 16 MiB bundle").
Bodies over :data:`PROCESS_PARSE_BYTES` are therefore checked and parsed by :func:`parse_in_child`
in a fresh interpreter; the parent only moves bytes through pipes (outside the GIL) and reads the
value back with :mod:`marshal`. This module imports only the standard library and numpy, so the
child starts quickly.

What a body may be (docs/serving.md, *What a request may cost*): nesting at most
:data:`MAX_JSON_DEPTH` deep, at most ``max_values`` JSON values, no repeated key in an object.
"""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from .strictjson import loads as strict_loads

__all__ = ["BodyRefused", "MAX_JSON_DEPTH", "PROCESS_PARSE_BYTES", "checked_loads", "json_shape", "parse_in_child"]

#: Deepest nesting of arrays and objects accepted (a claim request needs 5).
MAX_JSON_DEPTH = 512
#: Bodies over this size are parsed in a child process by servers: below it one ``json.loads`` holds the
#: GIL only a few milliseconds, less than a child costs to start (bench/RESULTS.md).
PROCESS_PARSE_BYTES = 1 << 20

_SCAN_CHUNK = 1 << 20
_QUOTE = ord('"')
_DELTA = np.zeros(256, dtype=np.int8)
_DELTA[[ord("["), ord("{")]] = 1
_DELTA[[ord("]"), ord("}")]] = -1
_SEPARATOR = np.zeros(256, dtype=bool)
_SEPARATOR[[ord(","), ord(":")]] = True

Body = Union[bytes, bytearray]


class BodyRefused(ValueError):
    """A body that is not acceptable JSON: ``status`` (400 malformed, 413 too many values), ``kind``
    (``malformed_json`` or ``too_large``), the message, and the ``limit`` it broke (or ``None``)."""

    def __init__(self, status: int, kind: str, message: str, limit: Optional[str] = None) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.limit = status, kind, message, limit


def json_shape(body: Body) -> tuple[int, int]:
    """``(values, depth)`` of a JSON text: containers plus separators outside strings, and the deepest nesting.

    ``values`` is the number of ``[``, ``{``, ``,`` and ``:`` outside strings —
    about the number of Python objects ``json.loads`` would build beyond the
    scalars of the first element of each container. Exact for valid JSON; for
    invalid JSON an estimate (``json.loads`` then refuses it anyway).
    """
    encoding = json.detect_encoding(body)
    if encoding not in ("utf-8", "utf-8-sig"):  # UTF-16/32: count on the UTF-8 form
        body = bytes(body).decode(encoding, "replace").encode("utf-8")
    if b"\\" in body:
        # Left to right, "\\\\" pairs are escaped backslashes and a remaining '\\"' an escaped
        # quote: neutralized, every '"' left delimits a string.
        body = bytes(body).replace(b"\\\\", b"__").replace(b'\\"', b"__")
    data = np.frombuffer(body, dtype=np.uint8)
    parity = depth = deepest = values = 0
    for start in range(0, len(data), _SCAN_CHUNK):
        chunk = data[start : start + _SCAN_CHUNK]
        quotes = np.cumsum(chunk == _QUOTE, dtype=np.int32)
        outside = ((quotes + parity) & 1) == 0
        parity = (parity + int(quotes[-1])) & 1
        delta = _DELTA[chunk] * outside
        values += int(np.count_nonzero(delta > 0)) + int(np.count_nonzero(_SEPARATOR[chunk] & outside))
        level = np.cumsum(delta, dtype=np.int32)
        deepest = max(deepest, depth + int(level.max()))
        depth += int(level[-1])
    return values, deepest


def checked_loads(body: Body, max_values: int, *, scan: bool = True) -> Any:
    """The value of a JSON body, after the depth and value-count checks.

    Args:
        body: the raw body (UTF-8, or UTF-16/32 as :func:`json.loads` detects).
        max_values: the most JSON values accepted (``max_json_values``).
        scan: count values and depth first (always done when the body could nest past the limit).

    Raises:
        BodyRefused: not valid JSON, a repeated key, nested past :data:`MAX_JSON_DEPTH` (400), or more
            than ``max_values`` values (413).
    """
    if scan or body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH:
        values, depth = json_shape(body)
        if depth > MAX_JSON_DEPTH:
            raise BodyRefused(400, "malformed_json", f"the body is not valid JSON: nested deeper than {MAX_JSON_DEPTH} "
                              "levels", f"max_json_depth={MAX_JSON_DEPTH}")
        if values > max_values:
            raise BodyRefused(413, "too_large", f"request body holds {values:,} JSON values, more than "
                              f"max_json_values={max_values}", f"max_json_values={max_values}")
    try:
        return strict_loads(body)  # a repeated key is malformed, as in every file the project reads
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BodyRefused(400, "malformed_json", f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BodyRefused(400, "malformed_json", "the body is not valid JSON: nested too deeply",
                          f"max_json_depth={MAX_JSON_DEPTH}") from None


#: The child: the package's parent directory first on sys.path (a checkout or an install alike).
_CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from verifier.jsonbody import child_main; child_main(int(sys.argv[2]))"


def parse_in_child(body: Body, max_values: int, *, timeout_s: float = 120.0) -> Any:
    """:func:`checked_loads` run in a fresh interpreter (``sys.executable``); the value comes back by marshal.

    Blocks the calling thread (never call it on an event loop); the GIL is free while the child works.

    Raises:
        BodyRefused: as :func:`checked_loads`.
        RuntimeError: the child failed (killed, out of memory, past ``timeout_s`` seconds); the message
            gives its exit status and the end of its stderr.
    """
    package_parent = str(Path(__file__).resolve().parents[1])
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, package_parent, str(max_values)], input=body,
                              capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"parsing a {len(body):,}-byte body took over {timeout_s:g} s in its child process") from None
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise RuntimeError(f"the JSON parse process for a {len(body):,}-byte body exited with status "
                           f"{done.returncode}: {' / '.join(tail) or 'no message'}")
    outcome = marshal.loads(done.stdout)
    if outcome[0] == "refused":
        raise BodyRefused(*outcome[1:])
    return outcome[1]


def child_main(max_values: int) -> None:
    """The child's side of :func:`parse_in_child`: the body on stdin, ``marshal`` of ``("value", value)`` or
    ``("refused", status, kind, message, limit)`` on stdout."""
    body = sys.stdin.buffer.read()
    try:
        outcome: tuple[Any, ...] = ("value", checked_loads(body, max_values))
    except BodyRefused as refused:
        outcome = ("refused", refused.status, refused.kind, refused.message, refused.limit)
    sys.stdout.buffer.write(marshal.dumps(outcome))
    sys.stdout.buffer.flush()

"""Checked JSON body parsing (verifier.jsonbody): the byte scan, and the child process large bodies use.

Regression (issue 49): while the server read a 14 MiB bundle body, ``/health/live`` waited up to 125 ms:
``json.loads`` of the long ``rendered_context`` string and the scan's ``bytes.replace`` each held the GIL
for tens of milliseconds in the parse thread. Bodies over ``PROCESS_PARSE_BYTES`` are now parsed in a
child process; these tests hold the child to the same values and the same refusals as the thread, and
the chunked scan to a character-by-character reference. (The latency itself is measured in
``bench/bundle_liveness.py``, never asserted.)
"""

from __future__ import annotations

import json
import random

import pytest

from verifier.jsonbody import MAX_JSON_DEPTH, PROCESS_PARSE_BYTES, BodyRefused, checked_loads, json_shape, parse_in_child


def reference_shape(text: str) -> tuple[int, int]:
    """(values, depth) by walking the text one character at a time, tracking strings and escapes."""
    values = depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            values += 1
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
        elif char in ",:":
            values += 1
    return values, deepest


def _string_with_backslash_runs(rng: random.Random, size: int) -> str:
    """Text full of backslashes and quotes (as JSON escapes them), in runs of every length up to 9."""
    pieces = []
    while sum(map(len, pieces)) < size:
        pieces.append(rng.choice(["\\" * rng.randint(1, 9), '"' * rng.randint(1, 3), "[{,:}]", "plain text "]))
    return "".join(pieces)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_chunked_scan_matches_a_character_walk_across_piece_boundaries(seed: int) -> None:
    """Bodies of 2.5 MiB whose strings hold runs of backslashes and quotes, so the scan's 1 MiB pieces end
    beside (and would otherwise split) them; every count equals the reference walk's."""
    rng = random.Random(seed)
    document = {"claim": "x", "items": [{"text": _string_with_backslash_runs(rng, 4096), "n": [1, {"a": "]"}]}
                                        for _ in range(500)]}
    text = json.dumps(document)
    assert len(text.encode()) > 2 * (1 << 20) and text.count("\\\\") > 10_000
    assert json_shape(text.encode()) == reference_shape(text)


def test_a_backslash_run_across_the_first_piece_boundary() -> None:
    """A run of escaped backslashes straddling byte 1 MiB, then an escaped quote and a real one."""
    prefix = '{"a": "' + "x" * ((1 << 20) - 10)
    text = prefix + "\\\\" * 7 + '\\"' + '", "b": [1, 2, {"c": "\\\\"}]}'
    assert reference_shape(text) == (9, 3)
    assert json_shape(text.encode()) == (9, 3)
    assert checked_loads(text.encode(), 100)["b"] == [1, 2, {"c": "\\"}]


def _large_body(**extra: object) -> bytes:
    body = json.dumps({"claim": "The launch is Tuesday.", "context": '"q"\\' * (PROCESS_PARSE_BYTES // 6), **extra}).encode()
    assert len(body) > PROCESS_PARSE_BYTES
    return body


def test_the_child_returns_the_same_value_as_json_loads() -> None:
    body = _large_body(numbers=[1, -2.5, 1e300, 12345678901234567890123], flags=[True, False, None], nested={"é": ["\ud83d\ude00"]})
    assert parse_in_child(body, 1000) == json.loads(body) == checked_loads(body, 1000)


@pytest.mark.parametrize("body, status, message", [
    (b'{"a": 1, "a": 2, "pad": "' + b"x" * (PROCESS_PARSE_BYTES + 1) + b'"}', 400, "duplicate key 'a'"),
    (b'{"pad": "' + b"x" * (PROCESS_PARSE_BYTES + 1) + b'", "broken": }', 400, "the body is not valid JSON: Expecting value"),
    (b"[" * (MAX_JSON_DEPTH + 1) + b'"' + b"x" * (PROCESS_PARSE_BYTES + 1) + b'"' + b"]" * (MAX_JSON_DEPTH + 1), 400,
     f"nested deeper than {MAX_JSON_DEPTH} levels"),
    (b"[" + b"0," * (PROCESS_PARSE_BYTES // 2) + b"0]", 413, "JSON values, more than max_json_values=1000"),
    (b'{"pad": "\xff' + b"x" * (PROCESS_PARSE_BYTES + 1) + b'"}', 400, "the body is not valid JSON"),
])
def test_the_child_refuses_what_the_thread_refuses_with_the_same_words(body: bytes, status: int, message: str) -> None:
    with pytest.raises(BodyRefused) as in_thread:
        checked_loads(body, 1000)
    with pytest.raises(BodyRefused) as in_child:
        parse_in_child(body, 1000)
    assert (in_child.value.status, in_child.value.kind, in_child.value.message, in_child.value.limit) == (
        in_thread.value.status, in_thread.value.kind, in_thread.value.message, in_thread.value.limit)
    assert in_child.value.status == status and message in in_child.value.message


def test_a_failed_child_raises_naming_its_exit_status() -> None:
    """A child that cannot finish (here: killed by its own time limit) is a server fault, never a 4xx."""
    with pytest.raises(RuntimeError, match=r"took over 0\.001 s in its child process"):
        parse_in_child(_large_body(), 1000, timeout_s=0.001)

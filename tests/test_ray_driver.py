"""The ``--engine ray`` driver's own bookkeeping and wording, without Ray (issue 48, items 5 and 7)."""

from __future__ import annotations

import tracemalloc

from verifier.cli.bulk import DigestSet, id_digest
from verifier.cli.ray_run import ray_failure
from verifier.cli.resume import Written


def _ids(count: int) -> DigestSet:
    return DigestSet(b"".join(id_digest(f"c{n}") for n in range(count)))


def test_each_id_is_written_once_whatever_ray_hands_back() -> None:
    """Rows already in the output, a retried batch handed back twice and an id repeated within a batch are
    each written once; every id counted once (the job's end checks the count)."""
    done = DigestSet(id_digest("c1") + id_digest("c3"))
    written = Written(_ids(6), done)
    assert written.add(["c0", "c1", "c2"]) == [True, False, True]
    assert written.add(["c2", "c4", "c4", "c3"]) == [False, True, False, False]  # a retried batch, a repeat
    assert written.add([]) == []
    assert written.add(["c5", "not-in-the-input"]) == [True, True]  # the input changed: written, counted
    assert written.added == 5


def test_the_bookkeeping_of_200000_ids_is_17_bytes_each() -> None:
    """Regression (issue 48, item 5): the driver kept a Python set of this run's ids, ~80 B each beside the
    32 B of the input's ids, and its RSS grew ~210 B a row. Now the input's sorted ids and a flag each."""
    count = 200_000
    ids = _ids(count)
    keys = [f"c{n}" for n in range(count)]
    tracemalloc.start()
    try:
        written = Written(ids, DigestSet(b""))
        del ids  # the caller's DigestSet (with its fingerprints) is not kept
        for start in range(0, count, 1024):
            written.add(keys[start:start + 1024])
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert written.added == count
    assert held < 20 * count, held


def test_a_workers_error_keeps_its_own_closing_parenthesis() -> None:
    """Regression (issue 48, item 7): the verifier's line in an actor's death text was cut at every closing
    parenthesis, its own too: "(copy it there or use a shared filesystem; nothing was written"."""
    line = ("worker on n1 cannot open model directory /m: no such directory; it must exist at this path on every "
            "node (copy it there or use a shared filesystem)")
    death = RuntimeError(f"The actor died in its constructor: ActorDiedError(verifier.distributed.RayVerificationError: {line})")
    assert ray_failure(death) == line

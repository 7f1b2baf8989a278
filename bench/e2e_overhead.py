"""The end-to-end path's own cost, without a model: per-claim overhead of verify_sync, await verify, verify_many.

``python -m bench.e2e_overhead`` runs this project's :class:`verifier.ClaimVerifier`
on claims of workload (c) with a scorer that costs nothing of its own
(:class:`ZeroScorer`: neutral probabilities, so every claim takes its singles
and all 28 pairs, 36 premises in two scorer calls, exactly the path the
random-weights bench model takes), or one that sleeps ``--sleep-ms`` per call
with the GIL released, like onnxruntime's ``run`` (:class:`SleepingScorer`).
What it measures is therefore the decision layer, validation, digests, the
driver and the asyncio thread hand-off -- everything of the end-to-end path
except the model -- in microseconds per claim, independent of how busy the
machine's cores are with model work:

* ``verify_sync`` / ``await verify`` one claim at a time, alternating, and
  ``verify_many_sync`` / ``await verify_many`` over all claims;
* with ``--sleep-ms``: 8 concurrent ``await verify`` tasks against 8 sequential
  ``verify_sync`` calls, and the event loop's lag meanwhile.

Usage::

    .venv/bin/python -m bench.e2e_overhead [--claims 64] [--reps 5] [--sleep-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Optional, Sequence

import numpy as np

__all__ = ["ZeroScorer", "SleepingScorer", "build_parser", "main"]


class ZeroScorer:
    """Neutral probabilities for every pair, at no cost (no model)."""

    row = np.array([0.03, 0.02, 0.95])

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return np.tile(self.row, (len(pairs), 1))


class SleepingScorer(ZeroScorer):
    """:class:`ZeroScorer` that sleeps ``seconds`` per call first (the GIL released, as onnxruntime's ``run`` does)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        time.sleep(self.seconds)
        return super().score(pairs)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.e2e_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=64)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sleep-ms", type=float, default=0.0, help="scorer cost per call, GIL released (default 0)")
    return parser


async def _lagged(coro_factory, tick_s: float = 0.005) -> tuple[float, list[float]]:  # type: ignore[no-untyped-def]
    lags: list[float] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    async def tick() -> None:
        while not stop.is_set():
            asked = loop.time()
            await asyncio.sleep(tick_s)
            lags.append(loop.time() - asked - tick_s)

    ticker = asyncio.ensure_future(tick())
    await asyncio.sleep(0)
    started = time.perf_counter()
    await coro_factory()
    seconds = time.perf_counter() - started
    stop.set()
    await ticker
    return seconds, lags


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the per-claim overhead table (markdown)."""
    args = build_parser().parse_args(argv)
    from verifier import ClaimEvidence, ClaimRequest, ClaimVerifier

    from .workloads import workload_c

    cases = workload_c(args.claims).cases
    evidence = [[ClaimEvidence(**p.as_evidence()) for p in case.passages] for case in cases]
    requests = [ClaimRequest(claim=case.claim, evidence=evidence[i]) for i, case in enumerate(cases)]
    scorer = SleepingScorer(args.sleep_ms / 1000.0) if args.sleep_ms > 0 else ZeroScorer()
    verifier = ClaimVerifier(scorer=scorer)
    statuses = {r.status.value for r in verifier.verify_many_sync(requests)}  # warm-up
    groups = {len(verifier.verify_sync(cases[0].claim, evidence[0]).group_scores)}

    async def one_async(i: int) -> None:
        await verifier.verify(cases[i].claim, evidence[i])

    sync_s: list[float] = []
    async_s: list[float] = []
    many_sync: list[float] = []
    many_async: list[float] = []

    async def run_all() -> None:
        for rep in range(args.reps):
            for i in range(len(cases)):
                for mode in (("sync", "async") if (i + rep) % 2 == 0 else ("async", "sync")):
                    started = time.perf_counter()
                    if mode == "sync":
                        verifier.verify_sync(cases[i].claim, evidence[i])
                        sync_s.append(time.perf_counter() - started)
                    else:
                        await one_async(i)
                        async_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            verifier.verify_many_sync(requests)
            many_sync.append(time.perf_counter() - started)
            started = time.perf_counter()
            await verifier.verify_many(requests)
            many_async.append(time.perf_counter() - started)

    asyncio.run(run_all())
    n = len(cases)
    us = 1e6
    print(f"{n} claims x {args.reps} reps, scorer {'sleeping %.0f ms per call' % args.sleep_ms if args.sleep_ms else 'at zero cost'}; "
          f"statuses {sorted(statuses)}, {sorted(groups)} groups per claim")
    print("| per claim | median (µs) |")
    print("|---|---:|")
    print(f"| verify_sync | {statistics.median(sync_s) * us:.0f} |")
    print(f"| await verify | {statistics.median(async_s) * us:.0f} |")
    print(f"| verify_many_sync, per claim | {statistics.median(many_sync) / n * us:.0f} |")
    print(f"| await verify_many, per claim | {statistics.median(many_async) / n * us:.0f} |")
    print(f"| await verify − verify_sync (the hand-off, 2 scorer calls) | {(statistics.median(async_s) - statistics.median(sync_s)) * us:.0f} |")

    if args.sleep_ms > 0:
        chunk = list(range(min(8, n)))

        async def concurrent() -> None:
            await asyncio.gather(*(one_async(i) for i in chunk))

        async def sequential_sync() -> None:
            for i in chunk:
                verifier.verify_sync(cases[i].claim, evidence[i])

        async def measure() -> tuple[float, float, list[float]]:
            conc, lags = await _lagged(concurrent)
            seq, _ = await _lagged(sequential_sync)
            return conc, seq, lags

        conc, seq, lags = asyncio.run(measure())
        print(f"\n8 concurrent await verify: {conc * 1000:.1f} ms; 8 sequential verify_sync: {seq * 1000:.1f} ms "
              f"(the sleeping scorer runs concurrently: a real engine shares its cores instead); "
              f"loop lag during the concurrent run: max {max(lags) * 1000:.2f} ms, p50 {statistics.median(lags) * 1000:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Bounded load generator for ``python -m verifier serve`` on loopback (measured, never asserted).

For each mode (coalescing on, off) it starts the real server as a subprocess
on a free loopback port, waits for readiness, then for each concurrency level
sends the same fixed list of claims (``--claims``) with that many concurrent
HTTP clients, and stops. It reports throughput (claims/s) and p50/p95/p99
latency per level, next to offline ``ClaimVerifier.verify_many_sync`` on the
same claims in this process, and checks that every HTTP result's
``result_sha256`` equals the offline one.

Usage::

    .venv/bin/python -m bench.serve_load --model-dir models/bench-deberta-v3-base-random/onnx \\
        --claims 256 --concurrency 1,4,16,64 --threads 2 --out bench/serve_load.json

Needs the ``server`` and ``test`` extras (uvicorn, starlette, prometheus-client, httpx).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

_SUBJECTS = ["The launch", "The release", "The migration", "The audit", "The review", "The deployment"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_FILLER = ("after the security review the team agreed that the rollout would wait for the final sign-off "
           "from operations and the customer notice would go out one day earlier than planned").split()


def make_claims(count: int, passages: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` deterministic claim requests with ``passages`` passages of varied length each."""
    rng = np.random.default_rng(seed)
    claims = []
    for k in range(count):
        subject, day = _SUBJECTS[k % len(_SUBJECTS)], _DAYS[int(rng.integers(len(_DAYS)))]
        evidence = []
        for j in range(passages):
            other = _DAYS[int(rng.integers(len(_DAYS)))]
            filler = " ".join(rng.choice(_FILLER, size=int(rng.integers(4, 60))))
            evidence.append({
                "reference": f"m{j}",
                "memory_id": f"00000000-0000-4000-8000-{k * 64 + j:012d}",
                "text": f"{subject} {'moved to' if j % 2 else 'is on'} {other}; {filler}.",
            })
        claims.append({"id": f"c{k}", "claim": f"{subject} is on {day}.", "evidence": evidence})
    return claims


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentiles(latencies: list[float]) -> dict[str, float]:
    values = np.asarray(latencies) * 1000.0
    return {f"p{q}_ms": round(float(np.percentile(values, q)), 2) for q in (50, 95, 99)}


async def _drive(url: str, claims: list[dict[str, Any]], concurrency: int) -> tuple[float, list[float], list[str]]:
    import httpx

    latencies: list[float] = [0.0] * len(claims)
    digests: list[str] = [""] * len(claims)
    cursor = iter(range(len(claims)))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:

        async def worker() -> None:
            for index in cursor:
                started = time.perf_counter()
                response = await client.post("/v1/verify", json=claims[index])
                latencies[index] = time.perf_counter() - started
                response.raise_for_status()
                digests[index] = response.json()["result_sha256"]

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return elapsed, latencies, digests


def start_server(model_dir: Path, *, coalesce: bool, threads: Optional[int], max_wait_ms: float, log: Path) -> tuple[Any, str]:
    """Start `python -m verifier serve` on a free loopback port and wait until it is ready: (process, base URL)."""
    import httpx

    port = _free_port()
    command = [sys.executable, "-m", "verifier", "serve", "--model-dir", str(model_dir), "--port", str(port),
               "--max-wait-ms", str(max_wait_ms), "--log-level", "warning"]
    if threads is not None:
        command += ["--threads", str(threads)]
    if not coalesce:
        command.append("--no-coalesce")
    sink = log.open("wb")
    process = subprocess.Popen(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=url, timeout=30) as client:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"server exited early:\n{log.read_text()}")
            try:
                response = client.get("/health/ready")
                if response.status_code == 200:
                    break
                if response.json().get("status") == "failed":
                    raise SystemExit(f"model failed to load: {response.json()}")
            except httpx.TransportError:
                pass
            time.sleep(0.05)
    return process, url


def soak(model_dir: Path, *, seconds: float, clients: int, threads: Optional[int], every: float, passages: int) -> list[dict[str, Any]]:
    """Send varied-length claims from ``clients`` clients for ``seconds`` seconds, then stop; the server's
    RSS every ``every`` seconds: ``[{"t_s", "rss_mib", "requests"}]``."""
    import psutil

    claims = make_claims(512, passages, seed=7)
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        process, url = start_server(model_dir, coalesce=True, threads=threads, max_wait_ms=5.0, log=Path(scratch) / "soak.log")
        server = psutil.Process(process.pid)
        done = 0

        async def run() -> None:
            import httpx

            nonlocal done
            stop = time.perf_counter() + seconds
            async with httpx.AsyncClient(base_url=url, timeout=600) as client:

                async def worker(offset: int) -> None:
                    nonlocal done
                    index = offset
                    while time.perf_counter() < stop:
                        response = await client.post("/v1/verify", json=claims[index % len(claims)])
                        response.raise_for_status()
                        done += 1
                        index += clients

                async def sampler() -> None:
                    started = time.perf_counter()
                    while time.perf_counter() < stop:
                        samples.append({"t_s": round(time.perf_counter() - started, 1),
                                        "rss_mib": round(server.memory_info().rss / 2**20, 1), "requests": done})
                        await asyncio.sleep(every)

                await asyncio.gather(sampler(), *(worker(k) for k in range(clients)))

        try:
            asyncio.run(run())
        finally:
            process.terminate()
            process.wait(60)
    return samples


def main(argv: Optional[list[str]] = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["soak"]:
        return _soak_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench.serve_load", description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--claims", type=int, default=64, help="claims sent per concurrency level (default 64)")
    parser.add_argument("--passages", type=int, default=3, help="passages per claim (default 3)")
    parser.add_argument("--concurrency", default="1,4,16,64", help="comma-separated client counts")
    parser.add_argument("--modes", default="on,off", help="coalescing modes to run: on, off or both")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads of the server")
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",") if x]
    claims = make_claims(args.claims, args.passages)

    from verifier import ClaimVerifier
    from verifier.options import RuntimeOptions

    runtime = RuntimeOptions(intra_op_num_threads=args.threads) if args.threads else None
    offline = ClaimVerifier.from_model_dir(args.model_dir, runtime=runtime)
    offline.verify_many_sync(claims[:2])  # load outside the timing
    started = time.perf_counter()
    expected = [result.result_sha256 for result in offline.verify_many_sync(claims)]
    offline_s = time.perf_counter() - started
    report: dict[str, Any] = {
        "claims": args.claims, "passages": args.passages, "threads": args.threads, "max_wait_ms": args.max_wait_ms,
        "offline_verify_many": {"seconds": round(offline_s, 3), "claims_per_s": round(args.claims / offline_s, 2)},
        "runs": [],
    }
    print(f"offline verify_many_sync: {args.claims / offline_s:.2f} claims/s ({offline_s:.2f} s)", flush=True)
    print("| coalescing | clients | claims/s | p50 ms | p95 ms | p99 ms | digests = offline |")
    print("|---|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for mode in [m for m in args.modes.split(",") if m]:
            log = Path(scratch) / f"serve-{mode}.log"
            process, url = start_server(args.model_dir, coalesce=mode == "on", threads=args.threads,
                                  max_wait_ms=args.max_wait_ms, log=log)
            try:
                asyncio.run(_drive(url, claims[:2], 1))  # warm-up
                for level in levels:
                    elapsed, latencies, digests = asyncio.run(_drive(url, claims, level))
                    row = {"coalescing": mode, "clients": level, "seconds": round(elapsed, 3),
                           "claims_per_s": round(len(claims) / elapsed, 2), **_percentiles(latencies),
                           "digests_equal_offline": digests == expected}
                    report["runs"].append(row)
                    print(f"| {mode} | {level} | {row['claims_per_s']} | {row['p50_ms']} | {row['p95_ms']} | "
                          f"{row['p99_ms']} | {row['digests_equal_offline']} |", flush=True)
            finally:
                process.terminate()
                process.wait(60)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if all(run["digests_equal_offline"] for run in report["runs"]) else 1


def _soak_main(argv: list[str]) -> int:
    """``python -m bench.serve_load soak --model-dir DIR [--seconds 600] [--clients 8]``: the server's RSS over a long run."""
    parser = argparse.ArgumentParser(prog="python -m bench.serve_load soak", description=soak.__doc__)
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--every", type=float, default=30.0, help="seconds between RSS samples")
    parser.add_argument("--passages", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    samples = soak(args.model_dir, seconds=args.seconds, clients=args.clients, threads=args.threads,
                   every=args.every, passages=args.passages)
    print("| t (s) | server RSS (MiB) | requests answered |")
    print("|---:|---:|---:|")
    for sample in samples:
        print(f"| {sample['t_s']} | {sample['rss_mib']} | {sample['requests']} |")
    if args.out is not None:
        args.out.write_text(json.dumps(samples, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Interleaved side-by-side timing: every backend loaded in one process, taking turns.

On a shared machine the load changes minute to minute; timing one backend
after the other lets a burst of someone else's work land on one side only.
Here all backends (CrossEncoder on PyTorch, the sentence-transformers ONNX
peers ``st-onnx`` / ``st-onnx-int8``, OnnxScorer float32 and its variants) are
loaded in one process and take turns on the same pairs:

* latency workloads (a, b, d): repetition ``r`` runs every backend once on the
  claim, in an order rotated by ``r``;
* throughput workload (c): the 200 claims are cut into chunks of
  ``--chunk-claims`` (default 50) claims; each chunk is one many-claims step
  (its singles in one scorer call, then its needed pairs in one call) and
  every backend runs it, in forward order on even chunks and reverse order on
  odd ones (ABBA), so a slow minute is shared;
* throughput workload (e) (realistic longer text, ``--claims-e`` claims; off
  without it): the same, in chunks of ``--chunk-claims-e`` claims, right after (c).

Only one backend computes at a time, each with the same thread count. Cold
start and peak RSS are *not* measured here (one process holds all models):
``bench.worker --tasks rss`` measures them in a process per backend. The
backends are :mod:`bench.backends`; the result is a
:class:`bench.results.InterleaveResult`, written as JSON to ``--out``.

Usage (normally started by ``python -m bench compare``)::

    python -m bench.interleave --onnx-dir D --hf-dir H --backends torch,onnx,onnx-int8 --out r.json
    python -m bench.interleave ... --st-dir S --backends torch,st-onnx,st-onnx-int8,onnx,onnx-int8 --claims-e 100
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from verifier.engine.batching import DEFAULT_MAX_BATCH_TOKENS
from .backends import BACKEND_KEYS, Backend, OnnxBackend, load_backend
from .measure import latency, schedules, time_stages
from .proc import THREAD_ENV_VARS
from .results import InterleaveResult, LatencyResult, ScheduleResult, ThroughputResult
from .workloads import Pair, Workload, base_digest, checked_workloads, workload_digest

__all__ = ["chunks", "build_parser", "main"]


def chunks(workload: Workload, claims_per_chunk: int) -> list[Workload]:
    """``workload`` cut into consecutive chunks of ``claims_per_chunk`` claims."""
    cases = workload.cases
    return [
        Workload(workload.key, f"{workload.title} [{start}:{start + claims_per_chunk}]", cases[start : start + claims_per_chunk])
        for start in range(0, len(cases), claims_per_chunk)
    ]


def _throughput(
    backends: dict[str, Backend], workload: Workload, claims_per_chunk: int, probs_dir: Optional[Path]
) -> dict[str, ThroughputResult]:
    keys = list(backends)
    for backend in backends.values():
        backend.reset()
    parts = chunks(workload, claims_per_chunk)
    chunk_seconds: dict[str, list[float]] = {key: [] for key in keys}
    stage_seconds: dict[str, list[float]] = {key: [0.0, 0.0] for key in keys}
    probabilities: dict[str, dict[Pair, np.ndarray]] = {key: {} for key in keys}
    loads: list[float] = []
    ceiling: list[float] = []
    for index, part in enumerate(parts):
        loads.append(os.getloadavg()[0])
        ceiling.append(_matmul_sample())
        order = keys if index % 2 == 0 else list(reversed(keys))
        stages = part.stages()
        for key in order:
            total, per_stage, outputs = time_stages(backends[key].score, stages)
            chunk_seconds[key].append(total)
            for number, value in enumerate(per_stage):
                stage_seconds[key][number] += value
            for stage, output in zip(stages, outputs):
                for pair, row in zip(stage, output):
                    probabilities[key][pair] = row
        print(
            f"  ({workload.key}) chunk {index + 1}/{len(parts)}: "
            + ", ".join(f"{key} {chunk_seconds[key][-1]:.1f} s" for key in keys)
            + f" (load {loads[-1]:.2f}, numpy {ceiling[-1]:.0f} GFLOP/s)",
            file=sys.stderr,
            flush=True,
        )
    result: dict[str, ThroughputResult] = {}
    order_pairs = workload.pairs()
    for key in keys:
        probs_file = None
        if probs_dir is not None:
            probs_dir.mkdir(parents=True, exist_ok=True)
            probs_file = probs_dir / f"{key}.npy"
            np.save(probs_file, np.stack([probabilities[key][pair] for pair in order_pairs]))
        seconds = float(sum(chunk_seconds[key]))
        result[key] = ThroughputResult(
            reps=1,
            seconds=[seconds],
            stage_seconds=[stage_seconds[key]],
            chunk_seconds=chunk_seconds[key],
            median=seconds,
            counters=backends[key].counters(),
            probs_file=str(probs_file) if probs_file is not None else None,
            claims_per_chunk=claims_per_chunk,
            load_1m=loads,
            numpy_gflops_samples=ceiling,
        )
    return result


_MATMUL: dict[str, np.ndarray] = {}


def _matmul_sample(m: int = 4096, k: int = 768, n: int = 3072, repeats: int = 3) -> float:
    """numpy float32 GFLOP/s right now (best of ``repeats``; FFN-shaped matmul), same threads.

    Sampled before every chunk of (c) so the effective-GFLOP/s fraction can be
    taken against the ceiling *at the same time*, whatever else the machine does.
    """
    if not _MATMUL:
        rng = np.random.default_rng(0)
        _MATMUL["a"] = rng.standard_normal((m, k), dtype=np.float32)
        _MATMUL["b"] = rng.standard_normal((k, n), dtype=np.float32)
        _MATMUL["out"] = np.empty((m, n), dtype=np.float32)
        np.matmul(_MATMUL["a"], _MATMUL["b"], out=_MATMUL["out"])
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        np.matmul(_MATMUL["a"], _MATMUL["b"], out=_MATMUL["out"])
        best = min(best, time.perf_counter() - started)
    return 2.0 * m * k * n / best / 1e9


def build_parser() -> argparse.ArgumentParser:
    """The interleaved runner's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.interleave", description=__doc__.splitlines()[0])
    parser.add_argument("--onnx-dir", required=True)
    parser.add_argument("--hf-dir", required=True)
    parser.add_argument("--span-dir", default=None, help="export made with span-sliced attention (backends span*)")
    parser.add_argument("--st-dir", default=None, help="sentence-transformers ONNX peer directory (backends st-onnx*)")
    parser.add_argument("--backends", default="torch,onnx", help=f"comma-separated, from {', '.join(BACKEND_KEYS)}")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--probs-dir", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--pair-share", type=float, default=None)
    parser.add_argument("--digest", default=None)
    parser.add_argument("--reps-a", type=int, default=20)
    parser.add_argument("--reps-b", type=int, default=7)
    parser.add_argument("--reps-d", type=int, default=3)
    parser.add_argument("--reps-schedules", type=int, default=5)
    parser.add_argument("--chunk-claims", type=int, default=50)
    parser.add_argument("--claims-e", type=int, default=None, help="claims in workload (e) (default: no (e))")
    parser.add_argument("--digest-e", default=None, help="expected digest of workload (e)")
    parser.add_argument("--chunk-claims-e", type=int, default=25)
    parser.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS)
    parser.add_argument("--max-batch-size", type=int, default=None)
    parser.add_argument("--torch-batch-size", type=int, default=32)
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: latency,throughput,schedules,e")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Load every backend, run the interleaved measurements, write the JSON; 2 on a digest mismatch."""
    args = build_parser().parse_args(argv)
    for name in THREAD_ENV_VARS:
        os.environ[name] = str(args.threads)
    keys = [key.strip() for key in args.backends.split(",") if key.strip()]
    unknown = [key for key in keys if key not in BACKEND_KEYS]
    if unknown:
        print(f"unknown backend(s) {unknown}; choose from {list(BACKEND_KEYS)}", file=sys.stderr)
        return 2
    skip = {part.strip() for part in args.skip.split(",") if part.strip()}
    workloads = checked_workloads(
        args.claims, args.pair_share, args.digest, claims_e=args.claims_e or None, digest_e=args.digest_e
    )
    if isinstance(workloads, str):
        print(workloads, file=sys.stderr)
        return 2
    digest = base_digest(workloads)
    backends: dict[str, Backend] = {}
    load_seconds: dict[str, float] = {}
    for key in keys:
        started = time.perf_counter()
        try:
            backends[key] = load_backend(
                key, onnx_dir=Path(args.onnx_dir), hf_dir=Path(args.hf_dir),
                span_dir=Path(args.span_dir) if args.span_dir else None,
                st_dir=Path(args.st_dir) if args.st_dir else None, threads=args.threads,
                max_batch_tokens=args.max_batch_tokens, max_batch_size=args.max_batch_size,
                torch_batch_size=args.torch_batch_size,
            )
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        load_seconds[key] = time.perf_counter() - started
        print(f"  loaded {key} in {load_seconds[key]:.1f} s", file=sys.stderr, flush=True)
    timed: dict[str, dict[str, LatencyResult]] = {}
    if "latency" not in skip:
        for key, reps, warmup in (("a", args.reps_a, 2), ("b", args.reps_b, 1), ("d", args.reps_d, 1)):
            timed[key] = latency(backends, workloads[key], reps, warmup)
            print(
                f"  ({key}) p50: " + ", ".join(f"{k} {v.p50 * 1000:.0f} ms" for k, v in timed[key].items()),
                file=sys.stderr,
                flush=True,
            )
    throughput: Optional[dict[str, dict[str, ThroughputResult]]] = None
    if "throughput" not in skip:
        if args.probs_dir is not None:
            args.probs_dir.mkdir(parents=True, exist_ok=True)
        throughput = {"c": _throughput(backends, workloads["c"], args.chunk_claims, args.probs_dir)}
        if "e" in workloads and "e" not in skip:
            probs_e = args.probs_dir / "e" if args.probs_dir is not None else None
            throughput["e"] = _throughput(backends, workloads["e"], args.chunk_claims_e, probs_e)
    onnx = backends.get("onnx")
    found: Optional[dict[str, ScheduleResult]] = None
    if "schedules" not in skip and isinstance(onnx, OnnxBackend):
        found = schedules(onnx.scorer, workloads, reps=args.reps_schedules)
    result = InterleaveResult(
        backends=keys, digest=digest, threads=args.threads, latency=timed, throughput=throughput, schedules=found,
        digest_e=workload_digest({"e": workloads["e"]}) if "e" in workloads else None,
        load_seconds=load_seconds,
        versions={key: dict(backend.versions) for key, backend in backends.items()},
    )
    args.out.write_text(json.dumps(result.to_json(), indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One backend measured in its own process: cold start, RSS, schedules, the tuning sweep.

``python -m bench compare`` starts one worker per backend, one after the
other, so each side's peak RSS and cold start are its own and the two never
share cores (the side-by-side timings come from :mod:`bench.interleave`).
Every worker regenerates the same workloads from the same seeds and checks
their digest against the one the parent computed (``--digest``), so every
side scores byte-identical pairs.

Usage (normally started by ``python -m bench``)::

    python -m bench.worker --backend onnx  --model-dir models/bench-.../onnx --out r.json [--variant int8]
    python -m bench.worker --backend torch --model-dir models/bench-.../hf   --out r.json

Tasks (``--tasks``, comma-separated):

* ``rss`` (default) -- cold start (import, load, first pair), then one pass of
  b and d so the peak RSS covers real work (``python -m bench compare``, per backend);
* ``schedules`` -- (onnx) the real :class:`verifier.ClaimVerifier` on a and b,
  ``staged`` vs ``eager`` (:func:`bench.measure.schedules`; ``python -m bench tune``);
* ``tune`` -- (onnx) the settings sweep of :mod:`bench.tune` (``python -m bench tune``).

Threads: PyTorch ``torch.set_num_threads(--threads)``; onnxruntime
``intra_op_num_threads=--threads``, ``inter_op_num_threads=1``; BLAS/OpenMP
env vars are set to ``--threads`` too. The result is a
:class:`bench.results.WorkerResult`, written as JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

_STARTED_WALL = time.time()
_STARTED = time.perf_counter()

import numpy as np  # noqa: E402  (timed from _STARTED on purpose)

from verifier.engine.batching import DEFAULT_MAX_BATCH_TOKENS  # noqa: E402
from .backends import Backend, OnnxBackend, TorchBackend  # noqa: E402
from .measure import schedules, time_stages  # noqa: E402
from .proc import THREAD_ENV_VARS  # noqa: E402
from .results import ColdStart, RssResult, ScheduleResult, WorkerResult  # noqa: E402
from .workloads import checked_workloads, workload_digest  # noqa: E402

__all__ = ["TASKS", "build_parser", "main"]

#: What ``--tasks`` accepts.
TASKS = ("rss", "schedules", "tune")


def _peak_rss() -> int:
    """Peak resident set size of this process in bytes (``ru_maxrss`` is KiB on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    """The worker's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.worker", description="Measure one backend in this process.")
    parser.add_argument("--backend", choices=("onnx", "torch"), required=True)
    parser.add_argument("--model-dir", required=True, help="onnx: exported directory; torch: Hugging Face directory")
    parser.add_argument("--variant", default=None, help="onnx variant name recorded in the manifest")
    parser.add_argument("--out", type=Path, required=True, help="JSON result file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tasks", default="rss", help=f"comma-separated: {','.join(TASKS)} (default rss)")
    parser.add_argument("--claims", type=int, default=200, help="claims in workload c")
    parser.add_argument("--pair-share", type=float, default=None, help="share of c's claims needing pairs")
    parser.add_argument("--digest", default=None, help="expected workload digest (refuse to run on a mismatch)")
    parser.add_argument("--reps-schedules", type=int, default=5)
    parser.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS)
    parser.add_argument("--max-batch-size", type=int, default=None)
    parser.add_argument("--torch-batch-size", type=int, default=32, help="CrossEncoder.predict batch_size")
    parser.add_argument("--tune-claims", type=int, default=40)
    parser.add_argument("--tune-reps-b", type=int, default=3)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the requested tasks and write the result JSON; 0, or 2 on a workload digest mismatch or an unknown task."""
    args = build_parser().parse_args(argv)
    for name in THREAD_ENV_VARS:
        os.environ[name] = str(args.threads)
    tasks = {task.strip() for task in args.tasks.split(",") if task.strip()}
    unknown = sorted(tasks - set(TASKS))
    if unknown:
        print(f"unknown task(s) {unknown}; choose from {list(TASKS)}", file=sys.stderr)
        return 2
    workloads = checked_workloads(args.claims, args.pair_share, args.digest)
    if isinstance(workloads, str):
        print(workloads, file=sys.stderr)
        return 2
    digest = workload_digest(workloads)
    ready = time.perf_counter()
    result = WorkerResult(
        backend=args.backend,
        variant=args.variant,
        threads=args.threads,
        pid=os.getpid(),
        digest=digest,
        process_started_wall=_STARTED_WALL,
        numpy_and_workloads_seconds=ready - _STARTED,
    )

    if "tune" in tasks:
        from .tune import run_tune_sweep

        sweep = run_tune_sweep(
            Path(args.model_dir), workloads, threads=args.threads, tune_claims=args.tune_claims,
            reps_b=args.tune_reps_b, log=_log,
        )
        _write(args.out, dataclasses.replace(result, tune=sweep))
        return 0

    started = time.perf_counter()
    if args.backend == "torch":
        import sentence_transformers  # noqa: F401  (import timed separately from load)
        import torch  # noqa: F401
    else:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401

        import verifier.engine.scorer  # noqa: F401
    imported = time.perf_counter()
    backend: Backend
    if args.backend == "torch":
        backend = TorchBackend(Path(args.model_dir), args.threads, args.torch_batch_size)
    else:
        backend = OnnxBackend(
            Path(args.model_dir),
            variant=args.variant,
            threads=args.threads,
            max_batch_tokens=args.max_batch_tokens,
            max_batch_size=args.max_batch_size,
        )
    loaded = time.perf_counter()
    rss_after_load = _rss()
    peak_after_load = _peak_rss()
    backend.score(workloads["a"].cases[0].single_pairs()[:1])
    first = time.perf_counter()
    cold_start = ColdStart(
        import_seconds=imported - started,
        load_seconds=loaded - imported,
        first_pair_seconds=first - loaded,
        import_load_first_seconds=first - started,
        ready_wall=time.time(),
    )
    _log(
        f"{backend.name}: import {imported - started:.2f} s, load {loaded - imported:.2f} s, "
        f"first pair {first - loaded:.2f} s, RSS {rss_after_load / 2**20:.0f} MiB"
    )
    found: Optional[dict[str, ScheduleResult]] = None
    if "schedules" in tasks and isinstance(backend, OnnxBackend):
        found = schedules(backend.scorer, workloads, reps=args.reps_schedules)
    probe: Optional[dict[str, float]] = None
    if "rss" in tasks:
        # One pass of (b) and (d) -- the widest batches -- so the peak RSS includes
        # the activations of real work, not only the loaded weights.
        probe = {}
        for key in ("b", "d"):
            total, _, _ = time_stages(backend.score, workloads[key].cases[0].stages())
            probe[f"{key}_seconds"] = total
    result = dataclasses.replace(
        result,
        cold_start=cold_start,
        rss=RssResult(after_load_bytes=rss_after_load, peak_after_load_bytes=peak_after_load, peak_bytes=_peak_rss()),
        versions={**backend.versions, "numpy": np.__version__, "python": sys.version.split()[0]},
        rss_probe=probe,
        schedules=found,
    )
    _write(args.out, result)
    return 0


def _write(path: Path, result: WorkerResult) -> None:
    path.write_text(json.dumps(result.to_json(), indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())

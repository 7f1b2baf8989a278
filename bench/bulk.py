"""``python -m bench.bulk``: peak RSS and claims/s of big ``verify`` runs; local CLI vs Ray (docs/bulk.md).

Usage::

    # peak RSS must stay flat as the input grows (smoke model: the model is not the cost)
    python -m bench.bulk rss --sizes 10000 100000 1000000 --model-dir models/tiny-deberta-v2-smoke-seed0
    # local CLI vs --engine ray with 1 and 2 workers (base-shaped model)
    python -m bench.bulk ray --claims 2000 --workers 1 2 --model-dir models/bench-deberta-v3-base-random/onnx
    # check --inputs and verify --resume over an output in input order and shuffled (Ray's order)
    python -m bench.bulk order --claims 1200 --model-dir models/tiny-deberta-v2-smoke-seed0

Each run is a fresh ``python -m verifier verify ... -q`` subprocess; its peak
RSS is the child's own ``ru_maxrss`` (read by a wrapper at exit; for Ray,
only the driver's: the actors are other processes), and beside it the peak of
RSS less the shared pages (``VmRSS - RssShmem``, sampled every 20 ms): the
pages of Ray's object store a driver reads are the store's memory, which Ray's
memory-management docs say to subtract. claims/s is claims over
the subprocess's wall time (start-up, both input passes and writing
included). Nothing here is asserted in tests; figures go to stdout as a
Markdown table and, with ``--json FILE``, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]

#: Runs the verifier CLI and writes, at exit, the process's peak RSS and its sampled peak of RSS less the
#: shared pages (bytes, JSON) to $BULK_BENCH_RSS.
_WRAPPER = """
import atexit, json, os, resource, runpy, sys, threading, time
own = [0]
def _sample():
    # RSS less RssShmem: a Ray driver maps the object store's pages, which are the store's memory
    # (Ray's docs: measure a process's heap as RSS minus SHR); sampled every 20 ms, so a peak can be missed
    while True:
        fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
        kib = int(fields["VmRSS"].split()[0]) - int(fields.get("RssShmem", "0 kB").split()[0])
        own[0] = max(own[0], kib * 1024)
        time.sleep(0.02)
if os.path.exists("/proc/self/status"):
    threading.Thread(target=_sample, daemon=True).start()
def _report():
    with open(os.environ["BULK_BENCH_RSS"], "w") as f:
        json.dump({"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                   "own_rss_bytes": own[0]}, f)
atexit.register(_report)
sys.argv = ["verifier", *sys.argv[1:]]
runpy.run_module("verifier", run_name="__main__")
"""


def write_claims(path: Path, count: int) -> Path:
    """``count`` short evidence rows with unique ids, written as they are made (never held in memory)."""
    with path.open("w", encoding="utf-8") as handle:
        for n in range(count):
            row = {
                "id": f"c{n}",
                "claim": f"The launch is on day {n % 7}.",
                "evidence": [
                    {"reference": "M1", "memory_id": str(uuid.UUID(int=n + 1)), "text": f"The launch moved to day {(n * 3) % 7}."}
                ],
            }
            handle.write(json.dumps(row) + "\n")
    return path


def run_verify(argv: Sequence[str], threads: Optional[int] = None) -> dict[str, Any]:
    """Run ``python -m verifier <argv>`` in a fresh process: wall seconds, peak RSS bytes, exit status."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    with tempfile.NamedTemporaryFile(prefix="bulk-rss.", delete=False) as rss_file:
        env["BULK_BENCH_RSS"] = rss_file.name
    try:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _WRAPPER, *argv], cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        text = Path(rss_file.name).read_text()
    finally:
        os.unlink(rss_file.name)
    if proc.returncode != 0:
        raise SystemExit(f"verify failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
    return {"wall_s": wall, **json.loads(text)}


def _mib(value: int) -> str:
    return f"{value / (1 << 20):.0f} MiB"


#: The modes ``rss --modes`` measures: the extra arguments of each (the Ray ones: the driver's peak RSS).
MODES = {
    "atomic": [], "resume": ["--resume"],
    "ray-resume": ["--engine", "ray", "--workers", "1", "--resume"], "ray-dir": ["--engine", "ray", "--workers", "1"],
}


def bench_rss(sizes: Sequence[int], model_dir: Path, threads: int, workdir: Path,
              modes: Sequence[str] = ("atomic", "resume")) -> list[dict[str, Any]]:
    """Peak RSS and claims/s of each mode (default: the atomic default and ``--resume``) for each input size."""
    rows = []
    for size in sizes:
        source = write_claims(workdir / f"claims-{size}.jsonl", size)
        for mode in modes:
            extra = MODES[mode]
            out = workdir / (f"out-{size}-{mode}" + ("" if mode == "ray-dir" else ".jsonl"))
            local = [] if mode.startswith("ray") else ["--threads", str(threads)]
            argv = ["verify", str(source), "-o", str(out), "-q", "--model-dir", str(model_dir), *local, *extra]
            figures = run_verify(argv, threads)
            figures.update(claims=size, mode=mode, claims_per_s=size / figures["wall_s"])
            rows.append(figures)
            shutil.rmtree(out) if out.is_dir() else out.unlink()
            print(f"{size:>9} {mode:<10} {_mib(figures['peak_rss_bytes']):>9} (less shared: {_mib(figures['own_rss_bytes'])}) "
                  f"{figures['claims_per_s']:>9.0f} claims/s", file=sys.stderr, flush=True)
        source.unlink()
    return rows


def bench_ray(claims: int, workers: Sequence[int], model_dir: Path, threads: int, workdir: Path) -> list[dict[str, Any]]:
    """claims/s of the local CLI (``--threads``) and of ``--engine ray`` with each worker count (1 thread each)."""
    source = write_claims(workdir / f"claims-{claims}.jsonl", claims)
    base = ["verify", str(source), "-q", "--model-dir", str(model_dir)]
    rows = []
    local = run_verify([*base, "-o", str(workdir / "local.jsonl"), "--threads", str(threads)], threads)
    rows.append({"engine": f"local --threads {threads}", "claims": claims, **local, "claims_per_s": claims / local["wall_s"]})
    for count in workers:
        outdir = workdir / f"ray-{count}"
        figures = run_verify([*base, "-o", str(outdir), "--engine", "ray", "--workers", str(count), "--threads-per-worker", "1"])
        rows.append({"engine": f"ray --workers {count} (1 thread each)", "claims": claims, **figures,
                     "claims_per_s": claims / figures["wall_s"]})
    for row in rows:
        print(f"{row['engine']:<36} {row['claims_per_s']:>9.1f} claims/s  {row['wall_s']:.1f} s", file=sys.stderr, flush=True)
    return rows


def bench_order(claims: int, model_dir: Path, workdir: Path) -> list[dict[str, Any]]:
    """Wall seconds of ``check --inputs`` and of ``verify --resume`` (every line kept) over a finished
    output in input order and shuffled (seed 0)."""
    import random

    source = write_claims(workdir / f"claims-{claims}.jsonl", claims)
    out = workdir / "out.jsonl"
    resume = ["verify", str(source), "-o", str(out), "-q", "--model-dir", str(model_dir), "--resume"]
    run_verify(resume)
    ordered = out.read_text(encoding="utf-8").splitlines(keepends=True)
    shuffled = list(ordered)
    random.Random(0).shuffle(shuffled)
    rows = []
    for order, lines in (("input order", ordered), ("shuffled", shuffled)):
        for command, argv in (("check --inputs", ["check", str(out), "--inputs", str(source), "-q"]), ("verify --resume", resume)):
            out.write_text("".join(lines), encoding="utf-8")
            figures = run_verify(argv)
            rows.append({"command": command, "output": order, "records": claims, **figures})
            print(f"{command:<16} {order:<12} {figures['wall_s']:.2f} s", file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    named = {"peak_rss": "peak_rss_bytes", "peak_rss_less_shared": "own_rss_bytes"}  # column: bytes field
    keys = [key for key in rows[0] if key not in named.values()]
    keys += [column for column, field in named.items() if field in rows[0]]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        cells = []
        for key in keys:
            value = _mib(row[named[key]]) if key in named else row[key]
            cells.append(f"{value:.2f}" if isinstance(value, float) else str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m bench.bulk`` argument parser (``rss`` and ``ray`` subcommands)."""
    parser = argparse.ArgumentParser(prog="python -m bench.bulk", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rss = sub.add_parser("rss", help="peak RSS and claims/s against input size")
    rss.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    rss.add_argument("--model-dir", type=Path, default=ROOT / "models" / "tiny-deberta-v2-smoke-seed0")
    rss.add_argument("--modes", nargs="+", choices=sorted(MODES), default=["atomic", "resume"],
                     help="what to run at each size (ray-*: --engine ray --workers 1, the driver's peak RSS)")
    ray = sub.add_parser("ray", help="local CLI vs --engine ray")
    ray.add_argument("--claims", type=int, default=2000)
    ray.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ray.add_argument("--model-dir", type=Path, default=ROOT / "models" / "bench-deberta-v3-base-random" / "onnx")
    order = sub.add_parser("order", help="check --inputs and verify --resume over an output in input order and shuffled")
    order.add_argument("--claims", type=int, default=1200)
    order.add_argument("--model-dir", type=Path, default=ROOT / "models" / "tiny-deberta-v2-smoke-seed0")
    order.add_argument("--json", type=Path, help="also write the figures here")
    for command in (rss, ray):
        command.add_argument("--threads", type=int, default=1, help="onnxruntime threads of the local run (default 1)")
        command.add_argument("--json", type=Path, help="also write the figures here")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the chosen benchmark and print its markdown table."""
    args = build_parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-bulk.") as work:
        if args.command == "rss":
            rows = bench_rss(args.sizes, args.model_dir, args.threads, Path(work), args.modes)
        elif args.command == "order":
            rows = bench_order(args.claims, args.model_dir, Path(work))
        else:
            rows = bench_ray(args.claims, args.workers, args.model_dir, args.threads, Path(work))
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""Pair scoring side by side: this engine's float32, int8 and bf16 against the peers a user picks on this CPU.

``python -m bench.peers`` writes ``--pairs`` (premise, hypothesis) pairs of realistic
encyclopedic text (workload (e)'s passages against its claims: :mod:`bench.workloads`),
starts one warm :mod:`bench.pair_worker` process per side, and lets them take
turns, round by round (order rotated), each scoring every pair once per round.
Sides: ``ours-fp32``, ``ours-int8``, ``ours-bf16``, ``ours-ov-int8`` (OnnxScorer), ``st-torch``
(sentence-transformers CrossEncoder on PyTorch, this venv), ``st-openvino`` and
``st-openvino-bf16`` (``CrossEncoder(backend="openvino")``, from
``.venv-st-openvino``: ``bash bench/setup_st_openvino_peer.sh``).

Reported per side: median and p95 seconds per round, pairs/s, the ratio to
``st-openvino`` (and to ``ours-fp32``), the 1-minute load average per round, and
the max |Δprobability| against ``ours-fp32`` (the float32 reference; the model's
weights are random, so this is arithmetic agreement, never quality). Results:
``bench/results/<name>.json`` and ``.md``.

Usage::

    .venv/bin/python -m bench.peers --rounds 5                      # every side that is set up
    .venv/bin/python -m bench.peers --sides ours-bf16,st-openvino --rounds 3 --pairs 200
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from .model import bench_model
from .prme_e2e import Worker
from .proc import REPO_ROOT

__all__ = ["SIDES", "ST_OPENVINO_VENV", "build_parser", "main", "pairs_of"]

#: Every side, in report order.
SIDES = ("ours-fp32", "ours-int8", "ours-bf16", "ours-ov-int8", "st-torch", "st-openvino", "st-openvino-bf16")
#: The peer virtualenv of the OpenVINO sentence-transformers sides.
ST_OPENVINO_VENV = REPO_ROOT / ".venv-st-openvino"


def pairs_of(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """``count`` (passage, claim) pairs of workload (e), drawn with a fixed seed (every side gets the same)."""
    from .workloads import workload_e

    workload = workload_e(claims=max(1, count // 8 + 1))
    pairs = [(passage.text, case.claim) for case in workload.cases for passage in case.passages]
    random.Random(seed).shuffle(pairs)
    return pairs[:count]


def build_parser() -> argparse.ArgumentParser:
    """The command's flags."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sides", default=None, help=f"comma-separated from {','.join(SIDES)} (default: every side set up)")
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default=None)
    parser.add_argument("--models-root", type=Path, default=None)
    parser.add_argument("--results-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    return parser


def _commands(sides: Sequence[str], onnx_dir: Path, hf_dir: Path, st_ov_dir: Path, pairs: Path, threads: int) -> dict[str, list[str]]:
    peer = str(ST_OPENVINO_VENV / "bin" / "python")
    common = ["--pairs", str(pairs), "--threads", str(threads)]
    commands = {
        "ours-fp32": [sys.executable, "-m", "bench.pair_worker", "--side", "ours", "--model", str(onnx_dir)],
        "ours-int8": [sys.executable, "-m", "bench.pair_worker", "--side", "ours", "--model", str(onnx_dir), "--variant", "int8"],
        "ours-bf16": [sys.executable, "-m", "bench.pair_worker", "--side", "ours", "--model", str(onnx_dir), "--variant", "bf16"],
        "ours-ov-int8": [sys.executable, "-m", "bench.pair_worker", "--side", "ours", "--model", str(onnx_dir), "--variant", "ov-int8"],
        "st-torch": [sys.executable, "-m", "bench.pair_worker", "--side", "st-torch", "--model", str(hf_dir)],
        "st-openvino": [peer, "-m", "bench.pair_worker", "--side", "st-openvino", "--model", str(hf_dir),
                        "--st-openvino-dir", str(st_ov_dir)],
        "st-openvino-bf16": [peer, "-m", "bench.pair_worker", "--side", "st-openvino-bf16", "--model", str(hf_dir),
                             "--st-openvino-dir", str(st_ov_dir)],
    }
    return {side: commands[side] + common for side in sides}


def _available(onnx_dir: Path) -> list[str]:
    variants = json.loads((onnx_dir / "manifest.json").read_text(encoding="utf-8")).get("variants", {})
    sides = ["ours-fp32"] + [f"ours-{v}" for v in ("int8", "bf16", "ov-int8") if v in variants] + ["st-torch"]
    if (ST_OPENVINO_VENV / "bin" / "python").exists():
        sides += ["st-openvino", "st-openvino-bf16"]
    return sides


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the comparison; 0, or 2 when the bench model is not built."""
    args = build_parser().parse_args(argv)
    model = bench_model(args.models_root)
    onnx_dir, hf_dir = model.span_dir, model.hf_dir
    if not (onnx_dir / "manifest.json").is_file() or not model.hf_ready():
        print(f"the bench model is not built ({onnx_dir}): run `.venv/bin/python -m bench build --span`", file=sys.stderr)
        return 2
    sides = [s.strip() for s in args.sides.split(",")] if args.sides else _available(onnx_dir)
    unknown = [side for side in sides if side not in SIDES]
    if unknown:
        print(f"unknown side(s) {unknown}; choose from {list(SIDES)}", file=sys.stderr)
        return 2
    labels = [json.loads((hf_dir / "config.json").read_text())["id2label"][str(i)].lower() for i in range(3)]
    to_ecn = [labels.index(name) for name in ("entailment", "contradiction", "neutral")]
    scratch = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    pairs = pairs_of(args.pairs)
    pairs_path = scratch / "pairs.json"
    pairs_path.write_text(json.dumps(pairs), encoding="utf-8")
    from tokenizers import Tokenizer

    tokens = [len(e.ids) for e in Tokenizer.from_file(str(onnx_dir / "tokenizer.json")).encode_batch(pairs)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TOKENIZERS_PARALLELISM": "false"}
    commands = _commands(sides, onnx_dir, hf_dir, model.root / "st-openvino", pairs_path, args.threads)
    print(f"peers: {len(pairs)} pairs (median {statistics.median(tokens):.0f} tokens), sides {sides}; logs in {scratch}", file=sys.stderr)
    workers: dict[str, Worker] = {}
    seconds: dict[str, list[float]] = {side: [] for side in sides}
    probabilities: dict[str, np.ndarray] = {}
    loads: list[float] = []
    try:
        for side in sides:  # one after the other, so each load has the machine to itself
            workers[side] = Worker(side, commands[side], env, scratch / f"{side}.log")
            print(f"  {side}: ready after {workers[side].ready_after_s:.1f} s", file=sys.stderr)
        for round_number in range(args.rounds):
            order = sides[round_number % len(sides):] + sides[: round_number % len(sides)]
            loads.append(os.getloadavg()[0])
            for side in order:
                answer = workers[side].ask(op="run")
                seconds[side].append(answer["seconds"])
                if "probabilities" in answer:
                    found = np.asarray(answer["probabilities"], dtype=np.float64)
                    probabilities[side] = found if side.startswith("ours") else found[:, to_ecn]
            print(f"  round {round_number + 1}/{args.rounds}: " + ", ".join(
                f"{side} {seconds[side][-1]:.2f} s" for side in sides) + f" (load {loads[-1]:.2f})", file=sys.stderr)
    finally:
        for worker in workers.values():
            try:
                worker.close()
            except Exception as exc:  # noqa: BLE001 - report and go on closing the others
                print(f"  {worker.key}: {exc}", file=sys.stderr)
    median = {side: statistics.median(values) for side, values in seconds.items()}
    reference = probabilities.get("ours-fp32")
    rows = []
    for side in sides:
        row: dict[str, Any] = {
            "side": side, "median_s": median[side], "p95_s": _percentile(seconds[side], 95),
            "pairs_per_s": len(pairs) / median[side], "seconds": seconds[side],
        }
        for base in ("st-openvino", "ours-fp32"):
            if base in median:
                row[f"x_vs_{base}"] = median[base] / median[side]
        if reference is not None and side in probabilities:
            row["max_abs_prob_diff_vs_ours_fp32"] = float(np.abs(probabilities[side] - reference).max())
        rows.append(row)
    name = args.name or f"peers-{datetime.now(timezone.utc):%Y-%m-%d-%H%M}"
    result = {
        "name": name, "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"), "pairs": len(pairs),
        "median_tokens": statistics.median(tokens), "rounds": args.rounds, "threads": args.threads,
        "cpu": platform.processor() or platform.machine(), "load_per_round": loads, "rows": rows,
        "ready_s": {side: worker.ready_after_s for side, worker in workers.items()},
    }
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [f"# Pair scoring side by side: {name}", "",
             "**Random weights: speed and arithmetic agreement only.**", "",
             f"{len(pairs)} pairs of workload (e) (median {result['median_tokens']:.0f} tokens), {args.rounds} rounds, "
             f"{args.threads} threads, load {min(loads):.2f}-{max(loads):.2f}", "",
             "| side | median s | p95 s | pairs/s | x st-openvino | x ours-fp32 | max abs dprob vs ours-fp32 |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['side']} | {row['median_s']:.2f} | {row['p95_s']:.2f} | {row['pairs_per_s']:.1f} | "
            f"{row.get('x_vs_st-openvino', float('nan')):.2f} | {row.get('x_vs_ours-fp32', float('nan')):.2f} | "
            f"{row.get('max_abs_prob_diff_vs_ours_fp32', float('nan')):.2g} |"
        )
    (args.results_dir / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

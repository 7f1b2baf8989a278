"""Resident memory over a long run of varied lengths, per onnxruntime memory setting.

Each setting runs in its own process (``--child``): the engine
(:class:`verifier.engine.scorer.OnnxScorer`, 2 threads) loads the model, then scores
``--calls`` calls of varied size and length -- each call 1 to 32 pairs whose
premises join 1 to 3 encyclopedia-style passages of :mod:`bench.texts` (about
20 to 250 tokens a pair), drawn with a fixed seed -- and records the RSS after
load and after every call. The settings are the engine's
``enable_cpu_mem_arena`` and ``enable_mem_pattern`` (the engine's default is
arena on, pattern off).

Usage::

    python -m bench.rss_curve --model-dir models/bench-deberta-v3-base-random/onnx-span \\
        --calls 120 --out bench/results/rss-curve.json --plot bench/results/rss-curve.png

Prints one line per setting (after load, after 10 calls, at the end, peak,
seconds); ``--plot`` draws the curves (matplotlib, the ``plot`` extra).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from .proc import python_env, run_python

__all__ = ["SETTINGS", "calls", "main"]

#: (arena, memory pattern) settings compared; the first is the engine's default.
SETTINGS: tuple[tuple[bool, bool], ...] = ((True, False), (True, True), (False, False), (False, True))


def calls(count: int, seed: int = 0) -> list[list[tuple[str, str]]]:
    """``count`` calls of 1-32 (premise, hypothesis) pairs of varied length, from a fixed seed."""
    from .texts import encyclopedia_case

    rng = random.Random(seed)
    paths = ("single-support", "single-refute", "pair-support", "insufficient")
    made: list[list[tuple[str, str]]] = []
    for _ in range(count):
        pairs = []
        for _ in range(rng.randint(1, 32)):
            texts, claim, _ = encyclopedia_case(rng, rng.choice(paths), 3)
            pairs.append((" ".join(texts[: rng.randint(1, 3)]), claim))
        made.append(pairs)
    return made


def _child(model_dir: Path, variant: Optional[str], arena: bool, pattern: bool, count: int, threads: int) -> dict[str, Any]:
    import psutil

    from verifier.engine.scorer import OnnxScorer

    work = calls(count)
    process = psutil.Process()
    scorer = OnnxScorer(
        model_dir, variant=variant, intra_op_num_threads=threads, inter_op_num_threads=1,
        enable_cpu_mem_arena=arena, enable_mem_pattern=pattern,
    ).load()
    rss = [process.memory_info().rss]
    started = time.perf_counter()
    for pairs in work:
        scorer.score(pairs)
        rss.append(process.memory_info().rss)
    stats = scorer.stats
    return {
        "arena": arena, "memory_pattern": pattern, "seconds": time.perf_counter() - started,
        "pairs": sum(len(pairs) for pairs in work), "real_tokens": stats.real_tokens, "rss_bytes": rss,
    }


def _plot(results: Sequence[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5))
    for result in results:
        label = f"arena {'on' if result['arena'] else 'off'}, pattern {'on' if result['memory_pattern'] else 'off'}"
        axes.plot([value / 2**20 for value in result["rss_bytes"]], label=label, linewidth=1.2)
    axes.set_xlabel("calls scored (0 = after load)")
    axes.set_ylabel("RSS (MiB)")
    axes.set_title(title)
    axes.legend()
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.rss_curve", description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--variant", default=None)
    parser.add_argument("--calls", type=int, default=120)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="write every setting's curve as JSON")
    parser.add_argument("--plot", type=Path, default=None, help="draw the curves (PNG; matplotlib)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)  # "ARENA,PATTERN" (0/1): run one setting here
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.calls < 1:
        print("python -m bench.rss_curve: --calls must be >= 1", file=sys.stderr)
        return 2
    from .preflight import missing_modules

    extra_of = {"psutil": "bench", "matplotlib": "plot"}
    missing = missing_modules([("psutil", "psutil")] + ([("matplotlib", "matplotlib")] if args.plot else []))
    if missing:
        extras = ",".join(extra_of[name] for name in missing)
        print(f"python -m bench.rss_curve: missing {', '.join(missing)}; install with "
              f"bash scripts/setup.sh export,test,{extras}", file=sys.stderr)
        return 2
    if args.child is not None:
        arena, pattern = (flag == "1" for flag in args.child.split(","))
        print(json.dumps(_child(args.model_dir, args.variant, arena, pattern, args.calls, args.threads)))
        return 0
    results = []
    for arena, pattern in SETTINGS:
        child = ["-m", "bench.rss_curve", "--model-dir", str(args.model_dir), "--calls", str(args.calls),
                 "--threads", str(args.threads), "--child", f"{int(arena)},{int(pattern)}"]
        if args.variant:
            child += ["--variant", args.variant]
        completed = run_python(child, env=python_env(args.threads))
        result = json.loads(completed.stdout.strip().splitlines()[-1])
        rss = [value / 2**20 for value in result["rss_bytes"]]
        print(
            f"arena {'on ' if arena else 'off'} pattern {'on ' if pattern else 'off'}: after load {rss[0]:.0f} MiB, "
            f"after 10 calls {rss[min(10, len(rss) - 1)]:.0f}, end {rss[-1]:.0f}, peak {max(rss):.0f}; "
            f"{result['seconds']:.1f} s for {result['pairs']} pairs",
            flush=True,
        )
        results.append(result)
    if args.out is not None:
        args.out.write_text(json.dumps({"model_dir": str(args.model_dir), "variant": args.variant, "results": results}) + "\n")
    if args.plot is not None:
        _plot(results, args.plot, f"{args.model_dir.name}{' ' + args.variant if args.variant else ''}: RSS over {args.calls} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())

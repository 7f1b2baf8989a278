"""Where the time goes: onnxruntime's profiler at fixed sequence lengths, grouped by operator type.

For each length ``L`` (default 48, 96 and 192 tokens) the model runs
batches of ``rows = max_batch_tokens // L`` sequences of exactly ``L``
tokens (no padding: every position is real, so the time is the model's),
with onnxruntime's profiler on (``SessionOptions.enable_profiling``). The
trace's ``Node`` events (one per kernel call, ``dur`` in µs) are summed per
``op_name`` and reported as a share of the node time, with the milliseconds
per sequence; the first ``--warmup`` runs are left out of the sums. The
effective GFLOP/s uses :data:`bench.flops.MINIMAL` FLOPs, DeBERTa-v3-base's: it is left out, with a
note saying why, for a model of another shape (its ``config.json``: the smoke model, say).

Token ids are drawn with a fixed seed from the vocabulary of the
``config.json`` beside the model file (``vocab_size``; DeBERTa-v3's 128,100
without one); the ids do not change the work of a dense model. Threads: ``--threads`` intra-op,
one inter-op, as every other benchmark here.

Usage::

    python -m bench.profile models/bench-deberta-v3-base-random/onnx-span/model.onnx \\
        --lengths 48 96 192 --out bench/results/profile-span-fp32.json

Prints a markdown table per length; ``--out`` also writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional, Sequence

from verifier.engine.batching import DEFAULT_MAX_BATCH_TOKENS

__all__ = ["op_shares", "profile_length", "main"]

#: DeBERTa-v3 vocabulary size (its config.json ``vocab_size``), used without a config.json.
VOCAB_SIZE = 128_100


def _vocab_size(model: Path) -> int:
    config = model.parent / "config.json"
    if config.is_file():
        return int(json.loads(config.read_text()).get("vocab_size", VOCAB_SIZE))
    return VOCAB_SIZE


def not_the_base_shape(model: Path) -> Optional[str]:
    """Why :data:`bench.flops.MINIMAL`'s FLOP count (DeBERTa-v3-base's) does not fit ``model``, from the
    ``config.json`` beside it (``None``: it has the base shape, or no config.json says otherwise).

    Regression (issue 50): on the smoke model ``bench.profile`` printed "23505 effective GFLOP/s", the base
    model's FLOPs over a tiny model's time, with no warning.
    """
    from .flops import HIDDEN, INTERMEDIATE, LAYERS

    config = model.parent / "config.json"
    if not config.is_file():
        return None
    values = json.loads(config.read_text())
    shape = {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "intermediate_size": INTERMEDIATE}
    differs = [f"{name} {values[name]}" for name, base in shape.items() if name in values and values[name] != base]
    if not differs:
        return None
    return (f"not DeBERTa-v3-base's shape ({', '.join(differs)}; the base has hidden_size {HIDDEN}, "
            f"num_hidden_layers {LAYERS}, intermediate_size {INTERMEDIATE}): no effective GFLOP/s, whose FLOP "
            "count is the base model's")


def op_shares(trace: Sequence[dict[str, Any]], skip_runs: int) -> tuple[dict[str, float], int]:
    """Sum the ``Node`` events' ``dur`` (µs) per ``op_name``, leaving out the first ``skip_runs`` runs.

    Runs are delimited by the trace's ``model_run`` events (category
    ``Session``), in order. Returns the µs per operator type and the number of
    runs counted.
    """
    runs = sorted(
        (event["ts"], event["ts"] + event["dur"])
        for event in trace
        if event.get("cat") == "Session" and event.get("name") == "model_run"
    )
    counted = runs[skip_runs:]
    if not counted:
        return {}, 0
    start = counted[0][0]
    totals: dict[str, float] = defaultdict(float)
    for event in trace:
        if event.get("cat") != "Node" or event["ts"] < start:
            continue
        name = event.get("args", {}).get("op_name")
        if name and event["name"].endswith("_kernel_time"):
            totals[name] += float(event["dur"])
    return dict(totals), len(counted)


def profile_length(
    model: Path, length: int, *, max_batch_tokens: int, threads: int, runs: int, warmup: int, seed: int = 0
) -> dict[str, Any]:
    """Profile ``runs`` batches of ``max_batch_tokens // length`` sequences of ``length`` tokens."""
    import numpy as np

    from verifier.engine.session import create_session, session_options

    rows = max(1, max_batch_tokens // length)
    rng = np.random.default_rng(seed)
    input_ids = rng.integers(4, _vocab_size(model), size=(rows, length), dtype=np.int64)
    input_ids[:, 0] = 1  # [CLS]
    input_ids[:, -1] = 2  # [SEP]
    feed = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as work:
        options = session_options(intra_op_num_threads=threads, inter_op_num_threads=1)
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(work, "trace")
        session = create_session(model, options)
        names = {node.name for node in session.get_inputs()}
        inputs = {name: value for name, value in feed.items() if name in names}
        wall = []
        for number in range(warmup + runs):
            started = time.perf_counter()
            session.run(None, inputs)
            if number >= warmup:
                wall.append(time.perf_counter() - started)
        trace_path = session.end_profiling()
        trace = json.loads(Path(trace_path).read_text())
    totals, counted = op_shares(trace, skip_runs=warmup)
    node_us = sum(totals.values())
    sequences = rows * counted
    from .flops import MINIMAL, flops_per_sequence

    seconds = sum(wall)
    base = not_the_base_shape(model) is None
    return {
        "length": length,
        "rows": rows,
        "runs": counted,
        "wall_ms_per_sequence": 1000 * seconds / sequences,
        "node_ms_per_sequence": node_us / 1000 / sequences,
        "effective_gflops": flops_per_sequence(length, MINIMAL) * sequences / seconds / 1e9 if base else None,
        "ops": {
            name: {"share": us / node_us, "ms_per_sequence": us / 1000 / sequences}
            for name, us in sorted(totals.items(), key=lambda item: -item[1])
        },
    }


def _markdown(model: Path, results: Sequence[dict[str, Any]], top: int) -> str:
    lines = [f"Profile of `{model}` (onnxruntime {_ort_version()}):", ""]
    unlike = not_the_base_shape(model)
    if unlike is not None:
        lines = [*lines[:-1], f"Note: `{model}` is {unlike}.", ""]
    for result in results:
        lines += [
            f"**L = {result['length']}** ({result['rows']} rows × {result['runs']} runs): "
            f"{result['wall_ms_per_sequence']:.2f} ms/sequence wall, {result['node_ms_per_sequence']:.2f} in kernels"
            + (f", {result['effective_gflops']:.0f} effective GFLOP/s" if result["effective_gflops"] is not None else ""),
            "",
            "| operator | share of kernel time | ms/sequence |",
            "|---|---:|---:|",
        ]
        ops = list(result["ops"].items())
        for name, figures in ops[:top]:
            lines.append(f"| {name} | {100 * figures['share']:.1f} % | {figures['ms_per_sequence']:.3f} |")
        rest = ops[top:]
        if rest:
            share = sum(figures["share"] for _, figures in rest)
            ms = sum(figures["ms_per_sequence"] for _, figures in rest)
            lines.append(f"| {len(rest)} others | {100 * share:.1f} % | {ms:.3f} |")
        lines.append("")
    return "\n".join(lines)


def _ort_version() -> str:
    import onnxruntime as ort

    return str(ort.__version__)


def _how_to_build(model: Path) -> str:
    """What makes the ONNX file of a missing benchmark model (for the 'not a file' error)."""
    if model.parent.name == "onnx-span":
        return "the benchmark model's span-sliced export is made by `.venv/bin/python -m bench build --span`"
    if "bench-deberta-v3-base-random" in model.parts:
        return "the benchmark model is made by `.venv/bin/python -m bench build` (add --span for onnx-span/)"
    return ("give an exported model.onnx (`.venv/bin/python -m export`, or `.venv/bin/python -m bench build "
            "[--span]` for the benchmark model)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path, help="an ONNX file")
    parser.add_argument("--lengths", type=int, nargs="+", default=[48, 96, 192])
    parser.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS, help="token budget of one batch (default: the engine's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--top", type=int, default=10, help="operator types listed per length")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.model.is_file():
        print(f"python -m bench.profile: {args.model} is not a file; {_how_to_build(args.model)}", file=sys.stderr)
        return 2
    if any(length < 2 or length > 512 for length in args.lengths):
        print("python -m bench.profile: --lengths must be between 2 and 512 tokens", file=sys.stderr)
        return 2
    results = [
        profile_length(
            args.model, length, max_batch_tokens=args.max_batch_tokens, threads=args.threads,
            runs=args.runs, warmup=args.warmup,
        )
        for length in args.lengths
    ]
    print(_markdown(args.model, results, args.top))
    if args.out is not None:
        args.out.write_text(json.dumps({"model": str(args.model), "threads": args.threads, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where one end-to-end claim spends its time in this project's verifier: cProfile, grouped by layer.

``python -m bench.e2e_profile`` starts one warm :mod:`bench.e2e_worker` (ours,
float32 or ``--variant int8``), verifies ``--claims`` claims of workload (c) once
untimed, then again under :mod:`cProfile` (``verify_sync``, so every layer runs
in the profiled thread; the async path's only extra is its thread hand-off,
timed by :mod:`bench.prme_e2e`), and prints the inclusive time per layer:

* onnxruntime ``InferenceSession.run``;
* tokenization (``tokenizers`` ``encode_batch*``);
* batch planning and padding (:func:`verifier.engine.batching.plan_batches`, ``pad_encodings``);
* the decision procedure (:mod:`verifier.decision.procedure`) and its guards, audit digests;
* validation (``verifier.validation``) and result building (pydantic);
* everything else (the rest of the wall time).

Raw stats go to ``--out`` (``pstats`` file) for ``python -m pstats``.

Usage::

    .venv/bin/python -m bench.e2e_profile --claims 8 [--variant int8] [--mode sync|async|many] [--out prof.pstats]
"""

from __future__ import annotations

import argparse
import json
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from .model import bench_model
from .prme_e2e import Worker, _env, cases_of

__all__ = ["LAYERS", "build_parser", "main", "layer_times"]

#: (label, predicate on a pstats function key (file, line, name)) in report order; first match wins.
LAYERS: tuple[tuple[str, object], ...] = (
    ("onnxruntime InferenceSession.run", lambda f, n: n == "run" and "onnxruntime" in f),
    ("tokenization (encode_batch)", lambda f, n: "encode_batch" in n),
    ("batch planning (plan_batches)", lambda f, n: n == "plan_batches"),
    ("padding (pad_encodings)", lambda f, n: n == "pad_encodings"),
    ("score validation (validate_scores)", lambda f, n: n == "validate_scores"),
    ("request validation (validate_request)", lambda f, n: n == "validate_request"),
    ("audit digests (verifier/decision/audit.py)", lambda f, n: f.endswith("decision/audit.py") and n in ("result", "build_result", "digests")),
    ("guards (verifier/decision/guards.py)", lambda f, n: f.endswith("decision/guards.py")),
)


def layer_times(stats: pstats.Stats) -> dict[str, float]:
    """Inclusive seconds of the top-level functions of each layer (a function inside another of the same layer counts once)."""
    raw = stats.stats  # type: ignore[attr-defined]
    totals: dict[str, float] = {}
    for (filename, _line, name), (_cc, _nc, _tt, ct, callers) in raw.items():
        for label, match in LAYERS:
            if match(filename, name):  # type: ignore[operator]
                # count only calls from outside the same layer (avoid double counting recursion/nesting)
                outside = [c for c in callers if not match(c[0], c[2])]  # type: ignore[operator]
                if not outside and callers:
                    break
                totals[label] = totals.get(label, 0.0) + ct
                break
    return totals


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.e2e_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=8)
    parser.add_argument("--texts", choices=("c", "e"), default="c")
    parser.add_argument("--variant", default=None)
    parser.add_argument("--mode", choices=("sync", "async", "many"), default="sync")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--session-config", default=None)
    parser.add_argument("--out", type=Path, default=None, help="pstats file (default: a temporary file)")
    parser.add_argument("--top", type=int, default=25, help="functions by inclusive time to print")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Profile and print the per-layer table; 2 when the bench model is missing."""
    args = build_parser().parse_args(argv)
    model = bench_model()
    if not (model.span_dir / "manifest.json").is_file():
        print("the bench model is not built: run `.venv/bin/python -m bench build --span`", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="e2e-profile-"))
    cases = cases_of(args.texts, args.claims)
    cases_path = scratch / "cases.json"
    cases_path.write_text(json.dumps([{"claim": c["claim"], "evidence": c["evidence"]} for c in cases]), encoding="utf-8")
    command = [sys.executable, "-m", "bench.e2e_worker", "--side", "ours", "--model", str(model.span_dir),
               "--threads", str(args.threads), "--cases", str(cases_path)]
    if args.variant:
        command += ["--variant", args.variant]
    if args.session_config:
        command += ["--session-config", args.session_config]
    worker = Worker("ours", command, _env(args.threads), scratch / "worker.log")
    out = args.out or scratch / "profile.pstats"
    try:
        indices = list(range(len(cases)))
        worker.ask(op="many" if args.mode == "many" else "sync_seq" if args.mode == "sync" else "concurrent", indices=indices)
        reply = worker.ask(op="profile", indices=indices, mode=args.mode, out=str(out))
    finally:
        worker.close()
    stats = pstats.Stats(str(out))
    wall = reply["seconds"]
    layers = layer_times(stats)
    print(f"{len(cases)} claims, mode {args.mode}, variant {args.variant or 'fp32'}: {wall:.3f} s under cProfile "
          f"({wall / len(cases) * 1000:.0f} ms per claim), load {reply['load']:.2f}")
    print("| layer | seconds | share of wall |")
    print("|---|---:|---:|")
    for label, _ in LAYERS:
        if label in layers:
            print(f"| {label} | {layers[label]:.3f} | {layers[label] / wall * 100:.1f} % |")
    rest = wall - sum(layers.values())
    print(f"| everything else | {rest:.3f} | {rest / wall * 100:.1f} % |")
    print()
    stats.sort_stats("cumulative").print_stats(args.top)
    print(f"pstats: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m bench``: build the benchmark model, compare backends side by side, tune the engine.

Usage::

    python -m bench build [--rebuild]                 # random DeBERTa-v3-base -> python -m export -> variants
    python -m bench compare [--name NAME] [--quick]   # CrossEncoder (PyTorch, ONNX, ONNX int8) vs OnnxScorer (+ int8, optimized)
    python -m bench tune [--name NAME]                # token budget, threads, levels, staged vs eager

``compare`` writes ``bench/results/<name>.json`` and ``bench/results/<name>.md``
and prints the markdown. It waits (up to ``--wait`` seconds: 600 for a full
run, 0 for ``--quick``) for the 1-minute load average to drop to
``--max-load`` before timing, and records the load it measured under beside
the figures either way. Progress goes to stderr.

Before any work every command checks that what it needs is installed
(:func:`bench.preflight.preflight`: the bench extra, and the export extra and
tokenizer files while the model must still be built); if not, it prints one
line saying what is missing and how to install it, and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Optional, Sequence

from verifier.engine.batching import DEFAULT_MAX_BATCH_TOKENS
from .runner import CompareSettings
from .workloads import DEFAULT_CLAIMS_E

__all__ = ["build_parser", "main", "settings_of"]


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="latest", help="result name: bench/results/<name>.json/.md (default: latest)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both backends (default 2)")
    parser.add_argument("--models-root", type=Path, default=None, help="where models/ lives (default: <repo>/models)")
    parser.add_argument("--max-load", type=float, default=1.5, help="wait until the 1-min load average is at most this")
    parser.add_argument(
        "--wait", type=float, default=None,
        help="longest wait for a quiet machine, seconds (default 600; compare --quick: 0, it measures under "
        "whatever load there is and records it)",
    )
    parser.add_argument("--max-batch-tokens", type=int, default=DEFAULT_MAX_BATCH_TOKENS, help="OnnxScorer token budget per batch")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m bench`` parser (subcommands build, compare, tune)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser("build", help="build and export the benchmark model (cached under models/)")
    build.add_argument("--rebuild", action="store_true", help="delete and rebuild")
    build.add_argument("--models-root", type=Path, default=None)
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--span", action="store_true", help="also export onnx-span/ (span-sliced attention)")

    compare = sub.add_parser("compare", help="CrossEncoder (PyTorch) vs OnnxScorer side by side")
    _add_common(compare)
    compare.add_argument("--claims", type=int, default=200, help="claims in workload (c) (default 200)")
    compare.add_argument("--pair-share", type=float, default=None, help="share of (c) claims needing pairs (default 0.2)")
    compare.add_argument("--reps-a", type=int, default=20)
    compare.add_argument("--reps-b", type=int, default=7)
    compare.add_argument("--reps-d", type=int, default=3)
    compare.add_argument(
        "--chunk-claims", type=int, default=50,
        help="claims per interleaved chunk of (c) (default 50: four chunks, ABBA order)",
    )
    compare.add_argument("--no-torch", action="store_true", help="skip the CrossEncoder (no ratios)")
    compare.add_argument("--no-variants", action="store_true", help="skip the int8 / optimized variants")
    compare.add_argument(
        "--no-peers", action="store_true",
        help="skip the sentence-transformers ONNX peers (CrossEncoder backend='onnx', fp32 and its own dynamic int8)",
    )
    compare.add_argument(
        "--claims-e", type=int, default=None,
        help="claims in workload (e), realistic longer text (default 100; --quick: 10; 0: skip (e))",
    )
    compare.add_argument("--chunk-claims-e", type=int, default=25, help="claims per interleaved chunk of (e) (default 25)")
    compare.add_argument(
        "--span", action="store_true",
        help="also time an export with span-sliced relative attention (python -m export --attention span) and its int8",
    )
    compare.add_argument(
        "--quick", action="store_true", help="smoke run: 20 claims, few repetitions (figures are noisy)"
    )

    tune = sub.add_parser("tune", help="engine settings sweep and staged vs eager")
    _add_common(tune)
    tune.add_argument("--tune-claims", type=int, default=40, help="claims of (c) used for the sweep")
    return parser


def _check(args: argparse.Namespace) -> Optional[str]:
    """The up-front check of the parsed command (:func:`bench.preflight.preflight`)."""
    from .model import bench_model
    from .preflight import preflight

    model = bench_model(args.models_root)
    if args.command == "build":
        return preflight("build", model, variants=("optimized", "int8"), span=args.span, rebuild=args.rebuild)
    if args.command == "tune":
        return preflight("tune", model, variants=("int8", "optimized"))
    variants = () if args.no_variants else ("int8", "optimized")
    problem = preflight("compare", model, variants=variants, span=args.span, torch_side=not args.no_torch)
    if problem is None and not args.no_peers:
        from .backends import st_onnx_ready
        from .preflight import BENCH_INSTALL, EXPORT_INSTALL, missing_modules
        from .runner import st_dir

        needed = [("sentence_transformers", "sentence-transformers"), ("optimum.onnxruntime", "optimum-onnx")]
        if not st_onnx_ready(st_dir(model)):
            needed.append(("optimum.exporters.onnx", "optimum-onnx"))
        missing = sorted(set(missing_modules(needed)))
        if missing:
            how = [f"{BENCH_INSTALL} (sentence-transformers)"] if "sentence-transformers" in missing else []
            how += [f"{EXPORT_INSTALL} (optimum-onnx)"] if "optimum-onnx" in missing else []
            return (
                f"python -m bench compare: the sentence-transformers ONNX peers need {', '.join(missing)}: "
                f"install with {' and '.join(how)}, or pass --no-peers"
            )
    return problem


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``python -m bench``; return the exit status (2: something the command needs is missing)."""
    args = build_parser().parse_args(argv)
    problem = _check(args)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    if args.command == "build":
        from .model import build_bench_model

        model = build_bench_model(args.models_root, seed=args.seed, rebuild=args.rebuild, span=args.span)
        print(f"hf: {model.hf_dir}\nonnx: {model.onnx_dir}\nvariants: {', '.join(model.variants()) or 'none'}")
        return 0
    from .runner import run_compare, run_tune

    settings = settings_of(args)
    if args.command == "tune":
        run, json_path, md_path = run_tune(settings, tune_claims=args.tune_claims)
    else:
        run, json_path, md_path = run_compare(settings)
    print(md_path.read_text(encoding="utf-8"))
    print(f"written: {json_path} and {md_path}", file=sys.stderr)
    return 0


def settings_of(args: argparse.Namespace) -> CompareSettings:
    """The :class:`~bench.runner.CompareSettings` of parsed ``compare`` or ``tune`` arguments.

    Example:
        >>> settings_of(build_parser().parse_args(["compare", "--quick"])).wait_seconds
        0.0
    """
    quick = args.command == "compare" and args.quick
    settings = CompareSettings(
        name=args.name,
        threads=args.threads,
        models_root=args.models_root,
        max_load=args.max_load,
        wait_seconds=args.wait if args.wait is not None else (0.0 if quick else 600.0),
        max_batch_tokens=args.max_batch_tokens,
    )
    if args.command == "compare":
        settings = dataclasses.replace(
            settings,
            claims=20 if quick else args.claims,
            pair_share=args.pair_share,
            reps_a=3 if quick else args.reps_a,
            reps_b=2 if quick else args.reps_b,
            reps_d=1 if quick else args.reps_d,
            reps_schedules=2 if quick else 5,
            chunk_claims=5 if quick else args.chunk_claims,
            skip_torch=args.no_torch,
            span=args.span,
            variants=() if args.no_variants else ("int8", "optimized"),
            peers=not args.no_peers,
            claims_e=(10 if quick else DEFAULT_CLAIMS_E) if args.claims_e is None else (args.claims_e or None),
            chunk_claims_e=5 if quick else args.chunk_claims_e,
        )
    return settings


if __name__ == "__main__":
    sys.exit(main())

"""Command-line wiring of the variants: the flags both commands share, and ``python -m export.variants``.

:func:`add_variant_arguments` adds the ``variants`` flag group to a parser
(``python -m export`` and ``python -m export.variants`` both use it);
:func:`run_variants` is the one code path both commands take to build
variants into a directory, print the summary, and turn a failure into one
``<prog>: error:`` line and its exit code.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Literal, Optional, Sequence, Union

from verifier.argtypes import float_range, positive_float

from ..errors import ExportError, report_error
from .gates import DEFAULT_GATES, DEFAULT_VARIANT_NAMES, VARIANT_NAMES, VariantGate, VariantOptions

__all__ = ["add_variant_arguments", "variant_settings", "run_variants", "build_parser", "main"]


def add_variant_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the variant flags (group ``variants``) to ``parser``; shared with ``python -m export``."""
    group = parser.add_argument_group("variants")
    group.add_argument(
        "--variants", nargs="+", choices=VARIANT_NAMES, default=None, metavar="NAME",
        help=f"extra variants to build, gated against the PyTorch golden logits ({', '.join(VARIANT_NAMES)}; bf16 and "
        "ov-int8 run on OpenVINO: the openvino extra and a CPU with AMX-BF16 or AVX512-BF16)",
    )
    group.add_argument(
        "--optimization-level", choices=("basic", "extended", "all"), default="extended",
        help="onnxruntime level of the 'optimized' variant (default: extended, portable)",
    )
    group.add_argument("--int8-per-tensor", action="store_true", help="int8: one scale per weight matrix")
    group.add_argument(
        "--int8-quantize-embeddings", nargs="?", choices=("auto", "yes", "no"), const="yes", default="auto",
        help="int8: also quantise the word embeddings: auto (default: with them, and without only if that misses the "
        "gate), yes (the flag alone) or no",
    )
    group.add_argument("--int8-max-prob-diff", type=positive_float, default=None, help="int8 and ov-int8 gate: max |Δprob| (default 0.05)")
    group.add_argument("--int8-max-logit-diff", type=positive_float, default=None, help="int8 and ov-int8 gate: max |Δlogit| (default 0.5)")
    group.add_argument(
        "--int8-min-argmax-agreement", type=float_range(0.0, 1.0), default=None, help="int8 and ov-int8 gate: min argmax agreement (default 1.0)"
    )
    group.add_argument("--bf16-max-prob-diff", type=positive_float, default=None, help="bf16 gate: max |Δprob| (default 0.02)")
    group.add_argument("--bf16-max-logit-diff", type=positive_float, default=None, help="bf16 gate: max |Δlogit| (default 0.25)")
    group.add_argument("--overwrite-variants", action="store_true", help="rebuild variants already recorded")


_EMBEDDINGS: dict[str, Union[bool, Literal["auto"]]] = {"auto": "auto", "yes": True, "no": False}


def variant_settings(args: argparse.Namespace) -> tuple[dict[str, VariantGate], VariantOptions]:
    """Gates and options from the flags of :func:`add_variant_arguments`."""
    base = DEFAULT_GATES["int8"]
    int8 = replace(
        base,
        max_prob_diff=args.int8_max_prob_diff if args.int8_max_prob_diff is not None else base.max_prob_diff,
        max_abs_logit_diff=args.int8_max_logit_diff if args.int8_max_logit_diff is not None else base.max_abs_logit_diff,
        min_argmax_agreement=(
            args.int8_min_argmax_agreement if args.int8_min_argmax_agreement is not None else base.min_argmax_agreement
        ),
    )
    bf16 = DEFAULT_GATES["bf16"]
    bf16 = replace(
        bf16,
        max_prob_diff=args.bf16_max_prob_diff if args.bf16_max_prob_diff is not None else bf16.max_prob_diff,
        max_abs_logit_diff=args.bf16_max_logit_diff if args.bf16_max_logit_diff is not None else bf16.max_abs_logit_diff,
    )
    options = VariantOptions(
        optimization_level=args.optimization_level,
        int8_per_channel=not args.int8_per_tensor,
        quantize_embeddings=_EMBEDDINGS[args.int8_quantize_embeddings],
    )
    return {"int8": int8, "ov-int8": int8, "bf16": bf16}, options


def run_variants(model_dir: Path, names: Sequence[str], args: argparse.Namespace, prog: str) -> int:
    """Build ``names`` into ``model_dir`` with the flags of :func:`add_variant_arguments`; print the
    summary, or one ``<prog>: error:`` line; return the exit status (shared by both commands)."""
    from ..progress import StageReporter
    from .build import build_variants

    gates, options = variant_settings(args)
    try:
        with StageReporter(prog) as progress:
            report = build_variants(model_dir, names, gates=gates, options=options, overwrite=args.overwrite_variants,
                                    progress=progress)
    except ExportError as exc:
        return report_error(exc, prog)
    for line in report.summary_lines():  # messages, like every exporter line: stderr (stdout stays for results)
        print(line, file=sys.stderr)
    return 0


def _module() -> str:
    """``export.variants`` when run through the checkout's (or the installed) shim, else ``verifier_export.variants``:
    messages name the command as it was typed."""
    where = Path(sys.argv[0]).parent if sys.argv and sys.argv[0] else Path()
    return "export.variants" if (where.name, where.parent.name) == ("variants", "export") else "verifier_export.variants"


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m export.variants`` parser."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {_module()}",
        description=(
            "Build gated variants (offline-optimised float32, dynamic int8, OpenVINO bf16) into an exported model directory "
            "(the same as python -m export --output DIR --variants NAME...)."
        ),
    )
    parser.add_argument("model_dir", type=Path, help="directory written by python -m export")
    add_variant_arguments(parser)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``python -m export.variants DIR``; return the exit status (0, or the error's ``exit_code``).

    Builds ``--variants`` (default: ``optimized`` and ``int8``) into ``DIR`` through
    :func:`run_variants`, exactly as ``python -m export --output DIR --variants ...``
    does for a directory that already holds an export.
    """
    args = build_parser().parse_args(argv)
    return run_variants(args.model_dir, args.variants or DEFAULT_VARIANT_NAMES, args, _module())

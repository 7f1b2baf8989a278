"""``info``: the manifest of an exported model directory, readable (or ``--json``), and ``--verify-files``."""

from __future__ import annotations

import argparse
from typing import Optional

from ..engine.manifest import verify_files
from ..options import RuntimeOptions
from ..types import DEFAULT_MODEL, DEFAULT_REVISION
from .common import SUMMARIES, Context, add_model_dir, load_manifest, missing_model_message
from .errors import EXIT_FAILURE, EXIT_OK, Failure, err
from ..engine.ov_session import cpu_capabilities
from .render import format_cpu, format_engines, format_manifest

__all__ = ["add_parser", "run"]


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``info``."""
    parser = subparsers.add_parser(
        "info",
        help=SUMMARIES["info"],
        description="Show the manifest of an exported model directory in readable form.",
    )
    add_model_dir(parser)
    parser.add_argument("--verify-files", action="store_true", help="re-hash every file against the manifest")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``info``: print the manifest of the model directory (``context`` is unused: no verifier is built)."""
    model_dir = RuntimeOptions(model_dir=args.model_dir).resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION)
    manifest = load_manifest(model_dir)
    if manifest is None:
        print(format_cpu(None, cpu_capabilities()))  # what this CPU can run does not need a model
        raise Failure(missing_model_message(model_dir, given=args.model_dir is not None))
    if args.json:
        print(manifest.model_dump_json(indent=2))
    else:
        print(format_manifest(model_dir, manifest))
        print(format_engines(model_dir, manifest, RuntimeOptions()))
        print(format_cpu(manifest, cpu_capabilities()))
    if args.verify_files:
        problems = verify_files(model_dir, manifest)
        if problems:
            for problem in problems:
                err(f"error: {model_dir}/{problem}")
            return EXIT_FAILURE
        err(f"files: all {len(manifest.files)} match the manifest")
    return EXIT_OK

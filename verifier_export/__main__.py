"""``python -m export``: turn a three-label NLI cross-encoder (or a two-label grounding checker) into a verified ONNX model directory.

Usage::

    python -m export                                   # the pinned default model and revision
    python -m export --model cross-encoder/nli-deberta-v3-base --revision <commit>
    python -m export --model path/to/hf-dir --output models/my-model
    python -m export --smoke                           # seeded tiny random model, plumbing only
    python -m export --model lytang/MiniCheck-DeBERTa-v3-Large --revision <commit>   # a grounding checker
    python -m export --model path/to/hf-dir --attention span   # DeBERTa span-sliced attention, same gate
    python -m export --output DIR --variants optimized int8    # variants into DIR's existing export

``--variants NAME...`` builds gated extra ONNX files (:mod:`verifier_export.variants`)
right after the export or verification. Given with ``--output DIR`` and no
export flags (``--model``, ``--smoke``, ``--revision``, ``--opset``,
``--max-length``, ``--atol``, ``--attention``) while ``DIR`` already holds an
export -- of any model, hub, local or smoke -- it builds the variants into
that export, exactly as ``python -m export.variants DIR`` does.

Each stage (download, loading, ONNX export, parity gate, each variant) prints
one progress line to stderr as it starts, with the time elapsed
(``export [ 12.3s] exporting model.onnx ...``). The summary and the ``next:`` line
go to stderr too: the export has no result for stdout, so ``python -m export &&
python -m verifier verify ... > out.jsonl`` holds only JSON Lines. A failure prints
one ``export: error: ...`` line to stderr (a parity failure first prints the worst pairs) and exits non-zero:
1 export error, 2 usage, 3 parity gate, 4 manifest mismatch, 5 labels.
Nothing is left half-written. There is deliberately no ``--trust-remote-code``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from verifier.argtypes import int_range, positive_float

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .onnx import Attention
    from .progress import Progress
    from .report import ExportReport

__all__ = ["build_parser", "main"]


def _prog() -> str:
    """``python -m export`` (the checkout's shim) or ``python -m verifier_export`` as run, else the script's name."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return f"python -m {_module()}" if name in ("", "__main__.py", "-c") else name


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m export`` argument parser (kebab-case flags, grouped)."""
    from verifier.types import DEFAULT_MODEL, DEFAULT_REVISION

    from .onnx import ATTENTIONS

    parser = argparse.ArgumentParser(
        prog=_prog(),
        description=(
            "Export a three-label NLI cross-encoder to ONNX with a golden-output parity gate, "
            "and write a self-describing model directory (model.onnx, tokenizer.json, config.json, "
            "golden.json, manifest.json)."
        ),
    )
    source = parser.add_argument_group("source")
    which = source.add_mutually_exclusive_group()
    which.add_argument(
        "--model",
        default=None,
        help=f"hub id or local Hugging Face model directory (default: {DEFAULT_MODEL})",
    )
    which.add_argument(
        "--smoke",
        action="store_true",
        help="build and export the seeded tiny random DeBERTa-v2 test model (plumbing checks only)",
    )
    source.add_argument(
        "--revision",
        default=None,
        help=f"hub commit to export; required with a hub id (default model: {DEFAULT_REVISION})",
    )
    source.add_argument(
        "--model-id",
        default=None,
        metavar="ORG/NAME",
        help="with a local --model folder: the hub id it is a copy of; the export is named and placed as that "
        "model (checked against a cache snapshot's path or download metadata; --revision required otherwise)",
    )
    output = parser.add_argument_group("output")
    output.add_argument(
        "--output",
        type=Path,
        default=None,
        help="model directory to write (default: models/<name>-<revision[:12]>, or models/<dir>-local); "
        "with --variants and no export flags, an existing export (of any model) to add the variants to",
    )
    export = parser.add_argument_group("export")
    export.add_argument("--opset", type=int_range(11, 30), default=None, help="ONNX opset (default: optimum's)")
    export.add_argument(
        "--max-length",
        type=int_range(8, 1 << 20),
        default=None,
        help="truncation length in tokens (default: the tokenizer's model_max_length, 512 for DeBERTa-v3)",
    )
    export.add_argument(
        "--atol",
        type=positive_float,
        default=None,
        help="parity gate: max |logit difference| between PyTorch and onnxruntime (default: 1e-4)",
    )
    export.add_argument(
        "--attention",
        choices=ATTENTIONS,
        default=None,
        help="attention in the exported graph: span (DeBERTa-v2/v3 span-sliced relative attention where it "
        "applies, same parity gate, stock if it misses it) or stock (transformers') (default: span)",
    )
    kind = parser.add_argument_group("model kind (docs/grounding.md)")
    kind.add_argument(
        "--kind", choices=("nli", "grounding"), default=None,
        help="nli (a three-label NLI cross-encoder) or grounding (a two-label grounding checker: MiniCheck, FactCG); "
        "default: grounding for a known checker's hub id, else nli",
    )
    kind.add_argument(
        "--template", default=None, metavar="TEXT",
        help="with --kind grounding, for a model not in the known table: the text it reads, with {document}, "
        "{claim} and optionally {eos} (the tokenizer's end-of-sequence token), e.g. '{document}{eos}{claim}'",
    )
    kind.add_argument(
        "--support-label", type=int_range(0, 1), default=None, metavar="N",
        help="with --kind grounding, for a model not in the known table: the logit column of 'supported' (0 or 1)",
    )
    from .variants import (
        add_variant_arguments,  # argparse + numpy only; torch stays lazy
    )

    add_variant_arguments(parser)
    return parser


def _quiet_third_party() -> None:
    """Silence progress bars, advisory logs and warnings of torch/transformers/optimum.

    The parity gate is this tool's check; their warnings would only bury the
    one-line result.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.simplefilter("ignore")


def _adds_variants_only(args: argparse.Namespace) -> bool:
    """Whether the call only adds ``--variants`` to the export already at ``--output``."""
    from .existing import holds_export

    export_flags = (args.model, args.revision, args.model_id, args.opset, args.max_length, args.atol, args.attention,
                    args.kind, args.template, args.support_label)
    return (
        bool(args.variants)
        and not args.smoke
        and all(value is None for value in export_flags)
        and args.output is not None
        and holds_export(args.output)
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``python -m export``; return the exit status.

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        0 on success (new export, or an existing good one verified, plus any
        variants), else the failing :class:`~verifier_export.errors.ExportError`'s
        ``exit_code`` (1, 3, 4 or 5); 1 when an exporter library is missing (looked for before any
        download); 130 on Ctrl-C. Usage errors exit 2 through argparse.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.smoke and (args.revision is not None or args.max_length is not None):
        parser.error("--smoke takes no --revision or --max-length")
    if args.smoke and (args.template is not None or args.support_label is not None):
        parser.error("--smoke takes no --template or --support-label (--smoke --kind grounding uses MiniCheck-DeBERTa's)")
    _quiet_third_party()

    try:
        return _run(args)
    except KeyboardInterrupt:
        # the staging directory is gone already (staging_dir removes it on any exception)
        print("export: interrupted", file=sys.stderr)
        return 130


#: Modules the exporter imports, looked for before any download (a user without torch learned of it
#: only after the model was fetched).
EXPORTER_MODULES = ("torch", "transformers", "optimum", "onnx")


def _missing_module() -> Optional[str]:
    """The first of :data:`EXPORTER_MODULES` that is not installed (found, not imported)."""
    return next((name for name in EXPORTER_MODULES if importlib.util.find_spec(name) is None), None)


def _run(args: argparse.Namespace) -> int:
    from .errors import DownloadError, ExportError, report_error
    from .onnx import Attention
    from .variants import run_variants

    if _adds_variants_only(args):
        return run_variants(args.output, args.variants, args, "export")

    from .parity import DEFAULT_ATOL
    from .progress import StageReporter

    atol = args.atol if args.atol is not None else DEFAULT_ATOL
    attention: Attention = args.attention if args.attention is not None else "span"
    progress = StageReporter("export")
    progress("importing the exporter's libraries (PyTorch, transformers, optimum-onnx)")  # ~3 s cold
    try:
        missing = _missing_module()
        if missing is not None:
            raise ImportError(f"No module named '{missing}'")
        report = _export(args, atol, attention, progress)
    except DownloadError as exc:
        progress.close(completed=False)
        status = report_error(exc, "export")
        print(_offline_next(args), file=sys.stderr)
        return status
    except ExportError as exc:
        progress.close(completed=False)
        return report_error(exc, "export")
    except ImportError as exc:
        progress.close(completed=False)
        print(
            f"export: error: {exc}; the exporter needs torch (pinned, CPU) and the export extra: in a checkout "
            f"run `bash scripts/setup.sh`; elsewhere `{_python()} -m pip install torch==2.13.0` first and then "
            f"`{_python()} -m pip install '/path/to/checkout[export]'` or a wheel built there with `python -m build` "
            "(not on PyPI; a bare torch requirement pulls a multi-GB CUDA build)",
            file=sys.stderr,
        )
        return 1
    progress.close()
    # the export's output is the directory; every line about it is a message, on stderr, so that
    # `python -m export && python -m verifier verify ... > out.jsonl` leaves only JSON Lines there
    for line in report.summary_lines():
        print(line, file=sys.stderr)
    if args.variants:
        status = run_variants(report.output_dir, args.variants, args, "export")
        if status:
            return status
    print(_use_next(report.output_dir, report.manifest.model, report.manifest.revision, report.manifest.kind), file=sys.stderr)
    return 0


def _export(args: argparse.Namespace, atol: float, attention: "Attention", progress: "Progress") -> "ExportReport":
    """The library call ``python -m export`` makes for its arguments."""
    from .pipeline import export_model, export_smoke

    if args.smoke:
        return export_smoke(args.output, opset=args.opset, atol=atol, attention=attention, progress=progress,
                            kind=args.kind or "nli")
    from verifier.types import DEFAULT_MODEL

    return export_model(
        args.model if args.model is not None else DEFAULT_MODEL,
        revision=args.revision,
        output=args.output,
        opset=args.opset,
        max_length=args.max_length,
        atol=atol,
        attention=attention,
        model_id=args.model_id,
        progress=progress,
        kind=args.kind,
        template=args.template,
        support_label=args.support_label,
    )


def _python() -> str:
    """The interpreter as a user would type it here (``.venv/bin/python`` in a checkout, not activated)."""
    from verifier.messages import python_command

    return python_command()


def _use_next(output_dir: Path, model: str, revision: str, kind: str = "nli") -> str:
    """One line naming the command that uses the new directory (``ground`` for a grounding model)."""
    from verifier.messages import verifier_command
    from verifier.options import RuntimeOptions

    if kind == "grounding":
        rows = "examples/grounding.jsonl" if Path("examples/grounding.jsonl").is_file() else "ROWS.jsonl"
        return f"next: {verifier_command()} ground {rows} --model-dir {shlex.quote(str(output_dir))}"

    default = RuntimeOptions().resolve_model_dir(model, revision)
    try:
        is_default = default.resolve() == output_dir.resolve()
    except OSError:  # pragma: no cover - unresolvable path
        is_default = False
    where = "" if is_default else f" --model-dir {shlex.quote(str(output_dir))}"
    if Path("examples/claims.jsonl").is_file():  # a checkout: its example claims
        return f"next: {verifier_command()} verify examples/claims.jsonl{where}"
    return (
        f"next: {verifier_command()} verify{where} --claim 'The launch is on Tuesday.' "
        "--evidence 'The launch moved to Wednesday.'"
    )


def _module() -> str:
    """``export`` when run through the checkout's shim (``python -m export``), else ``verifier_export``."""
    return "export" if sys.argv and Path(sys.argv[0]).parent.name == "export" else "verifier_export"


def _offline_next(args: argparse.Namespace) -> str:
    """One line with the exact next command when the hub cannot be reached."""
    from verifier.types import DEFAULT_MODEL, DEFAULT_REVISION

    model = args.model if args.model is not None else DEFAULT_MODEL
    revision = args.revision if args.revision is not None else (DEFAULT_REVISION if model == DEFAULT_MODEL else "<commit>")
    from .source import hub_offline

    name = model.rstrip("/").split("/")[-1]
    from verifier.messages import EXPORT_SCRIPT, console_script

    run = console_script(EXPORT_SCRIPT) or f"{_python()} -m {_module()}"
    again = f"{run}{'' if args.model is None else ' --model ' + model} --revision {revision}"
    # under HF_HUB_OFFLINE the cache was what failed: suggest the network, not the command just run (issue 34)
    cache = (f"with network: unset HF_HUB_OFFLINE and run {again}" if hub_offline()
             else f"with a Hugging Face cache that holds it: HF_HUB_OFFLINE=1 {again}")
    return (
        f"next: with a copy of the model folder: {run} --model /path/to/{name} --model-id {model} "
        f"--revision {revision}; {cache}; plumbing only (random weights): {run} --smoke"
    )


if __name__ == "__main__":
    sys.exit(main())

"""``verify``: claims from a JSON Lines file (or ``-``), or one ``--claim`` against ``--evidence`` passages.

See :mod:`verifier.cli` for the two modes, :mod:`verifier.cli.inputs` for the
input format, :mod:`verifier.cli.output` for the atomic ``-o``/``--row-map``
files and :mod:`verifier.cli.common` for the options and which of them are
digested.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import typing
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from ..options import InputLimits
from ..types import (
    ClaimEvidence,
    ClaimRequest,
    ClaimVerification,
    ClaimVerificationConfig,
    EntailmentPolicy,
    RefutationPolicy,
)
from ..validation import InputError, ValidRequest, validate_request
from .common import (
    Context,
    add_limits,
    add_model_dir,
    int_range,
    prepare,
    threads,
    threshold,
)
from .errors import EXIT_OK, EXIT_SKIPPED, EXIT_USAGE, UsageError, err
from .inputs import InputRow, InvalidRow, cli_memory_id, read_input, report_invalid
from .output import STDOUT, check_output_paths, commit_all, open_outputs, stdout_text
from .render import RunSummary, format_result, format_summary

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..decision import ClaimVerifier

__all__ = ["add_parser", "run"]

#: Claims per ``verify_many_sync`` call: bounds memory on huge inputs while keeping
#: cross-claim batches large.
_CHUNK = 1024


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``verify`` (JSON Lines mode and one-off ``--claim`` mode)."""
    parser = subparsers.add_parser(
        "verify",
        help="verify claims from a JSON Lines file, or one --claim against --evidence passages",
        description=(
            "Verify claims against evidence. With INPUT: JSON Lines in, JSON Lines of ClaimVerification out "
            "(row i of the output is the i-th claim of the input). With --claim/--evidence: one human-readable check."
        ),
    )
    io_group = parser.add_argument_group("input and output")
    io_group.add_argument("input", nargs="?", metavar="INPUT", help="JSON Lines file (or .json file, or - for stdin)")
    io_group.add_argument(
        "-o", "--output", type=Path, help="write results here (atomically; - is stdout, the default)"
    )
    io_group.add_argument("--row-map", type=Path, help="also write {row, line, id} per output row (JSON Lines)")
    io_group.add_argument("--skip-invalid", action="store_true", help="report invalid rows on stderr and skip them")
    io_group.add_argument(
        "--fail-on-skip", action="store_true",
        help=f"with --skip-invalid: exit {EXIT_SKIPPED} (results still written) when any row was skipped",
    )
    io_group.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary on stderr")
    one_off = parser.add_argument_group("one-off check")
    one_off.add_argument("--claim", help="the claim to verify (instead of INPUT)")
    one_off.add_argument(
        "--evidence",
        action="append",
        default=[],
        metavar="TEXT",
        help="an evidence passage (repeatable); references E1, E2, ... in order",
    )
    one_off.add_argument("--complete-set", action="store_true", help="the claim is an exhaustive count or list")
    one_off.add_argument("--json", action="store_true", help="print the JSON result instead of the readable report")

    decision = parser.add_argument_group("decision configuration (digested)")
    decision.add_argument("--model", help="hub id recorded in results (default: from the model directory)")
    decision.add_argument("--revision", help="model revision recorded in results (default: from the model directory)")
    decision.add_argument("--entailment-threshold", type=threshold, metavar="P", help="in [0.5, 1.0] (default 0.80)")
    decision.add_argument(
        "--contradiction-threshold", type=threshold, metavar="P", help="in [0.5, 1.0] (default 0.80)"
    )
    decision.add_argument("--max-group-size", type=int, choices=(1, 2, 3), help="largest evidence group (default 2)")
    decision.add_argument(
        "--group-candidate-limit", type=int_range(2, 16), metavar="N", help="passages kept for groups (default 8)"
    )
    decision.add_argument("--max-evidence", type=int_range(1, 256), metavar="N", help="passages per claim (default 64)")
    decision.add_argument(
        "--batch-size", type=int_range(1, 256), metavar="N", help="config batch_size: most pairs in one padded model batch (default 32)"
    )
    decision.add_argument("--entailment-policy", choices=typing.get_args(EntailmentPolicy))
    decision.add_argument("--refutation-policy", choices=typing.get_args(RefutationPolicy))

    runtime = parser.add_argument_group("runtime (never digested)")
    add_model_dir(runtime)
    runtime.add_argument(
        "--threads", type=threads, metavar="N", help="onnxruntime intra-op threads (at most the CPUs available)"
    )
    runtime.add_argument(
        "--max-batch-tokens",
        type=int_range(64, 1 << 22),
        metavar="N",
        help="token budget of one padded batch, rows x padded length (default 8192)",
    )
    runtime.add_argument("--schedule", choices=("staged", "eager"), help="model work schedule (default staged)")
    runtime.add_argument(
        "--variant", metavar="NAME", help="ONNX variant recorded in the manifest, e.g. int8 or optimized (default: model.onnx)"
    )
    add_limits(parser.add_argument_group("input limits (never digested)"))
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``verify``: JSON Lines mode with INPUT, one-off mode with ``--claim``."""
    context = context if context is not None else Context()
    if args.claim is not None and args.input is not None:
        raise UsageError("error: give either INPUT or --claim, not both")
    if args.claim is None and args.evidence:
        raise UsageError("error: --evidence needs --claim")
    if args.claim is not None:
        if args.output or args.row_map or args.skip_invalid or args.fail_on_skip:
            raise UsageError("error: -o, --row-map, --skip-invalid and --fail-on-skip apply to INPUT files, not --claim")
        return _run_one_off(args, context)
    if args.input is None:
        raise UsageError("error: give an INPUT file (JSON Lines) or --claim with --evidence")
    if args.complete_set or args.json:
        raise UsageError("error: --complete-set and --json apply to --claim; set requires_complete_set per row")
    if args.fail_on_skip and not args.skip_invalid:
        raise UsageError("error: --fail-on-skip needs --skip-invalid")
    return _run_file(args, context)


# ---------------------------------------------------------------- JSON Lines mode


def _progress_bar(total: int, quiet: bool) -> Any:
    if quiet or total == 0 or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - tqdm is a runtime dependency
        return None
    return tqdm(total=total, unit="claim", file=sys.stderr, dynamic_ncols=True, leave=False)


def _verify_all(
    verifier: "ClaimVerifier",
    requests: Sequence[ValidRequest],
    quiet: bool,
    sink: Callable[[ClaimVerification], None],
) -> RunSummary:
    run = RunSummary()
    bar = _progress_bar(len(requests), quiet)
    start = time.perf_counter()
    try:
        for base in range(0, len(requests), _CHUNK):
            chunk = requests[base : base + _CHUNK]

            def progress(done: int, base: int = base) -> None:
                if bar is not None:
                    bar.update(base + done - bar.n)

            for result in verifier.verify_many_sync(chunk, progress=progress):
                run.results.append(result)
                sink(result)
    finally:
        if bar is not None:
            bar.close()
    run.elapsed = time.perf_counter() - start
    run.stats = dict(verifier.stats)
    if run.stats.get("model_calls"):  # the scorer exists by now; never build one just for stats
        overhead = getattr(getattr(verifier.scorer, "stats", None), "padding_overhead", None)
        if isinstance(overhead, (int, float)):
            run.stats["padding_overhead"] = float(overhead)
    return run


def _run_file(args: argparse.Namespace, context: Context) -> int:
    source = "<stdin>" if args.input == "-" else args.input
    valid: list[InputRow] = []
    invalid: list[InvalidRow] = []

    def load(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
        nonlocal valid, invalid
        valid, invalid = read_input(args.input, config, limits)
        return [row.request for row in valid]

    output = args.output if args.output is not None else Path(STDOUT)
    check_output_paths(args.input, output, args.row_map)
    writers = open_outputs(output, args.row_map)
    writer = writers[0]
    map_writer = writers[1] if len(writers) > 1 else None
    try:
        setup = prepare(args, load)
        if invalid and not args.skip_invalid:
            report_invalid(source, invalid, "error")
            err(f"error: {len(invalid)} invalid row{'s' if len(invalid) != 1 else ''} in {source}; nothing written")
            return EXIT_USAGE
        if invalid:
            report_invalid(source, invalid, "skipped")
            err(f"skipped: {len(invalid)} invalid row{'s' if len(invalid) != 1 else ''} of {source}")

        verifier = context.make_verifier(setup.config, setup.runtime)

        def sink(result: ClaimVerification) -> None:
            writer.write(result.model_dump_json() + "\n")

        summary = _verify_all(verifier, setup.requests, args.quiet, sink)
        if map_writer is not None:
            for index, row in enumerate(valid):
                map_writer.write(json.dumps({"row": index, "line": row.line, "id": row.request.id}) + "\n")
        commit_all(writers)
    finally:
        for pending in writers:
            pending.discard()
    if not args.quiet:
        err(format_summary(summary, skipped=len(invalid)))
    return EXIT_SKIPPED if invalid and args.fail_on_skip else EXIT_OK


# ---------------------------------------------------------------- one-off mode


def _is_utf8(text: str) -> bool:
    """Whether an argument decoded to real text (undecodable argv bytes become lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _one_off_request(args: argparse.Namespace) -> ClaimRequest:
    evidence: list[ClaimEvidence] = []
    seen: dict[uuid.UUID, int] = {}
    for number, text in enumerate(args.evidence, start=1):
        if not text.strip():
            raise UsageError(f"error: --evidence #{number} is empty")
        if not _is_utf8(text):
            raise UsageError(f"error: --evidence #{number} is not valid UTF-8 text")
        memory_id = cli_memory_id(text)
        if memory_id in seen:
            raise UsageError(f"error: --evidence #{number} repeats --evidence #{seen[memory_id]}")
        seen[memory_id] = number
        evidence.append(ClaimEvidence(reference=f"E{number}", memory_id=memory_id, text=text))
    if not args.claim.strip():
        raise UsageError("error: --claim is empty")
    if not _is_utf8(args.claim):
        raise UsageError("error: --claim is not valid UTF-8 text")
    return ClaimRequest(claim=args.claim, evidence=tuple(evidence), requires_complete_set=args.complete_set)


def _run_one_off(args: argparse.Namespace, context: Context) -> int:
    request = _one_off_request(args)

    def check(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
        try:
            return [validate_request(request, config, limits)]
        except InputError as exc:
            raise UsageError(f"error: {exc.reason}") from None

    setup = prepare(args, check)
    (valid,) = setup.requests
    verifier = context.make_verifier(setup.config, setup.runtime)
    (result,) = verifier.verify_many_sync([valid])
    out = stdout_text()
    try:
        out.write((result.model_dump_json() if args.json else format_result(result, valid.evidence)) + "\n")
    finally:
        out.flush()
        if isinstance(out, io.TextIOWrapper) and out is not sys.stdout:
            out.detach()
    return EXIT_OK

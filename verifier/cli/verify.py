"""``verify``: claims from a JSON Lines file (or ``-``), or one ``--claim`` against ``--evidence`` passages.

See :mod:`verifier.cli` for the two modes, :mod:`verifier.cli.inputs` for the
input format, :mod:`verifier.cli.output` for the atomic ``-o``/``--row-map``
files and :mod:`verifier.cli.common` for the options and which of them are
digested.

Big inputs (docs/bulk.md): the input is read twice, pass 1 validating every
row while keeping only counts (:func:`verifier.cli.bulk.scan`), pass 2
verifying chunks of :data:`~verifier.cli.bulk.CHUNK` claims, so memory does
not grow with the input; stdin is spooled to a temporary file first.
``--output-format envelope``, ``--resume`` and ``--shard I/N`` are
:mod:`verifier.cli.bulk`; ``--engine ray`` is :mod:`verifier.cli.ray_run`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import typing
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from ..argtypes import ascii_int, non_negative_float
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
    SUMMARIES,
    Context,
    add_limits,
    add_model_dir,
    add_sign_key,
    int_range,
    prepare,
    threads,
    threshold,
)
from ..messages import install_hint
from .errors import EXIT_OK, EXIT_SKIPPED, EXIT_USAGE, UsageError, err, say_on_interrupt
from .bulk import (
    DigestSet,
    Scan,
    Shard,
    StatusTally,
    bare,
    check_ids,
    chunks,
    configuration_digest,
    envelope,
    id_digest,
    row_id,
    scan,
    shard_type,
)
from .inputs import InputRow, InvalidRow, cli_memory_id, is_whole_file, iter_input, refuse_invalid, report_invalid, spooled, with_fix
from .reads import command_reads
from .output import STDOUT, Destination, check_destination, check_output_paths, commit_all, open_outputs, stdout_text
from .progress import counted, progress_for
from .render import RunSummary, format_result, format_summary, identity_summary
from .resume import AppendFile, LazyVerifier, find_row, kept, read_done, run_engine, signing_key

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..claim_verifier import ClaimVerifier

__all__ = ["add_parser", "run"]


#: One INPUT row, shown under ``verify --help`` as written (the fields: verifier.ClaimRequest, docs/decision.md).
_INPUT_ROW = """\
an INPUT row, one line of JSON (id, requires_complete_set and as_of are optional, and so
is evidence: a claim with no passages is insufficient, without a model call; each passage
needs a reference, a memory_id UUID and its text; help(verifier.ClaimRequest) has every field):
{"id": "q1", "claim": "The launch is on Tuesday.", "evidence": [{"reference": "M1", "memory_id": "0b5e2c1e-7f4a-4c3b-9d2e-1a2b3c4d5e6f", "text": "We moved the launch to Tuesday."}]}
"""


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``verify`` (JSON Lines mode and one-off ``--claim`` mode)."""
    parser = subparsers.add_parser(
        "verify",
        help=SUMMARIES["verify"],
        description=(
            "Verify claims against evidence. With INPUT: JSON Lines in, JSON Lines of ClaimVerification\n"
            "out (row i of the output is the i-th claim of the input). With --claim/--evidence: one\n"
            "human-readable check."
        ),
        epilog=_INPUT_ROW,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the row stays one line
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
    io_group.add_argument(
        "--output-format", choices=("bare", "envelope"),
        help='bare: one result per line (the default); envelope: {"id", "line", "result"|"error"} per row',
    )
    io_group.add_argument(
        "--resume", action="store_true",
        help="append to -o FILE in fsynced chunks and skip ids already there (envelopes; unique ids needed)",
    )
    io_group.add_argument("--shard", type=shard_type, metavar="I/N", help="only the rows whose sha256(id) mod N is I")
    io_group.add_argument("-q", "--quiet", action="store_true",
                          help="no progress (bar or log lines) and no summary on stderr (warnings and errors still print)")
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
    decision.add_argument("--max-group-size", type=ascii_int, choices=(1, 2, 3), help="largest evidence group (default 2)")
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
        help="token budget of one padded batch, rows x padded length (default 2048)",
    )
    runtime.add_argument("--schedule", choices=("staged", "eager"), help="model work schedule (default staged)")
    runtime.add_argument(
        "--padding", choices=("batched", "none"),
        help="batch layout: batched (length-sorted padded batches, the default) or none (each pair alone: "
             "scores independent of the other pairs, which lets --score-cache reuse an int8 or OpenVINO variant's)",
    )
    runtime.add_argument(
        "--variant", metavar="NAME", help="variant recorded in the manifest: optimized, int8, or bf16 / ov-int8 on OpenVINO (default: model.onnx)"
    )
    runtime.add_argument(
        "--score-cache", type=Path, metavar="PATH",
        help="persistent score store (SQLite, created if missing): pairs already scored are not run again; "
             "results identical (docs/score-store.md)",
    )
    runtime.add_argument(
        "--score-cache-max-rows", type=int_range(1, 1 << 40), metavar="N",
        help="bound of --score-cache in rows; the least recently used go first (default 1,000,000)",
    )
    runtime.add_argument(
        "--score-cache-key", type=Path, metavar="FILE",
        help="secret key the store's rows are authenticated with (must exist; default: PATH.key beside "
             "--score-cache, created 0600 when missing; docs/score-store.md)",
    )
    add_sign_key(parser.add_argument_group("audit (docs/audit.md)"))
    add_limits(parser.add_argument_group("input limits (never digested)"))
    scale = parser.add_argument_group(f"scale-out on Ray Data ({install_hint('ray')}; docs/bulk.md)")
    scale.add_argument(
        "--engine", choices=("local", "ray"), default="local",
        help="local (default) or ray: -o is a directory (with --resume: a file of envelopes)",
    )
    scale.add_argument("--address", help="Ray cluster address (default: $RAY_ADDRESS, else a local Ray instance)")
    scale.add_argument("--workers", type=int_range(1, 100_000), metavar="N", help="Ray actors, one verifier each (default 1)")
    scale.add_argument(
        "--threads-per-worker", type=int_range(1, 1024), metavar="T", help="CPUs and onnxruntime threads per actor (default 1)"
    )
    scale.add_argument(
        "--rows-per-batch", type=int_range(1, 1 << 20), metavar="B",
        help="rows per map_batches call (default 1024; --batch-size is the digested model batch)",
    )
    scale.add_argument(
        "--stall-timeout", type=non_negative_float, metavar="S",
        help="fail a Ray job when no batch of results came back for S seconds (default 600; 0: wait forever); "
             "with --resume the rows written so far are kept",
    )
    parser.set_defaults(func=run)
    return parser


def _bulk_given(args: argparse.Namespace) -> bool:
    return bool(args.output_format or args.resume or args.shard or args.engine != "local")


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
        if _bulk_given(args):
            raise UsageError("error: --output-format, --resume, --shard and --engine apply to INPUT files, not --claim")
        return _run_one_off(args, context)
    if args.input is None:
        raise UsageError("error: give an INPUT file (JSON Lines) or --claim with --evidence")
    if args.complete_set or args.json:
        raise UsageError("error: --complete-set and --json apply to --claim; set requires_complete_set per row")
    if args.fail_on_skip and not args.skip_invalid:
        raise UsageError("error: --fail-on-skip needs --skip-invalid")
    if args.engine == "ray":
        from .ray_run import run_ray

        return run_ray(args, context)
    if args.address or args.workers or args.threads_per_worker or args.rows_per_batch or args.stall_timeout is not None:
        raise UsageError(
            "error: --address, --workers, --threads-per-worker, --rows-per-batch and --stall-timeout need --engine ray"
        )
    return _run_file(args, context)


# ---------------------------------------------------------------- JSON Lines mode


def _verify_all(
    verifier: "ClaimVerifier",
    rows: Iterator["InputRow | InvalidRow"],
    total: int,
    quiet: bool,
    sink: Callable[[list[tuple["InputRow | InvalidRow", Optional[ClaimVerification]]]], None],
) -> RunSummary:
    """Pass 2: verify ``rows`` a chunk at a time; ``sink`` gets each chunk's rows with their results in order."""
    run = RunSummary(results=StatusTally())
    bar = progress_for("verify", "claims", total, quiet) if total else None
    start = time.perf_counter()
    base = 0
    try:
        for chunk in chunks(rows):
            valid = [item for item in chunk if isinstance(item, InputRow)]

            def progress(done: int, base: int = base) -> None:
                if bar is not None:
                    bar.update(base + done)

            results = iter(verifier.verify_many_sync([item.request for item in valid], progress=progress))
            paired = [(item, next(results) if isinstance(item, InputRow) else None) for item in chunk]
            for _, result in paired:
                if result is not None:
                    run.results.append(result)
            sink(paired)
            base += len(valid)
    finally:
        if bar is not None:
            bar.close()
    run.elapsed = time.perf_counter() - start
    run.stats = dict(verifier.stats)
    if run.stats.get("model_calls"):  # the scorer exists by now; never build one just for stats
        overhead = getattr(getattr(verifier.scorer, "stats", None), "padding_overhead", None)
        if isinstance(overhead, (int, float)):
            run.stats["padding_overhead"] = float(overhead)
        manifest = getattr(verifier.scorer, "manifest", None)
        if manifest is not None:
            run.stats["identity"] = identity_summary(manifest)
        engine = verifier.engine_identity()  # what every scored record names (docs/audit.md, "Engine identity")
        if engine is not None:
            run.stats["engine"] = engine.describe()
        store = getattr(verifier.scorer, "score_cache_status", None)  # --score-cache (docs/score-store.md)
        if isinstance(store, str):
            counters = getattr(verifier.scorer, "stats", None)
            run.stats["score_cache"] = store
            run.stats["store_hits"] = getattr(counters, "store_hits", 0)
            run.stats["store_misses"] = getattr(counters, "store_misses", 0)
            run.stats["store_rejected"] = getattr(counters, "store_rejected", 0)
    return run


def _check_bulk_options(args: argparse.Namespace, output: Path) -> None:
    if args.resume:
        if args.output_format == "bare":
            raise UsageError("error: --resume writes envelopes; drop --output-format bare")
        if args.row_map is not None:
            raise UsageError("error: --resume writes envelopes, which carry id and line; drop --row-map")
        if Destination.of("-o", output).kind != "file":
            raise UsageError("error: --resume needs -o FILE (a regular file it can append to and read back)")
        check_destination("-o", output)


def _run_file(args: argparse.Namespace, context: Context) -> int:
    source = "<stdin>" if args.input == "-" else args.input
    output = args.output if args.output is not None else Path(STDOUT)
    if args.score_cache_key is not None and args.score_cache is None:
        raise UsageError("error: --score-cache-key needs --score-cache")
    check_output_paths(args.input, output, args.row_map, args.score_cache, args.score_cache_key, reads=command_reads(args))
    _check_bulk_options(args, output)
    shard: Shard = args.shard or Shard()
    whole_file = is_whole_file(args.input)
    envelopes = args.resume or args.output_format == "envelope"
    with contextlib.ExitStack() as stack:
        writers = [] if args.resume else open_outputs(output, args.row_map)
        for pending in writers:
            stack.callback(pending.discard)
        path = source
        found = Scan()

        def rows(config: ClaimVerificationConfig, limits: InputLimits) -> Iterator[InputRow | InvalidRow]:
            return iter_input(path, config, limits, source=source, whole_file=whole_file)

        def load(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
            nonlocal path, found
            path = stack.enter_context(spooled(args.input, limits.max_request_bytes))
            reading = progress_for("verify", "rows", None, args.quiet, doing="reading and validating the input")
            found = scan(counted(rows(config, limits), reading), shard, need_ids=args.resume, source=source)
            return found.sample

        setup = prepare(args, load)
        config, limits = setup.config, setup.runtime.limits
        skipped = found.invalid
        if skipped and not args.skip_invalid:
            refuse_invalid(source, found.reported, skipped)
            return EXIT_USAGE
        # made by the first kept strict line's truncation query, else below; closed when the run ends, so the
        # score store's file is final before main returns
        lazy = LazyVerifier(lambda: context.make_verifier(config, setup.runtime), lambda made: stack.callback(made.close))
        done = DigestSet(b"")
        if args.resume:
            ids = check_ids(found, rows(config, limits), shard, source)
            appender = AppendFile(output)  # locked until the run ends: a second run on this output stops at once
            stack.callback(appender.close)
            done, keep = read_done(
                output, ids, config, configuration_digest(config), find_row(path, config, limits, source=source, whole_file=whole_file),
                source=f"{source}{f' (shard {shard})' if shard.count > 1 else ''}",
                public_key=signing_key(setup.runtime), truncated=lazy.truncated,
                resolved_revision=setup.manifest.resolved_revision if setup.manifest is not None else None,
                engine=run_engine(setup),
            )
            appender.truncate(keep)
            appender.rows_before = len(done)
            say_on_interrupt(stack, lambda: kept(output, len(done) + appender.lines()))
            if not args.quiet:
                left = max(0, found.valid - len(done))
                err(f"resume: {len(done)} row{'s' if len(done) != 1 else ''} already in {output}, kept; "
                    f"{left} to verify")
        if skipped:
            report_invalid(source, found.reported, "skipped", total=skipped)
            err(f"skipped: {skipped} invalid row{'s' if skipped != 1 else ''} of {source}")

        verifier = lazy.get()
        line_of = envelope if envelopes else bare
        map_writer = writers[1] if len(writers) > 1 else None
        written = 0

        def sink(paired: list[tuple[InputRow | InvalidRow, Optional[ClaimVerification]]]) -> None:
            nonlocal written
            text = "".join(line_of(item, result) for item, result in paired)
            if args.resume:
                appender.write_chunk(text)
                return
            writers[0].write(text)
            if map_writer is not None:
                for item, result in paired:
                    if result is not None or envelopes:
                        map_writer.write(json.dumps({"row": written, "line": item.line, "id": row_id(item)}) + "\n")
                        written += 1

        def todo() -> Iterator[InputRow | InvalidRow]:
            for item in rows(config, limits):
                key = row_id(item)
                if not shard.owns(key):
                    continue
                if isinstance(item, InvalidRow) and not envelopes:
                    continue
                if done and key is not None and id_digest(key) in done:
                    continue
                yield item

        summary = _verify_all(verifier, todo(), max(0, found.valid - len(done)), args.quiet, sink)
        if not args.resume:
            commit_all(writers)
    if not args.quiet:
        err(format_summary(summary, skipped=skipped))
    return EXIT_SKIPPED if skipped and args.fail_on_skip else EXIT_OK


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


def _option_of(field: Optional[str]) -> str:
    """The one-off option behind a request field: ``claim`` -> ``--claim``, ``evidence.0.text`` -> ``--evidence #1``."""
    if field == "claim":
        return "--claim"
    parts = (field or "").split(".")
    if parts[0] == "evidence" and len(parts) > 1 and parts[1].isdigit():
        return f"--evidence #{int(parts[1]) + 1}"
    return "--evidence" if parts[0] == "evidence" else (field or "input")


def _run_one_off(args: argparse.Namespace, context: Context) -> int:
    request = _one_off_request(args)

    def check(config: ClaimVerificationConfig, limits: InputLimits) -> list[ValidRequest]:
        try:
            return [validate_request(request, config, limits)]
        except InputError as exc:  # named as the user gave it: --claim, --evidence #N (issue 34)
            raise UsageError(f"error: {_option_of(exc.field)}: {with_fix(exc.reason)}") from None

    setup = prepare(args, check)
    (valid,) = setup.requests
    with context.make_verifier(setup.config, setup.runtime) as verifier:
        (result,) = verifier.verify_many_sync([valid])
    out = stdout_text()
    try:
        out.write((result.model_dump_json() if args.json else format_result(result, valid.evidence)) + "\n")
    finally:
        out.flush()
        if isinstance(out, io.TextIOWrapper) and out is not sys.stdout:
            out.detach()
    return EXIT_OK

"""``assay``: measure a decision configuration and its thresholds on labelled claims (docs/assay.md).

Usage::

    python -m verifier assay LABELLED.jsonl --model-dir DIR -o REPORT_DIR [options]
    python -m verifier assay LABELLED.jsonl --register REG.json [--gate "precision>=0.9"] [options]
    python -m verifier assay LABELLED.jsonl --registration REG.json --model-dir DIR -o REPORT_DIR

``LABELLED`` is JSON Lines of ``verify`` rows (evidence or bundle rows) with a
``label`` and an optional ``category`` (:mod:`verifier.assay.labels`). Scores
are recorded to ``--scores`` (default ``REPORT_DIR/scores.jsonl``, with a
``.meta.json`` sidecar naming the model); a run whose scores file already
exists replays from it and scores only the pairs it lacks (``--offline``:
refuses instead, saying how many are missing).

``--register`` freezes the input's sha256 and the whole plan (configuration,
policies, grid, targets, gates, seed, resamples) into a registration and runs
nothing; ``--registration`` runs that plan, refusing a changed input or plan,
and binds the registration's digest into the report. Registrations are not
signed (whoever edits one can recompute its digest):
``--expect-registration-sha256 HEX`` pins the digest ``--register`` printed.

Exit status: 0 done (and every gate passed); 1 a gate failed, or the model
failed; 2 bad usage, an invalid row, a registration that does not match, or
offline scores that lack pairs.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import logging
import re
import typing
from pathlib import Path
from typing import Any, Optional

from ..argtypes import ascii_int
from ..assay.constraints import METRIC_NAMES, Constraint, parse_constraint
from ..assay.labels import LabelError, LabelledClaim, split_labelled
from ..assay.metrics import METRICS
from ..assay.recording import (
    MissingScores, RecordingScorer, ScoreIdentity, determinants_sha256, read_scores, score_determinants, write_scores,
)
from ..assay.registration import check_registration, create_registration, file_sha256, plan_from, read_registration
from ..assay.report import REPORT_FILES, assemble, model_facts, write_report
from ..assay.runner import AssayPlan, count_missing, run_assay
from ..assay.sweep import entailment_policies, parse_grid, refutation_policies
from ..engine.manifest import MANIFEST_NAME, read_manifest
from ..engine_identity import EngineIdentity
from ..messages import one_line
from .. import strictjson
from ..options import InputLimits, RuntimeOptions
from ..types import ClaimVerificationConfig, ClaimVerificationError, EntailmentPolicy, RefutationPolicy
from .common import SUMMARIES, Context, add_limits, add_model_dir, int_range, prepare, threads, threshold
from .errors import EXIT_FAILURE, EXIT_OK, UsageError, err
from .output import refuse_overlaps
from .reads import command_reads
from .inputs import InputRow, InvalidRow, open_lines, read_requests, report_invalid
from .progress import Bar, progress_for

__all__ = ["add_parser", "run"]


def _constraint(text: str) -> Constraint:
    try:
        return parse_constraint(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _sha256(text: str) -> str:
    if re.fullmatch(r"[0-9a-fA-F]{64}", text) is None:
        raise argparse.ArgumentTypeError(f"expected 64 hex digits (a registration_sha256), got {text!r}")
    return text.lower()


def _grid(text: str) -> tuple[float, ...]:
    try:
        return parse_grid(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``assay``."""
    parser = subparsers.add_parser(
        "assay",
        help=SUMMARIES["assay"],
        description="Run labelled claims through the verifier; report metrics with bootstrap intervals, a "
        "threshold x policy sweep from recorded scores, and registered gates.",
    )
    parser.add_argument("input", metavar="LABELLED", help="JSON Lines of verify rows with label (and category)")
    parser.add_argument("-o", "--output", type=Path, metavar="REPORT_DIR", help="report directory")
    parser.add_argument("--scores", type=Path, help="recorded-scores file to replay and extend (default REPORT_DIR/scores.jsonl)")
    parser.add_argument("--offline", action="store_true", help="never load the model: every pair must be in --scores")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress (bar or log lines) and no summary on stderr (warnings and errors still print)")
    plan = parser.add_argument_group("plan (frozen by --register)")
    plan.add_argument("--grid", type=_grid, metavar="G", help="both threshold grids: 0.6,0.8 or 0.5:0.95:0.05 (the default)")
    plan.add_argument("--entailment-grid", type=_grid, metavar="G", help="entailment thresholds of the sweep")
    plan.add_argument("--contradiction-grid", type=_grid, metavar="G", help="contradiction thresholds of the sweep")
    plan.add_argument("--target", type=_constraint, action="append", metavar="EXPR",
                      help='constraint on the best sweep row, e.g. "precision>=0.9" (repeatable)')
    plan.add_argument("--optimize", choices=METRICS, help="what the best sweep row maximises (default recall)")
    plan.add_argument("--gate", type=_constraint, action="append", metavar="EXPR",
                      help=f'pass/fail gate on the main configuration, e.g. "unsafe_supports==0" (names: {", ".join(METRIC_NAMES)})')
    plan.add_argument("--seed", type=int_range(0, 2**63 - 1), help="bootstrap seed (default 20260501)")
    plan.add_argument("--resamples", type=int_range(0, 100_000), help="bootstrap resamples (default 1000)")
    registration = parser.add_argument_group("registration")
    registration.add_argument("--register", type=Path, metavar="REG.json", help="write a registration and run nothing")
    registration.add_argument("--registration", type=Path, metavar="REG.json", help="run a registered plan")
    registration.add_argument(
        "--expect-registration-sha256", type=_sha256, metavar="HEX",
        help="with --registration: refuse it unless its registration_sha256 is HEX (what --register printed); "
        "registrations are not signed, so pin the digest to keep a gate from being weakened silently",
    )
    decision = parser.add_argument_group("decision configuration (digested)")
    decision.add_argument("--model", help="hub id (default: from the model directory)")
    decision.add_argument("--revision", help="model revision (default: from the model directory)")
    decision.add_argument("--entailment-threshold", type=threshold, metavar="P", help="main configuration (default 0.80)")
    decision.add_argument("--contradiction-threshold", type=threshold, metavar="P", help="main configuration (default 0.80)")
    decision.add_argument("--max-group-size", type=ascii_int, choices=(1, 2, 3))
    decision.add_argument("--group-candidate-limit", type=int_range(2, 16), metavar="N")
    decision.add_argument("--max-evidence", type=int_range(1, 256), metavar="N")
    decision.add_argument("--batch-size", type=int_range(1, 256), metavar="N")
    decision.add_argument("--entailment-policy", choices=typing.get_args(EntailmentPolicy))
    decision.add_argument("--refutation-policy", choices=typing.get_args(RefutationPolicy))
    runtime = parser.add_argument_group("runtime (never digested)")
    add_model_dir(runtime)
    runtime.add_argument("--threads", type=threads, metavar="N")
    runtime.add_argument("--max-batch-tokens", type=int_range(64, 1 << 22), metavar="N")
    runtime.add_argument("--schedule", choices=("staged", "eager"))
    runtime.add_argument("--variant", metavar="NAME")
    add_limits(parser.add_argument_group("input limits (never digested)"))
    parser.set_defaults(func=run)
    return parser


# ---------------------------------------------------------------- input


def read_labelled(source: str, config: ClaimVerificationConfig, limits: InputLimits) -> tuple[list[LabelledClaim], list[InvalidRow]]:
    """Read LABELLED: labels split off each row, the rest validated exactly as ``verify`` validates it."""
    labels: dict[int, tuple[str, Optional[str]]] = {}
    invalid: list[InvalidRow] = []
    lines: list[str] = []
    for number, text in open_lines(source, limits.max_request_bytes):
        while len(lines) < number - 1:
            lines.append("")
        if not text.strip():
            lines.append("")
            continue
        try:
            value = strictjson.loads(text)
        except (ValueError, RecursionError):
            lines.append(text.rstrip("\r\n"))  # read_requests words the JSON error with this line number
            continue
        try:
            rest, label, category = split_labelled(value)
        except LabelError as exc:
            invalid.append(InvalidRow(number, exc.field, exc.reason))
            lines.append("")
            continue
        labels[number] = (label, category)
        lines.append(json.dumps(rest, ensure_ascii=False))
    claims: list[LabelledClaim] = []
    stream = io.StringIO("".join(line + "\n" for line in lines))
    for item in read_requests(stream, config, limits=limits, source=source):
        if isinstance(item, InputRow):
            label, category = labels[item.line]
            claims.append(LabelledClaim(item.line, item.request, label, category))
        else:
            invalid.append(item)
    invalid.sort(key=lambda row: row.line)
    return claims, invalid


# ---------------------------------------------------------------- plan


def _plan(args: argparse.Namespace, config: ClaimVerificationConfig, base: Optional[AssayPlan]) -> AssayPlan:
    """The plan from the options; unset options come from ``base`` (a registration) or the defaults."""
    defaults = base if base is not None else AssayPlan(config=config)
    grid = args.grid
    return AssayPlan(
        config=config,
        entailment_thresholds=args.entailment_grid or grid or defaults.entailment_thresholds,
        contradiction_thresholds=args.contradiction_grid or grid or defaults.contradiction_thresholds,
        entailment_policies=defaults.entailment_policies if base is not None else entailment_policies(),
        refutation_policies=defaults.refutation_policies if base is not None else refutation_policies(),
        seed=args.seed if args.seed is not None else defaults.seed,
        resamples=args.resamples if args.resamples is not None else defaults.resamples,
        targets=tuple(args.target) if args.target else defaults.targets,
        optimize=args.optimize or defaults.optimize,
        gates=tuple(args.gate) if args.gate else defaults.gates,
    )


def _registered_config(args: argparse.Namespace, registered: AssayPlan, config: ClaimVerificationConfig) -> ClaimVerificationConfig:
    """The registered configuration, with only the decision options given on the command line applied."""
    values = registered.config.model_dump()
    for name in ("entailment_threshold", "contradiction_threshold", "max_group_size", "group_candidate_limit",
                 "max_evidence", "batch_size", "entailment_policy", "refutation_policy"):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    values["model"], values["revision"] = config.model, config.revision
    return ClaimVerificationConfig.model_validate(values)


def _manifest_sha256(model_dir: Optional[Path]) -> Optional[str]:
    path = (model_dir or Path()) / MANIFEST_NAME
    return hashlib.sha256(path.read_bytes()).hexdigest() if model_dir is not None and path.is_file() else None


def _engine(runtime: RuntimeOptions) -> Optional[EngineIdentity]:
    """The engine ``runtime`` loads (``None`` without a manifest it can open), named without loading it (docs/audit.md)."""
    from ..engine.engine_identity import identity_for_options

    if runtime.model_dir is None or not (runtime.model_dir / MANIFEST_NAME).is_file():
        return None
    try:
        return identity_for_options(runtime.model_dir, runtime)
    except ClaimVerificationError:  # a directory the engine cannot open names no engine; its load says why
        return None


def _determinants(runtime: RuntimeOptions) -> Optional[dict[str, Any]]:
    """What determines the scores in ``runtime``'s model directory (``None`` without a manifest), so that
    recorded scores stay valid when only the manifest changes (a variant added; issue 34)."""
    if runtime.model_dir is None or not (runtime.model_dir / MANIFEST_NAME).is_file():
        return None
    try:
        return score_determinants(read_manifest(runtime.model_dir), variant=runtime.variant, padding=runtime.padding,
                                  graph_optimization_level=runtime.graph_optimization_level)
    except (OSError, ValueError) as exc:
        raise UsageError(f"error: {runtime.model_dir / MANIFEST_NAME}: {one_line(exc)}") from None


# ---------------------------------------------------------------- run


def _log_through(bar: Any) -> Any:
    """While ``bar`` is drawn, the library's log lines (the model's random-weights warning, said when it
    loads mid-run) are written above it by tqdm instead of into it (new-user trial: they split the bar)."""
    if not isinstance(bar, Bar):
        return contextlib.nullcontext()
    from tqdm.contrib.logging import logging_redirect_tqdm  # type: ignore[import-untyped,unused-ignore]

    return logging_redirect_tqdm(loggers=[logging.getLogger("verifier")])


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``assay`` (see the module docstring)."""
    context = context if context is not None else Context()
    if args.input == "-":
        raise UsageError("error: assay needs a file (its sha256 is recorded), not stdin")
    if args.register is not None and args.registration is not None:
        raise UsageError("error: give --register (write a plan) or --registration (run one), not both")
    if args.register is None and args.output is None:
        raise UsageError("error: give -o REPORT_DIR (or --register REG.json to only register)")
    if args.expect_registration_sha256 is not None and args.registration is None:
        raise UsageError("error: --expect-registration-sha256 pins the registration given with --registration; give one")
    try:
        document = read_registration(args.registration) if args.registration is not None else None
        registered = plan_from(document) if document is not None else None
    except ValueError as exc:
        raise UsageError(f"error: {exc}") from None
    if document is not None and args.expect_registration_sha256 not in (None, document["registration_sha256"]):
        raise UsageError(
            f"error: {args.registration} has registration_sha256 {document['registration_sha256']}, not the pinned "
            f"{args.expect_registration_sha256}: it was changed (and its digest recomputed) since it was pinned; nothing run"
        )
    _refuse_overlaps(args)
    claims: list[LabelledClaim] = []
    invalid: list[InvalidRow] = []

    def load(config: ClaimVerificationConfig, limits: InputLimits) -> list[Any]:
        nonlocal claims, invalid
        claims, invalid = read_labelled(args.input, config, limits)
        return [claim.request for claim in claims]

    setup = prepare(args, load)
    if invalid:
        report_invalid(args.input, invalid, "error")
        raise UsageError(f"error: {len(invalid)} invalid row{'s' if len(invalid) != 1 else ''} in {args.input}; nothing run")
    if not claims:
        raise UsageError(f"error: {args.input} has no labelled claims")
    input_sha256 = file_sha256(Path(args.input))
    config = setup.config if registered is None else _registered_config(args, registered, setup.config)
    plan = _plan(args, config, registered)
    if args.register is not None:
        registration = create_registration(Path(args.input).name, input_sha256, plan)
        args.register.parent.mkdir(parents=True, exist_ok=True)
        args.register.write_text(json.dumps(registration, indent=2) + "\n", encoding="utf-8")
        if not args.quiet:
            err(f"registered {len(claims)} claims: {args.register} registration_sha256 {registration['registration_sha256']}")
        return EXIT_OK
    if document is not None:
        problems = check_registration(document, input_sha256, plan)
        if problems:
            for problem in problems:
                err(f"error: {args.registration}: {problem}")
            raise UsageError(f"error: this run does not match registration {args.registration}; nothing run")
    assert args.output is not None
    scores_path: Path = args.scores or args.output / "scores.jsonl"
    determinants = _determinants(setup.runtime)
    engine = _engine(setup.runtime)
    identity = ScoreIdentity(model=config.model, revision=config.revision,
                             manifest_sha256=_manifest_sha256(setup.runtime.model_dir),
                             determinants_sha256=determinants_sha256(determinants) if determinants is not None else None,
                             engine=engine.model_dump(mode="json") if engine is not None else None)
    records: dict[tuple[str, str], tuple[float, float, float]] = {}
    recorded_revision = None
    if scores_path.exists():
        try:
            records, recorded = read_scores(scores_path)
        except ValueError as exc:
            raise UsageError(f"error: {exc}") from None
        conflicts = identity.conflicts(recorded)
        if conflicts:
            raise UsageError(f"error: {scores_path} holds scores of another model: {'; '.join(conflicts)}")
        recorded_revision = recorded.resolved_revision
        if recorded.engine is not None:  # replayed scores name the engine that made them (same score-deciding parts)
            engine = EngineIdentity.model_validate(recorded.engine)
    elif args.offline:
        raise UsageError(f"error: --offline needs recorded scores, and {scores_path} does not exist")
    live = context.make_verifier(setup.config, setup.runtime)
    scorer = RecordingScorer(records, live=lambda: live.scorer, offline=args.offline, resolved_revision=recorded_revision,
                             engine_identity=engine)
    bar = progress_for("assay", "configurations", None, args.quiet)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done)

    try:
        with _log_through(bar):
            outcome = run_assay(claims, plan, scorer, runtime=setup.runtime, progress=progress)
    except MissingScores:
        missing, needing = count_missing(claims, plan, scorer, setup.runtime)
        raise UsageError(
            f"error: --offline: {scores_path} lacks at least {missing} pair{'s' if missing != 1 else ''} needed by "
            f"{needing} claim{'s' if needing != 1 else ''} (later rounds may need more); run without --offline to score them"
        ) from None
    finally:
        if bar is not None:
            bar.close()
        live.close()  # releases a score store the live engine opened
    final = ScoreIdentity(model=identity.model, revision=identity.revision,
                          resolved_revision=scorer.resolved_revision, manifest_sha256=identity.manifest_sha256,
                          determinants_sha256=identity.determinants_sha256,
                          engine=engine.model_dump(mode="json") if engine is not None else identity.engine)
    scores_sha256 = write_scores(scores_path, scorer.records, final, determinants=determinants)
    scores = {**final.__dict__, "pairs": len(scorer.records), "scores_sha256": scores_sha256}
    if setup.runtime.model_dir is not None:  # so report.md can say first whether the weights were random
        outcome.run["model"] = model_facts(setup.runtime.model_dir)
    report = assemble(
        outcome.body, input_name=Path(args.input).name, input_sha256=input_sha256, scores=scores,
        registration_sha256=document["registration_sha256"] if document is not None else None, run=outcome.run,
    )
    write_report(report, outcome.results, args.output)
    if not args.quiet:
        overall = report["overall"]
        err(
            f"assay: {len(claims)} claims, precision {_figure(overall['precision'])}, recall {_figure(overall['recall'])}, "
            f"unsafe supports {len(overall['unsafe_supports'])}; {outcome.run['model_calls']} model calls, "
            f"{outcome.run['pairs_scored']} pairs scored; report in {args.output}"
        )
        for gate in report["gates"]:
            err(f"gate {gate['gate']}: {'pass' if gate['passed'] else 'FAIL'} (actual {_figure(gate['actual'])})")
    return EXIT_FAILURE if report["gates_passed"] is False else EXIT_OK


def _refuse_overlaps(args: argparse.Namespace) -> None:
    """No report file, ``--register`` or ``--scores`` may be LABELLED, ``--registration`` or a model file (exit 2)."""
    reads = [("the LABELLED file", Path(args.input)), *command_reads(args)]
    written: list[tuple[str, Optional[Path]]] = [("--register", args.register)]
    if args.output is not None:
        report = [("-o", args.output / name) for name in REPORT_FILES]
        scores = args.scores or args.output / "scores.jsonl"
        refuse_overlaps(report, [("the --scores file", scores)])
        written += [*report, ("--scores", scores)]
    refuse_overlaps(written, reads)


def _figure(value: Any) -> str:
    """A metric for the summary line: 3 significant digits (the report keeps every digit); ``-`` when undefined."""
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


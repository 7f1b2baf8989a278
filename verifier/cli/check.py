"""``check``: read stored results back and report every record whose digests or structure do not hold.

Usage::

    python -m verifier check RESULTS              # a file, a Ray output directory, or - for stdin
    python -m verifier check RESULTS --entailment-threshold 0.9   # records made with other options
    python -m verifier check RESULTS --inputs INPUT               # the whole decision replayed over each record's scores
    python -m verifier check RESULTS --inputs INPUT --rescore --model-dir DIR   # and every score re-scored
    python -m verifier check RESULTS --public-key signing.key.pub # and every record signed by that key

``RESULTS`` is anything ``verify`` writes: JSON Lines of bare
:class:`~verifier.types.ClaimVerification` records (the default output),
envelopes (``--output-format envelope`` and ``--resume``: ``{"id", "line",
"result"}`` or ``{"id", "line", "error"}``), the ``{"id", "result", "error"}``
rows of ``--engine ray`` (``result`` as JSON text; ``RESULTS`` may be the
output directory, whose files are read in name order), or a JSON array of any
of these. Every line is parsed strictly (:mod:`verifier.strictjson`: a key
repeated in an object is an error, since other parsers may read its first
value).

Every record is checked with :func:`verifier.decision.check.check_result`:
``claim_sha256``, ``evaluation_id`` and ``result_sha256`` are recomputed from
the record's own fields by the formula of its schema (an edited status, group,
basis, score, claim or schema version no longer matches), the status must
agree with the groups, and ``configuration_sha256`` is recomputed from the
decision configuration the record names
(:func:`~verifier.decision.check.configuration_for`): the decision options
given here (default: every default) with the record's own ``model`` and
``requested_revision``. An edited model or revision therefore no longer
matches, and a record made with other decision options does not check out
until they are given. A problem is reported as ``RESULTS line N: <what>``.

Digests prove only self-consistency (anyone can recompute them), so each
record is also re-decided from its own recorded scores
(:mod:`verifier.decision.replay`): with ``--inputs`` (the file ``verify``
read; records matched to rows by claim and evidence digests, or line,
:class:`~verifier.cli.audit_inputs.RowIndex`) the real decision procedure
is replayed over the row's passages, answered only with the record's scores;
without it, what the scores must show for any passages is checked.
``--rescore --model-dir DIR`` re-scores every replayed premise with the
engine the record names (:mod:`verifier.cli.rescore`: exact for float32 or
``padding none``, else within the variant's recorded run-to-run spread), and
``--public-key`` refuses records not signed by that key
(:mod:`verifier.decision.signing`). docs/audit.md, "What each check proves".

What no digest covers is said, not passed over: the notes of
:func:`~verifier.decision.check.check_result` (``evidence_sha256`` needs the
passages, which a result does not carry), ``resolved_revision``, and the ids
and lines of envelopes. Error rows (input rows ``--skip-invalid`` dropped)
carry no result and are counted. Notes and the summary go to stderr unless
``--quiet``.

Exit status: 0 every record checks out; 1 some record does not; 2 a line is
not a result record or an envelope of one (or bad usage).
"""

from __future__ import annotations

import argparse
import os
import re
import typing
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from pydantic import ValidationError

from ..decision.audit import claim_sha256, evidence_sha256
from ..decision.check import CheckReport, check_result, configuration_for, parse_result
from ..messages import describe_validation_error, install_hint
from ..options import InputLimits
from ..rows import InputRow, InvalidRow
from ..decision.signing import PublicKey, load_public_key
from ..types import (
    SCHEMA_VERSION,
    STRICT_SCHEMA_VERSION,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
    EntailmentPolicy,
    RefutationPolicy,
)
from ..envelopes import row_id
from .audit_inputs import RowIndex
from .rescore import Rescorer, rescorer_for
from .bulk import error_fingerprint, row_fingerprint
from .check_records import Record, count_records, looks_like_input, records, unread_entries
from .check_tally import MAX_REPORTED, Tally
from .common import SUMMARIES, _LIMIT_OPTIONS, Context, add_limits, int_range, threshold
from .errors import EXIT_FAILURE, EXIT_OK, UsageError, err
from .inputs import is_whole_file
from .progress import counted, progress_for

__all__ = ["add_parser", "run", "records"]

#: The decision options ``check`` takes (those of ``verify``), by argparse destination.
_DECISION = (
    "model", "revision", "entailment_threshold", "contradiction_threshold", "max_group_size",
    "group_candidate_limit", "max_evidence", "batch_size", "entailment_policy", "refutation_policy",
)


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``check``."""
    parser = subparsers.add_parser(
        "check",
        help=SUMMARIES["check"],
        description=(
            "Read what verify wrote (result lines, envelopes, --resume output, a Ray output directory) and report "
            "every record whose status, groups, scores, claim, model or configuration no longer match its digests, or "
            "whose decision does not follow from its own scores (--inputs: the whole procedure replayed); --rescore "
            "re-scores them with the model, --public-key verifies signatures (docs/audit.md)."
        ),
    )
    parser.add_argument("results", metavar="RESULTS", help="verify's output: a file, a Ray output directory, or - for stdin")
    parser.add_argument("-q", "--quiet", action="store_true", help="no notes and no summary on stderr")
    decision = parser.add_argument_group(
        "decision configuration the results were made with (default: the defaults, with each record's model and revision)"
    )
    decision.add_argument("--model", help="hub id every record must name (default: each record's own)")
    decision.add_argument("--revision", help="revision every record must name (default: each record's own)")
    decision.add_argument("--entailment-threshold", type=threshold, metavar="P")
    decision.add_argument("--contradiction-threshold", type=threshold, metavar="P")
    decision.add_argument("--max-group-size", type=int_range(1, 3), metavar="N")
    decision.add_argument("--group-candidate-limit", type=int_range(2, 16), metavar="N")
    decision.add_argument("--max-evidence", type=int_range(1, 256), metavar="N")
    decision.add_argument("--batch-size", type=int_range(1, 256), metavar="N")
    decision.add_argument("--entailment-policy", choices=typing.get_args(EntailmentPolicy))
    decision.add_argument("--refutation-policy", choices=typing.get_args(RefutationPolicy))
    audit = parser.add_argument_group("replay, re-scoring and signatures (docs/audit.md)")
    audit.add_argument(
        "--inputs", metavar="FILE",
        help="verify's input (JSON Lines, or a .json file): each record is matched to the row with its claim and "
             "evidence digests and its whole decision procedure replayed over its recorded scores",
    )
    audit.add_argument("--every-row", action="store_true",
                       help="with --inputs: every valid row of it must have a record (exit 1 for each that has none; "
                            "without it a note counts them: a subset such as one --shard's output checks out)")
    audit.add_argument("--rescore", action="store_true",
                       help="re-score every premise of every record with the engine it names (needs --inputs and "
                            "--model-dir)")
    audit.add_argument("--model-dir", metavar="DIR", help="the exported model directory to re-score with")
    audit.add_argument("--variant", metavar="NAME",
                       help="the variant the records must name (default: each record's own engine; a record without "
                            "an engine identity is re-scored with model.onnx)")
    audit.add_argument("--exact", action="store_true",
                       help="with --rescore: hold every record to exact scores (a batched int8 or OpenVINO record, "
                            "or one naming no engine, is a problem)")
    audit.add_argument("--engine", type=_engine_digest, metavar="DIGEST",
                       help="the engine every scored record must name: its identity digest as info, serve's "
                            "X-Engine-Identity or verify's summary print it (12 hex digits or more)")
    audit.add_argument("--public-key", metavar="FILE",
                       help="an Ed25519 public key (keygen's .pub): refuse every record not signed by its private key")
    add_limits(parser.add_argument_group("input limits"))
    parser.set_defaults(func=run)
    return parser


@dataclass
class _Audit:
    """What ``check`` checks beyond a record's own fields: its input row, the model, a signature key."""

    cursor: Optional[RowIndex[tuple[str, str]]] = None
    rescorer: Optional[Rescorer] = None
    public_key: Optional[PublicKey] = None
    #: ``--engine``: the engine identity digest (or its first 12+ hex digits) every scored record must name.
    engine: Optional[str] = None
    #: Records whose signature ``public_key`` verified, for the summary.
    signatures_verified: int = 0
    #: Lines of the ``--inputs`` rows a record was matched to (a row without a record is named at the end).
    answered: set[int] = field(default_factory=set)
    #: Lines of the invalid ``--inputs`` rows an error row reported.
    answered_errors: set[int] = field(default_factory=set)


def _check(record: Record, options: dict[str, Any], audit: _Audit) -> tuple[ClaimVerification, CheckReport]:
    result = parse_result(record.result)  # type: ignore[arg-type]
    try:
        config = configuration_for(result, options)
    except ValueError as exc:
        return result, CheckReport(problems=(f"configuration_sha256 cannot be recomputed: {exc}",))
    extra: list[str] = []
    notes: list[str] = []
    evidence = complete = None
    truncated = audit.rescorer.truncated if audit.rescorer is not None else None
    row = None
    if audit.cursor is not None:
        row, problem = _row_of(record, result, audit.cursor, audit.answered)
        if problem:
            extra.append(problem)
        if isinstance(row, InputRow):
            evidence, complete = row.request.evidence, row.request.requires_complete_set
        if result.schema_version < SCHEMA_VERSION:
            # verify writes schemas 3 and 4; an older one's procedure is not replayed (check_result's note), so with
            # its digests recomputed, a record relabelled so would pass on its score bounds alone
            extra.append(
                f"schema {result.schema_version}: --inputs cannot replay its decision, nor --rescore re-score it "
                f"(verify writes schema {SCHEMA_VERSION} or {STRICT_SCHEMA_VERSION}); only its digests and score bounds were checked"
            )
    report = check_result(result, config=config, evidence=evidence, requires_complete_set=complete, truncated=truncated)
    if report.problems and audit.cursor is not None and isinstance(row, InputRow) and record.line is None:
        # a result does not record requires_complete_set, so rows that differ only in it are told apart by
        # the replay: a bare record out of input order (joined shards) may belong to the other one
        other, again = _row_of(record, result, audit.cursor, audit.answered,
                               also=lambda item: item.request.requires_complete_set != complete)
        if isinstance(other, InputRow):
            retry = check_result(
                result, config=config, evidence=other.request.evidence,
                requires_complete_set=other.request.requires_complete_set, truncated=truncated,
            )
            if not retry.problems:
                report, row = retry, other
                # the row it answers now says whether it is a second record, not the first row tried
                extra = [item for item in extra if item != problem] + ([again] if again else [])
    if isinstance(row, InputRow):
        audit.answered.add(row.line)
    if audit.rescorer is not None and report.replay is not None:
        if (result.model, result.requested_revision) != (audit.rescorer.model, audit.rescorer.revision):
            extra.append(
                f"--model-dir holds {audit.rescorer.model} at {audit.rescorer.revision}, the record names "
                f"{result.model} at {result.requested_revision}"
            )
        else:
            mismatches, held = audit.rescorer.compare(result, report.replay.pairs)
            extra.extend(mismatches)
            if not mismatches and report.replay.pairs:  # the note says the scores were equal: only where there were some
                engine = "the engine the record names" if result.engine is not None else "the float32 export"
                notes.append(f"every replayed score re-scored with {engine}: equal {held}")
            elif not report.replay.pairs:  # said, so the notes add up to the records checked
                notes.append("no score to re-score (the record holds none: no passage was scored)")
    elif report.replay is not None:
        notes.append("scores not re-scored with the model (check --rescore --model-dir DIR proves them)")
    if audit.engine is not None and result.model_called and not (result.engine and result.engine.digest.startswith(audit.engine)):
        named = f"engine {result.engine.digest[:12]} ({result.engine.describe()})" if result.engine else "no engine"
        extra.append(f"the record names {named}, not --engine {audit.engine}")
    if audit.public_key is not None:
        unsigned = audit.public_key.problems(result, stored=record.result)
        extra.extend(unsigned)
        audit.signatures_verified += not unsigned
    elif result.signature is not None:
        notes.append("signature not verified (check --public-key FILE verifies it)")
    if extra or notes:
        report = replace(report, problems=report.problems + tuple(extra), notes=report.notes + tuple(notes))
    return result, report


def _same_as_of(a: Any, b: Any) -> bool:
    """The same ``as_of``: the same instant written with the same UTC offset (a result keeps the row's)."""
    return bool(a == b and (a is None or a.utcoffset() == b.utcoffset()))


def _row_of(
    record: Record, result: ClaimVerification, cursor: RowIndex[tuple[str, str]], answered: set[int],
    also: Optional[Any] = None,
) -> "tuple[Optional[InputRow | InvalidRow], str]":
    """The ``--inputs`` row ``record`` answers, else ``None`` and why, in words.

    A row answers when its claim and evidence digests and its ``as_of`` are the record's, and, for an
    envelope, its line and id are the envelope's (neither is covered by a digest or the signature, so a
    result moved to another envelope is found here). A bare record takes a row no record took before, when
    there is one (rows may repeat). ``also``: one more condition on the row.
    """
    key = (result.claim_sha256, result.evidence_sha256)

    def answers(item: "InputRow | InvalidRow") -> bool:
        return (isinstance(item, InputRow) and _same_as_of(item.request.as_of, result.as_of)
                and (also is None or bool(also(item))))

    if record.line is not None or record.id is not None:
        def enveloped(item: "InputRow | InvalidRow") -> bool:
            return answers(item) and (record.id is None or row_id(item) == record.id)

        found = (cursor.find(key, where=enveloped) if record.line is None
                 else cursor.at(record.line, where=lambda item: _digests(item) == key and enveloped(item)))
        if found is None:
            named = " and ".join(part for part in (f"line {record.line}" if record.line is not None else "",
                                                   f"id {record.id!r}" if record.id is not None else "") if part)
            return None, (f"its envelope names {named}, which is no row of --inputs with its claim, evidence and as_of "
                          "(a result moved to another envelope, or a stale one)")
        return found, _second(found, answered)
    found = cursor.find(key, where=lambda item: answers(item) and item.line not in answered) or cursor.find(key, where=answers)
    if found is not None:
        return found, _second(found, answered)
    if cursor.find(key) is not None:
        return None, "its as_of is not the as_of of any row of --inputs with its claim and evidence"
    return None, ("no row of --inputs has this record's claim and evidence (its decision cannot be replayed; a row "
                  "invalid under the input limits or options given here is no row: give check those verify had)")


def _second(row: "InputRow | InvalidRow", answered: set[int]) -> str:
    """Why ``row`` cannot take another record ("" when no record took it yet)."""
    return f"a second record for --inputs line {row.line} (verify writes one per row)" if row.line in answered else ""


def _check_error_row(record: Record, audit: _Audit) -> Optional[str]:
    """With ``--inputs``: why an error row does not report an invalid row of it (``None``: it does).

    It must name the row (its ``line``, else its ``id``: a Ray row), hold exactly the error object
    verify writes, and be that row's only error row.
    """
    error = record.error
    if audit.cursor is None or error is None:
        return None
    if set(error) != {"field", "message", "unit"}:
        return "an error row whose error is not one verify writes (exactly field, message and unit)"
    if record.line is None and record.id is None:
        return "an error row that names neither a line nor an id, so no row of --inputs is the one it reports"
    named = f"line {record.line}" if record.line is not None else f"id {record.id!r}"
    def reports(item: "InputRow | InvalidRow") -> bool:
        return isinstance(item, InvalidRow) and (record.id is None or row_id(item) == record.id)

    invalid = (audit.cursor.find((_INVALID, record.id or ""), where=reports) if record.line is None
               else audit.cursor.at(record.line, where=reports))
    if not isinstance(invalid, InvalidRow):
        return f"an error row for {named}, but --inputs has no invalid row there"
    unit = invalid.unit if record.line is not None else "row"  # a Ray row says "row" (docs/bulk.md)
    if (error["field"], error["message"], error["unit"]) != (invalid.field, invalid.message, unit):
        return f"an error row for {named} that is not the error --inputs line {invalid.line} has"
    if invalid.line in audit.answered_errors:
        return f"a second error row for --inputs line {invalid.line} (verify writes one per row)"
    audit.answered_errors.add(invalid.line)
    return None


def _prepare_audit(args: argparse.Namespace, read_config: ClaimVerificationConfig) -> _Audit:
    """The input cursor (its rows read under ``read_config``, the decision options), rescorer and public key
    the options ask for.

    Raises:
        UsageError: an option without what it needs, or a file that cannot be read.
    """
    audit = _Audit()
    if args.rescore and (args.inputs is None or args.model_dir is None):
        raise UsageError(
            "error: --rescore needs --inputs FILE (a record carries no passages, so its premises come from the input) "
            "and --model-dir DIR"
        )
    if args.every_row and args.inputs is None:
        raise UsageError("error: --every-row needs --inputs FILE (the rows every record is matched to)")
    if (args.model_dir is not None or args.variant is not None) and not args.rescore:
        raise UsageError("error: --model-dir and --variant are used only with --rescore")
    if args.public_key is not None:
        try:
            audit.public_key = load_public_key(args.public_key)
        except ImportError:
            raise UsageError(f"error: --public-key needs the sign extra ({install_hint('sign')})") from None
        except ValueError as exc:
            raise UsageError(f"error: --public-key: {exc}") from None
    if args.inputs is not None:
        if args.inputs == "-" or not os.path.isfile(args.inputs):
            raise UsageError(f"error: --inputs {args.inputs} must be a regular file (it may be read more than once)")
        limits = InputLimits(**{name: getattr(args, option) for name, option in _LIMIT_OPTIONS.items()
                                if getattr(args, option, None) is not None})
        path, whole = args.inputs, is_whole_file(args.inputs)
        audit.cursor = RowIndex(path, read_config, limits, source=path, whole_file=whole, key=_digests)
    if args.exact and not args.rescore:
        raise UsageError("error: --exact is used only with --rescore")
    if args.engine is not None:
        audit.engine = args.engine.lower()
    if args.rescore:
        try:
            audit.rescorer = rescorer_for(args.model_dir, args.variant, exact=args.exact)
        except ClaimVerificationError as exc:
            raise UsageError(f"error: --model-dir {args.model_dir}: {exc}") from None
    return audit


def _engine_digest(text: str) -> str:
    """``--engine``: 12 to 64 hex digits (an engine identity's digest, or its start)."""
    if not re.fullmatch(r"[0-9a-fA-F]{12,64}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an engine identity digest (12 to 64 hex digits)")
    return text.lower()


#: The first half of an invalid row's key (beside its id): no claim digest, so no valid row's key.
_INVALID = "invalid row"


def _digests(item: "InputRow | InvalidRow") -> tuple[str, str]:
    """A row's key: its claim and evidence digests; an invalid row's, its id (``""``: none)."""
    if not isinstance(item, InputRow):
        return _INVALID, row_id(item) or ""
    return claim_sha256(item.request.claim), evidence_sha256(item.request.evidence)


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``check`` (``context`` is unused: no model is needed)."""
    limit = args.max_line_bytes if args.max_line_bytes is not None else InputLimits().max_request_bytes
    options = {name: getattr(args, name) for name in _DECISION if getattr(args, name, None) is not None}
    try:  # options no record could form a configuration with are a usage error, said once (not once a record)
        read_config = ClaimVerificationConfig(**options)
    except ValidationError as exc:
        where, message, _ = describe_validation_error(exc)
        raise UsageError(f"error: the decision options do not form a configuration: {'field ' + where + ': ' if where else ''}{message}") from None
    audit = _prepare_audit(args, read_config)
    tally = Tally()
    unread = unread_entries(args.results)
    if unread:
        shown = ", ".join(unread[:3]) + (", ..." if len(unread) > 3 else "")
        tally.unread = (f"{args.results}: {len(unread)} entr{'ies' if len(unread) != 1 else 'y'} not read (a name starting "
                        f"with . or _, or not a regular file): {shown}")
    invalid: list[str] = []
    inputs_like = 0  # invalid lines that are verify's input rows (a claim, no status): RESULTS and --inputs swapped
    total = None if args.quiet else count_records(args.results)
    for item in counted(records(args.results, limit), progress_for("check", "records", total, args.quiet)):
        if isinstance(item, ValueError):
            invalid.append(f"error: {item}")
            continue
        tally.envelopes += item.envelope
        if item.result is None:
            tally.errors += 1
            wrong = _check_error_row(item, audit)
            if wrong is not None:
                tally.wrong_errors += 1
                tally.problem(item.where, wrong)
            continue
        try:
            result, report = _check(item, options, audit)
        except ValueError as exc:
            invalid.append(f"error: {item.where}: {exc}")
            inputs_like += looks_like_input(item)
            continue
        tally.checked += 1
        tally.resolved += result.resolved_revision is not None
        tally.notes.update(report.notes)
        if report.ok:
            continue
        tally.bad += 1
        tally.configuration(item.where, result, report.problems, list(options))  # its hint before its problems
        for problem in report.problems:
            tally.problem(item.where, problem)
    swapped = bool(invalid) and inputs_like == len(invalid) and not tally.checked
    for line in invalid[: 1 if swapped else MAX_REPORTED]:  # an input file: one line shows why, not one per row
        err(line)
    source = "<stdin>" if args.results == "-" else args.results
    if audit.cursor is not None and not invalid:
        _rows_without_a_record(args, audit, tally)
    if invalid:
        hint = (f": {'they are' if len(invalid) != 1 else 'it is'} verify's input (a claim, no status); check its "
                f"results with `check RESULTS --inputs {source}`") if swapped else ""
        raise UsageError(f"error: {len(invalid)} line{'s' if len(invalid) != 1 else ''} of {source} {'are' if len(invalid) != 1 else 'is'} not "
            f"{'result records' if len(invalid) != 1 else 'a result record'}{hint}")
    tally.repeats()
    if not args.quiet:
        tally.say_notes()
        summary = f"checked {tally.checked} record{'s' if tally.checked != 1 else ''}: {tally.checked - tally.bad} ok, {tally.bad} with problems"
        if audit.public_key is not None:
            summary += f"; {audit.signatures_verified} signature{'s' if audit.signatures_verified != 1 else ''} verified with {args.public_key}"
        if tally.errors:
            summary += (f"; {tally.errors} error row{'s' if tally.errors != 1 else ''} (skipped input rows) "
                        f"hold{'s' if tally.errors == 1 else ''} no result")
            if tally.wrong_errors:
                summary += f", {tally.wrong_errors} of them not the error its --inputs row has"
            if audit.public_key is not None and audit.cursor is None:  # docs/audit.md, "Signatures"
                summary += (" and no signature: --public-key proves results only (--inputs ties each error row "
                            "to the invalid input row it reports)")
        if tally.missing:
            summary += f"; {tally.missing} row{'s' if tally.missing != 1 else ''} of {args.inputs} without a record"
        err(summary)
    return EXIT_FAILURE if tally.bad or tally.missing or tally.wrong_errors else EXIT_OK


def _rows_without_a_record(args: argparse.Namespace, audit: _Audit, tally: Tally) -> None:
    """The valid ``--inputs`` rows no record was matched to: each a problem with ``--every-row``, else one note."""
    assert audit.cursor is not None
    missing = first = 0
    for row in audit.cursor.rows():
        if isinstance(row, InputRow) and row.line not in audit.answered:
            missing += 1
            first = first or row.line
            if args.every_row:
                tally.problem(f"{args.inputs} line {row.line}", "no record answers this row (--every-row)")
    if missing and args.every_row:
        tally.missing = missing
    elif missing:
        tally.unanswered = f"{missing} row{'s' if missing != 1 else ''} of {args.inputs} {'have' if missing != 1 else 'has'} no record (first: line {first}; --every-row makes each a problem)"

"""Command line of the claim verifier (``python -m verifier``).

Usage::

    python -m verifier verify INPUT [-o OUT.jsonl] [options]
    python -m verifier verify --claim "The launch is Tuesday." \\
        --evidence "The launch moved to Wednesday." [--evidence "..."] [options]
    python -m verifier info [--model-dir DIR] [--verify-files] [--json]

``verify INPUT``
    Reads claims from ``INPUT`` (a path, or ``-`` for stdin) and writes one
    :class:`~verifier.types.ClaimVerification` per claim as JSON Lines (the
    result's ``model_dump_json()``, nothing added) to stdout or, with ``-o``,
    to a file written atomically (a temporary file in the same directory,
    moved into place with :func:`os.replace` only after every claim
    succeeded). **Row i of the output is the result for the i-th claim of the
    input**; results carry no input ``id`` (the result schema is fixed), so
    ``--row-map FILE`` writes a JSON line ``{"row": i, "line": n, "id": ...}``
    per output row (``row`` 0-based in the output, ``line`` 1-based in the
    input, or the item number for a ``.json`` input) when the caller needs the
    ids back (e.g. with ``--skip-invalid``). ``-o`` and ``--row-map`` must name
    two different files, neither of them ``INPUT`` (exit 2); both are checked
    (an existing directory, a missing parent, an unwritable directory: exit 1)
    and their temporary files created before any model work, and they are
    moved into place together or not at all: after any failure no temporary
    file remains and existing files are left as they were. A summary table
    (counts per status, claims/s, model calls, pairs scored, elapsed) goes to
    stderr unless ``--quiet``; a progress bar goes to stderr only when stderr
    is a terminal and not ``--quiet``.

``verify --claim ... --evidence ...``
    One-off check with human-readable output on stdout (or the JSON result
    with ``--json``). Passages get references ``E1``, ``E2``, ... in the order
    given, and memory ids ``uuid5(CLI_EVIDENCE_NAMESPACE, text)`` of the
    stripped text (:func:`cli_memory_id`), so the same passage always has the
    same id and the result digests are reproducible.

``info``
    The manifest of an exported model directory in readable form: model,
    revisions, source, labels, inputs, opset, files, parity report, versions,
    and a warning for random-weights (smoke) models. ``--verify-files``
    re-hashes every file against the manifest.

Input format
------------
``INPUT`` is JSON Lines: one JSON object per line, blank lines ignored,
line numbers counted from 1 over all lines. Two kinds of row may be mixed:

* an evidence row, validated as :class:`~verifier.types.ClaimRequest`::

      {"id": "launch-1", "claim": "The launch is Tuesday.",
       "evidence": [{"reference": "M1",
                     "memory_id": "7d8e4f6a-0c1b-4b8e-9a61-2f1d3c4b5a01",
                     "text": "The launch is on Tuesday.",
                     "source_type": "user_stated", "lifecycle_state": "stable"}],
       "requires_complete_set": false}

  ``id`` and ``requires_complete_set`` are optional; evidence fields are those
  of :class:`~verifier.types.ClaimEvidence`;

* a bundle row (any row with a ``bundle`` key), validated as
  :class:`~verifier.bundle.BundleClaimRequest`::

      {"id": "launch-2", "claim": "The launch is Tuesday.",
       "bundle": {"rendered_context": "[M1] The launch moved to Wednesday.",
                  "candidates": [{"reference": "M1", "memory_id": "...",
                                  "rendered_text": "The launch moved to Wednesday."}]},
       "evidence_refs": ["M1"]}

  whose evidence is :func:`verifier.bundle.bundle_evidence` of the bundle
  (SPEC §7: rendered text of cited candidates only).

A file whose name ends in ``.json`` is read whole instead: one such object
(e.g. a pretty-printed bundle row) or a JSON array of them; messages then
name the 1-based ``item`` of the array (JSON syntax errors still name the line).

Every row is validated, including the checks of SPEC §2 (non-empty claim, at
most ``max_evidence`` passages, no repeated reference or memory id), before
any model work. An invalid row is reported as ``INPUT line N: field F: ...``
and the command exits with status 2 without writing any output; with
``--skip-invalid`` each invalid row is reported on stderr and skipped.

Options and the audit digests
-----------------------------
``--entailment-threshold``, ``--contradiction-threshold``, ``--max-group-size``,
``--group-candidate-limit``, ``--max-evidence``, ``--batch-size``, the two
policies and ``--model``/``--revision`` set the *decision configuration*
(:class:`~verifier.types.ClaimVerificationConfig`, SPEC §1): it is digested,
so changing any of them changes ``configuration_sha256`` and every
``evaluation_id``. ``--batch-size`` is the configuration's ``batch_size``
(the most pairs in one padded onnxruntime batch, 1..256) and, being one of
the ten SPEC §1 fields, is digested too.
``--model-dir``, ``--threads``, ``--max-batch-tokens`` (token budget of one
padded onnxruntime batch) and ``--schedule`` are runtime settings
(:class:`~verifier.options.RuntimeOptions`) and never change a digest.

``--model`` and ``--revision`` default to the model directory's manifest
(``model`` and ``requested_revision``, else ``resolved_revision``; a local
export that records neither gets ``sha256:<sha256 of its model file>``), so
results name the model that actually ran; without a manifest they default to the
pinned :data:`~verifier.types.DEFAULT_MODEL` at
:data:`~verifier.types.DEFAULT_REVISION`. The model directory is ``--model-dir``,
else ``$CLAIM_VERIFIER_MODEL_DIR``, else ``models/<name>-<revision[:12]>``.

Exit status
-----------
0 success; 1 the model directory is missing or the model failed
(:class:`~verifier.types.ClaimVerificationError`), or output could not be
written; 2 bad usage or invalid input (argparse errors included); 130
interrupted. Errors are one line on stderr, never a traceback. A model
failure in the middle of a run leaves no output file with ``-o``; on stdout,
the results of chunks already finished (1024 claims each) stay written.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import sys
import tempfile
import time
import typing
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

from pydantic import ValidationError

from .manifest import MANIFEST_NAME, Manifest, read_manifest, verify_files
from .options import MODEL_DIR_ENV, RuntimeOptions
from .types import (
    DEFAULT_MODEL,
    DEFAULT_REVISION,
    ClaimEvidence,
    ClaimRequest,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
    ClaimVerificationStatus,
    EntailmentPolicy,
    RefutationPolicy,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .decision import ClaimVerifier

__all__ = [
    "CLI_EVIDENCE_NAMESPACE",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "InputRow",
    "InvalidRow",
    "cli_memory_id",
    "read_requests",
    "build_parser",
    "add_verify_parser",
    "add_info_parser",
    "run_verify",
    "run_info",
    "main",
]

#: Namespace of the memory ids given to ``--evidence`` passages:
#: ``uuid5(NAMESPACE_URL, "urn:claim-verifier:cli-evidence")``.
CLI_EVIDENCE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:claim-verifier:cli-evidence")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

#: Claims per ``verify_many`` call: bounds memory on huge inputs while keeping
#: cross-claim batches large.
_CHUNK = 1024
#: Invalid rows reported one by one before the rest are only counted.
_MAX_REPORTED_ERRORS = 20
_STATUS_ORDER = tuple(ClaimVerificationStatus)

#: pydantic error types worded for users; other types keep pydantic's message.
_PYDANTIC_WORDS: dict[str, str] = {
    "missing": "required field is missing",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "uuid_type": "not a valid UUID",
    "uuid_parsing": "not a valid UUID",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "extra_forbidden": "unknown field",
}
#: The link pydantic appends to its messages ("For further information visit https://errors.pydantic.dev/...").
_PYDANTIC_URL = re.compile(r"\s*For further information visit https?://errors\.pydantic\.dev/\S*")


def cli_memory_id(text: str) -> uuid.UUID:
    """Deterministic memory id of a ``--evidence`` passage: uuid5 of its stripped text.

    Example:
        >>> str(cli_memory_id(" The launch is Tuesday. ")) == str(cli_memory_id("The launch is Tuesday."))
        True
    """
    return uuid.uuid5(CLI_EVIDENCE_NAMESPACE, text.strip())


# ====================================================================== input


@dataclass(frozen=True)
class InputRow:
    """One valid input row: its 1-based line (or item) number and the request it holds."""

    line: int
    request: ClaimRequest


@dataclass(frozen=True)
class InvalidRow:
    """One invalid input row: where, which field (``None`` for the whole row), and why.

    ``unit`` is ``"line"`` for JSON Lines and for JSON syntax errors, ``"item"``
    for an element of a whole-file ``.json`` array.
    """

    line: int
    field: Optional[str]
    message: str
    unit: str = "line"

    def describe(self, source: str) -> str:
        """``SOURCE line N: field F: message`` on one line."""
        where = f"{source} {self.unit} {self.line}"
        if self.field:
            where += f": field {self.field}"
        return f"{where}: {self.message}"


def _loc(parts: Sequence[Any]) -> str:
    return ".".join(str(part) for part in parts)


def _pydantic_message(error: Any) -> str:
    """One pydantic error in user words (:data:`_PYDANTIC_WORDS`), e.g. ``must be a list``."""
    kind = str(error.get("type", ""))
    if kind == "json_invalid":
        detail = (error.get("ctx") or {}).get("error")
        return f"invalid JSON: {detail}" if detail else "invalid JSON"
    return _PYDANTIC_WORDS.get(kind) or str(error.get("msg", "invalid value"))


def _from_validation_error(line: int, exc: ValidationError, unit: str = "line") -> InvalidRow:
    errors = exc.errors(include_url=False)
    first = errors[0]
    message = _pydantic_message(first)
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''} in this row)"
    location = _loc(first.get("loc", ())) or None
    return InvalidRow(line, location, message, unit)


def _check_request(
    line: int, request: ClaimRequest, config: ClaimVerificationConfig, unit: str = "line"
) -> Optional[InvalidRow]:
    """The SPEC §2 checks, done here so they can name the line before any model work."""
    if not request.claim.strip():
        return InvalidRow(line, "claim", "claim is empty", unit)
    if len(request.evidence) > config.max_evidence:
        return InvalidRow(
            line,
            "evidence",
            f"{len(request.evidence)} passages exceed max_evidence={config.max_evidence}",
            unit,
        )
    references: dict[str, int] = {}
    memory_ids: dict[uuid.UUID, int] = {}
    for index, evidence in enumerate(request.evidence):
        if evidence.reference in references:
            return InvalidRow(
                line,
                f"evidence.{index}.reference",
                f"reference {evidence.reference!r} repeats evidence.{references[evidence.reference]}",
                unit,
            )
        if evidence.memory_id in memory_ids:
            return InvalidRow(
                line,
                f"evidence.{index}.memory_id",
                f"memory_id {evidence.memory_id} repeats evidence.{memory_ids[evidence.memory_id]}",
                unit,
            )
        references[evidence.reference] = index
        memory_ids[evidence.memory_id] = index
    return None


def _parse_row(line: int, value: Any, config: ClaimVerificationConfig, unit: str = "line") -> InputRow | InvalidRow:
    from .bundle import BundleClaimRequest, bundle_evidence

    if not isinstance(value, dict):
        return InvalidRow(line, None, f"expected a JSON object, got {type(value).__name__}", unit)
    if "bundle" in value:
        try:
            bundled = BundleClaimRequest.model_validate(value)
        except ValidationError as exc:
            return _from_validation_error(line, exc, unit)
        try:
            evidence = bundle_evidence(bundled.bundle, bundled.evidence_refs)
        except ValueError as exc:
            where = "evidence_refs" if "evidence_refs" in str(exc) else "bundle"
            return InvalidRow(line, where, str(exc), unit)
        request = ClaimRequest(
            id=bundled.id,
            claim=bundled.claim,
            evidence=evidence,
            requires_complete_set=bundled.requires_complete_set,
        )
    else:
        try:
            request = ClaimRequest.model_validate(value)
        except ValidationError as exc:
            return _from_validation_error(line, exc, unit)
    return _check_request(line, request, config, unit) or InputRow(line, request)


def _json_error(line: int, exc: json.JSONDecodeError, *, whole_file: bool) -> InvalidRow:
    if whole_file:
        return InvalidRow(exc.lineno, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
    return InvalidRow(line, None, f"invalid JSON: {exc.msg} (column {exc.colno})")


def read_requests(
    stream: IO[str], config: ClaimVerificationConfig, *, whole_file: bool = False
) -> Iterator[InputRow | InvalidRow]:
    """Parse and validate input rows (see the module docstring for the format).

    Args:
        stream: text to read.
        config: decision configuration (its ``max_evidence`` bounds each row).
        whole_file: read ``stream`` as one JSON document (an object or an array
            of objects) instead of JSON Lines.

    Yields:
        An :class:`InputRow` per valid row and an :class:`InvalidRow` per
        invalid one, in input order. Never raises for bad content.
    """
    if whole_file:
        try:
            document = json.loads(stream.read())
        except json.JSONDecodeError as exc:
            yield _json_error(0, exc, whole_file=True)
            return
        items = document if isinstance(document, list) else [document]
        for number, item in enumerate(items, start=1):
            yield _parse_row(number, item, config, "item")
        return
    for number, text in enumerate(stream, start=1):
        if not text.strip():
            continue
        try:
            value = json.loads(text.rstrip())
        except json.JSONDecodeError as exc:
            yield _json_error(number, exc, whole_file=False)
            continue
        yield _parse_row(number, value, config)


# ====================================================================== argument parsing


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.5 <= value <= 1.0:  # also rejects NaN
        raise argparse.ArgumentTypeError(f"must be within [0.5, 1.0], got {text}")
    return value


def _int_range(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be within [{low}, {high}], got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def _add_model_dir(parser: "argparse.ArgumentParser | argparse._ArgumentGroup") -> None:
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help=f"exported model directory (default: ${MODEL_DIR_ENV}, else models/<name>-<revision[:12]>)",
    )


def add_verify_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
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
    io_group.add_argument("-o", "--output", type=Path, help="write results here (atomically) instead of stdout")
    io_group.add_argument("--row-map", type=Path, help="also write {row, line, id} per output row (JSON Lines)")
    io_group.add_argument("--skip-invalid", action="store_true", help="report invalid rows on stderr and skip them")
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
    decision.add_argument("--entailment-threshold", type=_threshold, metavar="P", help="in [0.5, 1.0] (default 0.80)")
    decision.add_argument(
        "--contradiction-threshold", type=_threshold, metavar="P", help="in [0.5, 1.0] (default 0.80)"
    )
    decision.add_argument("--max-group-size", type=int, choices=(1, 2, 3), help="largest evidence group (default 2)")
    decision.add_argument(
        "--group-candidate-limit", type=_int_range(2, 16), metavar="N", help="passages kept for groups (default 8)"
    )
    decision.add_argument("--max-evidence", type=_int_range(1, 256), metavar="N", help="passages per claim (default 64)")
    decision.add_argument(
        "--batch-size", type=_int_range(1, 256), metavar="N", help="config batch_size: most pairs in one padded model batch (default 32)"
    )
    decision.add_argument("--entailment-policy", choices=typing.get_args(EntailmentPolicy))
    decision.add_argument("--refutation-policy", choices=typing.get_args(RefutationPolicy))

    runtime = parser.add_argument_group("runtime (never digested)")
    _add_model_dir(runtime)
    runtime.add_argument("--threads", type=_int_range(1, 1024), metavar="N", help="onnxruntime intra-op threads")
    runtime.add_argument(
        "--max-batch-tokens",
        type=_int_range(64, 1 << 22),
        metavar="N",
        help="token budget of one padded batch, rows x padded length (default 8192)",
    )
    runtime.add_argument("--schedule", choices=("staged", "eager"), help="model work schedule (default staged)")
    parser.set_defaults(func=run_verify)
    return parser


def add_info_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``info``."""
    parser = subparsers.add_parser(
        "info",
        help="show the manifest of an exported model directory",
        description="Show the manifest of an exported model directory in readable form.",
    )
    _add_model_dir(parser)
    parser.add_argument("--verify-files", action="store_true", help="re-hash every file against the manifest")
    parser.add_argument("--json", action="store_true", help="print the manifest as JSON")
    parser.set_defaults(func=run_info)
    return parser


class _SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: it reports the arguments it does not know itself.

    argparse hands a subcommand's unknown arguments back to the top-level
    parser, whose message would name ``python -m verifier`` and show its usage;
    this one says ``python -m verifier verify: error: unrecognized arguments: ...``.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Optional[Sequence[str]] = None, namespace: Optional[argparse.Namespace] = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m verifier`` parser with its subcommands."""
    parser = argparse.ArgumentParser(
        prog="python -m verifier",
        description="Torch-free, auditable claim verification with a local NLI cross-encoder.",
    )
    # add_<name>_parser take the plain action type; the parsers it makes are _SubcommandParser.
    subparsers = typing.cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_SubcommandParser),
    )
    add_verify_parser(subparsers)
    add_info_parser(subparsers)
    return parser


# ====================================================================== shared helpers


class _UsageError(Exception):
    """A user error reported as one line with :data:`EXIT_USAGE`."""


class _Failure(Exception):
    """A runtime failure reported as one line with :data:`EXIT_FAILURE`."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _err(message: str) -> None:
    """Print ``message`` to stderr without pydantic's "For further information visit ..." links."""
    print(_PYDANTIC_URL.sub("", message), file=sys.stderr, flush=True)


def _one_line(text: str) -> str:
    """``text`` as one line: pydantic links dropped, lines joined by a space."""
    return " ".join(line.strip() for line in _PYDANTIC_URL.sub("", text).splitlines() if line.strip())


def _validation_detail(exc: ValidationError) -> str:
    """``field F: message`` (just ``message`` when the error is about the whole document)."""
    problem = _from_validation_error(0, exc)
    return f"field {problem.field}: {problem.message}" if problem.field else problem.message


def _default_model_dir(args: argparse.Namespace) -> Path:
    model = args.model or DEFAULT_MODEL
    revision = args.revision or DEFAULT_REVISION
    return RuntimeOptions(model_dir=args.model_dir).resolve_model_dir(model, revision)


def _missing_model_message(model_dir: Path) -> str:
    what = "does not exist" if not model_dir.exists() else f"has no {MANIFEST_NAME}"
    if model_dir == RuntimeOptions().resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION):
        pinned, smoke = "`python -m export`", "`python -m export --smoke --output DIR` and pass --model-dir DIR"
    else:
        pinned, smoke = f"`python -m export --output {model_dir}`", f"`python -m export --smoke --output {model_dir}`"
    return (
        f"error: model directory {model_dir} {what}; create it once with {pinned} "
        f"(the pinned {DEFAULT_MODEL}; needs the export extra and the Hugging Face hub or a local copy), "
        f"or {smoke} (random-weights test model: meaningless decisions)"
    )


def _load_manifest(model_dir: Path) -> Optional[Manifest]:
    """The directory's manifest, ``None`` when there is none; raises :class:`_Failure` when it is unreadable."""
    if not (model_dir / MANIFEST_NAME).is_file():
        return None
    try:
        return read_manifest(model_dir)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            detail = _validation_detail(exc)
        else:
            detail = _first_line(exc)
        raise _Failure(f"error: unreadable {model_dir / MANIFEST_NAME}: {detail}") from exc


def _build_config(args: argparse.Namespace, manifest: Optional[Manifest]) -> ClaimVerificationConfig:
    values: dict[str, Any] = {}
    model = args.model or (manifest.model if manifest else None)
    revision = args.revision
    if not revision and manifest is not None:
        revision = manifest.revision
    if model:
        values["model"] = model
    if revision:
        values["revision"] = revision
    for name in (
        "entailment_threshold",
        "contradiction_threshold",
        "max_group_size",
        "group_candidate_limit",
        "max_evidence",
        "batch_size",
        "entailment_policy",
        "refutation_policy",
    ):
        value = getattr(args, name)
        if value is not None:
            values[name] = value
    try:
        return ClaimVerificationConfig(**values)
    except ValidationError as exc:
        problem = _from_validation_error(0, exc)
        where = f"option {problem.field}" if problem.field else "options"
        raise _UsageError(f"error: invalid {where}: {problem.message}") from exc


def _build_runtime(args: argparse.Namespace, model_dir: Path) -> RuntimeOptions:
    values: dict[str, Any] = {"model_dir": model_dir}
    if args.threads is not None:
        values["intra_op_num_threads"] = args.threads
    if args.max_batch_tokens is not None:
        values["max_batch_tokens"] = args.max_batch_tokens
    if args.schedule is not None:
        values["schedule"] = args.schedule
    return RuntimeOptions(**values)


def _make_verifier(config: ClaimVerificationConfig, runtime: RuntimeOptions) -> "ClaimVerifier":
    from .decision import ClaimVerifier

    return ClaimVerifier(config, runtime=runtime)


def _needs_model(requests: Sequence[ClaimRequest]) -> bool:
    return any(request.evidence and not request.requires_complete_set for request in requests)


@dataclass(frozen=True)
class _Setup:
    config: ClaimVerificationConfig
    runtime: RuntimeOptions
    manifest: Optional[Manifest]
    requests: list[ClaimRequest]


def _prepare(
    args: argparse.Namespace, read: Callable[[ClaimVerificationConfig], Sequence[ClaimRequest]]
) -> _Setup:
    """Resolve model directory, manifest, configuration and runtime; read requests; check the model exists."""
    model_dir = _default_model_dir(args)
    manifest = _load_manifest(model_dir)
    config = _build_config(args, manifest)
    runtime = _build_runtime(args, model_dir)
    requests = list(read(config))
    if manifest is None and _needs_model(requests):
        raise _Failure(_missing_model_message(model_dir))
    return _Setup(config, runtime, manifest, requests)


# ====================================================================== verify


@dataclass
class _Run:
    results: list[ClaimVerification] = field(default_factory=list)
    elapsed: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)


def _progress_bar(total: int, quiet: bool) -> Any:
    if quiet or total == 0 or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
    except ImportError:  # pragma: no cover - tqdm is a runtime dependency
        return None
    return tqdm(total=total, unit="claim", file=sys.stderr, dynamic_ncols=True, leave=False)


def _verify_all(
    verifier: "ClaimVerifier", requests: Sequence[ClaimRequest], quiet: bool, sink: Callable[[ClaimVerification], None]
) -> _Run:
    run = _Run()
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


def _summary(run: _Run, *, skipped: int) -> str:
    counts = {status: 0 for status in _STATUS_ORDER}
    for result in run.results:
        counts[result.status] += 1
    total = len(run.results)
    rate = total / run.elapsed if run.elapsed > 0 else float("inf")
    rows: list[tuple[str, str]] = [(status.value, str(counts[status])) for status in _STATUS_ORDER]
    rows.append(("total", str(total)))
    if skipped:
        rows.append(("skipped (invalid)", str(skipped)))
    rows.append(("claims/s", f"{rate:.1f}" if rate != float("inf") else "-"))
    rows.append(("model calls", str(run.stats.get("model_calls", "-"))))
    rows.append(("pairs scored", str(run.stats.get("pairs_scored", "-"))))
    if "padding_overhead" in run.stats:
        rows.append(("padding overhead", f"{float(run.stats['padding_overhead']):.2f}x"))
    rows.append(("elapsed", f"{run.elapsed:.2f} s"))
    width = max(len(name) for name, _ in rows)
    value_width = max(len(value) for _, value in rows)
    lines = [f"{'status':<{width}}  {'count':>{value_width}}"]
    lines += [f"{name:<{width}}  {value:>{value_width}}" for name, value in rows]
    return "\n".join(lines)


class _AtomicWriter:
    """A text file written beside its target and moved into place by :func:`_commit_all`.

    ``option`` (``-o`` or ``--row-map``) names the destination in messages; the
    temporary file's own name never appears in one.
    """

    def __init__(self, option: str, target: Path) -> None:
        self.option = option
        self.target = target
        self.committed = False
        try:
            handle = tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False
            )
        except OSError as exc:
            where = target.parent if str(target.parent) != "." else Path.cwd()
            raise _Failure(
                f"error: cannot write {option} {target}: cannot create a file in {where} ({exc.strerror or exc})"
            ) from exc
        self.handle: IO[str] = handle
        self.path = Path(handle.name)

    def finish(self) -> None:
        """Flush, sync and close the temporary file; give it the mode a new file would get."""
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.path, 0o666 & ~umask)

    def discard(self) -> None:
        """Remove the temporary file (nothing to do once committed)."""
        if self.committed:
            return
        if not self.handle.closed:
            self.handle.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def _check_destination(option: str, target: Path) -> None:
    """Refuse a destination that can never be written, before any work (exit 1)."""
    if target.is_dir():
        raise _Failure(f"error: {option} {target} is a directory; give a file path")
    parent = target.parent
    if not parent.exists():
        raise _Failure(f"error: cannot write {option} {target}: directory {parent} does not exist")
    if not parent.is_dir():
        raise _Failure(f"error: cannot write {option} {target}: {parent} is not a directory")


def _same_file(first: "str | Path", second: "str | Path") -> bool:
    """Whether two paths name the same file: :func:`os.path.samefile` when both exist, else resolved paths."""
    try:
        return os.path.samefile(first, second)
    except OSError:
        return Path(first).resolve() == Path(second).resolve()


def _check_output_paths(args: argparse.Namespace) -> None:
    """``-o``, ``--row-map`` and ``INPUT`` must be three different files (exit 2)."""
    named = [("-o", args.output), ("--row-map", args.row_map)]
    if args.input != "-":
        for option, path in named:
            if path is not None and _same_file(path, args.input):
                raise _UsageError(
                    f"error: {option} {path} is the INPUT file; it would be replaced, write to another file"
                )
    if args.output is not None and args.row_map is not None and _same_file(args.output, args.row_map):
        raise _UsageError(f"error: -o and --row-map name the same file {args.output}; give two different files")


def _open_outputs(args: argparse.Namespace) -> list[_AtomicWriter]:
    """Check both destinations, then create both temporary files (none is left when one fails)."""
    named = [(option, path) for option, path in (("-o", args.output), ("--row-map", args.row_map)) if path is not None]
    for option, path in named:
        _check_destination(option, path)
    writers: list[_AtomicWriter] = []
    try:
        for option, path in named:
            writers.append(_AtomicWriter(option, path))
    except BaseException:
        for writer in writers:
            writer.discard()
        raise
    return writers


def _backup(target: Path) -> "tuple[bool, Optional[Path]]":
    """Before replacing ``target``: whether it existed, and a hard link keeping its old content (if one could be made)."""
    if not os.path.lexists(target):
        return False, None
    backup = target.with_name(f".{target.name}.{secrets.token_hex(6)}.bak")
    try:
        os.link(target, backup, follow_symlinks=False)
    except OSError:
        return True, None
    return True, backup


def _commit_all(writers: Sequence[_AtomicWriter]) -> None:
    """Move every temporary file into place, or none.

    Each existing target is kept as a hard link until all moves succeeded; when
    a move fails, targets already replaced get their old content back (or are
    removed again when they did not exist) and the error names the option.
    """
    for writer in writers:
        writer.finish()
    done: list[tuple[_AtomicWriter, bool, Optional[Path]]] = []
    try:
        for writer in writers:
            existed, backup = _backup(writer.target)
            try:
                os.replace(writer.path, writer.target)
            except OSError as exc:
                if backup is not None:
                    backup.unlink(missing_ok=True)
                raise _Failure(f"error: cannot write {writer.option} {writer.target}: {exc.strerror or exc}") from exc
            writer.committed = True
            done.append((writer, existed, backup))
    except BaseException:
        for writer, existed, backup in reversed(done):
            try:
                if backup is not None:
                    os.replace(backup, writer.target)
                elif not existed:
                    writer.target.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - the original error is the one to report
                pass
        raise
    for _, _, backup in done:
        if backup is not None:
            backup.unlink(missing_ok=True)


def _read_input(args: argparse.Namespace, config: ClaimVerificationConfig) -> tuple[list[InputRow], list[InvalidRow]]:
    source = args.input
    whole_file = source != "-" and source.lower().endswith(".json")
    try:
        if source == "-":
            items = list(read_requests(sys.stdin, config))
        else:
            with open(source, encoding="utf-8") as stream:
                items = list(read_requests(stream, config, whole_file=whole_file))
    except FileNotFoundError:
        raise _UsageError(f"error: input file {source} does not exist") from None
    except UnicodeDecodeError as exc:
        raise _UsageError(f"error: input file {source} is not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        raise _UsageError(f"error: cannot read {source}: {exc.strerror or exc}") from None
    valid = [item for item in items if isinstance(item, InputRow)]
    invalid = [item for item in items if isinstance(item, InvalidRow)]
    return valid, invalid


def _report_invalid(source: str, invalid: Sequence[InvalidRow], prefix: str) -> None:
    for row in invalid[:_MAX_REPORTED_ERRORS]:
        _err(f"{prefix}: {row.describe(source)}")
    if len(invalid) > _MAX_REPORTED_ERRORS:
        _err(f"{prefix}: ... and {len(invalid) - _MAX_REPORTED_ERRORS} more invalid rows")


def _run_file(args: argparse.Namespace) -> int:
    source = "<stdin>" if args.input == "-" else args.input
    valid: list[InputRow] = []
    invalid: list[InvalidRow] = []

    def load(config: ClaimVerificationConfig) -> list[ClaimRequest]:
        nonlocal valid, invalid
        valid, invalid = _read_input(args, config)
        return [row.request for row in valid]

    _check_output_paths(args)
    writers = _open_outputs(args)
    writer = next((w for w in writers if w.option == "-o"), None)
    map_writer = next((w for w in writers if w.option == "--row-map"), None)
    try:
        setup = _prepare(args, load)
        if invalid and not args.skip_invalid:
            _report_invalid(source, invalid, "error")
            _err(f"error: {len(invalid)} invalid row{'s' if len(invalid) != 1 else ''} in {source}; nothing written")
            return EXIT_USAGE
        if invalid:
            _report_invalid(source, invalid, "skipped")

        verifier = _make_verifier(setup.config, setup.runtime)
        out: IO[str] = writer.handle if writer else sys.stdout

        def sink(result: ClaimVerification) -> None:
            out.write(result.model_dump_json() + "\n")

        run = _verify_all(verifier, setup.requests, args.quiet, sink)
        if map_writer is not None:
            for index, row in enumerate(valid):
                map_writer.handle.write(json.dumps({"row": index, "line": row.line, "id": row.request.id}) + "\n")
        if writer is None:
            sys.stdout.flush()
        _commit_all(writers)
    finally:
        for pending in writers:
            pending.discard()
    if not args.quiet:
        _err(_summary(run, skipped=len(invalid)))
    return EXIT_OK


def _fmt_probs(entailment: Optional[float], contradiction: Optional[float], neutral: Optional[float]) -> str:
    if entailment is None or contradiction is None or neutral is None:
        return f"{'-':>10}  {'-':>13}  {'-':>7}"
    return f"{entailment:>10.3f}  {contradiction:>13.3f}  {neutral:>7.3f}"


def format_result(result: ClaimVerification, evidence: Sequence[ClaimEvidence]) -> str:
    """A human-readable report of one result (used by the one-off ``--claim`` mode)."""
    refs = {e.memory_id: e.reference for e in evidence}

    def names(ids: Sequence[uuid.UUID]) -> str:
        return "+".join(refs.get(memory_id, str(memory_id)) for memory_id in ids)

    lines = [f"claim:   {result.claim}", f"status:  {result.status.value}"]
    if result.supporting_group:
        lines.append(f"supported by:  {names(result.supporting_group)}  ({result.supporting_basis})")
    if result.refuting_group:
        lines.append(f"refuted by:    {names(result.refuting_group)}  ({result.refuting_basis})")
    if evidence:
        lines.append("evidence:")
        width = max(4, max(len(e.reference) for e in evidence))
        for e in evidence:
            first, *rest = e.text.splitlines() or [""]
            lines.append(f"  {e.reference:<{width}} {first}")
            lines += [f"  {'':<{width}} {line}" for line in rest]
    if result.group_scores:
        width = max(5, max(len("+".join(score.references)) for score in result.group_scores))
        lines.append(f"groups scored:\n  {'group':<{width}}  entailment  contradiction  neutral")
        for score in result.group_scores:
            marks = []
            if score.memory_ids == result.supporting_group and result.supporting_basis == "model_entailment":
                marks.append("supports")
            if score.memory_ids == result.refuting_group:
                marks.append("refutes")
            mark = f"  <- {', '.join(marks)}" if marks else ""
            probs = _fmt_probs(score.entailment, score.contradiction, score.neutral)
            lines.append(f"  {'+'.join(score.references):<{width}}  {probs}{mark}")
    if result.localized_assessments:
        lines.append("localized rechecks (kept segments per passage):")
        for assessment in result.localized_assessments:
            kept = "; ".join(
                f"{ref} {','.join(map(str, numbers)) or 'none'}"
                for ref, numbers in zip(assessment.references, assessment.included_segment_numbers)
            )
            if assessment.model_called:
                probs = _fmt_probs(assessment.entailment, assessment.contradiction, assessment.neutral).strip()
                detail = f"scored: entailment/contradiction/neutral {' / '.join(probs.split())}"
            else:
                detail = "no model call (nothing kept)"
            lines.append(f"  {'+'.join(assessment.references)}: segments {kept}; {detail}")
    lines.append(f"limitations:  {', '.join(result.limitations) if result.limitations else 'none'}")
    resolved = f" (resolved {result.resolved_revision})" if result.resolved_revision else ""
    lines.append(f"model:   {result.model} @ {result.requested_revision}{resolved}")
    lines.append(f"result_sha256: {result.result_sha256}")
    return "\n".join(lines)


def _one_off_request(args: argparse.Namespace) -> ClaimRequest:
    evidence: list[ClaimEvidence] = []
    seen: dict[uuid.UUID, int] = {}
    for number, text in enumerate(args.evidence, start=1):
        if not text.strip():
            raise _UsageError(f"error: --evidence #{number} is empty")
        memory_id = cli_memory_id(text)
        if memory_id in seen:
            raise _UsageError(f"error: --evidence #{number} repeats --evidence #{seen[memory_id]}")
        seen[memory_id] = number
        evidence.append(ClaimEvidence(reference=f"E{number}", memory_id=memory_id, text=text))
    if not args.claim.strip():
        raise _UsageError("error: --claim is empty")
    return ClaimRequest(claim=args.claim, evidence=tuple(evidence), requires_complete_set=args.complete_set)


def _run_one_off(args: argparse.Namespace) -> int:
    request = _one_off_request(args)

    def check(config: ClaimVerificationConfig) -> list[ClaimRequest]:
        problem = _check_request(1, request, config)
        if problem is not None:
            raise _UsageError(f"error: {problem.message}")
        return [request]

    setup = _prepare(args, check)
    verifier = _make_verifier(setup.config, setup.runtime)
    result = verifier.verify_sync(
        request.claim, request.evidence, requires_complete_set=request.requires_complete_set
    )
    if args.json:
        print(result.model_dump_json())
    else:
        print(format_result(result, request.evidence))
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    """Run ``verify``: JSON Lines mode with INPUT, one-off mode with ``--claim``."""
    if args.claim is not None and args.input is not None:
        raise _UsageError("error: give either INPUT or --claim, not both")
    if args.claim is None and args.evidence:
        raise _UsageError("error: --evidence needs --claim")
    if args.claim is not None:
        if args.output or args.row_map or args.skip_invalid:
            raise _UsageError("error: -o, --row-map and --skip-invalid apply to INPUT files, not --claim")
        return _run_one_off(args)
    if args.input is None:
        raise _UsageError("error: give an INPUT file (JSON Lines) or --claim with --evidence")
    if args.complete_set or args.json:
        raise _UsageError("error: --complete-set and --json apply to --claim; set requires_complete_set per row")
    return _run_file(args)


# ====================================================================== info


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def format_manifest(model_dir: Path, manifest: Manifest) -> str:
    """The manifest in readable form (``info``)."""
    lines = []
    if manifest.random_weights:
        lines.append("WARNING: random weights (smoke/test model): its decisions are meaningless")
    rows = [
        ("model directory", str(model_dir)),
        ("model", manifest.model),
        ("requested revision", manifest.requested_revision or "-"),
        ("resolved revision", manifest.resolved_revision or "-"),
        ("source", manifest.source),
        ("random weights", "yes" if manifest.random_weights else "no"),
        ("model file", manifest.model_file),
        ("labels", ", ".join(f"{index}={label}" for index, label in enumerate(manifest.labels))),
        ("inputs", ", ".join(manifest.inputs)),
        ("max length", f"{manifest.max_length} tokens"),
        ("opset", str(manifest.opset)),
        ("pad token id", str(manifest.pad_token_id)),
        ("created", manifest.created_at),
    ]
    width = max(len(name) for name, _ in rows)
    lines += [f"{name:<{width}}  {value}" for name, value in rows]

    def parity(report: Any, indent: str) -> list[str]:
        gates = []
        if report.atol is not None:
            gates.append(f"atol {report.atol:g}")
        if report.max_prob_diff_gate is not None:
            gates.append(f"prob gate {report.max_prob_diff_gate:g}")
        return [
            f"{indent}{'PASSED' if report.passed else 'FAILED'} over {report.pairs} golden pairs"
            + (f" ({', '.join(gates)})" if gates else ""),
            f"{indent}max |logit diff| {report.max_abs_logit_diff:.3g}, max |prob diff| {report.max_abs_prob_diff:.3g}",
            f"{indent}argmax agreement {report.argmax_agreement:.1%}, "
            f"token ids identical: {'yes' if report.token_ids_identical else 'NO'}",
        ]

    lines.append("parity (onnxruntime vs PyTorch):")
    lines += parity(manifest.parity, "  ")
    lines.append("files:")
    name_width = max((len(name) for name in manifest.files), default=4)
    for name, record in sorted(manifest.files.items()):
        lines.append(f"  {name:<{name_width}}  {_size(record.size):>10}  sha256 {record.sha256}")
    if manifest.variants:
        lines.append("variants:")
        for name, variant in sorted(manifest.variants.items()):
            lines.append(f"  {name}: {variant.file} ({variant.description})")
            lines += parity(variant.parity, "    ")
    if manifest.versions:
        lines.append("versions:  " + ", ".join(f"{k} {v}" for k, v in sorted(manifest.versions.items())))
    return "\n".join(lines)


def run_info(args: argparse.Namespace) -> int:
    """Run ``info``: print the manifest of the model directory."""
    model_dir = RuntimeOptions(model_dir=args.model_dir).resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION)
    manifest = _load_manifest(model_dir)
    if manifest is None:
        raise _Failure(_missing_model_message(model_dir))
    if args.json:
        print(manifest.model_dump_json(indent=2))
    else:
        print(format_manifest(model_dir, manifest))
    if args.verify_files:
        problems = verify_files(model_dir, manifest)
        if problems:
            for problem in problems:
                _err(f"error: {model_dir}/{problem}")
            return EXIT_FAILURE
        _err(f"files: all {len(manifest.files)} match the manifest")
    return EXIT_OK


# ====================================================================== main


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the subcommand, return the exit status.

    Argument errors exit through argparse with status 2 (it raises
    :class:`SystemExit`); every other user or runtime error is one line on
    stderr and a returned status (see the module docstring).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except _UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except _Failure as exc:
        _err(str(exc))
        return EXIT_FAILURE
    except ClaimVerificationError as exc:
        _err(f"error: {_one_line(str(exc))}")
        return EXIT_FAILURE
    except ValidationError as exc:  # validation the CLI did not anticipate: still one line
        _err(f"error: {exc.title}: {_validation_detail(exc)}")
        return EXIT_USAGE
    except ValueError as exc:
        _err(f"error: {_first_line(exc)}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:  # pragma: no cover
            pass
        return EXIT_FAILURE
    except OSError as exc:
        _err(f"error: {exc.strerror or _one_line(str(exc))}" + (f": {exc.filename}" if exc.filename else ""))
        return EXIT_FAILURE

"""What the subcommands share: argument types, the subcommand parser, and configuration assembly.

Options and the audit digests
-----------------------------
``--entailment-threshold``, ``--contradiction-threshold``, ``--max-group-size``,
``--group-candidate-limit``, ``--max-evidence``, ``--batch-size``, the two
policies and ``--model``/``--revision`` set the *decision configuration*
(:class:`~verifier.types.ClaimVerificationConfig`, docs/decision.md §1): it is
digested (docs/audit.md), so changing any of them changes
``configuration_sha256`` and every ``evaluation_id``. ``--batch-size`` is the
configuration's ``batch_size`` (the most pairs in one padded onnxruntime
batch, 1..256) and, being one of the ten docs/decision.md §1 fields, is
digested too. ``--model-dir``, ``--threads``, ``--max-batch-tokens`` (token
budget of one padded onnxruntime batch), ``--schedule`` and ``--padding`` are runtime
settings (:class:`~verifier.options.RuntimeOptions`) and never change a digest.

``--model`` and ``--revision`` default to the model directory's manifest
(``model`` and ``requested_revision``, else ``resolved_revision``; a local
export that records neither gets ``sha256:<sha256 of its model file>``), so
results name the model that actually ran; without a manifest they default to the
pinned :data:`~verifier.types.DEFAULT_MODEL` at
:data:`~verifier.types.DEFAULT_REVISION`. The model directory is ``--model-dir``,
else ``$CLAIM_VERIFIER_MODEL_DIR``, else ``models/<name>-<revision[:12]>`` when
it exists, else the export recorded for this user
(:meth:`verifier.options.RuntimeOptions.resolve_model_dir`).

Subcommands
-----------
A subcommand is a module with ``add_parser(subparsers)`` (registers its
parser and ``set_defaults(func=run)``) and ``run(args, context) -> int``
(:class:`Subcommand`); :data:`verifier.cli.SUBCOMMANDS` lists them. The
:class:`Context` carries what :func:`verifier.cli.main` injects, such as the
verifier factory.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Sequence

from pydantic import ValidationError

from ..argtypes import float_range, int_range
from ..engine.manifest import MANIFEST_NAME, Manifest, kind_of, read_manifest
from ..engine.identity import where
from ..messages import SMOKE_DIR, export_command, install_hint
from ..options import (
    MODEL_DIR_ENV,
    InputLimits,
    RuntimeOptions,
    available_cpus,
    describe_lookup,
)
from ..types import DEFAULT_MODEL, DEFAULT_REVISION, ClaimVerificationConfig
from ..validation import ValidRequest
from .errors import (
    Failure,
    UsageError,
    first_line,
    validation_detail,
    validation_problem,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..claim_verifier import ClaimVerifier

__all__ = [
    "Subcommand",
    "SubcommandParser",
    "VerifierFactory",
    "Context",
    "Setup",
    "make_verifier",
    "threshold",
    "int_range",
    "add_model_dir",
    "add_limits",
    "threads",
    "missing_model_message",
    "load_manifest",
    "build_config",
    "build_runtime",
    "prepare",
]

#: Builds the verifier a subcommand runs: ``(config, runtime) -> ClaimVerifier``.
VerifierFactory = Callable[[ClaimVerificationConfig, RuntimeOptions], "ClaimVerifier"]


def make_verifier(config: ClaimVerificationConfig, runtime: RuntimeOptions) -> "ClaimVerifier":
    """The default :data:`VerifierFactory`: ``ClaimVerifier(config, runtime=runtime)``.

    :mod:`verifier.claim_verifier` is imported here, not at import time, so that
    ``import verifier.cli`` stays cheap.
    """
    from ..claim_verifier import ClaimVerifier

    return ClaimVerifier(config, runtime=runtime)


@dataclass(frozen=True)
class Context:
    """What :func:`verifier.cli.main` hands every subcommand besides its arguments."""

    make_verifier: VerifierFactory = make_verifier


#: Each subcommand's one-line help, keyed by its name: its parser's ``help`` and the line ``python -m verifier
#: --help`` lists, also for a subcommand whose module :func:`verifier.cli.build_parser` does not import.
SUMMARIES: dict[str, str] = {
    "verify": "verify claims from a JSON Lines file, or one --claim against --evidence passages",
    "ground": "score {id, document, claim} rows with an exported grounding checker (MiniCheck, FactCG)",
    "info": "show the manifest of an exported model directory",
    "check": "check stored results: recompute their digests and report edited records",
    "assay": "measure a policy and its thresholds on labelled claims (metrics, intervals, sweep, gates)",
    "serve": "serve verifications over HTTP (needs the server extra)",
    "keygen": "write a new Ed25519 key pair for signing results (verify/serve --sign-key, check --public-key)",
}


class Subcommand(Protocol):
    """A subcommand module (see the module docstring)."""

    def add_parser(self, subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
        ...  # pragma: no cover

    def run(self, args: argparse.Namespace, context: Context) -> int:
        ...  # pragma: no cover


class SubcommandParser(argparse.ArgumentParser):
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


# ---------------------------------------------------------------- argument types


#: argparse type of a probability threshold within [0.5, 1.0].
threshold = float_range(0.5, 1.0)


def add_model_dir(parser: "argparse.ArgumentParser | argparse._ArgumentGroup") -> None:
    """Add ``--model-dir`` (a runtime setting, never digested)."""
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help=f"exported model directory (default: ${MODEL_DIR_ENV}, else models/<name>-<revision[:12]> "
        "when it exists, else the export recorded for this user; docs/model-directory.md)",
    )


# ---------------------------------------------------------------- model directory, configuration, runtime


def missing_model_message(model_dir: Path, given: bool = False) -> str:
    """One line saying the model directory (or its manifest) is missing and how to create it (``given``: the
    user named it with ``--model-dir``, so the line never asks to add the option)."""
    export = export_command()
    if model_dir.exists() and not model_dir.is_dir():
        return f"error: --model-dir {where(model_dir)} is a file, not a model directory; give the directory {export} wrote"
    what = "does not exist" if not model_dir.exists() else f"has no {MANIFEST_NAME}"
    default = model_dir == RuntimeOptions().resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION)
    if default:
        pinned, smoke = f"`{export}`", f"`{export} --smoke --output DIR` and pass --model-dir DIR"
    else:
        pinned, smoke = f"`{export} --output {model_dir}`", f"`{export} --smoke --output {model_dir}`"
    if default and given and (SMOKE_DIR / MANIFEST_NAME).is_file():  # issue 50: serve --model-dir <the pinned one>
        return (
            f"error: --model-dir {where(model_dir)} {what}: the pinned model is not exported here; export it once "
            f"with `{export}`, or give --model-dir {SMOKE_DIR} instead, the random-weights smoke export here "
            "(plumbing only: meaningless decisions)"
        )
    if default and (SMOKE_DIR / MANIFEST_NAME).is_file():  # issue 34: `export --smoke` alone, then the README's verify
        return (
            f"error: model directory {where(model_dir)} {what}: the pinned model is not exported here, but the "
            f"random-weights smoke export {where(SMOKE_DIR)} is; add --model-dir {SMOKE_DIR} to use it (plumbing "
            f"only: meaningless decisions), or export the pinned {DEFAULT_MODEL} once with `{export}`"
            + describe_lookup(DEFAULT_MODEL, DEFAULT_REVISION)
        )
    return (
        f"error: model directory {where(model_dir)} {what}; create it once with {pinned} "
        f"(the pinned {DEFAULT_MODEL}; needs the export extra and the Hugging Face hub or a local copy), "
        f"or {smoke} (random-weights test model: meaningless decisions)"
        + (describe_lookup(DEFAULT_MODEL, DEFAULT_REVISION) if default else "")
    )


def load_manifest(model_dir: Path) -> Optional[Manifest]:
    """The directory's manifest, ``None`` when there is none; raises :class:`Failure` when it is unreadable."""
    path = model_dir / MANIFEST_NAME
    if not os.path.lexists(path):
        return None
    if not path.is_file():
        raise Failure(f"error: {where(path)} is {kind_of(path)}, not a regular file; re-export the model directory")
    try:
        return read_manifest(model_dir)
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            detail = validation_detail(exc)
        else:
            detail = first_line(exc)
        raise Failure(f"error: unreadable {model_dir / MANIFEST_NAME}: {detail}") from exc


def _default_model_dir(args: argparse.Namespace) -> Path:
    model = args.model or DEFAULT_MODEL
    revision = args.revision or DEFAULT_REVISION
    return RuntimeOptions(model_dir=args.model_dir).resolve_model_dir(model, revision)


_DECISION_OPTIONS = (
    "entailment_threshold",
    "contradiction_threshold",
    "max_group_size",
    "group_candidate_limit",
    "max_evidence",
    "batch_size",
    "entailment_policy",
    "refutation_policy",
)


def build_config(args: argparse.Namespace, manifest: Optional[Manifest]) -> ClaimVerificationConfig:
    """The decision configuration from the options, ``model``/``revision`` defaulting to the manifest's."""
    values: dict[str, Any] = {}
    model = args.model or (manifest.model if manifest else None)
    revision = args.revision
    if not revision and manifest is not None:
        revision = manifest.revision
    if model:
        values["model"] = model
    if revision:
        values["revision"] = revision
    for name in _DECISION_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            values[name] = value
    try:
        return ClaimVerificationConfig(**values)
    except ValidationError as exc:
        location, message = validation_problem(exc)
        where = f"option {location}" if location else "options"
        raise UsageError(f"error: invalid {where}: {message}") from exc


def build_runtime(args: argparse.Namespace, model_dir: Path) -> RuntimeOptions:
    """The runtime settings from the options (never digested)."""
    values: dict[str, Any] = {"model_dir": model_dir}
    if args.threads is not None:
        values["intra_op_num_threads"] = args.threads
    if args.max_batch_tokens is not None:
        values["max_batch_tokens"] = args.max_batch_tokens
    if args.schedule is not None:
        values["schedule"] = args.schedule
    if getattr(args, "padding", None) is not None:
        values["padding"] = args.padding
    if getattr(args, "variant", None) is not None:
        values["variant"] = args.variant
    if getattr(args, "score_cache", None) is not None:  # docs/score-store.md
        values["score_cache"] = args.score_cache
    if getattr(args, "score_cache_max_rows", None) is not None:
        values["score_cache_max_rows"] = args.score_cache_max_rows
    if getattr(args, "score_cache_key", None) is not None:
        values["score_cache_key"] = args.score_cache_key
    limits = {
        name: getattr(args, option)
        for name, option in _LIMIT_OPTIONS.items()
        if getattr(args, option, None) is not None
    }
    if limits:
        values["limits"] = InputLimits(**limits)
    if getattr(args, "sign_key", None) is not None:  # docs/audit.md "Signatures"
        values["sign_key"] = args.sign_key
    return runtime_options(values)


def runtime_options(values: dict[str, Any]) -> RuntimeOptions:
    """``RuntimeOptions(**values)``; a bad ``--sign-key`` is a usage error naming the option.

    Raises:
        UsageError: the sign key cannot be read or is not an Ed25519 private key.
    """
    runtime = RuntimeOptions(**values)
    if runtime.sign_key is not None:  # read now: a bad key stops the command before any model work
        from ..decision.signing import load_private_key

        try:
            load_private_key(runtime.sign_key)
        except ImportError as exc:
            raise UsageError(f"error: --sign-key needs the sign extra ({install_hint('sign')})") from exc
        except ValueError as exc:
            raise UsageError(f"error: --sign-key {runtime.sign_key}: {exc}") from None
    return runtime


def add_sign_key(parser: "argparse.ArgumentParser | argparse._ArgumentGroup") -> None:
    """Add ``--sign-key FILE`` (docs/audit.md "Signatures")."""
    parser.add_argument(
        "--sign-key", type=Path, metavar="FILE",
        help="sign every result with this Ed25519 private key (python -m verifier keygen; the sign extra); "
             "check --public-key verifies (docs/audit.md)",
    )


#: InputLimits field -> argparse destination of its option.
_LIMIT_OPTIONS = {
    "max_claim_chars": "max_claim_chars",
    "max_passage_chars": "max_passage_chars",
    "max_request_bytes": "max_line_bytes",
}


def add_limits(parser: "argparse.ArgumentParser | argparse._ArgumentGroup") -> None:
    """Add the input size limits (:class:`~verifier.options.InputLimits`; never digested)."""
    defaults = InputLimits()
    parser.add_argument(
        "--max-claim-chars", type=int_range(1, 1 << 30), metavar="N",
        help=f"longest claim in characters (default {defaults.max_claim_chars:,})",
    )
    parser.add_argument(
        "--max-passage-chars", type=int_range(1, 1 << 30), metavar="N",
        help=f"longest evidence text in characters (default {defaults.max_passage_chars:,})",
    )
    parser.add_argument(
        "--max-line-bytes", type=int_range(1024, 1 << 34), metavar="N",
        help=f"longest input line (or .json file) in bytes (default {defaults.max_request_bytes:,})",
    )


def threads(text: str) -> int:
    """argparse type of a thread count: 1 up to the CPUs available to this process."""
    return int_range(1, available_cpus())(text)


def _needs_model(requests: Sequence[ValidRequest]) -> bool:
    return any(request.evidence and not request.requires_complete_set for request in requests)


@dataclass(frozen=True)
class Setup:
    """Everything a verifying subcommand resolved before building its verifier."""

    config: ClaimVerificationConfig
    runtime: RuntimeOptions
    manifest: Optional[Manifest]
    requests: list[ValidRequest]


def prepare(
    args: argparse.Namespace, read: Callable[[ClaimVerificationConfig, InputLimits], Sequence[ValidRequest]]
) -> Setup:
    """Resolve model directory, manifest, configuration and runtime; read requests; check the model exists.

    ``read`` gets the configuration (its ``max_evidence`` bounds each request)
    and the size limits, and returns the validated requests. The model directory must hold a
    manifest only when some request needs the model (it has evidence and is
    not ``requires_complete_set``).

    Raises:
        Failure: the manifest is unreadable, or missing while a request needs the model.
        UsageError: invalid decision options (or whatever ``read`` raises).
    """
    model_dir = _default_model_dir(args)
    manifest = load_manifest(model_dir)
    config = build_config(args, manifest)
    runtime = build_runtime(args, model_dir)
    requests = list(read(config, runtime.limits))
    if manifest is None and _needs_model(requests):
        raise Failure(missing_model_message(model_dir, given=getattr(args, "model_dir", None) is not None))
    return Setup(config, runtime, manifest, requests)

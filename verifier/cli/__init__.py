"""Command line of the claim verifier (``python -m verifier``).

Usage::

    python -m verifier verify INPUT [-o OUT.jsonl] [options]
    python -m verifier verify --claim "The launch is Tuesday." \\
        --evidence "The launch moved to Wednesday." [--evidence "..."] [options]
    python -m verifier info [--model-dir DIR] [--verify-files] [--json]
    python -m verifier check RESULTS.jsonl

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
    file remains and existing files are left as they were
    (:mod:`verifier.cli.output`). A summary table (counts per status,
    claims/s, model calls, pairs scored, elapsed) goes to stderr unless
    ``--quiet``; progress goes to stderr unless ``--quiet``: a bar on a terminal,
    plain timestamped lines otherwise (:mod:`verifier.cli.progress`).

``verify --claim ... --evidence ...``
    One-off check with human-readable output on stdout (or the JSON result
    with ``--json``). Passages get references ``E1``, ``E2``, ... in the order
    given, and memory ids ``uuid5(CLI_EVIDENCE_NAMESPACE, text)`` of the
    stripped text (:func:`cli_memory_id`), so the same passage always has the
    same id and the result digests are reproducible.

``check RESULTS``
    Reads back anything ``verify`` wrote (result lines, envelopes, ``--resume``
    output, a Ray output directory), recomputes every digest it can from each
    record's own fields and the decision configuration it names, re-decides
    it from its own recorded scores (the whole procedure with ``--inputs``),
    re-scores its premises with ``--rescore --model-dir DIR``, verifies its
    signature with ``--public-key``, and reports every record that does not
    hold (:mod:`verifier.cli.check`; docs/audit.md).

``ground ROWS --model-dir DIR``
    Document-level grounding checks with an exported grounding model
    (MiniCheck, FactCG): P(support) per ``{"id", "document", "claim"}`` row,
    MiniCheck's chunking or ``--no-chunking`` (:mod:`verifier.cli.ground`;
    docs/grounding.md).

``keygen --out FILE``
    A new Ed25519 key pair for ``--sign-key`` and ``check --public-key``
    (:mod:`verifier.cli.keygen`).

``info``
    The manifest of an exported model directory in readable form: model,
    revisions, source, labels, inputs, opset, files, parity report, versions,
    and a warning for random-weights (smoke) models. ``--verify-files``
    re-hashes every file against the manifest.

Input format
------------
JSON Lines of evidence rows (:class:`~verifier.types.ClaimRequest`) and
bundle rows (:class:`~verifier.decision.bundle.BundleClaimRequest`, any row with a
``bundle`` key), or a whole ``.json`` file holding one such object or an
array of them; see :mod:`verifier.cli.inputs` for the full format. Every row
is validated once (docs/decision.md §2) before any model work; an invalid row
is reported as ``INPUT line N: field F: ...`` and the command exits with
status 2 without writing any output, unless ``--skip-invalid``.

Options and the audit digests
-----------------------------
The decision options (thresholds, group limits, ``--max-evidence``,
``--batch-size``, policies, ``--model``/``--revision``) set the digested
:class:`~verifier.types.ClaimVerificationConfig` (docs/decision.md §1,
docs/audit.md); ``--model-dir``, ``--threads``, ``--max-batch-tokens`` and
``--schedule`` are runtime settings and never change a digest. ``--model``
and ``--revision`` default to the model directory's manifest. See
:mod:`verifier.cli.common` for the details and the model directory's default.

Exit status
-----------
0 success; 1 the model directory is missing or the model failed
(:class:`~verifier.types.ClaimVerificationError`), or output could not be
written; 2 bad usage or invalid input (argparse errors included); 3 with
``--skip-invalid --fail-on-skip``, some row was skipped (results written);
130 interrupted (Ctrl-C); 143 terminated (SIGTERM, handled like Ctrl-C).
Errors are one line on stderr, never a traceback
(:func:`verifier.cli.errors.report`). Every row is validated before any model
work, so an invalid row never lets a result out. A model failure in the
middle of a run leaves no output file with ``-o``; on stdout (``-o -``, the
default), a character device or a FIFO, the results of chunks already
finished (1024 claims each) stay written.

Modules
-------
:mod:`~verifier.cli.inputs` (reading INPUT), :mod:`~verifier.cli.output`
(atomic output files), :mod:`~verifier.cli.render` (readable text),
:mod:`~verifier.cli.errors` (messages and exit codes),
:mod:`~verifier.cli.common` (argument types, configuration), and one module
per subcommand (:mod:`~verifier.cli.verify`, :mod:`~verifier.cli.info`),
listed in :data:`SUBCOMMANDS` and imported only when its command runs
(:func:`build_parser`). A new subcommand is one new module with
``add_parser(subparsers)`` and ``run(args, context) -> int``, added there
with its one-line help in :data:`verifier.cli.common.SUMMARIES`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import typing
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Sequence

from . import info, verify
from .common import SUMMARIES, Context, Subcommand, SubcommandParser
from .errors import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_SKIPPED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    Terminated,
    report,
)
from .inputs import (
    CLI_EVIDENCE_NAMESPACE,
    InputRow,
    InvalidRow,
    cli_memory_id,
    read_requests,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..claim_verifier import ClaimVerifier
    from ..options import RuntimeOptions
    from ..types import ClaimVerificationConfig

__all__ = [
    "CLI_EVIDENCE_NAMESPACE",
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "EXIT_SKIPPED",
    "EXIT_TERMINATED",
    "InputRow",
    "InvalidRow",
    "cli_memory_id",
    "read_requests",
    "SUBCOMMANDS",
    "build_parser",
    "subcommand",
    "add_verify_parser",
    "add_info_parser",
    "run_verify",
    "run_info",
    "main",
]

#: The subcommands (modules of this package), in the order ``--help`` lists them.
SUBCOMMANDS: tuple[str, ...] = ("verify", "info", "check", "assay", "serve", "keygen", "ground")

#: Register ``verify`` (JSON Lines mode and one-off ``--claim`` mode).
add_verify_parser = verify.add_parser
#: Register ``info``.
add_info_parser = info.add_parser
#: Run ``verify``: JSON Lines mode with INPUT, one-off mode with ``--claim``.
run_verify = verify.run
#: Run ``info``: print the manifest of the model directory.
run_info = info.run


def _prog() -> str:
    """``python -m verifier`` when run as a module, else the name it was run by (``onnx-claim-verifier``)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "python -m verifier" if name in ("", "__main__.py", "-c") else name


def _version() -> str:
    from .. import __version__

    return __version__


def subcommand(name: str) -> Subcommand:
    """The module of subcommand ``name`` (one of :data:`SUBCOMMANDS`), imported on first use."""
    if name not in SUBCOMMANDS:
        raise ValueError(f"subcommand must be one of {list(SUBCOMMANDS)}, got {name!r}")
    return typing.cast(Subcommand, importlib.import_module(f"{__name__}.{name}"))


def build_parser(argv: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The ``python -m verifier`` parser for ``argv``: every subcommand of :data:`SUBCOMMANDS` is listed.

    When ``argv`` starts with a subcommand's name, only that subcommand's module
    is imported and given its full parser; the others get a parser with their
    one-line help (:data:`~verifier.cli.common.SUMMARIES`) that never parses
    anything. Importing every subcommand costs ~0.1 s of a one-off ``verify``
    (docs/performance.md, "Import time"). Without ``argv`` (or with an option
    first, such as ``--help``) every subcommand is built.
    """
    parser = argparse.ArgumentParser(
        prog=_prog(),
        description="Torch-free, auditable claim verification with a local NLI cross-encoder.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    # add_parser takes the plain action type; the parsers it makes are SubcommandParser.
    subparsers = typing.cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=SubcommandParser),
    )
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    for name in SUBCOMMANDS:
        if chosen is None or name == chosen:
            subcommand(name).add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=SUMMARIES[name])
    return parser


def main(
    argv: Optional[Sequence[str]] = None,
    *,
    make_verifier: "Optional[Callable[[ClaimVerificationConfig, RuntimeOptions], ClaimVerifier]]" = None,
) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the subcommand, return the exit status.

    Args:
        argv: the arguments after the program name.
        make_verifier: builds the verifier from the decision configuration and
            the runtime settings; default ``ClaimVerifier(config, runtime=runtime)``
            (tests pass one over a scripted scorer).

    Argument errors exit through argparse with status 2 (it raises
    :class:`SystemExit`); every other user or runtime error is one line on
    stderr and a returned status (see the module docstring).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments).parse_args(arguments)
    context = Context() if make_verifier is None else Context(make_verifier=make_verifier)
    func: Callable[[argparse.Namespace, Context], int] = args.func
    try:
        with _sigterm_unwinds():
            return func(args, context)
    except (Exception, KeyboardInterrupt, Terminated) as exc:
        status = report(exc)
        if status is None:
            raise
        return status


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While a subcommand runs, SIGTERM raises :class:`~verifier.cli.errors.Terminated` (as Ctrl-C raises
    ``KeyboardInterrupt``), so temporary files are removed before the process exits 143.

    Only in the main thread (signal handlers can only be set there); the
    previous handler is restored afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

"""``check``: read stored results back and report every record whose digests or structure do not hold.

Usage::

    python -m verifier check RESULTS.jsonl        # or - for stdin

Each line of ``RESULTS`` is one :class:`~verifier.types.ClaimVerification`
as ``verify`` writes it. Every record is checked with
:func:`verifier.decision.check.check_result`: ``claim_sha256``, ``evaluation_id`` and
``result_sha256`` are recomputed from the record's own fields (an edited
status, group, score or claim no longer matches), and the status must agree
with the groups. A problem is reported as ``RESULTS line N: <what>``; a
summary goes to stderr unless ``--quiet``. ``configuration_sha256`` and
``evidence_sha256`` need the original inputs and are checked by the library
function when it is given them.

Exit status: 0 every record checks out; 1 some record does not; 2 a line is
not a result record (or bad usage).
"""

from __future__ import annotations

import argparse
from typing import Optional

from ..decision.check import check_result
from ..options import InputLimits
from .common import Context, add_limits
from .errors import EXIT_FAILURE, EXIT_OK, UsageError, err
from .inputs import open_lines

__all__ = ["add_parser", "run"]

#: Problems reported one by one before the rest are only counted.
_MAX_REPORTED = 50


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``check``."""
    parser = subparsers.add_parser(
        "check",
        help="check stored results: recompute their digests and report edited records",
        description=(
            "Read ClaimVerification JSON Lines (as verify writes them) and report every record whose status, "
            "groups, scores or claim no longer match its digests."
        ),
    )
    parser.add_argument("results", metavar="RESULTS", help="JSON Lines of results (or - for stdin)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    add_limits(parser.add_argument_group("input limits"))
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``check`` (``context`` is unused: no model is needed)."""
    limit = args.max_line_bytes if args.max_line_bytes is not None else InputLimits().max_request_bytes
    source = "<stdin>" if args.results == "-" else args.results
    checked = bad = reported = 0
    invalid: list[str] = []
    for number, text in open_lines(args.results, limit):
        if not text.strip():
            continue
        try:
            report = check_result(text.strip())
        except ValueError as exc:
            invalid.append(f"error: {source} line {number}: {exc}")
            continue
        checked += 1
        if report.ok:
            continue
        bad += 1
        for problem in report.problems:
            if reported < _MAX_REPORTED:
                err(f"{source} line {number}: {problem}")
            reported += 1
    for line in invalid[:_MAX_REPORTED]:
        err(line)
    if invalid:
        raise UsageError(f"error: {len(invalid)} line{'s' if len(invalid) != 1 else ''} of {source} are not result records")
    if reported > _MAX_REPORTED:
        err(f"... and {reported - _MAX_REPORTED} more problems")
    if not args.quiet:
        err(f"checked {checked} record{'s' if checked != 1 else ''}: {checked - bad} ok, {bad} with problems")
    return EXIT_FAILURE if bad else EXIT_OK


"""Errors of the command line: exit codes, one-line messages, and the exception-to-status mapping.

Every error reaches the user as one line on stderr, never a traceback:
:class:`UsageError` and :class:`Failure` carry their finished message (it
starts with ``error:``), and :func:`report` words every other exception a
subcommand may raise and picks its exit status (see the table in
:func:`report`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Optional

from pydantic import ValidationError

from ..types import ClaimVerificationError
from ..rows import validation_problem
from ..messages import printable
from ..validation import strip_pydantic_links

__all__ = [
    "EXIT_OK",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_INTERRUPTED",
    "EXIT_SKIPPED",
    "EXIT_TERMINATED",
    "UsageError",
    "Terminated",
    "Failure",
    "err",
    "first_line",
    "one_line",
    "validation_problem",
    "validation_detail",
    "report",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
#: ``verify --skip-invalid --fail-on-skip`` skipped at least one row (results were written).
EXIT_SKIPPED = 3
EXIT_INTERRUPTED = 130
#: SIGTERM (128 + 15): handled like Ctrl-C, every temporary file removed.
EXIT_TERMINATED = 143


class UsageError(Exception):
    """A user error reported as one line with :data:`EXIT_USAGE`."""


class Failure(Exception):
    """A runtime failure reported as one line with :data:`EXIT_FAILURE`."""


class Terminated(BaseException):
    """SIGTERM arrived: unwinds like ``KeyboardInterrupt`` so every ``finally`` cleans up."""


def say_on_interrupt(stack: contextlib.ExitStack, what: Callable[[], str]) -> None:
    """Print ``what()`` when Ctrl-C or SIGTERM unwinds ``stack``: what the interrupted run left, on the line
    before :func:`report`'s ``interrupted``."""

    def hook(kind: Any, exc: Any, traceback: Any) -> bool:
        if kind is not None and issubclass(kind, (KeyboardInterrupt, Terminated)):
            try:
                err(what())
            except Exception:  # pragma: no cover - a note never replaces the interruption
                pass
        return False

    stack.push(hook)


def first_line(exc: BaseException) -> str:
    """The first line of ``str(exc)``, or the exception's type name when it has no message."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def err(message: str) -> None:
    """Print ``message`` to stderr without pydantic's "For further information visit ..." links, with any
    terminal control character it echoes from the input made visible (:func:`verifier.messages.printable`).
    While a progress bar is drawn (:mod:`verifier.cli.progress`) the line goes above it, not into it."""
    text = printable(strip_pydantic_links(message))
    tqdm_module = sys.modules.get("tqdm")
    if tqdm_module is not None and getattr(tqdm_module.tqdm, "_instances", None):
        with tqdm_module.tqdm.external_write_mode(file=sys.stderr):
            print(text, file=sys.stderr, flush=True)
        return
    print(text, file=sys.stderr, flush=True)


def one_line(text: str) -> str:
    """``text`` as one line: pydantic links dropped, lines joined by a space."""
    return " ".join(line.strip() for line in strip_pydantic_links(text).splitlines() if line.strip())


def validation_detail(exc: ValidationError) -> str:
    """``field F: message`` (just ``message`` when the error is about the whole document)."""
    location, message = validation_problem(exc)
    return f"field {location}: {message}" if location else message


def report(exc: BaseException) -> Optional[int]:
    """Print the one-line message for ``exc`` and return its exit status.

    ==============================  ==========================================  ======
    exception                       message                                     status
    ==============================  ==========================================  ======
    :class:`UsageError`             its own                                     2
    :class:`Failure`                its own                                     1
    ClaimVerificationError          ``error: <message on one line>``            1
    pydantic ``ValidationError``    ``error: <title>: field F: <words>``        2
    other ``ValueError``            ``error: <first line>``                     2
    ``UnicodeEncodeError``          ``error: cannot write output: <reason>``    1
    ``KeyboardInterrupt``           ``interrupted``                             130
    :class:`Terminated` (SIGTERM)   ``terminated``                              143
    ``BrokenPipeError``             none (stdout redirected to /dev/null)       1
    other ``OSError``               ``error: <strerror>[: <filename>]``         1
    ==============================  ==========================================  ======

    Returns ``None`` (and prints nothing) for any other exception, which the
    caller re-raises: it is a bug, not a user error.
    """
    if isinstance(exc, UsageError):
        err(str(exc))
        return EXIT_USAGE
    if isinstance(exc, Failure):
        err(str(exc))
        return EXIT_FAILURE
    if isinstance(exc, ClaimVerificationError):
        err(f"error: {one_line(str(exc))}")
        return EXIT_FAILURE
    if isinstance(exc, ValidationError):  # validation the CLI did not anticipate: still one line
        err(f"error: {exc.title}: {validation_detail(exc)}")
        return EXIT_USAGE
    if isinstance(exc, UnicodeEncodeError):  # an output that cannot take the text; not bad input
        err(f"error: cannot write output: {exc.reason} ({exc.encoding} cannot encode {exc.object[exc.start:exc.end]!r})")
        return EXIT_FAILURE
    if isinstance(exc, ValueError):
        err(f"error: {first_line(exc)}")
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        err("interrupted")
        return EXIT_INTERRUPTED
    if isinstance(exc, Terminated):
        err("terminated")
        return EXIT_TERMINATED
    if isinstance(exc, BrokenPipeError):
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:  # pragma: no cover
            pass
        return EXIT_FAILURE
    if isinstance(exc, OSError):
        err(f"error: {exc.strerror or one_line(str(exc))}" + (f": {exc.filename}" if exc.filename else ""))
        return EXIT_FAILURE
    return None

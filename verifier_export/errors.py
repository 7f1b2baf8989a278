"""Errors of ``python -m export``.

Exception tree::

    RuntimeError
    └── ExportError          any export failure: bad source, unwritable output, export crash (exit 1)
        ├── DownloadError    a hub id could not be downloaded at the requested revision (exit 1)
        ├── ParityError      the golden parity gate failed; no manifest was written (exit 3)
        ├── ManifestError    an existing directory's files do not match its manifest (exit 4)
        └── LabelError       id2label is not exactly contradiction/entailment/neutral (exit 5)

Every error message is one line naming the file, field or pair concerned; the
CLI prints it as ``export: error: <message>`` and exits with ``exit_code``.
:class:`ParityError` also carries a multi-line table of the worst pairs.
"""

from __future__ import annotations

__all__ = ["ExportError", "DownloadError", "ParityError", "ManifestError", "LabelError", "report_error", "one_line"]


class ExportError(RuntimeError):
    """An export failed; nothing was written at the target directory.

    Attributes:
        exit_code: process exit status the CLI uses for this error.
    """

    exit_code: int = 1


class DownloadError(ExportError):
    """Downloading a hub id at the requested revision failed (offline without a cached
    snapshot, unknown repository or revision, network error)."""


class ParityError(ExportError):
    """The exported ONNX model disagrees with PyTorch on the golden pairs.

    Attributes:
        report: a readable multi-line table of the worst pairs (may be empty).
    """

    exit_code = 3

    def __init__(self, message: str, *, report: str = "") -> None:
        super().__init__(message)
        self.report = report


class ManifestError(ExportError):
    """A model directory's manifest is missing, malformed or contradicted by its files."""

    exit_code = 4


class LabelError(ExportError):
    """The model's ``id2label`` is not exactly {contradiction, entailment, neutral}."""

    exit_code = 5


def report_error(exc: ExportError, prog: str) -> int:
    """Print ``exc`` as the CLI does (a parity table first, then one ``<prog>: error:`` line); return its exit code."""
    import sys

    if isinstance(exc, ParityError) and exc.report:
        print(exc.report, file=sys.stderr)
    print(f"{prog}: error: {exc}", file=sys.stderr)
    return exc.exit_code


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line (whitespace runs collapsed), or its type name when it has none."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__

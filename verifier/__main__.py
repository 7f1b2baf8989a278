"""``python -m verifier``: the command line (implemented in :mod:`verifier.cli`).

Usage::

    python -m verifier verify INPUT [-o OUT.jsonl] [options]
    python -m verifier verify --claim "..." --evidence "..." [--evidence "..."]
    python -m verifier info [--model-dir DIR]

Run ``python -m verifier verify --help`` for every option.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn

from .cli import main

__all__ = ["main", "console_main", "exit_process"]


def exit_process(status: int) -> NoReturn:
    """End the process with ``status`` without freeing what it loaded.

    Freeing a loaded model at interpreter exit takes 0.1–0.2 s (the tokenizer's
    vocabulary, the runtime's weights) that the kernel reclaims at once anyway
    (docs/performance.md, "Exit"); mypy's command line ends the same way. The
    exit handlers still run (``atexit``: logging's flush, a coverage tool's
    data, temporary files), then the standard streams are flushed. Everything a
    subcommand writes is closed before :func:`verifier.cli.main` returns. Where
    Ray was imported (it stops the local cluster it started at exit), or a
    stream cannot be flushed (a closed pipe, which the normal exit reports as
    Python does), the normal exit runs instead.

    Raises:
        SystemExit: on the normal exit (``status`` as its code).
    """
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's; absent elsewhere
    if "ray" not in sys.modules and run_exit_handlers is not None:
        run_exit_handlers()  # each runs once: CPython clears the list afterwards
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except Exception:
            pass
        else:
            os._exit(status)
    raise SystemExit(status)


def console_main() -> NoReturn:
    """The ``onnx-claim-verifier`` script and ``python -m verifier``: :func:`verifier.cli.main`, then
    :func:`exit_process` with its status (usage errors and ``--help`` exit through argparse as usual)."""
    exit_process(main())


if __name__ == "__main__":
    console_main()

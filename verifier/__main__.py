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
from typing import NoReturn, Optional

#: The import names of the runtime's dependencies (pyproject.toml ``dependencies``, and pydantic's own).
RUNTIME_MODULES = ("onnxruntime", "tokenizers", "numpy", "huggingface_hub", "pydantic", "pydantic_core",
                   "annotated_types", "typing_extensions", "tqdm", "platformdirs")


def missing_dependency(exc: BaseException) -> Optional[str]:
    """The one-line error for an interpreter without the runtime's dependencies (``exc`` a
    ``ModuleNotFoundError`` for one of :data:`RUNTIME_MODULES`), else ``None``.

    Issue 50: ``python -m verifier info`` with such an interpreter ended in a 26-line traceback, where the
    exporter names what is missing in one line.
    """
    name = getattr(exc, "name", None) or ""
    if not isinstance(exc, ModuleNotFoundError) or name.split(".")[0] not in RUNTIME_MODULES:
        return None
    return (
        f"error: No module named '{name}': this interpreter ({sys.executable}) does not have the dependencies of "
        "onnx-claim-verifier; run the one it was installed for (in a checkout: .venv/bin/python -m verifier, after "
        "bash scripts/setup.sh), or install it here: pip install '/path/to/checkout' or a wheel built there with "
        "python -m build (not on PyPI)"
    )


try:
    from .cli import main
except ModuleNotFoundError as _exc:  # an interpreter without the dependencies: one line, not a traceback
    if missing_dependency(_exc) is None:
        raise
    print(missing_dependency(_exc), file=sys.stderr)
    raise SystemExit(1) from None

__all__ = ["main", "console_main", "exit_process", "missing_dependency"]


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
    :func:`exit_process` with its status (usage errors and ``--help`` exit through argparse as usual); a
    dependency found missing while it runs is one line (:func:`missing_dependency`)."""
    try:
        status = main()
    except ModuleNotFoundError as exc:
        message = missing_dependency(exc)
        if message is None:
            raise
        print(message, file=sys.stderr)
        status = 1
    exit_process(status)


if __name__ == "__main__":
    console_main()

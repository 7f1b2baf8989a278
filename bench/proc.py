"""The one way bench starts a Python subprocess: :func:`run_python`.

Every child (``python -m bench.worker``, ``python -m bench.interleave``,
``python -m bench.flops``, ``python -m export``, ``python -m export.variants``
and the ``import verifier`` probes) runs with this interpreter, from the
repository root, with the repository first on ``PYTHONPATH``. Measurement
children also get their BLAS/OpenMP thread counts pinned before anything
loads (:func:`python_env` with ``threads``), so every side runs with the same
threads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

__all__ = ["REPO_ROOT", "THREAD_ENV_VARS", "Log", "python_env", "run_python"]

#: Repository root (the parent of ``bench/``).
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Environment variables that set BLAS / OpenMP thread counts.
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: Where progress lines go.
Log = Callable[[str], None]

# Lines of child output never worth logging (a tokenizers warning repeated per load).
_NOISE = ("regex pattern",)


def python_env(threads: Optional[int] = None) -> dict[str, str]:
    """This process's environment with the repository first on ``PYTHONPATH``.

    With ``threads``: also pin ``OMP/MKL/OPENBLAS_NUM_THREADS`` to it and keep
    transformers quiet and offline (what every measurement child gets).
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if threads is not None:
        for name in THREAD_ENV_VARS:
            env[name] = str(threads)
        env.setdefault("TRANSFORMERS_VERBOSITY", "error")
        env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def run_python(
    args: Sequence[str],
    *,
    env: Optional[Mapping[str, str]] = None,
    timeout: Optional[float] = None,
    log: Optional[Log] = None,
    check: bool = True,
) -> "subprocess.CompletedProcess[str]":
    """Run ``python ARGS`` (this interpreter) in the repository root and wait for it.

    Args:
        args: the interpreter's arguments, e.g. ``["-m", "bench.worker", ...]``.
        env: the child's environment (default: :func:`python_env` without threads).
        timeout: seconds before the child is killed (default: no limit).
        log: when given, every non-empty line the child printed (stdout, then
            stderr) is passed to it, indented by two spaces.
        check: raise when the child exits with a non-zero status.

    Returns:
        The completed process (``stdout`` and ``stderr`` as text).

    Raises:
        RuntimeError: the child timed out, or failed while ``check`` is set
            (the message names the command and its exit status).
    """
    command = [sys.executable, *args]
    shown = " ".join(["python", *args[:4]]) + (" ..." if len(args) > 4 else "")
    try:
        completed = subprocess.run(
            command,
            cwd=REPO_ROOT,
            env=dict(env) if env is not None else python_env(),
            text=True,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{shown} did not finish within {timeout:.0f} s") from exc
    if log is not None:
        for line in (completed.stdout + completed.stderr).splitlines():
            if line.strip() and not any(noise in line for noise in _NOISE):
                log("  " + line)
    if check and completed.returncode != 0:
        raise RuntimeError(f"{shown} failed with exit status {completed.returncode}")
    return completed

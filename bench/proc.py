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
import threading
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


def _worth_logging(line: str) -> bool:
    return bool(line.strip()) and not any(noise in line for noise in _NOISE)


def _run_streaming(
    command: Sequence[str], env: Mapping[str, str], timeout: Optional[float], log: Log
) -> "subprocess.CompletedProcess[str]":
    """:func:`subprocess.run` with the child's stderr passed to ``log`` line by line as it comes."""
    out: list[str] = []
    err: list[str] = []
    with subprocess.Popen(
        list(command), cwd=REPO_ROOT, env=dict(env), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as process:

        def pump_stderr() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                err.append(line)
                if _worth_logging(line):
                    log("  " + line.rstrip("\n"))

        def pump_stdout() -> None:
            assert process.stdout is not None
            out.append(process.stdout.read())

        pumps = [threading.Thread(target=pump_stderr, daemon=True), threading.Thread(target=pump_stdout, daemon=True)]
        for pump in pumps:
            pump.start()
        try:
            returncode = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        finally:
            for pump in pumps:
                pump.join(timeout=10)
    return subprocess.CompletedProcess(list(command), returncode, "".join(out), "".join(err))


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
        log: when given, every non-empty line the child printed is passed to
            it, indented by two spaces: its stderr lines as they come (progress
            of a long export shows while it runs), its stdout when it ends.
        check: raise when the child exits with a non-zero status.

    Returns:
        The completed process (``stdout`` and ``stderr`` as text).

    Raises:
        RuntimeError: the child timed out, or failed while ``check`` is set
            (the message names the command, its exit status and the last line
            the child wrote to stderr, e.g. its ``ModuleNotFoundError``).
    """
    command = [sys.executable, *args]
    shown = " ".join(["python", *args[:4]]) + (" ..." if len(args) > 4 else "")
    child_env = dict(env) if env is not None else python_env()
    try:
        if log is None:
            completed = subprocess.run(
                command, cwd=REPO_ROOT, env=child_env, text=True, capture_output=True, timeout=timeout, check=False,
            )
        else:
            completed = _run_streaming(command, child_env, timeout, log)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"{shown} did not finish within {timeout:.0f} s") from exc
    if log is not None:
        for line in completed.stdout.splitlines():
            if _worth_logging(line):
                log("  " + line)
    if check and completed.returncode != 0:
        last = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
        said = f": {last[-1]}" if last else ""
        raise RuntimeError(f"{shown} failed with exit status {completed.returncode}{said}")
    return completed

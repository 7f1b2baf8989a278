"""Messages name the exporter as the user can run it where they are.

Regression: outside a checkout, the library's and the command line's "model directory missing"
errors said `python -m export`, which exists only in a checkout (its ``export/`` shim);
`python -m verifier_export --help` called itself `python -m export`; and an export run outside
a checkout suggested `verify examples/claims.jsonl`, a file that is not there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from verifier.messages import export_command, python_command

ROOT = Path(__file__).resolve().parents[1]


def _activated(monkeypatch: pytest.MonkeyPatch) -> None:
    """``PATH`` as an activated virtualenv has it: this interpreter's folder first."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _not_activated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``PATH`` where ``python`` is another interpreter (the system's), as in a checkout whose .venv is not activated."""
    other = tmp_path / "system-bin"
    other.mkdir(exist_ok=True)
    (other / "python").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (other / "python").chmod(0o755)
    monkeypatch.setenv("PATH", str(other))


@pytest.mark.skipif(Path(sys.executable).name != "python", reason="the test interpreter is not named python")
def test_a_checkout_uses_its_shim_and_anywhere_else_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 34): ``python -m export`` failed after ``pip install``; the shim is installed now,
    so messages outside the checkout name it too, unless another ``export`` would answer there."""
    _activated(monkeypatch)
    monkeypatch.chdir(ROOT)
    assert export_command() == "python -m export"
    monkeypatch.chdir(tmp_path)
    assert export_command() == "python -m export"  # the installed shim answers here
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "__main__.py").write_text("print('someone else’s export')\n", encoding="utf-8")
    assert export_command() == "python -m verifier_export"  # a user's own `export` package is not ours


def test_a_python_on_path_that_is_another_interpreter_is_not_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (new-user trial): in a checkout whose .venv was not activated, messages said
    ``python -m export``; that ``python`` is the system's, which fails with "No module named 'torch'"."""
    _not_activated(monkeypatch, tmp_path)
    executable = Path(os.path.abspath(sys.executable))
    monkeypatch.chdir(executable.parents[2])  # the folder holding .venv: the interpreter is under it
    assert python_command() == str(executable.relative_to(executable.parents[2]))  # .venv/bin/python
    monkeypatch.chdir(tmp_path)  # elsewhere: the whole path
    assert python_command() == str(executable)
    assert export_command() == f"{executable} -m export"
    monkeypatch.setenv("PATH", "")  # no python on PATH at all
    assert python_command() == str(executable)


def _run(cwd: Path, *args: str, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_the_missing_model_error_outside_a_checkout_names_a_command_that_runs_there(tmp_path: Path) -> None:
    proc = _run(tmp_path, "-m", "verifier", "verify", "--model-dir", str(tmp_path / "none"),
                "--claim", "The launch is on Tuesday.", "--evidence", "The launch moved to Wednesday.",
                env={**os.environ, "PATH": str(tmp_path)})  # no python on PATH: the interpreter's whole path
    assert proc.returncode == 1
    assert f"create it once with `{os.path.abspath(sys.executable)} -m export --output {tmp_path / 'none'}`" in proc.stderr
    shown = _run(tmp_path, "-m", "verifier_export", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python -m verifier_export ")
    shim = _run(tmp_path, "-m", "export", "--help")  # what the message says runs there (issue 34: it did not)
    assert shim.returncode == 0 and shim.stdout.startswith("usage: python -m export "), shim.stderr


def test_the_checkout_shim_still_calls_itself_python_m_export() -> None:
    shown = _run(ROOT, "-m", "export", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python -m export ")


def test_the_variants_command_names_itself_as_it_was_typed(tmp_path: Path) -> None:
    """Regression (new-user trial): ``python -m export.variants`` reported its errors as
    ``verifier_export.variants: error:``, a command the user never typed."""
    for module in ("export.variants", "verifier_export.variants"):
        proc = _run(ROOT, "-m", module, str(tmp_path / "absent"), "--variants", "int8")
        assert proc.returncode != 0 and proc.stderr.startswith(f"{module}: error: model directory "), proc.stderr
        usage = _run(ROOT, "-m", module, "--help")
        assert usage.stdout.startswith(f"usage: python -m {module} "), usage.stderr

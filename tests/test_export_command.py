"""Messages name the exporter as the user can run it where they are.

Regression: outside a checkout, the library's and the command line's "model directory missing"
errors said `python -m export`, which exists only in a checkout (its ``export/`` shim);
`python -m verifier_export --help` called itself `python -m export`; and an export run outside
a checkout suggested `verify examples/claims.jsonl`, a file that is not there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from verifier.messages import export_command

ROOT = Path(__file__).resolve().parents[1]


def test_a_checkout_uses_its_shim_and_anywhere_else_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression (issue 34): ``python -m export`` failed after ``pip install``; the shim is installed now,
    so messages outside the checkout name it too, unless another ``export`` would answer there."""
    monkeypatch.chdir(ROOT)
    assert export_command() == "python -m export"
    monkeypatch.chdir(tmp_path)
    assert export_command() == "python -m export"  # the installed shim answers here
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "__main__.py").write_text("print('someone else’s export')\n", encoding="utf-8")
    assert export_command() == "python -m verifier_export"  # a user's own `export` package is not ours


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_missing_model_error_outside_a_checkout_names_a_command_that_runs_there(tmp_path: Path) -> None:
    proc = _run(tmp_path, "-m", "verifier", "verify", "--model-dir", str(tmp_path / "none"),
                "--claim", "The launch is on Tuesday.", "--evidence", "The launch moved to Wednesday.")
    assert proc.returncode == 1
    assert f"create it once with `python -m export --output {tmp_path / 'none'}`" in proc.stderr
    shown = _run(tmp_path, "-m", "verifier_export", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python -m verifier_export ")
    shim = _run(tmp_path, "-m", "export", "--help")  # what the message says runs there (issue 34: it did not)
    assert shim.returncode == 0 and shim.stdout.startswith("usage: python -m export "), shim.stderr


def test_the_checkout_shim_still_calls_itself_python_m_export() -> None:
    shown = _run(ROOT, "-m", "export", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: python -m export ")

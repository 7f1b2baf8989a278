"""STYLE §19: mypy --disallow-untyped-defs over verifier/ and export/, plus a typed usage file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_passes_on_the_packages_and_typed_usage() -> None:
    pytest.importorskip("mypy")
    targets = ["verifier", "tests/typed_usage.py"] + (["export"] if (ROOT / "export").is_dir() else [])
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--disallow-untyped-defs", "--ignore-missing-imports",
         "--no-error-summary", "--cache-dir", str(ROOT / ".mypy_cache"), *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

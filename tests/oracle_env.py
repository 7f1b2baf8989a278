"""Where the PRME oracle's virtualenv is, and whether a test may skip without it.

``.venv-prme`` is built by ``bash scripts/setup_oracle.sh`` (CI does it in ``.ci/run``). On a
developer machine without it, the PRME differential tests skip and say how to build it; under CI
(``CI`` set) a missing oracle is a failure, never a skip.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORACLE_PYTHON = ROOT / ".venv-prme" / "bin" / "python"


def oracle_python() -> Path:
    """The oracle interpreter; skips (or fails under CI) when it has not been built."""
    if ORACLE_PYTHON.exists():
        probe = subprocess.run(
            [str(ORACLE_PYTHON), "-c", "import prme, bpe_openai, verifier"], capture_output=True, text=True, timeout=120
        )
        if probe.returncode == 0:
            return ORACLE_PYTHON
        reason = f"{ORACLE_PYTHON} cannot import prme, bpe_openai and verifier: {probe.stderr.strip()[-300:]}"
    else:
        reason = f"{ORACLE_PYTHON} does not exist"
    message = f"PRME oracle unavailable ({reason}); build it with `bash scripts/setup_oracle.sh`"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)

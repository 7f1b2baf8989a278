"""onnxruntime's local telemetry store stays off (issue 49 item 6; docs/security.md, "Network").

Regression: one ``verify`` left a device id and queued telemetry events under the user's cache directory
(``Microsoft/DeveloperTools/.onnxruntime/``: onnxruntime's 1DS telemetry, on from its first import), which
the security notes did not mention. ``import verifier`` now sets ``ORT_DISABLE_TELEMETRY=1`` (unless set).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _verify_in_fresh_home(home: Path, model_dir: Path, **env: str) -> list[Path]:
    """Run one ``verify --claim`` with ``home`` as HOME and cache directory; the files left there."""
    home.mkdir()
    environment = {key: value for key, value in os.environ.items() if key != "ORT_DISABLE_TELEMETRY"}
    environment.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), **env)
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "verify", "--claim", "The launch is Tuesday.", "--evidence",
         "The launch is Tuesday.", "--model-dir", str(model_dir), "--json"],
        capture_output=True, text=True, env=environment, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return sorted(path.relative_to(home) for path in home.rglob("*") if path.is_file())


def test_verify_leaves_no_onnxruntime_telemetry_store(tmp_path: Path, tiny_model_dir: Path) -> None:
    """Nothing is written under HOME (nor the cache directory) by a run with ORT_DISABLE_TELEMETRY unset."""
    assert _verify_in_fresh_home(tmp_path / "off", tiny_model_dir) == []


def test_the_store_appears_when_the_user_turns_telemetry_on(tmp_path: Path, tiny_model_dir: Path) -> None:
    """The control for the test above: with the user's own ORT_DISABLE_TELEMETRY=0 onnxruntime's store appears,
    so an empty HOME above means the setting held, not that onnxruntime never writes one. Whether onnxruntime
    writes its store at all depends on the machine (one CI machine wrote none even with telemetry on), so where
    it writes nothing this control is skipped, saying so, rather than failed."""
    import onnxruntime

    written = _verify_in_fresh_home(tmp_path / "on", tiny_model_dir, ORT_DISABLE_TELEMETRY="0")
    if not written:
        pytest.skip(f"onnxruntime {onnxruntime.__version__} wrote no telemetry store on this machine even with "
                    "ORT_DISABLE_TELEMETRY=0: the control cannot be shown here")
    assert Path(".cache/Microsoft/DeveloperTools/.onnxruntime/deviceid") in written

"""``python -m verifier`` ends without freeing the loaded model, and loses nothing doing so.

:func:`verifier.__main__.exit_process` runs the exit handlers, flushes the streams and ends the
process at once (docs/performance.md, "Exit"). What these tests hold it to: exit statuses are the
CLI's, everything written reaches its file or pipe, ``atexit`` handlers (a coverage tool's, a
wrapper's) still run, the objects alive at the end are *not* finalized (the point of it), and with
Ray imported the normal exit runs (Ray stops its local cluster from its exit handler).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from verifier.__main__ import exit_process

ROOT = Path(__file__).resolve().parents[1]

#: Registers an atexit handler and an object whose finalizer would write to stderr, then runs the
#: CLI as ``python -m verifier`` does (argv after ``--``).
WRAPPER = """
import atexit, os, runpy, sys
marker, argv = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(marker, "w").write("atexit ran"))
class Held:
    def __del__(self):
        os.write(2, b"finalized\\n")  # at teardown, as a loaded model's memory is freed
held = Held()
sys.argv = ["verifier", *argv]
runpy.run_module("verifier", run_name="__main__")
"""


def _run(tmp_path: Path, *argv: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    marker = tmp_path / "marker"
    return subprocess.run(
        [sys.executable, "-c", WRAPPER, str(marker), *argv], cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE,
        text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_a_one_off_exits_at_once_with_its_output_and_atexit_handlers(tiny_model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    with out.open("w") as handle:
        proc = _run(tmp_path, "verify", "--model-dir", str(tiny_model_dir), "--claim", "Ann lives in Oslo.",
                    "--evidence", "Ann moved to Oslo in 2020.", "--json", stdout=handle)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())  # the whole line reached the file, flushed before the exit
    assert result["claim"] == "Ann lives in Oslo."
    assert (tmp_path / "marker").read_text() == "atexit ran"
    assert "finalized" not in proc.stderr  # objects still alive were not torn down


def test_a_failing_run_keeps_its_status(tmp_path: Path) -> None:
    proc = _run(tmp_path, "verify", "--model-dir", str(tmp_path / "absent"), "--claim", "Ann lives in Oslo.",
                "--evidence", "Ann moved to Oslo.")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") >= 1 and "Traceback" not in proc.stderr
    assert (tmp_path / "marker").read_text() == "atexit ran"
    assert "finalized" not in proc.stderr


def test_usage_errors_exit_through_argparse(tmp_path: Path) -> None:
    proc = _run(tmp_path, "verify", "--no-such-option")
    assert proc.returncode == 2
    assert "unrecognized arguments: --no-such-option" in proc.stderr
    assert "finalized" in proc.stderr  # SystemExit from argparse: the normal exit, nothing was loaded


def test_with_ray_imported_the_normal_exit_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))
    with pytest.raises(SystemExit) as raised:
        exit_process(3)
    assert raised.value.code == 3

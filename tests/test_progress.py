"""Every step over a few seconds shows progress, on a terminal and in logs.

Regression: ``scripts/setup.sh`` printed nothing for ~77 s (``pip --quiet``),
and a base-size export nothing for 86 s and then everything at once. Now
``scripts/progress.sh`` (setup, CI) and :mod:`verifier_export.progress`
(``python -m export``, ``python -m export.variants``) print progress lines
with timings on stderr, flushed as they happen.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verifier_export.progress import PROGRESS_AFTER_ENV, StageReporter

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- item 6: progress of long steps


def _bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source scripts/progress.sh; {script}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def test_a_shell_step_says_when_it_starts_while_it_runs_and_when_it_ends() -> None:
    proc = _bash('step "installing things" bash -c "echo Collecting thing==1.0; sleep 2.6"', PROGRESS_EVERY="1")
    assert proc.returncode == 0 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert re.fullmatch(r"\[setup +\d+s\] installing things \.\.\.", lines[0]), lines
    assert re.fullmatch(r"\[setup +\ds\]   still installing things \(\d s\): Collecting thing==1\.0", lines[1]), lines
    assert re.fullmatch(r"\[setup +\d+s\]   installing things: done in \d+ s", lines[-1]), lines


def test_a_failed_shell_step_shows_its_output_and_status() -> None:
    proc = _bash('step "breaking" bash -c "echo the reason; exit 7"; echo not reached')
    assert proc.returncode == 7 and "not reached" not in proc.stdout
    lines = [re.sub(r"\[setup +\d+s\]", "[setup t]", line) for line in proc.stderr.splitlines()]
    assert [re.sub(r"after \d+ s", "after N s", line) for line in lines] == [
        "[setup t] breaking ...",
        "[setup t] FAILED: breaking (exit status 7 after N s); its output:",
        "the reason",
    ]


def test_every_install_of_the_setup_script_runs_as_a_step_without_quiet() -> None:
    script = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    assert "--quiet" not in script and "source scripts/progress.sh" in script
    commands = [line.strip() for line in script.replace("\\\n", " ").splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    for line in commands:
        if "pip install" in line or "-m venv" in line:
            assert line.startswith("step "), line


def test_the_first_line_comes_within_the_delay_and_then_every_stage_as_it_starts() -> None:
    """Regression (issue 50, new-user trial): the export's first line came after ~5 s, stages shorter than
    5 s were never shown, and "done in" figures disagreed with the stamps around them (a stage announced
    5 s late). Now the stage running at the first line says when it started, every later stage is
    announced as it starts, and each "done in" is the difference of its stage's stamps."""
    out = io.StringIO()
    reporter = StageReporter("export", out, after=0.3, every=60.0)
    reporter("reading config.json")
    deadline = time.monotonic() + 60
    while not out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    reporter("exporting model.onnx")  # announced as it starts: a line was printed already
    time.sleep(0.2)
    reporter.close()
    lines = out.getvalue().splitlines()
    stamp = r"export \[ *([\d.]+)s\] "
    first = re.fullmatch(stamp + r"reading config\.json \.\.\. \(started at ([\d.]+)s\)", lines[0])
    assert first and float(first.group(1)) >= 0.3 and float(first.group(2)) < 0.1, lines
    done = re.fullmatch(stamp + r"reading config\.json: done in ([\d.]+) s", lines[1])
    assert done and abs(float(done.group(1)) - float(first.group(2)) - float(done.group(2))) <= 0.11, lines
    second = re.fullmatch(stamp + r"exporting model\.onnx \.\.\.", lines[2])
    assert second and second.group(1) == done.group(1), lines  # no gap: it started as the first ended
    end = re.fullmatch(stamp + r"exporting model\.onnx: done in ([\d.]+) s", lines[3])
    assert end and abs(float(end.group(1)) - float(second.group(1)) - float(end.group(2))) <= 0.11, lines
    assert len(lines) == 4


def test_a_command_that_ends_before_the_first_line_prints_none() -> None:
    """An offline export stops within a second with one error line and one ``next:`` line (README): no
    stage line before them."""
    out = io.StringIO()
    with StageReporter("export", out, after=30.0) as reporter:
        reporter("resolving the revision")
        reporter("downloading")
    assert out.getvalue() == ""


def test_a_run_of_short_stages_is_not_silent_for_longer_than_the_threshold() -> None:
    """Regression (issue 34): ``export --smoke`` ran 8.7 s and a re-check 5.2 s before their first line,
    every stage being shorter than the 5 s threshold. Now silence itself is bounded."""
    out = io.StringIO()
    reporter = StageReporter("export", out, after=0.4, every=60.0)
    started = time.monotonic()
    for number in range(40):  # 40 stages of 0.05 s: none reaches the threshold alone
        reporter(f"stage {number}")
        time.sleep(0.05)
        if out.getvalue():
            break
    reporter.close()
    assert out.getvalue(), "2 s of short stages printed nothing"
    first = out.getvalue().splitlines()[0]
    assert re.fullmatch(r"export \[ *[\d.]+s\] stage \d+ \.\.\.( \(started at [\d.]+s\))?", first), first
    assert float(re.findall(r"[\d.]+", first)[0]) <= time.monotonic() - started


def test_a_failed_stage_gets_no_done_line() -> None:
    out = io.StringIO()
    with pytest.raises(ValueError):
        with StageReporter("export", out, after=0) as reporter:
            reporter("parity gate")
            raise ValueError("missed")
    assert re.sub(r"\[ *[\d.]+s\]", "[t]", out.getvalue()) == "export [t] parity gate ...\n"


@pytest.mark.export
def test_the_export_command_prints_its_stages_in_order(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT), PROGRESS_AFTER_ENV: "0"}
    proc = subprocess.run([sys.executable, "-m", "verifier_export", "--smoke", "--output", str(tmp_path / "m")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    stages = [re.sub(r"^export \[ *[\d.]+s\] ", "", line) for line in proc.stderr.splitlines()
              if line.startswith("export [") and "done in" not in line and "] still " not in line]
    assert [stage.split(" ")[0] for stage in stages] == [
        "importing", "building", "reading", "loading", "exporting", "parity", "writing", "moving",
    ], proc.stderr
    assert stages[4].startswith("exporting model.onnx with span attention (optimum-onnx, opset default)")
    lines = proc.stderr.splitlines()
    first_summary = next(i for i, line in enumerate(lines) if not line.startswith("export ["))
    assert lines[first_summary].startswith("RANDOM WEIGHTS") and lines[-1].startswith("next: "), proc.stderr
    assert not any(line.startswith("export [") for line in lines[first_summary:]), proc.stderr  # no stray lines
    assert proc.stdout == ""  # issue 34: the summary is a message too (stdout is for results)
    assert "RANDOM WEIGHTS" in proc.stderr


def test_a_rerun_of_the_setup_script_says_it_kept_the_venv_and_torch(tmp_path: Path) -> None:
    """Regression (issue 34): re-running ``scripts/setup.sh`` printed "creating .venv ... done" and
    "installing torch ... done in 0 s" over an existing ``.venv`` instead of saying it kept them.
    The script runs here over a stand-in ``.venv`` whose ``python`` reports torch 2.13.0 and whose pip
    does nothing, so what is checked is the script's own decisions."""
    (tmp_path / "scripts").mkdir()
    for name in ("setup.sh", "progress.sh"):
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/usr/bin/env bash\ncase "$1" in\n  --version) echo "Python 3.11.7";;\n'
                      '  -c) echo "2.13.0+cpu";;\nesac\nexit 0\n', encoding="utf-8")
    python.chmod(0o755)
    proc = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    said = [re.sub(r"^\[setup +\d+s\] ", "", line) for line in proc.stderr.splitlines()]
    assert "keeping the existing .venv (Python 3.11.7); delete it to start afresh" in said, said
    assert "keeping torch 2.13.0+cpu already in .venv" in said, said
    assert not any(line.startswith(("creating .venv", "installing torch")) for line in said), said
    python.write_text('#!/usr/bin/env bash\n[[ "$1" == --version ]] && echo "Python 3.11.7"\nexit 0\n', encoding="utf-8")
    fresh = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True, text=True, timeout=60)
    assert fresh.returncode == 0 and "installing torch==2.13.0" in fresh.stderr, fresh.stderr  # no torch yet: installed

"""Progress of ``verify``, ``check`` and ``assay`` when stderr is not a terminal (:mod:`verifier.cli.progress`).

Regression (issue 50, new-user trial): with stderr to a file, a 20,000-claim ``verify`` printed nothing
between 3.1 s and 68.6 s, ``check --inputs --rescore`` on 2,000 records nothing for 8.7 s and ``assay``
nothing for 6.6 s: the bar appeared only on a terminal (and not on a pseudo-terminal of 0 columns). Now
a log gets plain timestamped lines. The tests set the public ``$CLAIM_VERIFIER_PROGRESS_AFTER=0`` (first
line at once) rather than running for 5 s.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import struct
import subprocess
import sys
import termios
import uuid
from pathlib import Path

import pytest

from verifier.cli.progress import PROGRESS_AFTER_ENV, PROGRESS_EVERY_ENV, Progress, use_bar

ROOT = Path(__file__).resolve().parents[1]
ROWS = 40
LINE = r"{label} \[ *\d+\.\ds\] "


def _rows(labelled: bool = False) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for n in range(ROWS):
        row: dict[str, object] = {
            "id": f"r{n}", "claim": f"The review is on day {n}.",
            "evidence": [{"reference": "M1", "memory_id": str(uuid.UUID(int=n + 1)), "text": f"We moved the review to day {n}."}],
        }
        if labelled:
            row["label"] = "supported" if n % 2 else "not_supported"
        rows.append(row)
    return rows


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _run(*argv: str, after: str = "0", every: str = "600") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), PROGRESS_AFTER_ENV: after, PROGRESS_EVERY_ENV: every}
    return subprocess.run([sys.executable, "-m", "verifier", *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def _progress_lines(stderr: str, label: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.match(LINE.format(label=label), line)]


def test_verify_writes_plain_progress_lines_to_a_pipe_and_results_to_stdout(tiny_model_dir: Path, tmp_path: Path) -> None:
    source = _write(tmp_path / "claims.jsonl", _rows())
    proc = _run("verify", str(source), "--model-dir", str(tiny_model_dir), "-o", "-", every="0.01")
    assert proc.returncode == 0, proc.stderr
    assert len([json.loads(line) for line in proc.stdout.splitlines()]) == ROWS  # stdout: results only
    reading = [line for line in _progress_lines(proc.stderr, "verify") if "reading and validating the input" in line]
    assert re.fullmatch(LINE.format(label="verify") + "reading and validating the input: 0 rows", reading[0]), reading
    assert re.fullmatch(LINE.format(label="verify") + rf"reading and validating the input: {ROWS} rows in \d+\.\d s, "
                        r"[\d,]+ rows/s", reading[-1]), reading
    lines = [line for line in _progress_lines(proc.stderr, "verify") if line not in reading]
    assert proc.stderr.index(reading[-1]) < proc.stderr.index(lines[0])  # pass 1, then pass 2
    assert re.fullmatch(LINE.format(label="verify") + rf"0 of {ROWS} claims \(0%\)", lines[0]), proc.stderr
    assert re.fullmatch(LINE.format(label="verify") + rf"{ROWS} of {ROWS} claims in \d+\.\d s, [\d,]+ claims/s",
                        lines[-1]), proc.stderr
    assert len(lines) >= 3, proc.stderr  # the model loads for more than 0.01 s: lines while it does
    times = [float(re.findall(r"\[ *(\d+\.\d)s\]", line)[0]) for line in lines]
    assert times == sorted(times)
    for line in lines[1:-1]:
        match = re.fullmatch(LINE.format(label="verify") + rf"(\d+) of {ROWS} claims \(\d+%\)(, [\d,]+ claims/s, about \d+ (s|min|h) left)?", line)
        assert match, line
        assert (match.group(2) is not None) == (int(match.group(1)) > 0), line  # a rate once something is done
    assert proc.stderr.index(lines[-1]) < proc.stderr.index("status ")  # the summary table after the progress


def test_quiet_prints_no_progress_line(tiny_model_dir: Path, tmp_path: Path) -> None:
    source = _write(tmp_path / "claims.jsonl", _rows())
    quiet = _run("verify", str(source), "--model-dir", str(tiny_model_dir), "-o", str(tmp_path / "q.jsonl"), "-q", every="0.01")
    assert quiet.returncode == 0 and _progress_lines(quiet.stderr, "verify") == [], quiet.stderr


def test_check_rescore_shows_its_records_in_a_log(tiny_model_dir: Path, tmp_path: Path) -> None:
    source = _write(tmp_path / "claims.jsonl", _rows())
    results = tmp_path / "results.jsonl"
    assert _run("verify", str(source), "--model-dir", str(tiny_model_dir), "-o", str(results), "-q").returncode == 0
    proc = _run("check", str(results), "--inputs", str(source), "--rescore", "--model-dir", str(tiny_model_dir))
    assert proc.returncode == 0, proc.stderr
    lines = _progress_lines(proc.stderr, "check")
    assert re.fullmatch(LINE.format(label="check") + rf"0 of {ROWS} records \(0%\)", lines[0]), proc.stderr
    assert re.fullmatch(LINE.format(label="check") + rf"{ROWS} of {ROWS} records in \d+\.\d s, [\d,]+ records/s",
                        lines[-1]), proc.stderr
    assert proc.stderr.splitlines()[-1] == f"checked {ROWS} records: {ROWS} ok, 0 with problems"


def test_assay_shows_its_configurations_in_a_log(tiny_model_dir: Path, tmp_path: Path) -> None:
    cohort = _write(tmp_path / "cohort.jsonl", _rows(labelled=True))
    proc = _run("assay", str(cohort), "--model-dir", str(tiny_model_dir), "-o", str(tmp_path / "report"),
                "--entailment-grid", "0.7,0.9", "--contradiction-grid", "0.8", "--resamples", "20")
    assert proc.returncode == 0, proc.stderr
    lines = _progress_lines(proc.stderr, "assay")
    assert re.fullmatch(LINE.format(label="assay") + "0 configurations", lines[0]), proc.stderr  # total not known yet
    last = re.fullmatch(LINE.format(label="assay") + r"(\d+) of (\d+) configurations in \d+\.\d s, [\d,]+ configurations/s", lines[-1])
    assert last and last.group(1) == last.group(2), proc.stderr


def test_a_progress_line_names_done_total_rate_and_time_left() -> None:
    out = io.StringIO()
    progress = Progress("verify", "claims", 1000, stream=out, after=0, every=0)
    progress.update(250)
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("] 0 of 1,000 claims (0%)")
    middle = r"verify \[ *\d+\.\ds\] 250 of 1,000 claims \(25%\), [\d,]+ claims/s, about [\d.]+ (s|min|h) left"
    assert any(re.fullmatch(middle, line) for line in lines), lines
    assert re.fullmatch(r"verify \[ *\d+\.\ds\] 250 of 1,000 claims in \d+\.\d s, [\d,]+ claims/s", lines[-1]), lines


def test_a_pseudo_terminal_of_zero_columns_gets_lines_not_a_bar() -> None:
    """Regression (issue 50): under a pseudo-terminal with 0 columns (``script``, some CI runners) the
    tqdm bar printed nothing at all."""
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as stream:
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 0, 0, 0))
            assert not use_bar(stream)
            fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
            assert use_bar(stream)
    finally:
        os.close(leader)
        os.close(follower)
    assert not use_bar(io.StringIO())


@pytest.mark.parametrize("value", ["x", "-1"])
def test_a_bad_interval_falls_back_to_the_default(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROGRESS_AFTER_ENV, value)
    out = io.StringIO()
    progress = Progress("check", "records", None, stream=out, every=600)
    progress.update(3)
    progress.close()
    assert out.getvalue() == ""  # the default 5 s had not passed: a short step prints nothing, and no error

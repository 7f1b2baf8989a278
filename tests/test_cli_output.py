"""``verify`` output safety and input robustness: each regression names the hole it closes.

In-process over a scripted scorer (no model), except the SIGTERM test, which
runs the real command on the exported tiny model in a subprocess.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from jsonl_helpers import evidence_row, scripted_verifier, write_jsonl

from verifier import cli
from verifier.cli.output import Destination
from verifier.messages import export_command

ROOT = Path(__file__).resolve().parents[1]
MODEL = "test/scripted-nli"

make = scripted_verifier
row = evidence_row
write = write_jsonl


@pytest.fixture(autouse=True)
def fake_model_dir(manifest_only_model_dir: Path) -> Path:
    """Every test here runs with a manifest-only model directory (tests/conftest.py)."""
    return manifest_only_model_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["verify", *argv, "-q"], make_verifier=make)
    out = capsys.readouterr()
    return code, out.out, out.err


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith((".tmp", ".bak")))


class TestDestinations:
    def test_a_symlink_is_written_through(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Regression: -o on a symlink replaced the link with a regular file."""
        target = tmp_path / "real" / "results.jsonl"
        target.parent.mkdir()
        target.write_text("old\n", encoding="utf-8")
        link = tmp_path / "link.jsonl"
        link.symlink_to(target)
        code, _, _ = run(capsys, str(write(tmp_path / "in.jsonl", [row(1)])), "-o", str(link))
        assert code == 0
        assert link.is_symlink() and os.readlink(link) == str(target)
        assert json.loads(target.read_text(encoding="utf-8"))["status"] == "supported"
        assert leftovers(tmp_path) == [] and leftovers(target.parent) == []

    def test_character_devices_and_fifos_are_written_directly(self) -> None:
        """Regression: -o /dev/null (as root) replaced the device node with a regular file."""
        assert Destination.of("-o", Path("/dev/null")).kind == "stream"
        assert Destination.of("-o", Path("-")).kind == "stdout"

    def test_a_fifo_receives_the_results(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        received: list[bytes] = []
        reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
        reader.start()
        code, _, _ = run(capsys, str(write(tmp_path / "in.jsonl", [row(1), row(2)])), "-o", str(fifo))
        reader.join(10)
        assert code == 0
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert [json.loads(line)["status"] for line in received[0].decode().splitlines()] == ["supported"] * 2

    def test_dash_is_stdout(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        code, out, _ = run(capsys, str(write(tmp_path / "in.jsonl", [row(1)])), "-o", "-")
        assert code == 0 and json.loads(out)["status"] == "supported"
        assert not (tmp_path / "-").exists()

    def test_an_existing_file_keeps_its_mode_and_owner(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Regression: an existing output's mode and owner were replaced by the process's defaults."""
        out = tmp_path / "results.jsonl"
        out.write_text("old\n", encoding="utf-8")
        os.chmod(out, 0o640)
        owner = (os.getuid(), os.getgid())
        if os.geteuid() == 0:
            owner = (65534, 65534)
            os.chown(out, *owner)
        code, _, _ = run(capsys, str(write(tmp_path / "in.jsonl", [row(1)])), "-o", str(out))
        assert code == 0
        info = os.stat(out)
        assert stat.S_IMODE(info.st_mode) == 0o640
        assert (info.st_uid, info.st_gid) == owner


class TestFailuresLeaveNothing:
    def test_a_full_disk_removes_the_temporary_file_and_names_the_path(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Regression: ENOSPC at close left .tmp files behind and the message lacked the path."""
        def no_space(fd: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", no_space)
        out = tmp_path / "results.jsonl"
        code, _, err = run(capsys, str(write(tmp_path / "in.jsonl", [row(1)])), "-o", str(out), "--row-map", str(tmp_path / "map.jsonl"))
        assert code == 1
        assert err.strip() == f"error: cannot write -o {out}: No space left on device"
        assert leftovers(tmp_path) == [] and not out.exists()

    def test_dev_full_names_the_destination(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full here")
        code, _, err = run(capsys, str(write(tmp_path / "in.jsonl", [row(1)])), "-o", "/dev/full")
        assert code == 1
        assert err.strip() == "error: cannot write -o /dev/full: No space left on device"

    def test_sigterm_cleans_up_like_ctrl_c(self, tiny_model_dir: Path, tmp_path: Path) -> None:
        """Regression: SIGTERM left a partial temporary file (SIGINT was clean)."""
        rows = [row(n, claim=f"The deployment {n} date is May 4.") for n in range(20_000)]
        source = write(tmp_path / "in.jsonl", rows)
        out = tmp_path / "results.jsonl"
        process = subprocess.Popen(
            [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--model-dir", str(tiny_model_dir), "-q"],
            cwd=ROOT, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 120
        while not leftovers(tmp_path) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert leftovers(tmp_path), "the run never created its temporary file"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 143
        assert err.strip().splitlines()[-1] == "terminated"
        assert leftovers(tmp_path) == [] and not out.exists()


class TestHostileInput:
    def test_deeply_nested_json_is_an_invalid_row(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Regression: a row nested 1,000 deep crashed with RecursionError, even with --skip-invalid."""
        source = write(tmp_path / "in.jsonl", [row(1), "[" * 100_000 + "]" * 100_000])
        code, out, err = run(capsys, str(source))
        assert (code, out) == (2, "")
        assert f"{source} line 2: invalid JSON: nested too deeply" in err
        code, out, err = run(capsys, str(source), "--skip-invalid")
        assert code == 0 and len(out.splitlines()) == 1
        assert f"skipped: 1 invalid row of {source}" in err

    def test_an_invalid_row_late_in_the_input_lets_nothing_out(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Regression: on stdout, an invalid row after the first chunk had already let 1,024 results out,
        and the error named the index inside the chunk, not the input line."""
        rows: list[Any] = [row(n) for n in range(1500)]
        rows[1400] = json.dumps(row(1400, claim="x")).replace('"x"', '"\\ud800 x"')
        code, out, err = run(capsys, str(write(tmp_path / "in.jsonl", rows)))
        assert (code, out) == (2, "")
        assert "line 1401: field claim" in err

    def test_an_endless_line_is_refused_with_bounded_memory(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Regression: /dev/zero as input grew to 11 GB."""
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero here")
        code, out, err = run(capsys, "/dev/zero", "--max-line-bytes", "4096")
        assert (code, out) == (2, "")
        assert err.strip() == "error: /dev/zero line 1 is longer than --max-line-bytes=4096; nothing written"

    def test_a_byte_order_mark_is_accepted(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Regression: a UTF-8 BOM was rejected, and with --skip-invalid row 1 was silently dropped."""
        source = tmp_path / "bom.jsonl"
        source.write_bytes(b"\xef\xbb\xbf" + (json.dumps(row(1)) + "\n" + json.dumps(row(2)) + "\n").encode())
        code, out, err = run(capsys, str(source), "--skip-invalid")
        assert (code, err) == (0, "")
        assert len(out.splitlines()) == 2

    def test_fail_on_skip(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        source = write(tmp_path / "in.jsonl", [row(1), "{not json"])
        code, out, err = run(capsys, str(source), "--skip-invalid", "--fail-on-skip")
        assert code == 3 and len(out.splitlines()) == 1
        assert f"skipped: 1 invalid row of {source}" in err

    def test_long_claims_and_passages_are_refused_per_row(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        source = write(tmp_path / "in.jsonl", [row(1, claim="word " * 3)])
        code, _, err = run(capsys, str(source), "--max-claim-chars", "10")
        assert code == 2
        assert f"{source} line 1: field claim: 14 characters exceed max_claim_chars=10 (raise it with --max-claim-chars N)" in err
        assert "nothing written (--skip-invalid verifies the valid rows and reports these)" in err

    def test_a_long_one_off_claim_names_the_option_and_the_fix(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Regression (issue 34): a claim over the limit did not name ``--max-claim-chars``, and with
        ``--claim`` not even the field (``error: 14 characters exceed max_claim_chars=10``)."""
        code = cli.main(["verify", "--claim", "word " * 3, "--evidence", "a passage", "--max-claim-chars", "10"],
                        make_verifier=make)
        err = capsys.readouterr().err
        assert code == 2
        assert err == "error: --claim: 14 characters exceed max_claim_chars=10 (raise it with --max-claim-chars N)\n"
        code = cli.main(["verify", "--claim", "short claim", "--evidence", "ok", "--evidence", "x" * 11,
                         "--max-passage-chars", "10"], make_verifier=make)
        err = capsys.readouterr().err
        assert code == 2
        assert err == "error: --evidence #2: 11 characters exceed max_passage_chars=10 (raise it with --max-passage-chars N)\n"

    def test_evidence_that_is_not_utf8_names_the_option(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Regression: --evidence with invalid UTF-8 (decoded as surrogates) did not name the option."""
        code = cli.main(["verify", "--claim", "The launch is Tuesday.", "--evidence", "a \udcff b"], make_verifier=make)
        assert code == 2
        assert capsys.readouterr().err.strip() == "error: --evidence #1 is not valid UTF-8 text"

    @pytest.mark.parametrize("option", ["-o", "--row-map", "--score-cache", "--score-cache-key"])
    def test_a_symlink_loop_is_one_error_line_naming_the_option(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str, tiny_model_dir: Path
    ) -> None:
        """Regression (adversarial hunt): an output path that is a symlink loop raised RuntimeError("Symlink
        loop from ...") out of the same-file check, a raw traceback, for each of these options."""
        (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
        (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
        extra = {"-o": [], "--row-map": ["-o", str(tmp_path / "out.jsonl")], "--score-cache": [],
                 "--score-cache-key": ["--score-cache", str(tmp_path / "s.sqlite")]}[option]
        argv = ["verify", str(write(tmp_path / "in.jsonl", [row(1)])), option, str(tmp_path / "loop1"), *extra, "-q"]
        # the score store is the engine's: the real tiny model for those two
        code = cli.main([*argv, "--model-dir", str(tiny_model_dir)]) if "cache" in option else cli.main(argv, make_verifier=make)
        out, err = capsys.readouterr()
        assert code == 1 and out == "" and err.count("\n") == 1, err
        assert err.startswith("error: ") and "loop1" in err and "Traceback" not in err
        assert "symbolic links" in err or "cannot be opened" in err

    def test_a_model_dir_that_is_a_file(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Regression: --model-dir naming a file suggested exporting into it."""
        model_file = tmp_path / "model.onnx"
        model_file.write_bytes(b"x")
        code = cli.main(["verify", str(write(tmp_path / "in.jsonl", [row(1)])), "--model-dir", str(model_file), "-q"])
        assert code == 1
        assert capsys.readouterr().err.strip() == (
            f"error: --model-dir {model_file} is a file, not a model directory; give the directory {export_command()} wrote"
        )

    def test_output_is_utf8_whatever_the_locale(self, tiny_model_dir: Path, tmp_path: Path) -> None:
        """Regression: an output encoding error exited with the invalid-input code."""
        source = write(tmp_path / "in.jsonl", [row(1, claim="Le café ouvre à 9 h.")])
        env = {**os.environ, "PYTHONIOENCODING": "ascii"}
        completed = subprocess.run(
            [sys.executable, "-m", "verifier", "verify", str(source), "--model-dir", str(tiny_model_dir), "-q"],
            cwd=ROOT, env=env, capture_output=True, timeout=120,
        )
        assert completed.returncode == 0, completed.stderr
        assert json.loads(completed.stdout.decode("utf-8"))["claim"] == "Le café ouvre à 9 h."


def test_a_rows_as_of_reaches_the_result(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Regression: an `as_of` field in a JSON Lines row was accepted and then silently ignored."""
    dated = {**row(1), "as_of": "2026-12-01T00:00:00+00:00"}
    code, out, _ = run(capsys, str(write(tmp_path / "in.jsonl", [dated, row(2)])))
    assert code == 0
    first, second = (json.loads(line) for line in out.splitlines())
    assert (first["schema_version"], first["as_of"]) == (4, "2026-12-01T00:00:00Z")
    assert second["schema_version"] == 3 and "as_of" not in second

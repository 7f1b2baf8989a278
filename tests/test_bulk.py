"""Big jobs on one machine: the two-pass stream, envelopes, ``--shard`` and ``--resume`` (docs/bulk.md).

In-process over a scripted scorer, except the kill-and-resume test, which
SIGKILLs the real command on the exported tiny model at several points.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
from jsonl_helpers import evidence_row, scripted_verifier, write_jsonl

from verifier import cli
from verifier.cli.bulk import CHUNK, Shard

ROOT = Path(__file__).resolve().parents[1]

make = scripted_verifier
row = evidence_row
write = write_jsonl


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def fake_model_dir(manifest_only_model_dir: Path) -> Path:
    """Every test here runs with a manifest-only model directory (tests/conftest.py)."""
    return manifest_only_model_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["verify", *argv, "-q"], make_verifier=make)
    out = capsys.readouterr()
    return code, out.out, out.err


class TestEnvelopes:
    def test_envelopes_carry_id_and_line_and_the_bare_result(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        source = write(tmp_path / "in.jsonl", [row(1), "", row(2)])
        code, bare, _ = run(capsys, str(source))
        assert code == 0
        code, out, _ = run(capsys, str(source), "--output-format", "envelope")
        assert code == 0
        rows = [json.loads(line) for line in out.splitlines()]
        assert [(r["id"], r["line"]) for r in rows] == [("r1", 1), ("r2", 3)]
        assert [json.dumps(r["result"]) for r in rows] == [json.dumps(json.loads(line)) for line in bare.splitlines()]

    def test_skipped_rows_are_error_envelopes_in_input_order(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        source = write(tmp_path / "in.jsonl", [row(1), row(2, claim="  "), "{not json", row(3)])
        code, out, err = run(capsys, str(source), "--output-format", "envelope", "--skip-invalid")
        assert code == 0 and "skipped: 2 invalid rows" in err
        rows = [json.loads(line) for line in out.splitlines()]
        assert [(r["id"], r["line"], "result" in r) for r in rows] == [
            ("r1", 1, True), ("r2", 2, False), (None, 3, False), ("r3", 4, True)
        ]
        assert rows[1]["error"]["field"] == "claim" and rows[2]["error"]["message"].startswith("invalid JSON")

    def test_many_chunks_keep_order_and_the_row_map(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        rows = [row(n) for n in range(2 * CHUNK + 5)]
        source = write(tmp_path / "in.jsonl", rows)
        out, row_map = tmp_path / "out.jsonl", tmp_path / "map.jsonl"
        code, _, _ = run(capsys, str(source), "-o", str(out), "--row-map", str(row_map), "--output-format", "envelope")
        assert code == 0
        assert [r["id"] for r in lines(out)] == [r["id"] for r in rows]
        assert lines(row_map)[-1] == {"row": 2 * CHUNK + 4, "line": 2 * CHUNK + 5, "id": f"r{2 * CHUNK + 4}"}

    def test_an_invalid_row_late_in_a_big_input_writes_nothing(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        rows: list[Any] = [row(n) for n in range(CHUNK + 10)]
        rows[-1] = "[1]"
        out = tmp_path / "out.jsonl"
        code, _, err = run(capsys, str(write(tmp_path / "in.jsonl", rows)), "-o", str(out), "--output-format", "envelope")
        assert code == 2 and not out.exists() and f"line {CHUNK + 10}: expected a JSON object" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


class TestStdinSpool:
    def test_stdin_is_spooled_and_the_spool_removed(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import io

        spool = tmp_path / "spool"
        spool.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(spool))
        for text, expected in ((json.dumps(row(1)) + "\n" + json.dumps(row(2)) + "\n", 0), ("[1]\n", 2)):
            monkeypatch.setattr(sys, "stdin", io.StringIO(text))
            code, out, _ = run(capsys, "-")
            assert code == expected and len(out.splitlines()) == (2 if expected == 0 else 0)
            assert list(spool.iterdir()) == []


class TestShards:
    def test_the_shards_cover_the_input_exactly_once(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        rows = [row(n) for n in range(300)]
        source = write(tmp_path / "in.jsonl", rows)
        _, whole, _ = run(capsys, str(source), "--output-format", "envelope")
        seen: list[str] = []
        for index in range(3):
            code, out, _ = run(capsys, str(source), "--output-format", "envelope", "--shard", f"{index}/3")
            assert code == 0
            part = out.splitlines()
            assert 0 < len(part) < 300
            seen += part
        assert len(seen) == len(set(seen)) == 300
        assert sorted(seen) == sorted(whole.splitlines())

    def test_the_split_is_by_sha256_of_the_id(self) -> None:
        """Stable across processes and Python versions (not ``hash``): pinned values."""
        assert [Shard(i, 4).owns("r1") for i in range(4)].count(True) == 1
        import hashlib

        expected = int.from_bytes(hashlib.sha256(b"r1").digest()[:8], "big") % 4
        assert Shard(expected, 4).owns("r1")

    def test_shards_need_ids_and_a_valid_spec(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        no_id = {k: v for k, v in row(2).items() if k != "id"}
        source = write(tmp_path / "in.jsonl", [row(1), no_id])
        code, out, err = run(capsys, str(source), "--shard", "0/2")
        assert (code, out) == (2, "") and err.strip() == f"error: --shard needs an id on every row; {source} line 2 has none"
        with pytest.raises(SystemExit):
            cli.main(["verify", str(source), "--shard", "2/2"], make_verifier=make)
        assert "expected 0 <= I < N" in capsys.readouterr().err


class TestResume:
    def test_a_second_run_skips_what_is_there(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        rows = [row(n) for n in range(10)]
        source = write(tmp_path / "in.jsonl", rows)
        out = tmp_path / "out.jsonl"
        full = tmp_path / "full.jsonl"
        assert run(capsys, str(source), "-o", str(full), "--output-format", "envelope")[0] == 0
        write(tmp_path / "half.jsonl", rows[:4])
        assert run(capsys, str(tmp_path / "half.jsonl"), "-o", str(out), "--resume")[0] == 0
        with out.open("a", encoding="utf-8") as handle:  # a torn write: part of a line, no newline
            handle.write(full.read_text(encoding="utf-8").splitlines()[7][:50])
        code = cli.main(["verify", str(source), "-o", str(out), "--resume"], make_verifier=make)  # not quiet
        err = capsys.readouterr().err
        assert code == 0 and f"resume: 4 rows already in {out}, kept; 6 to verify" in err  # the torn line is dropped
        assert out.read_text(encoding="utf-8") == full.read_text(encoding="utf-8")
        code = cli.main(["verify", str(source), "-o", str(out), "--resume"], make_verifier=make)
        err = capsys.readouterr().err
        assert code == 0 and f"resume: 10 rows already in {out}, kept; 0 to verify" in err  # says why nothing ran
        assert out.read_text(encoding="utf-8") == full.read_text(encoding="utf-8")

    @pytest.mark.parametrize(
        "rows, message",
        [
            ([row(1), {"claim": "x", "evidence": []}], "--resume needs a string id on every row; 1 row(s)"),
            ([row(1), row(2), row(1)], "--resume needs unique ids; id 'r1' repeats in"),
        ],
    )
    def test_ids_must_be_present_and_unique(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, rows: list[Any], message: str
    ) -> None:
        out = tmp_path / "out.jsonl"
        code, _, err = run(capsys, str(write(tmp_path / "in.jsonl", rows)), "-o", str(out), "--resume")
        assert code == 2 and message in err and not out.exists()

    def test_foreign_or_bare_output_is_refused(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        source = write(tmp_path / "in.jsonl", [row(1), row(2)])
        out = tmp_path / "out.jsonl"
        assert run(capsys, str(source), "-o", str(out))[0] == 0  # bare results
        before = out.read_text(encoding="utf-8")
        code, _, err = run(capsys, str(source), "-o", str(out), "--resume")
        assert code == 2 and "line 1 is not an envelope of verify --resume" in err
        out.write_text(json.dumps({"id": "zz", "line": 1, "error": {}}) + "\n", encoding="utf-8")
        code, _, err = run(capsys, str(source), "-o", str(out), "--resume")
        assert code == 2 and "holds 1 id(s) that are not in" in err
        assert run(capsys, str(source), "-o", str(tmp_path / "r.jsonl"), "--resume")[0] == 0
        code, _, err = run(capsys, str(source), "-o", str(tmp_path / "r.jsonl"), "--resume", "--entailment-threshold", "0.9")
        assert code == 2 and "another decision configuration" in err
        assert before

    @pytest.mark.parametrize(
        "argv, message",
        [
            (["--output-format", "bare"], "--resume writes envelopes; drop --output-format bare"),
            (["--row-map", "m.jsonl"], "drop --row-map"),
            (["-o", "-"], "--resume needs -o FILE"),
        ],
    )
    def test_resume_options(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str) -> None:
        source = write(tmp_path / "in.jsonl", [row(1)])
        extra = [] if "-o" in argv else ["-o", str(tmp_path / "o.jsonl")]
        code, _, err = run(capsys, str(source), "--resume", *extra, *argv)
        assert code == 2 and message in err


class TestResumeTrust:
    """Regressions (trust on every surface, items 6-8): what --resume keeps must be what an uninterrupted run
    over the *current* input writes; a second run on the same output, repeated rows, bogus "done" rows and
    stale rows were all kept."""

    def _full(self, capsys: pytest.CaptureFixture[str], tmp_path: Path, rows: list[Any], *argv: str) -> tuple[Path, list[str]]:
        source = write(tmp_path / "in.jsonl", rows)
        full = tmp_path / "full.jsonl"
        assert run(capsys, str(source), "-o", str(full), "--resume", *argv)[0] == 0
        return source, full.read_text(encoding="utf-8").splitlines(keepends=True)

    def test_a_second_run_on_a_locked_output_stops_at_once(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        import fcntl

        source, lines = self._full(capsys, tmp_path, [row(n) for n in range(6)])
        out = tmp_path / "out.jsonl"
        out.write_text("".join(lines[:2]), encoding="utf-8")
        with open(out, "ab") as holder:  # another run, writing: it holds the lock
            fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            code, _, err = run(capsys, str(source), "-o", str(out), "--resume")
            assert code == 1
            assert err.strip() == (
                f"error: -o {out} is being written by another verify --resume run (it holds the file's lock); "
                "wait for that run to finish (then resume), or write to another -o"
            )
            assert out.read_text(encoding="utf-8") == "".join(lines[:2])
        assert run(capsys, str(source), "-o", str(out), "--resume")[0] == 0
        assert out.read_text(encoding="utf-8") == "".join(lines)

    def test_an_output_that_repeats_ids_is_refused(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        """Two concurrent runs used to end with every id twice, and a third --resume accepted it."""
        source, lines = self._full(capsys, tmp_path, [row(n) for n in range(10)])
        out = tmp_path / "out.jsonl"
        out.write_text("".join(lines + lines), encoding="utf-8")
        code, _, err = run(capsys, str(source), "-o", str(out), "--resume")
        assert code == 2
        assert err.strip() == (
            f"error: {out} holds id 'r0' twice (lines 1 and 11; 10 repeated id(s) in all): two runs wrote it at once, "
            "or it was edited; keep one line per id, or write to a new -o"
        )

    @pytest.mark.parametrize(
        "bogus, message",
        [
            ('{"id": "r7", "line": 8, "result": null}\n', "line 5 (id 'r7') has a result that is not a result record (a NoneType)"),
            ('{"id": "r7", "line": 8, "result": "hello"}\n', "line 5 (id 'r7') has a result that is not a result record (a str)"),
            (
                '{"id": "r7", "line": 8, "error": {"field": "claim", "message": "bad", "unit": "line"}}\n',
                f"line 5 (id 'r7') is stale: it is an error row, but IN line 8 is valid now",
            ),
            ("EDITED", "line 5 (id 'r7') holds a result that does not check out: result_sha256 does not match the record"),
            ("DOUBLED", "line 5 is not an envelope of verify --resume: duplicate key 'id' in a JSON object"),
            ("SPACED", "line 5 (id 'r7') was edited: it is not the line verify writes for that result"),
            # regression (stop 43's adversarial run): relabelled schema 2 and sealed by its formula, a line was kept
            ("LEGACY", "line 5 (id 'r7') holds a schema 2 result, which verify does not write"),
            # regression (stop 43's adversarial round 2): an edited resolved_revision (no digest covers it) was kept
            ("REVISION", "line 5 (id 'r7') names resolved_revision 'ffffffffffffffffffffffffffffffffffffffff', but this run's model is at"),
        ],
    )
    def test_bogus_done_rows_are_refused(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path, bogus: str, message: str
    ) -> None:
        source, lines = self._full(capsys, tmp_path, [row(n) for n in range(10)])
        genuine = json.loads(lines[7])
        assert genuine["id"] == "r7" and genuine["result"]["status"] == "supported"
        if bogus == "EDITED":
            genuine["result"].update(status="insufficient", supporting_group=[], supporting_basis=None)
            bogus = json.dumps(genuine) + "\n"
        elif bogus == "DOUBLED":
            bogus = lines[7][:-2] + ', "id": "r1"}\n'
        elif bogus == "SPACED":
            bogus = lines[7].replace('"line": 8', '"line":  8')
        elif bogus == "REVISION":
            genuine["result"]["resolved_revision"] = "f" * 40
            bogus = json.dumps(genuine) + "\n"
        elif bogus == "LEGACY":
            from test_check import _legacy

            from verifier.decision.check import check_result

            legacy = {k: v for k, v in genuine["result"].items() if k != "localized_assessments"} | {"schema_version": 2}
            assert check_result(_legacy(legacy)).ok  # a genuine-looking schema 2 record
            bogus = json.dumps({**genuine, "result": _legacy(legacy)}) + "\n"
        out = tmp_path / "out.jsonl"
        out.write_text("".join(lines[:4]) + bogus, encoding="utf-8")
        before = out.read_bytes()
        code, _, err = run(capsys, str(source), "-o", str(out), "--resume")
        assert code == 2
        assert err.strip().startswith(f"error: {out} {message}".replace("IN", str(source)))
        assert out.read_bytes() == before

    def test_a_stale_result_after_the_claim_changed_is_refused(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        rows = [row(n) for n in range(6)]
        source, lines = self._full(capsys, tmp_path, rows)
        out = tmp_path / "out.jsonl"
        out.write_text("".join(lines[:4]), encoding="utf-8")
        rows[3] = row(3, claim="The deployment date is May 5.")
        write(source, rows)
        code, _, err = run(capsys, str(source), "-o", str(out), "--resume")
        assert code == 2
        assert err.strip() == (
            f"error: {out} line 4 (id 'r3') is stale: it is a result for another claim than {source} line 4 has now; "
            "remove that line (and any other stale one) from the output, or write to a new -o"
        )
        rows[3] = {**row(3), "evidence": [{**row(3)["evidence"][0], "text": "The date is May 4."}]}
        write(source, rows)
        assert f"line 4 (id 'r3') is stale: it is a result for other evidence than {source} line 4 has now" in run(
            capsys, str(source), "-o", str(out), "--resume")[2]
        write(source, [row(99), *[row(n) for n in range(6)]])  # every row one line further down
        assert f"line 1 (id 'r0') is stale: it is for line 1, but the row with that id is {source} line 2 now" in run(
            capsys, str(source), "-o", str(out), "--resume")[2]
        write(source, [{**r, "requires_complete_set": True} if r["id"] == "r2" else r for r in (row(n) for n in range(6))])
        assert "line 3 (id 'r2') is stale: it is a result for another as_of or requires_complete_set" in run(
            capsys, str(source), "-o", str(out), "--resume")[2]

    def test_a_stale_error_row_after_the_row_was_fixed_is_refused(self, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
        rows: list[Any] = [row(n) for n in range(4)]
        rows[2] = row(2, claim="  ")
        source, lines = self._full(capsys, tmp_path, rows, "--skip-invalid")
        assert json.loads(lines[2])["error"]["field"] == "claim"
        out = tmp_path / "out.jsonl"
        out.write_text("".join(lines), encoding="utf-8")
        write(source, [row(n) for n in range(4)])
        code, _, err = run(capsys, str(source), "-o", str(out), "--resume", "--skip-invalid")
        assert code == 2
        assert err.strip().startswith(f"error: {out} line 3 (id 'r2') is stale: it is an error row, but {source} line 3 is valid now")
        rows[2] = {**row(2), "evidence": "none"}  # still invalid, but another error
        write(source, rows)
        assert "line 3 (id 'r2') is stale: it reports another error than" in run(
            capsys, str(source), "-o", str(out), "--resume", "--skip-invalid")[2]
        rows[2] = row(2, claim="  ")  # as it was: the error row is current again, and kept
        write(source, rows)
        assert run(capsys, str(source), "-o", str(out), "--resume", "--skip-invalid")[0] == 0
        assert out.read_text(encoding="utf-8") == "".join(lines)


def _run_and_kill(argv: list[str], out: Path, threshold: int, after_s: Optional[float] = None) -> int:
    """Start the command; SIGKILL it once ``out`` holds at least ``threshold`` bytes (0: right away) or, with
    ``after_s``, after that many seconds; its status."""
    env = {k: v for k, v in os.environ.items() if k != "CLAIM_VERIFIER_MODEL_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen([sys.executable, "-m", "verifier", *argv], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while process.poll() is None and time.monotonic() < started + 120:
        if after_s is not None:
            if time.monotonic() - started >= after_s:
                process.send_signal(signal.SIGKILL)
                break
        elif threshold == 0 or (out.exists() and out.stat().st_size >= threshold):
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    return process.wait(timeout=120)


def test_sigkill_at_any_point_and_resume_gives_the_uninterrupted_results(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Several kill points (before any output; after 1 chunk; after 1 chunk of each of two runs; after 4
    chunks; three seeded random times), each run resumed until it completes: the output equals an
    uninterrupted run's as a set, no line lost, duplicated or torn."""
    rows = [row(n, claim=f"The deployment {n} date is May {n % 28 + 1}.") for n in range(6 * CHUNK + 17)]
    source = write(tmp_path / "in.jsonl", rows)
    common = ["verify", str(source), "--model-dir", str(tiny_model_dir), "-q"]
    reference = tmp_path / "reference.jsonl"
    assert _run_and_kill([*common, "-o", str(reference), "--output-format", "envelope"], tmp_path / "never", 1 << 60) == 0
    expected = reference.read_text(encoding="utf-8").splitlines()
    chunk_bytes = len("\n".join(expected[:CHUNK]))
    check = _check_resumed(expected)
    for kills, points in enumerate(([0], [chunk_bytes // 2], [chunk_bytes + 1, 2 * chunk_bytes + 1], [4 * chunk_bytes])):
        out = tmp_path / f"resumed-{kills}.jsonl"
        argv = [*common, "-o", str(out), "--resume"]
        for point in points:
            assert _run_and_kill(argv, out, point) == -signal.SIGKILL, "the run ended before its kill point"
        partial = len(out.read_text(encoding="utf-8").splitlines()) if out.exists() else 0
        assert partial < len(expected)
        assert _run_and_kill(argv, out, 1 << 60) == 0
        check(out)
    # Kills at random times (seeded): wherever they land, the resumed output is the same.
    chance = random.Random(20261201)
    out = tmp_path / "resumed-random.jsonl"
    argv = [*common, "-o", str(out), "--resume"]
    for _ in range(3):
        _run_and_kill(argv, out, 0, after_s=chance.uniform(0.5, 3.0))
    assert _run_and_kill(argv, out, 1 << 60) == 0
    check(out)


def test_two_concurrent_runs_on_one_output_write_every_id_once(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (item 6): two runs started together on one --resume output both appended every row. Now the
    second stops at once on the first's lock (or, if it starts after the first ended, finds everything done)."""
    rows = [row(n, claim=f"The deployment {n} date is May {n % 28 + 1}.") for n in range(3 * CHUNK)]
    source = write(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "CLAIM_VERIFIER_MODEL_DIR"}
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "--model-dir", str(tiny_model_dir), "-q", "-o", str(out), "--resume"]
    first = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    while not out.exists() and first.poll() is None:
        time.sleep(0.005)
    second = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode in (0, 1), second.stderr
    if second.returncode == 1:
        assert "is being written by another verify --resume run" in second.stderr
    ids = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(ids) == sorted(r["id"] for r in rows)


def _check_resumed(expected: list[str]) -> Callable[[Path], None]:
    def check(out: Path) -> None:
        got = out.read_text(encoding="utf-8")
        assert got.endswith("\n")
        assert len(got.splitlines()) == len(expected)
        assert sorted(got.splitlines()) == sorted(expected)

    return check


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--workers", "2"],
         "error: --address, --workers, --threads-per-worker, --rows-per-batch and --stall-timeout need --engine ray"),
        (["--engine", "ray"], "error: --engine ray needs -o OUTDIR (a new or empty directory), or --resume -o FILE"),
        (["--engine", "ray", "-o", "d", "--shard", "0/2"], "error: --shard does not apply to --engine ray"),
        (["--engine", "ray", "-o", "-", "--resume"], "error: --engine ray --resume needs INPUT a file and -o FILE"),
    ],
)
def test_ray_options_are_checked_before_ray_is_needed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    source = write(tmp_path / "in.jsonl", [row(1)])
    code, out, err = run(capsys, str(source), *argv)
    assert (code, out) == (2, "") and err.startswith(message)


def test_one_off_mode_refuses_bulk_options(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["verify", "--claim", "x", "--evidence", "y", "--shard", "0/2"], make_verifier=make)
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "error: --output-format, --resume, --shard and --engine apply to INPUT files, not --claim"
    )


@pytest.mark.parametrize("spec", [" 1/3", "1/3 ", "1_0/20", "\u0661/\u0663", "+1/3", "1/ 3", "0x1/3"])
def test_a_shard_is_plain_ascii_digits(capsys: pytest.CaptureFixture[str], tmp_path: Path, spec: str) -> None:
    """Regression (trust on every surface, item 20): int() took " 1/3", 1_0/20 and Arabic-Indic digits."""
    source = write(tmp_path / "in.jsonl", [row(1)])
    with pytest.raises(SystemExit) as exc:
        cli.main(["verify", str(source), "--shard", spec], make_verifier=make)
    assert exc.value.code == 2
    assert f"argument --shard: expected I/N such as 0/4 (ASCII digits only), got {spec!r}" in capsys.readouterr().err
    from verifier.cli.bulk import shard_type

    assert shard_type("1/3") == Shard(1, 3) and shard_type("007/010") == Shard(7, 10)


def test_ctrl_c_during_resume_says_what_the_output_keeps(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (stop 43's new-user trial): Ctrl-C during verify --resume said only "interrupted", although the
    output kept every finished chunk and the same command finishes it."""
    rows = [row(n, claim=f"The deployment {n} date is May {n % 28 + 1}.") for n in range(40 * CHUNK)]
    source, out = write(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
    env = {**{k: v for k, v in os.environ.items() if k != "CLAIM_VERIFIER_MODEL_DIR"}, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--resume", "--model-dir", str(tiny_model_dir), "-q"]
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    while process.poll() is None and not (out.exists() and out.stat().st_size) and time.monotonic() < started + 120:
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    kept = len(out.read_text(encoding="utf-8").splitlines())
    assert process.returncode == 130 and 0 < kept < len(rows), stderr
    assert stderr.splitlines()[-2:] == [
        f"{out} keeps the {kept} rows written so far: run the same command again to finish", "interrupted"]


def _file_size_limit(limit: int) -> Callable[[], None]:
    """For ``preexec_fn``: writes past ``limit`` bytes fail with EFBIG, as on a full disk (SIGXFSZ ignored)."""
    def apply() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_failed_write_during_resume_leaves_whole_lines_and_says_what_they_are(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (adversarial hunt): on a full disk, verify --resume left a torn last line (check then failed
    on the file) and said only "cannot write"; now the file is cut back to its last whole chunk, the error
    says how many rows it keeps, and the same command finishes the job once there is room."""
    rows = [row(n, claim=f"The deployment {n} date is May {n % 28 + 1}.") for n in range(6 * CHUNK)]
    source, out = write(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
    env = {**{k: v for k, v in os.environ.items() if k != "CLAIM_VERIFIER_MODEL_DIR"}, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--resume", "--model-dir", str(tiny_model_dir), "-q"]
    full = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=_file_size_limit(2 * CHUNK * 1500 + 777))
    text = out.read_text(encoding="utf-8")
    kept = len(text.splitlines())
    assert full.returncode == 1 and 0 < kept < len(rows), full.stderr
    assert text.endswith("\n") and all(json.loads(line)["result"]["status"] for line in text.splitlines())
    assert full.stderr.splitlines()[-1] == (
        f"error: cannot write -o {out}: File too large; {out} keeps the {kept} rows written so far: "
        "run the same command again to finish"
    )
    finished = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert sorted(json.loads(line)["result"]["claim"] for line in out.read_text(encoding="utf-8").splitlines()) == sorted(
        r["claim"] for r in rows)


def test_resume_decides_a_kept_strict_lines_truncation_with_the_model(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (stop 43's adversarial round 2): --resume replayed a kept strict-policy line taking its
    truncated_pair rulings as given, so a line that dropped its ruling (and the limitation) and said supported,
    digests recomputed, no score touched, was kept. The run's scorer now decides the truncation."""
    import uuid

    from verifier.cli.bulk import envelope_text
    from verifier.decision import audit
    from verifier.types import ClaimVerification

    strict = ["--entailment-policy", "strict", "--refutation-policy", "strict", "--entailment-threshold", "0.5",
              "--contradiction-threshold", "0.5", "--model-dir", str(tiny_model_dir), "-q"]
    rows = [{"id": f"t{n}", "claim": "Nadia leads the Atlas project.", "as_of": "2026-06-01T00:00:00Z", "evidence": [
        {"reference": "M1", "memory_id": str(uuid.UUID(int=n + 1)),
         "text": "Nadia leads the Atlas project." + " qwerty asdf." * (40 + 5 * n) + "  Tessa leads the Atlas project now."}]}
        for n in range(6)]  # the model sees the first sentence; the last one, which may change it, is cut
    source, out = write(tmp_path / "in.jsonl", rows), tmp_path / "out.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "--resume", *strict]) == 0
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    envelopes = [json.loads(line) for line in lines]
    cut = [n for n, e in enumerate(envelopes) if any(r["rule"] == "truncated_pair" for r in e["result"]["strict_rulings"])
           and e["result"]["group_scores"][0]["entailment"] >= 0.5]
    assert cut, "no truncated pair the model entails: the forgery below needs one"
    genuine = envelopes[cut[0]]
    record = ClaimVerification.model_validate(genuine["result"])
    assert record.status.value != "supported"
    edited = {**genuine["result"], "status": "supported", "supporting_group": genuine["result"]["group_scores"][0]["memory_ids"],
              "supporting_basis": "model_entailment", "strict_rulings": [],
              "limitations": [x for x in genuine["result"]["limitations"] if x != "strict_policy_ruling"]}
    forged = ClaimVerification.model_validate(edited)
    edited["result_sha256"] = audit.result_sha256(
        evaluation=forged.evaluation_id, status="supported", supporting_group=forged.supporting_group,
        refuting_group=forged.refuting_group, supporting_basis=forged.supporting_basis, refuting_basis=forged.refuting_basis,
        group_scores=forged.group_scores, localized_assessments=forged.localized_assessments,
        limitations=forged.limitations, strict_rulings=())
    forged = ClaimVerification.model_validate(edited)
    lines[cut[0]] = envelope_text(genuine["id"], genuine["line"], result=forged.model_dump_json())
    out.write_text("".join(lines), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["verify", str(source), "-o", str(out), "--resume", *strict]) == 2
    assert (f"line {cut[0] + 1} (id '{genuine['id']}') holds a result that does not check out: the replay gives status "
            f"{record.status.value}, the record says supported") in capsys.readouterr().err

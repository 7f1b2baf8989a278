"""``check --inputs`` and ``verify --resume`` over an output in another order than the input (Ray's, joined shards).

Regression (issue 48, item 6): each out-of-order record re-read the input from where the last row was found, so
both were quadratic in rows over a shuffled output (1,200 records: 1.2 s in order, 45-58 s shuffled). The cost is
asserted here in bytes read (``/proc/self/io``), not in time: a shuffled output must be matched in a few reads of
the input. bench/RESULTS.md has the times.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable

import pytest
from jsonl_helpers import evidence_row, scripted_verifier, write_jsonl

from verifier import cli

#: Spaces after each input row, so that re-reading the input dwarfs every other read.
PAD = " " * 2000
ROWS = 160


@pytest.fixture(autouse=True)
def fake_model_dir(manifest_only_model_dir: Path) -> Path:
    return manifest_only_model_dir


def _bytes_read() -> int:
    with open("/proc/self/io", encoding="ascii") as handle:
        return int(next(line for line in handle if line.startswith("rchar:")).split()[1])


def _reads(call: Callable[[], int]) -> tuple[int, int]:
    """``call()``'s exit status and the bytes this process read while it ran."""
    before = _bytes_read()
    code = call()
    return code, _bytes_read() - before


def _input(path: Path) -> Path:
    """Distinct rows, repeated rows (ids differ), rows that differ only in requires_complete_set, invalid rows."""
    rows: list[Any] = []
    for n in range(ROWS):
        if n % 10 == 3:
            rows.append({"id": f"r{n}", "claim": "", "evidence": []})  # invalid: an empty claim
        elif n % 10 in (5, 6):
            rows.append(evidence_row(n, claim="There are four launches.", requires_complete_set=n % 10 == 6))
        elif n % 10 == 8:
            rows.append({**evidence_row(7), "id": f"r{n}"})  # the row of n - 1 again, under another id
        else:
            rows.append(evidence_row(n, claim=f"The deployment date is May 4 (row {n})."))
    write_jsonl(path, [json.dumps(row) + PAD for row in rows])
    return path


def _shuffled(lines: list[str], seed: int) -> list[str]:
    lines = list(lines)
    random.Random(seed).shuffle(lines)
    return lines


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux) to count the bytes read")
def test_check_inputs_over_a_shuffled_output_reads_the_input_a_few_times(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """check --inputs --every-row matches shuffled envelopes and shuffled bare records (repeated rows, rows that
    differ only in requires_complete_set, error rows) to their rows exactly as in input order, reading the
    input a few times, not once per record."""
    source = _input(tmp_path / "in.jsonl")
    size = source.stat().st_size
    envelopes, bare = tmp_path / "envelopes.jsonl", tmp_path / "bare.jsonl"
    common = [str(source), "--skip-invalid", "-q"]
    assert cli.main(["verify", *common, "-o", str(envelopes), "--output-format", "envelope"], make_verifier=scripted_verifier) == 0
    assert cli.main(["verify", *common, "-o", str(bare)], make_verifier=scripted_verifier) == 0
    ordered = envelopes.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(ordered) == ROWS and sum('"error"' in line for line in ordered) == ROWS // 10
    statuses = {json.loads(line)["result"]["status"] for line in ordered if '"result"' in line}
    assert statuses == {"supported", "incomplete"}
    capsys.readouterr()
    assert cli.main(["check", str(envelopes), "--inputs", str(source), "--every-row"]) == 0  # in order (and warm)
    in_order = capsys.readouterr().err.splitlines()
    assert in_order[-1] == f"checked {ROWS - ROWS // 10} records: {ROWS - ROWS // 10} ok, 0 with problems; {ROWS // 10} error rows (skipped input rows) hold no result"
    for name, path in (("envelopes", envelopes), ("bare", bare)):
        records = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for seed in (1, 2):
            path.write_text("".join(_shuffled(records, seed)), encoding="utf-8")
            code, read = _reads(lambda: cli.main(["check", str(path), "--inputs", str(source), "--every-row"]))
            err = capsys.readouterr().err.splitlines()
            assert code == 0, (name, seed, err)
            assert err[-1] == (in_order[-1] if name == "envelopes" else f"checked {ROWS - ROWS // 10} records: {ROWS - ROWS // 10} ok, 0 with problems")
            # an index made in one read, a second read for rows without a record, and each record's own row;
            # re-reading the input from the top for each out-of-order record read ~ROWS / 2 times the input
            assert read < 5 * size + 2 * path.stat().st_size, (name, seed, read, size)


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux) to count the bytes read")
def test_resume_over_a_shuffled_output_reads_the_input_a_few_times(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """verify --resume keeps a shuffled half of a finished output (every kept line replayed against its row),
    reading the input a few times, and finishes it to the same lines as an uninterrupted run."""
    source = _input(tmp_path / "in.jsonl")
    size = source.stat().st_size
    whole, out = tmp_path / "whole.jsonl", tmp_path / "out.jsonl"
    argv = ["verify", str(source), "--skip-invalid", "--resume", "-q"]
    assert cli.main([*argv, "-o", str(whole)], make_verifier=scripted_verifier) == 0
    expected = whole.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(expected) == ROWS
    out.write_text("".join(_shuffled(expected, 3)[: ROWS // 2]), encoding="utf-8")
    code, read = _reads(lambda: cli.main([*argv, "-o", str(out)], make_verifier=scripted_verifier))
    assert code == 0, capsys.readouterr().err
    assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == sorted(expected)
    # pass 1, the id check, the index, pass 2, and each kept line's own row (a re-read per kept line: ~ROWS / 4)
    assert read < 8 * size, (read, size)
    out.write_text("".join(_shuffled(expected, 4)), encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["verify", str(source), "--skip-invalid", "--resume", "-o", str(out)], make_verifier=scripted_verifier) == 0
    assert f"resume: {ROWS} rows already in {out}, kept; 0 to verify" in capsys.readouterr().err

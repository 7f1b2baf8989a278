"""Ray Data scale-out (``verifier.distributed``, ``verify --engine ray``) on a local Ray instance and the tiny model.

Needs the ``ray`` extra (``pip install -e '.[ray,test]'``); skipped without it.
Slow: starting Ray and its actors takes seconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

from verifier import cli  # noqa: E402
from verifier.distributed import RayVerificationError, verify_dataset  # noqa: E402

pytestmark = pytest.mark.slow


def row(n: int) -> dict[str, Any]:
    evidence = [
        {"reference": "M1", "memory_id": str(uuid.UUID(int=2 * n + 1)), "text": f"The launch moved to day {n % 5}."},
        {"reference": "M2", "memory_id": str(uuid.UUID(int=2 * n + 2)), "text": f"Launch is day {(n * 3) % 5}."},
    ]
    value: dict[str, Any] = {"id": f"c{n}", "claim": f"The launch is on day {n % 7}.", "evidence": evidence}
    if n % 4 == 0:
        value["requires_complete_set"] = n % 8 == 0
    return value


ROWS = [row(n) for n in range(120)]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)  # not a cluster running here
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ray-in") / "claims.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def local_results(source: Path, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The local CLI's envelopes, by id."""
    out = tmp_path_factory.mktemp("ray-local") / "local.jsonl"
    code = cli.main(["verify", str(source), "-o", str(out), "--model-dir", str(tiny_model_dir), "--output-format", "envelope", "-q"])
    assert code == 0
    return {r["id"]: r["result"] for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}


def by_id(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    return {r["id"]: json.loads(r["result"]) for r in rows}


def test_the_library_equals_the_local_cli_digests_included(
    local_ray: None, tiny_model_dir: Path, local_results: dict[str, Any]
) -> None:
    results = verify_dataset(ray.data.from_items(ROWS), tiny_model_dir, rows_per_batch=32).take_all()
    assert by_id(results) == local_results
    assert all(r["error"] is None for r in results)


def test_the_cli_engine_writes_json_lines_joined_by_id(
    local_ray: None, source: Path, tiny_model_dir: Path, local_results: dict[str, Any], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    outdir = tmp_path / "out"
    argv = ["verify", str(source), "-o", str(outdir), "--engine", "ray", "--model-dir", str(tiny_model_dir)]
    assert cli.main([*argv, "--rows-per-batch", "50", "-q"]) == 0
    rows = [json.loads(line) for path in sorted(outdir.iterdir()) for line in path.read_text(encoding="utf-8").splitlines()]
    assert by_id(rows) == local_results
    code = cli.main([*argv, "-q"])
    assert code == 2 and "must be a new or empty directory" in capsys.readouterr().err


def test_a_worker_without_the_model_directory_fails_the_job_clearly(local_ray: None, tmp_path: Path) -> None:
    with pytest.raises(Exception) as caught:
        verify_dataset(ray.data.from_items(ROWS[:4]), tmp_path / "nowhere").take_all()
    assert "cannot open model directory" in str(caught.value)
    assert "on every node" in str(caught.value)


def test_a_tampered_model_fails_the_cli_with_one_line(
    local_ray: None, source: Path, tiny_model_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (tiny_model_copy / "model.onnx").open("ab") as handle:
        handle.write(b"\0")
    argv = ["verify", str(source), "-o", str(tmp_path / "out"), "--engine", "ray", "--model-dir", str(tiny_model_copy), "-q"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    # the node check re-hashes the files, before any actor: a tampered copy on one node of many would
    # otherwise only fail that node's actors while the others finish the job, and nobody hears of it
    size = (tiny_model_copy / "model.onnx").stat().st_size
    assert err.startswith("error: node ") and f"cannot open model directory {tiny_model_copy}: its files do not match its " \
        f"manifest.json: model.onnx: size {size} != manifest {size - 1}; nothing was scored" in err, err
    assert not (tmp_path / "out").exists()


def test_an_invalid_row_fails_unless_skipped(local_ray: None, tiny_model_dir: Path) -> None:
    rows = [*ROWS[:3], {"id": "bad", "claim": "  ", "evidence": []}]
    with pytest.raises(Exception) as caught:
        verify_dataset(ray.data.from_items(rows), tiny_model_dir).take_all()
    assert isinstance(caught.value, RayVerificationError) or "invalid row (id 'bad')" in str(caught.value)
    results = {r["id"]: r for r in verify_dataset(ray.data.from_items(rows), tiny_model_dir, skip_invalid=True).take_all()}
    assert results["bad"]["result"] is None and json.loads(results["bad"]["error"])["field"] == "claim"
    assert all(results[f"c{n}"]["error"] is None for n in range(3))


# ---------------------------------------------------------------- trust on every surface (item 5)


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "claims.jsonl"


def _every_field_type(tmp_path: Path) -> Path:
    """examples/claims.jsonl (12 of its 41 rows carry event_time/valid_from/valid_to), with a byte-order mark,
    a blank line, timestamps with other offsets and without one, and a U+2028 inside a passage."""
    rows = EXAMPLES.read_text(encoding="utf-8").splitlines()
    extra = {
        "id": "offsets", "claim": "The launch moved.", "as_of": "2026-05-04T09:30:00+05:30",
        "evidence": [
            {"reference": "M1", "memory_id": str(uuid.UUID(int=901)), "text": "The launch moved\u2028to May.",
             "event_time": "2026-05-04T09:30:00+02:00", "valid_from": "2026-05-01T00:00:00", "valid_to": "2026-06-01T00:00:00.250000Z"},
        ],
    }
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n".join(rows[:5]) + "\n\n" + "\n".join(rows[5:]) + "\n"
                                        + json.dumps(extra, ensure_ascii=False) + "\n").encode("utf-8"))
    return path


def test_ray_results_equal_the_local_commands_for_every_field_type(
    local_ray: None, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: --engine ray read INPUT with ray.data.read_json, whose Arrow reader turned every timestamp
    into timestamp[s] without its UTC offset, so evidence_sha256 and result_sha256 differed from the local
    command's for every row with event_time, valid_from or valid_to (12 of the 41 example rows)."""
    source = _every_field_type(tmp_path)
    assert "\u2028" in source.read_text(encoding="utf-8-sig")
    local = tmp_path / "local.jsonl"
    base = ["verify", str(source), "--model-dir", str(tiny_model_dir), "-q"]
    assert cli.main([*base, "-o", str(local), "--output-format", "envelope"]) == 0
    expected = {r["id"]: r["result"] for r in map(json.loads, local.read_text(encoding="utf-8").splitlines())}
    inputs = [json.loads(line) for line in source.read_text(encoding="utf-8-sig").split("\n") if line.strip()]
    timed = [r["id"] for r in inputs if any(k in e for e in r.get("evidence", []) for k in ("event_time", "valid_from", "valid_to"))]
    assert len(expected) == 42 and len(timed) == 13
    outdir = tmp_path / "out"
    assert cli.main([*base, "-o", str(outdir), "--engine", "ray", "--rows-per-batch", "16"]) == 0
    rows = [json.loads(line) for path in sorted(outdir.iterdir()) for line in path.read_text(encoding="utf-8").splitlines()]
    got = by_id(rows)
    assert got == expected  # every field, digests included
    assert {i: got[i]["evidence_sha256"] for i in timed} == {i: expected[i]["evidence_sha256"] for i in timed}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # the staging directory is gone
    capsys.readouterr()
    assert cli.main(["check", str(outdir), "-q"]) == 0  # check reads Ray's output directory


def test_the_library_reads_lines_exactly_and_refuses_what_arrow_converted(
    local_ray: None, tiny_model_dir: Path, tmp_path: Path
) -> None:
    from verifier.distributed import read_jsonl

    source = _every_field_type(tmp_path)
    local = tmp_path / "local.jsonl"
    assert cli.main(["verify", str(source), "--model-dir", str(tiny_model_dir), "-q", "-o", str(local), "--output-format", "envelope"]) == 0
    expected = {r["id"]: r["result"] for r in map(json.loads, local.read_text(encoding="utf-8").splitlines())}
    assert by_id(verify_dataset(read_jsonl(source), tiny_model_dir, rows_per_batch=8).take_all()) == expected
    with pytest.raises(Exception) as caught:
        verify_dataset(ray.data.read_json(str(EXAMPLES)), tiny_model_dir).take_all()
    assert "Arrow converted field evidence.0.event_time to a datetime" in str(caught.value)
    assert "read the input with verifier.distributed.read_jsonl" in str(caught.value)


def test_a_failed_ray_job_writes_nothing(
    local_ray: None, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ray's output is atomic like the local command's: a failed job (here a worker meets an invalid row after
    its batch of valid ones) leaves neither OUTDIR nor a staging directory."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:30]) + '{"id": "x", "claim": 7, "evidence": []}\n', encoding="utf-8")
    outdir = tmp_path / "out"
    argv = ["verify", str(bad), "-o", str(outdir), "--engine", "ray", "--model-dir", str(tiny_model_dir), "-q"]
    assert cli.main(argv) == 1
    assert f"; nothing was written to {outdir} (" in capsys.readouterr().err.strip().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]
    outdir.mkdir()  # an empty directory given as OUTDIR stays empty
    assert cli.main(argv) == 1
    assert list(outdir.iterdir()) == []


_AFTER_A_FAILED_JOB = """
import sys, ray, ray.data
from verifier import cli
from verifier.distributed import verify_dataset
source, model_dir, out = sys.argv[1:]
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
try:
    verify_dataset(ray.data.from_items([{"id": "bad", "claim": " ", "evidence": []}]), model_dir).take_all()
except Exception as exc:
    assert "invalid row" in str(exc), exc
else:
    sys.exit("the job did not fail")
sys.exit(cli.main(["verify", source, "-o", out, "--engine", "ray", "--model-dir", model_dir, "--workers", "2", "-q"]))
"""


def test_a_job_right_after_a_failed_one_in_the_process_gets_every_cpu(source: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (CI, stop 42): a failed job's actor keeps its CPU until the exception's traceback (a
    reference cycle) is garbage collected, so a pool of every CPU started next in the process was refused
    ("2 CPUs (1 free)"). In a subprocess: pytest's log capture keeps Ray's logged traceback for the test."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _AFTER_A_FAILED_JOB, str(source), str(tiny_model_dir), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sum(len(path.read_text(encoding="utf-8").splitlines()) for path in out.iterdir()) == len(ROWS)


def test_quiet_hides_ray_datas_python_warnings_too(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (stop 52's cluster trial): on an empty input, -q still let Ray Data's Python warning
    through ("actor_pool_map_operator.py:...: UserWarning: The minimum number of concurrent actors ...")."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "verifier", "verify", str(empty), "-o", str(out), "--engine", "ray",
            "--model-dir", str(tiny_model_dir), "-q"]
    quiet = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert "Warning" not in quiet.stderr, quiet.stderr[-3000:]
    assert out.is_dir() and not any(out.iterdir())


def test_quiet_shows_none_of_rays_own_info_or_warning_lines(source: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (stop 41's new-user trial): with -q, Ray's "Started a local Ray instance", its token
    warning and Ray Data's execution-plan lines still reached stderr. Ray's C++ core may still print.
    Regression (issue 50): with stderr not a terminal the driver printed no progress of its own; now plain
    lines of rows written (``$CLAIM_VERIFIER_PROGRESS_AFTER=0``: from the start), and none with -q."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--engine", "ray", "--model-dir", str(tiny_model_dir)]
    quiet = subprocess.run([*argv, "-q"], capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    python_lines = [line for line in quiet.stderr.splitlines() if "\tINFO " in line or "\tWARNING " in line]
    assert python_lines == []
    assert sum(len(path.read_text(encoding="utf-8").splitlines()) for path in out.iterdir()) == len(ROWS)
    assert not any(line.startswith("verify [") for line in quiet.stderr.splitlines()), quiet.stderr[-3000:]
    loud = subprocess.run([*argv[:6], str(tmp_path / "loud"), *argv[7:]], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CLAIM_VERIFIER_PROGRESS_AFTER": "0"})
    assert loud.returncode == 0 and "\tINFO " in loud.stderr and f"ray: wrote {len(ROWS)} row(s)" in loud.stderr
    progress = [line for line in loud.stderr.splitlines() if line.startswith("verify [")]
    assert re.fullmatch(rf"verify \[ *\d+\.\ds\] 0 of {len(ROWS)} rows \(0%\)", progress[0]), progress
    assert re.fullmatch(rf"verify \[ *\d+\.\ds\] {len(ROWS)} of {len(ROWS)} rows in \d+\.\d s, [\d,]+ rows/s", progress[-1]), progress


def test_ctrl_c_mid_job_ends_with_interrupted_and_no_ray_traceback(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression (stop 41's new-user trial): after Ctrl-C, Ray Data's iteration outlived ray.shutdown() on a
    helper thread: two Ray tracebacks ("Ray is not initialized") after "interrupted", and a second local Ray
    instance started by Ray's automatic ray.init ("SIGTERM handler is not set")."""
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({**row(n), "id": f"m{n}"}) + "\n" for n in range(20_000)), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--resume", "--engine", "ray",
            "--model-dir", str(tiny_model_dir), "--rows-per-batch", "64"]
    job = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out.exists() and out.stat().st_size) and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        job.send_signal(signal.SIGINT)  # mid-job: the first batches are written
        _, stderr = job.communicate(timeout=120)
    finally:
        job.kill()
    lines = out.read_text(encoding="utf-8").splitlines()
    assert job.returncode == 130 and 0 < len(lines) < 20_000, stderr[-3000:]
    assert "Traceback" not in stderr and "SIGTERM handler is not set" not in stderr, stderr[-3000:]
    assert stderr.rstrip().splitlines()[-1] == "interrupted"


def test_stall_timeout_0_waits_past_ray_datas_own_no_progress_timeout(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Regression: Ray Data 2.60 fails a job after DataContext.execution_no_progress_timeout_s (1,800 s by
    default) without blocks moving, so a batch longer than that failed a job --stall-timeout 0 tells to
    wait. Here Ray's timeout is 1 s (its environment variable) and the one batch takes longer."""
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({**row(n), "id": f"m{n}"}) + "\n" for n in range(12_000)), encoding="utf-8")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--engine", "ray", "-q",
            "--model-dir", str(tiny_model_dir), "--rows-per-batch", "12000", "--stall-timeout", "0"]
    env = {**os.environ, "RAY_DATA_EXECUTION_NO_PROGRESS_TIMEOUT_S": "1"}
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sum(len(path.read_text(encoding="utf-8").splitlines()) for path in out.iterdir()) == 12_000
    assert time.monotonic() - started > 1.0


def test_ray_resume_finishes_a_partial_output_with_exactly_the_local_resume_lines(
    local_ray: None, source: Path, tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--engine ray --resume -o FILE keeps what a killed run left (its torn last line dropped), verifies only
    the rest (the workers skip the ids already written) and ends with the local --resume output's lines."""
    local = tmp_path / "local.jsonl"
    base = ["verify", str(source), "--model-dir", str(tiny_model_dir), "--resume"]
    assert cli.main([*base, "-o", str(local), "-q"]) == 0
    expected = local.read_bytes().splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"".join(expected[:50]) + expected[50][:20])  # killed mid-write
    capsys.readouterr()
    assert cli.main([*base, "-o", str(out), "--engine", "ray", "--rows-per-batch", "16"]) == 0
    assert f"resume: 50 rows already in {out}, kept; {len(ROWS) - 50} to verify" in capsys.readouterr().err
    lines = out.read_bytes().splitlines(keepends=True)
    assert lines[:50] == expected[:50] and sorted(lines) == sorted(expected)
    assert cli.main([*base, "-o", str(out), "--engine", "ray"]) == 0  # nothing left: no job, nothing added
    assert out.read_bytes().splitlines(keepends=True) == lines
    out.write_bytes(out.read_bytes().replace(b'"line": 3,', b'"line": 4,', 1))
    assert cli.main([*base, "-o", str(out), "--engine", "ray", "-q"]) == 2  # the local resume's checks
    assert "(id 'c2') is stale: it is for line 4, but the row with that id is" in capsys.readouterr().err


def test_the_driver_takes_blocks_of_at_most_driver_block_bytes_whatever_the_input(
    local_ray: None, tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Each part file is one block the driver held. Ray Data's default (128 MiB) let blocks grow with the
    input (4 MB here), and the driver's memory with them; the job asks for DRIVER_BLOCK_BYTES,
    which Ray may exceed by half (its MAX_SAFE_BLOCK_SIZE_FACTOR)."""
    from verifier.distributed import DRIVER_BLOCK_BYTES

    pad = " The launch window was reviewed by the committee again." * 40  # ~2.2 KB a claim, ~4 KB a result
    source = tmp_path / "long.jsonl"
    source.write_text("".join(json.dumps(dict(row(n), claim=row(n)["claim"] + pad)) + "\n" for n in range(1000)), encoding="utf-8")
    outdir = tmp_path / "out"
    assert cli.main(["verify", str(source), "-o", str(outdir), "--engine", "ray", "--model-dir", str(tiny_model_dir), "-q"]) == 0
    ids: list[str] = []
    for part in sorted(outdir.iterdir()):
        rows = [json.loads(line) for line in part.read_text(encoding="utf-8").splitlines()]
        # an Arrow block of string columns holds each value's UTF-8 bytes and a 4-byte offset
        held = sum(len(r["id"].encode()) + len(r["result"].encode()) + 8 for r in rows)
        assert held <= 1.5 * DRIVER_BLOCK_BYTES, (part.name, len(rows), held)
        ids += [r["id"] for r in rows]
    assert sorted(ids) == sorted(f"c{n}" for n in range(1000))


def test_ray_resume_refuses_invalid_rows_with_the_local_commands_fix(
    tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (stop 52's cluster trial): --engine ray --resume ended "...; nothing written" without the
    local command's "(--skip-invalid verifies the valid rows and reports these)"."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:5]) + '{"id": "x1", "claim": 7, "evidence": []}\n', encoding="utf-8")
    lines: dict[int, tuple[int, list[str]]] = {}
    for engine in (["--engine", "ray"], []):
        out = tmp_path / f"out{len(engine)}.jsonl"
        code = cli.main(["verify", str(bad), "-o", str(out), "--resume", "--model-dir", str(tiny_model_dir), "-q", *engine])
        lines[len(engine)] = (code, capsys.readouterr().err.strip().splitlines()[-2:])
    assert lines[2] == lines[0]
    assert lines[0][0] == 2 and lines[0][1][-1] == (
        f"error: 1 invalid row in {bad}; nothing written (--skip-invalid verifies the valid rows and reports these)")

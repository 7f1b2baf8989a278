"""``verify --engine ray`` beside a ``ray start --head`` cluster running on the same machine (issue 48, items 1 and 4).

The cluster is a real ``ray start --head --block`` on 127.0.0.1 (2 CPUs), in a Ray temporary directory of its
own (``$RAY_TMPDIR``: its ``ray_current_cluster`` file is where a driver given that directory looks, so other
Ray instances on the machine neither see it nor are seen). It is stopped by signalling its ``ray start``
process, which ends the processes it started (``ray stop`` would end every Ray instance on the machine);
every command has a timeout. Results are compared, digests included, with the local command's.

Needs the ``ray`` extra; skipped without it. Slow: a head node, then a driver per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

from verifier import cli  # noqa: E402

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 300
ROWS = [
    {"id": f"c{n}", "claim": f"The launch is on day {n % 7}.",
     "evidence": [{"reference": "M1", "memory_id": str(uuid.UUID(int=n + 1)), "text": f"The launch moved to day {n % 5}."}]}
    for n in range(40)
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Head:
    """A running ``ray start --head``: its address and the environment of a driver on this machine."""

    def __init__(self, address: str, env: dict[str, str]) -> None:
        self.address, self.env = address, env


def _environment(temp: Path, nodes: bool = False) -> dict[str, str]:
    """A process's environment here: Ray's temporary directory ``temp``; one node's loopback address kept as
    given (Ray would put the machine's outward IP for 127.0.0.1), unless ``nodes``: addresses other than
    127.0.0.1, which need Ray's multi-node mode (token authentication on)."""
    env = {key: value for key, value in os.environ.items() if key not in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
    env.update({"RAY_TMPDIR": str(temp), "RAY_AUTH_MODE": "token"} if nodes else {"RAY_TMPDIR": str(temp), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
    return env


@contextlib.contextmanager
def ray_start(temp: Path, *options: str, ip: str = "127.0.0.1", nodes: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """``ray start --block OPTIONS`` on ``ip`` in Ray's temporary directory ``temp``, in a session of its own
    (``nodes``: :func:`_environment`'s); stopped by SIGTERM (--block: it ends what it started), then after
    10 s whatever is left of its process group (raylet, GCS, workers: all in it) SIGKILLed: a node that ran
    jobs can spend half a minute in Ray's graceful stop, which these tests need not wait for."""
    ray_exe = str(Path(sys.executable).with_name("ray"))
    env = _environment(temp, nodes)
    with (temp / f"ray-start-{time.monotonic_ns()}.log").open("w") as log:
        process = subprocess.Popen(
            [ray_exe, "start", "--block", "--node-ip-address", ip, "--disable-usage-stats", *options],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):  # whatever of its group is left
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _started_head(temp: Path, process: subprocess.Popen[bytes], port: str, nodes: bool = False) -> Head:
    """The head ``ray start --head --port PORT`` started, once it recorded its address."""
    marker = temp / "ray" / "ray_current_cluster"

    def up() -> bool:
        return marker.exists() and marker.read_text().strip().endswith(f":{port}")

    deadline = time.monotonic() + 120
    while not up() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if not up():
        logs = "".join(path.read_text() for path in temp.glob("ray-start-*.log"))
        pytest.fail(f"ray start --head did not come up: {logs[-2000:]}")
    return Head(marker.read_text().strip(), _environment(temp, nodes))  # the address it recorded, as `ray status` shows it


@pytest.fixture(scope="module")
def head() -> Iterator[Head]:
    temp = Path(tempfile.mkdtemp(prefix="rh", dir="/tmp"))  # short: Ray's socket paths must stay under 108 bytes
    try:
        port = str(_free_port())
        with ray_start(temp, "--head", "--port", port, "--num-cpus", "2", "--include-dashboard", "false") as process:
            yield _started_head(temp, process, port)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, tiny_model_dir: Path) -> dict[str, Any]:
    """The input, and the local command's --resume output (sorted lines) over it."""
    root = tmp_path_factory.mktemp("started-cluster")
    source = root / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    local = root / "local.jsonl"
    assert cli.main(["verify", str(source), "-o", str(local), "--model-dir", str(tiny_model_dir), "--resume", "-q"]) == 0
    return {"root": root, "source": source, "lines": sorted(local.read_text(encoding="utf-8").splitlines(keepends=True))}


def _wait_for_cpus(head: Head, cpus: int) -> None:
    """Wait until the cluster at ``head`` has ``cpus`` CPUs (a node joined)."""
    probe = ("import sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False); "
             "print(int(ray.cluster_resources().get('CPU', 0)))")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = subprocess.run([sys.executable, "-c", probe, head.address], env=head.env,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT)
        if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(cpus)]:
            return
        time.sleep(1)
    pytest.fail(f"the cluster at {head.address} did not get {cpus} CPU(s)")


def _verify(head: Head, cwd: Path, *argv: str, token: bool = False) -> subprocess.CompletedProcess[str]:
    """The command in ``cwd``; ``token``: with Ray's token authentication on, which a driver joining a new head
    by its address needs (docs/bulk.md; ``--address auto`` finds it on the machine)."""
    env = {**head.env, "RAY_AUTH_MODE": "token"} if token else head.env
    return subprocess.run([sys.executable, "-m", "verifier", "verify", *argv, "--engine", "ray", "--workers", "1", "-q"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)


def test_without_address_a_private_instance_starts_beside_a_running_cluster(
    head: Head, job: dict[str, Any], tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (issue 48, item 4): with a `ray start` cluster on the machine and RAY_ADDRESS unset, the
    command joined it (Ray's ray.init() looks for one) and failed at once, every time: "When connecting to
    an existing cluster, num_cpus and num_gpus must not be provided". It starts its own instance now."""
    out = tmp_path / "out.jsonl"
    done = _verify(head, tmp_path, str(job["source"]), "-o", str(out), "--resume", "--model-dir", str(tiny_model_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == job["lines"]


def test_address_auto_joins_it_and_relative_paths_reach_the_workers(
    head: Head, job: dict[str, Any], tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (issue 48, item 1): a relative INPUT was handed to the cluster's read tasks as given, and
    their working directory is not the driver's: the job failed with a FileNotFoundError shown only in a
    traceback, the message being Ray's task name with its colour codes. Paths are made absolute first."""
    cwd = tmp_path / "here"
    cwd.mkdir()
    model = os.path.relpath(tiny_model_dir, cwd)
    source = os.path.relpath(job["source"], cwd)
    assert not os.path.isabs(source) and source.startswith("..")
    done = _verify(head, cwd, source, "-o", "out", "--address", "auto", "--model-dir", model)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for path in sorted((cwd / "out").iterdir()) for line in path.read_text(encoding="utf-8").splitlines()]
    expected = {value["id"]: value["result"] for value in map(json.loads, job["lines"])}
    assert {row["id"]: json.loads(row["result"]) for row in rows} == expected
    resumed = _verify(head, cwd, source, "-o", "out.jsonl", "--resume", "--address", head.address, "--model-dir", model,
                      token=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert sorted((cwd / "out.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)) == job["lines"]


_TASK_FAILS = """
import logging, sys, ray, ray.data
from verifier.cli.ray_run import ray_cause
from verifier.distributed import read_jsonl
ray.init(address=sys.argv[1], log_to_driver=False, logging_level=logging.ERROR)
ray.data.DataContext.get_current().enable_progress_bars = False
try:
    read_jsonl("here/claims.jsonl", num_cpus=0).take_all()  # relative: found here, not where the task runs
except Exception as exc:
    print(ray_cause(exc))
    print(str(exc).splitlines()[0])
else:
    sys.exit("the job did not fail")
"""


def test_a_failed_task_is_named_by_its_own_error_without_escape_codes(head: Head, tmp_path: Path) -> None:
    """Regression (issue 48, item 1): a task that failed on the cluster was reported as
    "\\x1b[36mray::ReadJsonLinesSource->SplitBlocks(4)()\\x1b[39m (pid=..., ip=...)": Ray's first line, its colour
    codes shown literally, the cause only in the traceback. ray_cause gives the task's own exception."""
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "claims.jsonl").write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _TASK_FAILS, "auto"], cwd=tmp_path, env=head.env,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    cause, ray_line = done.stdout.splitlines()[-2:]
    assert "ray::" in ray_line  # what the message said before
    assert cause.startswith("FileNotFoundError: ") and "here/claims.jsonl" in cause, cause
    assert "\x1b" not in cause and "ray::" not in cause


def _terminate_mid_job(head: Head, cwd: Path, argv: list[str], written: Callable[[], bool]) -> tuple[int, str]:
    """Start the command, SIGTERM it once ``written()`` (mid-job), and give its exit status and stderr."""
    job = subprocess.Popen([sys.executable, "-m", "verifier", "verify", *argv, "--engine", "ray", "--workers", "1",
                            "--address", "auto"], cwd=cwd, env=head.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not written() and job.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        job.send_signal(signal.SIGTERM)
        _, stderr = job.communicate(timeout=RUN_TIMEOUT)
    finally:
        job.kill()
    return job.returncode, stderr


def test_sigterm_to_a_cluster_driver_says_what_is_kept_and_exits_143(
    head: Head, tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (issue 48, item 3): ray.init replaced the command's SIGTERM handler with Ray's, so a driver
    given SIGTERM printed Ray's "*** SIGTERM received" and died by the signal: no line on what -o keeps, no
    exit status of the command's own, in --resume and directory mode alike. Now as the local command: what is
    kept (or that nothing was written, the staging directory removed), then "terminated", exit 143; the
    same command finishes the --resume output with exactly the local command's lines."""
    many = [{**ROWS[n % len(ROWS)], "id": f"m{n}"} for n in range(3000)]
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in many), encoding="utf-8")
    local = tmp_path / "local.jsonl"
    assert cli.main(["verify", str(source), "-o", str(local), "--model-dir", str(tiny_model_dir), "--resume", "-q"]) == 0
    out = tmp_path / "out.jsonl"
    argv = [str(source), "-o", str(out), "--resume", "--model-dir", str(tiny_model_dir), "--rows-per-batch", "16"]
    code, stderr = _terminate_mid_job(head, tmp_path, argv, lambda: out.exists() and out.stat().st_size > 0)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert code == 143 and 0 < len(lines) < len(many), stderr[-3000:]
    assert "SIGTERM received" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    last = stderr.rstrip().splitlines()[-2:]
    assert last[1] == "terminated", stderr[-3000:]
    assert re.fullmatch(rf"{re.escape(str(out))} keeps the \d+ rows written so far: run the same command again to finish", last[0]), last
    finished = _verify(head, tmp_path, *argv, "--address", "auto")
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == sorted(local.read_text(encoding="utf-8").splitlines(keepends=True))
    outdir = tmp_path / "outdir"
    argv = [str(source), "-o", str(outdir), "--model-dir", str(tiny_model_dir), "--rows-per-batch", "16"]
    code, stderr = _terminate_mid_job(head, tmp_path, argv, lambda: any(path.name.startswith(".outdir.") and any(path.iterdir())
                                                                        for path in tmp_path.iterdir() if path.is_dir()))
    assert code == 143, stderr[-3000:]
    assert stderr.rstrip().splitlines()[-2:] == [
        f"nothing was written to {outdir} (with --resume -o FILE a failed job keeps its finished rows)", "terminated"]
    assert not outdir.exists() and not [path for path in tmp_path.iterdir() if path.name.startswith(".outdir.")]


def _heavy_row(n: int) -> dict[str, Any]:
    """A claim with 5 passages of about 400 tokens each: a job of a few hundred lasts long enough to lose the head in."""
    evidence = [{"reference": f"M{k}", "memory_id": str(uuid.UUID(int=8 * n + k + 1)),
                 "text": " ".join(f"The launch moved to day {(n + k + j) % 5} after review {j}." for j in range(40))}
                for k in range(5)]
    return {"id": f"h{n}", "claim": f"The launch is on day {n % 7}.", "evidence": evidence}


def test_a_lost_head_ends_the_driver_with_what_is_kept_and_the_same_command_finishes(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (issue 48, item 2): with the head's processes SIGKILLed mid-job (a head of no CPUs on
    127.0.0.2, the node running the actor and the driver on 127.0.0.1), the driver's last words
    were Ray's ("Failed to connect to GCS within 60 seconds ... The program will terminate"), after dozens
    of "Failed to push error to driver", with no word on what -o keeps, and a directory job left its
    staging directory. Now the driver gives up first: what -o keeps (or the staging directory removed),
    exit 1; with a head back, the same command finishes the output with exactly the local lines."""
    many = [_heavy_row(n) for n in range(1200)]
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in many), encoding="utf-8")
    local = tmp_path / "local.jsonl"
    assert cli.main(["verify", str(source), "-o", str(local), "--model-dir", str(tiny_model_dir), "--resume", "-q"]) == 0
    temp = Path(tempfile.mkdtemp(prefix="rl", dir="/tmp"))
    out, outdir = tmp_path / "out.jsonl", tmp_path / "outdir"
    try:
        for target, extra in ((out, ["--resume"]), (outdir, [])):
            port = str(_free_port())
            with ray_start(temp, "--head", "--port", port, "--num-cpus", "0", "--include-dashboard", "false",
                           ip="127.0.0.2", nodes=True) as head_process, contextlib.ExitStack() as node:
                started = _started_head(temp, head_process, port, nodes=True)
                node.enter_context(ray_start(temp, "--address", started.address, "--num-cpus", "1", nodes=True))
                _wait_for_cpus(started, 1)
                argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(target), *extra, "--engine", "ray",
                        "--workers", "1", "--address", started.address, "--model-dir", str(tiny_model_dir),
                        "--rows-per-batch", "16", "-q"]
                job = subprocess.Popen(argv, cwd=tmp_path, env={**started.env, "CLAIM_VERIFIER_RAY_HEAD_LOST_AFTER": "10"},
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                try:
                    deadline = time.monotonic() + RUN_TIMEOUT

                    def written() -> bool:
                        if target == out:
                            return out.exists() and out.stat().st_size > 0
                        return any(path.name.startswith(".outdir.") and any(path.iterdir()) for path in tmp_path.iterdir() if path.is_dir())

                    while not written() and job.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.05)
                    assert job.poll() is None, job.communicate()[1][-3000:]
                    os.killpg(head_process.pid, signal.SIGKILL)  # the head machine is gone
                    lost = time.monotonic()
                    _, stderr = job.communicate(timeout=RUN_TIMEOUT)
                finally:
                    job.kill()
                assert time.monotonic() - lost < 45, stderr[-3000:]  # given up after 10 s, well before Ray's own 60 s
                last = stderr.rstrip().splitlines()[-1]
                assert job.returncode == 1, stderr[-3000:]
                assert last.startswith(f"error: lost the Ray cluster's head at {started.address}: no answer for "), last
                if target == out:
                    kept = len(out.read_text(encoding="utf-8").splitlines())
                    assert 0 < kept < len(many)
                    assert last.endswith(f"; {out} keeps the {kept} rows written so far: run the same command again once that is fixed"), last
                else:
                    assert last.endswith(f"; nothing was written to {outdir} (with --resume -o FILE a failed job keeps its finished rows)"), last
                    assert not outdir.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".outdir.")]
        port = str(_free_port())
        with ray_start(temp, "--head", "--port", port, "--num-cpus", "1", "--include-dashboard", "false") as head_process:
            started = _started_head(temp, head_process, port)
            finished = _verify(started, tmp_path, str(source), "-o", str(out), "--resume", "--address", "auto",
                               "--model-dir", str(tiny_model_dir))
            assert finished.returncode == 0, finished.stderr[-3000:]
        assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == sorted(local.read_text(encoding="utf-8").splitlines(keepends=True))
    finally:
        shutil.rmtree(temp, ignore_errors=True)

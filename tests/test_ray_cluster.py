"""``verify --engine ray`` on a real multi-node Ray cluster in this machine (issue 36), as a cluster user runs it.

The cluster is :class:`ray.cluster_utils.Cluster`: a head node that runs no work (0 CPUs)
and worker nodes of 1 CPU each, every one its own raylet on 127.0.0.1. The command runs in
a subprocess that joins it with ``--address``, like a user's driver; every run has a
subprocess timeout, and the cluster is shut down at the end of the module. Results are
compared, digests included, with the local command's over the same input (the tiny
seeded model of ``tests/conftest.py``).

Needs the ``ray`` extra; skipped without it. Slow: each node starts its own processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

from ray.cluster_utils import Cluster  # noqa: E402

from bench.ray_node_loss import actor_node, lines_in  # noqa: E402
from verifier import cli  # noqa: E402

pytestmark = pytest.mark.slow

#: Every node and the driver on loopback only.
LOOPBACK = "127.0.0.1"
#: The environment variables of Ray's token authentication.
AUTH = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN")
#: Seconds any one command may take here before the test gives up on it (it never should).
RUN_TIMEOUT = 300


def row(n: int) -> dict[str, Any]:
    """A claim with 5 long passages (about 400 tokens each), so that a job lasts long enough to lose a node in."""
    evidence = [
        {"reference": f"M{k}", "memory_id": str(uuid.UUID(int=8 * n + k + 1)),
         "text": " ".join(f"The launch moved to day {(n + k + j) % 5} after review {j}." for j in range(40))}
        for k in range(5)
    ]
    value: dict[str, Any] = {"id": f"c{n}", "claim": f"The launch is on day {n % 7}.", "evidence": evidence}
    if n % 4 == 0:
        value["requires_complete_set"] = n % 8 == 0
    if n % 9 == 0:
        value["as_of"] = "2026-05-04T09:30:00+02:00"  # an offset Arrow's JSON reader would drop
    return value


ROWS = [row(n) for n in range(300)]


class Nodes:
    """The running cluster: its address and its 1-CPU worker nodes (kill one, add one)."""

    def __init__(self) -> None:
        self.cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "node_ip_address": LOOPBACK}
        )
        self.workers: list[Any] = []

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def add(self) -> Any:
        node = self.cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
        self.workers.append(node)
        self.cluster.wait_for_nodes()
        return node

    def kill(self, node: Any, *, wait: bool = False) -> None:
        """Lose ``node`` at once, as a machine failure would (its processes SIGKILLed); with ``wait``, until
        the cluster has marked it dead (its missed heartbeats, up to ~30 s): until then it is still listed
        alive, and a job started meanwhile may place its actor there and wait for it."""
        self.cluster.remove_node(node, allow_graceful=False)
        self.workers.remove(node)
        if wait:
            self.cluster.wait_for_nodes(timeout=120)

    def resize(self, count: int) -> None:
        while len(self.workers) > count:
            self.kill(self.workers[-1], wait=True)
        while len(self.workers) < count:
            self.add()


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    started = Nodes()
    try:
        started.resize(2)
        yield started
    finally:
        started.cluster.shutdown()


#: A head node with token authentication (0 CPUs), in a process of its own (the token mode of a
#: process is fixed when Ray first reads it): prints its address, shuts down when stdin closes.
TOKEN_HEAD = """
import sys
from ray.cluster_utils import Cluster
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "node_ip_address": "127.0.0.1"})
print(cluster.address, flush=True)
sys.stdin.read()
cluster.shutdown()
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cluster-in") / "claims.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def local_lines(source: Path, tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The local command's ``--resume`` output (envelopes), sorted: what every cluster run must equal."""
    out = tmp_path_factory.mktemp("cluster-local") / "local.jsonl"
    assert cli.main(["verify", str(source), "-o", str(out), "--model-dir", str(tiny_model_dir), "--resume", "-q"]) == 0
    lines = sorted(out.read_text(encoding="utf-8").splitlines(keepends=True))
    assert len(lines) == len(ROWS)
    return lines


def command(source: Path, out: Path, model: Path, address: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--engine", "ray",
            "--model-dir", str(model), "--address", address, "-q", *extra]


def environment() -> dict[str, str]:
    """The driver's environment: on loopback only.

    Ray rewrites a 127.0.0.1 address to the machine's outward IP before connecting
    (``resolve_ip_for_localhost``), unless multi-node support is off in this process; the
    nodes here listen on 127.0.0.1 only, so the driver keeps the address as given.
    """
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return env


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=environment())


def directory_rows(outdir: Path) -> dict[str, Any]:
    rows = [json.loads(line) for path in sorted(outdir.iterdir()) for line in path.read_text(encoding="utf-8").splitlines()]
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    return {r["id"]: json.loads(r["result"]) for r in rows}


def as_results(lines: list[str]) -> dict[str, Any]:
    return {value["id"]: value["result"] for value in map(json.loads, lines)}


def test_workers_equal_to_the_clusters_cpus_finish_with_the_local_results(
    nodes: Nodes, source: Path, tiny_model_dir: Path, local_lines: list[str], tmp_path: Path
) -> None:
    """Regression (issue 36): --workers 2 on a cluster of two 1-CPU nodes waited forever: the two actors
    held both CPUs and Ray's JSON read task waited for a third that never came; nothing was written."""
    nodes.resize(2)
    outdir = tmp_path / "out"
    done = run(command(source, outdir, tiny_model_dir, nodes.address, "--workers", "2", "--rows-per-batch", "40"))
    assert done.returncode == 0, done.stderr
    assert directory_rows(outdir) == as_results(local_lines)  # every field, result_sha256 included
    resumable = tmp_path / "out.jsonl"
    done = run(command(source, resumable, tiny_model_dir, nodes.address, "--workers", "2", "--resume", "--rows-per-batch", "40"))
    assert done.returncode == 0, done.stderr
    assert sorted(resumable.read_text(encoding="utf-8").splitlines(keepends=True)) == local_lines  # byte for byte


def test_a_driver_without_the_clusters_token_is_refused_with_what_it_needs(
    source: Path, tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Issue 36: Ray 2.60 turns token authentication on for a new head, and a process joining it has it
    off unless told; the command names the cluster and the settings it needs. With them it joins (and
    then refuses, at once, a pool that a head of 0 CPUs cannot hold)."""
    token = tmp_path / "auth_token"
    token.write_text(uuid.uuid4().hex + uuid.uuid4().hex, encoding="ascii")
    plain = {key: value for key, value in environment().items() if key not in AUTH}
    with_token = {**plain, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    outdir = tmp_path / "out"
    with subprocess.Popen([sys.executable, "-c", TOKEN_HEAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, env=with_token) as head:
        try:
            assert head.stdout is not None
            address = head.stdout.readline().strip()
            argv = command(source, outdir, tiny_model_dir, address)
            refused = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=plain)
            joined = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=with_token)
            head.communicate("", timeout=RUN_TIMEOUT)
        finally:
            head.kill()
    message = refused.stderr.strip().splitlines()[-1]
    assert refused.returncode == 1
    assert message.startswith(f"error: cannot connect to the Ray cluster at {address}: "), message
    assert "set RAY_AUTH_MODE=token here and give its token" in message and message.endswith("nothing was written")
    assert joined.returncode == 2 and "has 0 CPUs (0 free) on 1 node (0)" in joined.stderr, joined.stderr
    assert not outdir.exists()


def test_workers_above_the_clusters_cpus_are_refused_at_once_naming_them(
    nodes: Nodes, source: Path, tiny_model_dir: Path, tmp_path: Path
) -> None:
    """Regression (issue 36): a pool larger than the cluster was accepted and waited for CPUs forever."""
    nodes.resize(2)
    outdir = tmp_path / "out"
    done = run(command(source, outdir, tiny_model_dir, nodes.address, "--workers", "3"))
    assert done.returncode == 2
    message = done.stderr.strip().splitlines()[-1]
    assert "--workers 3 x --threads-per-worker 1 needs 3 CPUs" in message
    assert "has 2 CPUs (2 free) on 3 nodes (0 + 1 + 1)" in message and "use --workers 2 or fewer" in message
    done = run(command(source, outdir, tiny_model_dir, nodes.address, "--workers", "1", "--threads-per-worker", "2"))
    assert done.returncode == 2 and "use --threads-per-worker 1 or fewer" in done.stderr
    assert not outdir.exists()


def _first_batch(job: "subprocess.Popen[str]", out: Path) -> None:
    """Wait until ``out`` holds a first batch (the job's actors are up and working), then pause the driver
    (SIGSTOP: it writes nothing more, whatever Ray finishes meanwhile) until :func:`_kill_mid_job`."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while lines_in(out) == 0 and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    job.send_signal(signal.SIGSTOP)


def _kill_mid_job(nodes: Nodes, job: "subprocess.Popen[str]", out: Path, node: Any) -> int:
    """Kill ``node`` while the paused driver has written some rows but not all, then let the driver go on."""
    written = lines_in(out)
    try:
        nodes.kill(node)
    finally:
        job.send_signal(signal.SIGCONT)
    assert 0 < written < len(ROWS), f"the node was not killed mid-job ({written} lines written)"
    return written


def _actor_node(nodes: Nodes) -> Any:
    """The worker node whose raylet runs the job's actor."""
    node = actor_node(nodes.workers)
    assert node is not None, "no worker node of this cluster runs the job's actor"
    return node


def test_a_worker_node_lost_mid_job_its_actor_moves_and_the_job_ends_with_the_local_results(
    nodes: Nodes, source: Path, tiny_model_dir: Path, local_lines: list[str], tmp_path: Path
) -> None:
    """One worker on a cluster of two 1-CPU nodes; once it has written a batch, the node that runs its
    actor is lost (SIGKILL): Ray restarts the actor on the other node and retries its batch, and the
    driver writes each row once."""
    nodes.resize(2)
    out = tmp_path / "out.jsonl"
    argv = command(source, out, tiny_model_dir, nodes.address, "--resume", "--rows-per-batch", "2")
    with subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=environment()) as job:
        try:
            _first_batch(job, out)
            _kill_mid_job(nodes, job, out, _actor_node(nodes))
            _, stderr = job.communicate(timeout=RUN_TIMEOUT)
        finally:
            job.kill()
    assert job.returncode == 0, stderr
    assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == local_lines  # none lost or repeated


#: The stall test's --stall-timeout: longer than its first batch takes here under load (the actor's start,
#: its engine check and model load count towards it), short enough to wait out once.
STALL_TIMEOUT = 40


def test_a_job_stalled_by_a_lost_node_fails_clearly_and_resumes_to_the_local_results(
    nodes: Nodes, tiny_model_dir: Path, local_lines: list[str], tmp_path: Path
) -> None:
    """Regression (issue 36; restored for issue 48, item 8): a job that could make no progress waited
    forever. Here the only worker node is lost mid-job: Ray waits to restart its actor on a CPU that never
    comes. The job fails after --stall-timeout, keeps the rows written, and the same command, once a node
    joins again, finishes with exactly the local results.

    It was removed once because it stalled before the node was lost: on a 1-CPU cluster Ray Data reads the
    input as two blocks, and the driver (iter_batches(prefetch_batches=1)) got a finished block only once
    the next was done, so nothing came back before the end. The driver now prefetches nothing."""
    nodes.resize(1)
    rows = ROWS[:120]  # two blocks of 60: the first comes back well within the timeout
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ids = {r["id"] for r in rows}
    expected = [line for line in local_lines if json.loads(line)["id"] in ids]
    assert len(expected) == len(rows)
    out = tmp_path / "out.jsonl"
    argv = command(source, out, tiny_model_dir, nodes.address, "--resume", "--rows-per-batch", "2")
    with subprocess.Popen([*argv, "--stall-timeout", str(STALL_TIMEOUT)], stderr=subprocess.PIPE, text=True,
                          env=environment()) as job:
        try:
            _first_batch(job, out)
            assert job.poll() is None, job.communicate()[1][-3000:]  # it ended before its first batch
            written = lines_in(out)
            nodes.kill(nodes.workers[0])
            job.send_signal(signal.SIGCONT)
            _, stderr = job.communicate(timeout=RUN_TIMEOUT)
        finally:
            job.kill()
    assert 0 < written < len(rows), f"the node was not lost mid-job ({written} lines written)"
    message = stderr.strip().splitlines()[-1]
    assert job.returncode == 1, stderr[-3000:]
    assert message.startswith(f"error: the Ray job made no progress for {STALL_TIMEOUT} s (--stall-timeout)"), message
    assert "the cluster has 0 CPUs (0 free) on 1 node (0) now" in message, message
    kept = lines_in(out)
    assert message.endswith(f"{out} keeps the {kept} rows written so far: run the same command again to finish"), message
    assert written <= kept < len(rows)
    nodes.add()
    done = run([arg for arg in argv if arg != "-q"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resume: {kept} rows already in {out}, kept; {len(rows) - kept} to verify" in done.stderr
    assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == expected  # none lost or repeated


def test_a_job_started_just_after_a_node_is_lost_checks_the_others_and_finishes(
    nodes: Nodes, tiny_model_dir: Path, local_lines: list[str], tmp_path: Path
) -> None:
    """Regression (found while restoring the stall test): a node lost moments before a job is still listed
    alive until its missed heartbeats mark it dead; the job's engine check sent it a probe that could not
    be scheduled, and the job failed ("The task is not schedulable ... NodeAffinitySchedulingStrategy"),
    "run the same command again" failing the same way for ~30 s. The lost node is now left out (it gets no
    work) and the job finishes on the others with the local results."""
    nodes.resize(2)
    rows = ROWS[:8]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ids = {r["id"] for r in rows}
    out = tmp_path / "out.jsonl"
    nodes.kill(nodes.workers[-1])  # not waited for: still listed alive
    done = run(command(source, out, tiny_model_dir, nodes.address, "--resume", "--workers", "1"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(out.read_text(encoding="utf-8").splitlines(keepends=True)) == [
        line for line in local_lines if json.loads(line)["id"] in ids]

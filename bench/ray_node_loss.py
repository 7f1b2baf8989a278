"""``python -m bench.ray_node_loss``: a cluster job loses a node and then its driver; ``--resume`` finishes it.

Usage::

    python -m bench.ray_node_loss --rows 200000 --model-dir models/tiny-deberta-v2-smoke-seed0

The trial of issue 48's last target, on one machine (docs/bulk.md, "When a node is lost"):

1. the local command, ``verify IN -o local.jsonl --resume`` (one process);
2. a loopback cluster (:class:`ray.cluster_utils.Cluster`, as ``tests/test_ray_cluster.py``): a head of
   0 CPUs and two worker nodes of 1 CPU, every raylet on 127.0.0.1;
3. ``verify IN -o ray.jsonl --engine ray --workers 1 --resume --address HEAD`` in a subprocess: once
   ``--kill-node-at`` of the rows are written, the node that runs the job's actor is lost (SIGKILL of
   all its processes; Ray restarts the actor on the other node); once ``--kill-driver-at`` are written,
   the driver is SIGKILLed;
4. the same command again, which keeps the lines written and verifies the rest;
5. the two outputs compared: the same ids, each line byte for byte, so every digest
   (``result_sha256``, ``evaluation_id``, ``evidence_sha256``) equal.

Prints a Markdown table of the steps (wall seconds, lines in ``ray.jsonl`` after each) and the
comparison; ``--json FILE`` writes the same figures. A trial, never a test assertion.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from .bulk import ROOT, write_claims

#: Seconds any one command may take before the trial gives up on it.
STEP_TIMEOUT = 1800


def _environment() -> dict[str, str]:
    """The driver's environment: the given address used as is (on loopback, not rewritten to an outward IP)."""
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", PYTHONPATH=str(ROOT))
    return env


def lines_in(path: Path) -> int:
    """Newlines in ``path`` (0 while it does not exist), read in 1 MiB pieces."""
    try:
        with path.open("rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def _by_id(path: Path) -> dict[str, tuple[bytes, str]]:
    """Each line's sha256 and its record's ``result_sha256``, by id (the lines are never all held)."""
    found: dict[str, tuple[bytes, str]] = {}
    with path.open("rb") as handle:
        for line in handle:
            envelope = json.loads(line)
            if envelope["id"] in found:
                raise SystemExit(f"{path}: id {envelope['id']!r} written twice")
            found[envelope["id"]] = (hashlib.sha256(line).digest(), envelope["result"]["result_sha256"])
    return found


def actor_node(workers: list[Any]) -> Any:
    """The node of ``workers`` whose raylet runs the job's actor (a ``ray::MapWorker`` process below it, in
    /proc), or None (``tests/test_ray_cluster.py`` uses it too)."""
    from ray._private import ray_constants

    parents: dict[int, int] = {}
    actors: list[int] = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            title = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        if title.startswith(b"ray::MapWorker"):
            actors.append(int(entry))
    for node in workers:
        raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
        for pid in actors:
            while pid > 1 and pid != raylet:
                pid = parents.get(pid, 1)
            if pid == raylet:
                return node
    return None


def _wait_for_lines(job: "subprocess.Popen[str]", out: Path, count: int, deadline: float) -> int:
    while (written := lines_in(out)) < count and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return written


def trial(rows: int, model_dir: Path, workdir: Path, kill_node_at: float, kill_driver_at: float) -> dict[str, Any]:
    """Run the five steps; the figures (wall seconds, lines written, the comparison)."""
    from ray.cluster_utils import Cluster

    source = write_claims(workdir / "claims.jsonl", rows)
    local, out = workdir / "local.jsonl", workdir / "ray.jsonl"
    figures: dict[str, Any] = {"rows": rows}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "verifier", "verify", str(source), "-o", str(local), "--resume", "-q",
                    "--model-dir", str(model_dir)], check=True, timeout=STEP_TIMEOUT, env=_environment())
    figures["local_s"] = time.perf_counter() - started
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False, "node_ip_address": "127.0.0.1"})
    try:
        workers = [cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1") for _ in range(2)]
        cluster.wait_for_nodes()
        argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--engine", "ray",
                "--workers", "1", "--resume", "--model-dir", str(model_dir), "--address", str(cluster.address), "-q"]
        started = time.perf_counter()
        log = workdir / "first-run.log"  # a file, not a pipe: a pipe nobody reads would block the driver when full
        with log.open("w") as stderr, subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, text=True,
                                                       env=_environment()) as job:
            deadline = time.monotonic() + STEP_TIMEOUT
            figures["lines_at_node_loss"] = _wait_for_lines(job, out, int(rows * kill_node_at), deadline)
            node = actor_node(workers)
            if node is None or job.poll() is not None:
                raise SystemExit(f"no node to lose mid-job (exit {job.poll()}): {log.read_text()[-3000:]}")
            cluster.remove_node(node, allow_graceful=False)
            workers.remove(node)
            figures["lines_at_driver_kill"] = _wait_for_lines(job, out, int(rows * kill_driver_at), deadline)
            if job.poll() is not None:
                raise SystemExit(f"the job ended (exit {job.returncode}) before its driver was killed")
            job.send_signal(signal.SIGKILL)
            job.wait(timeout=60)
        figures["first_run_s"] = time.perf_counter() - started
        figures["lines_after_kill"] = lines_in(out)  # whole lines: the rerun drops a torn last one
        started = time.perf_counter()
        rerun = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT, env=_environment())
        figures["rerun_s"] = time.perf_counter() - started
        figures["rerun_exit"] = rerun.returncode
        if rerun.returncode != 0:
            figures["rerun_error"] = rerun.stderr.strip().splitlines()[-1:]
    finally:
        cluster.shutdown()
    figures["lines_final"] = lines_in(out)
    expected, got = _by_id(local), _by_id(out)
    figures["same_ids"] = expected.keys() == got.keys()
    figures["lines_equal"] = sum(got.get(key, (b"",))[0] == value[0] for key, value in expected.items())
    figures["result_sha256_equal"] = sum(got.get(key, (b"", ""))[1] == value[1] for key, value in expected.items())
    return figures


def markdown(figures: dict[str, Any]) -> str:
    """The figures as a two-column Markdown table."""
    lines = ["| figure | value |", "|---|---:|"]
    lines += [f"| {key} | {value:.1f} |" if isinstance(value, float) else f"| {key} | {value} |" for key, value in figures.items()]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m bench.ray_node_loss`` argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.ray_node_loss", description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--model-dir", type=Path, default=ROOT / "models" / "tiny-deberta-v2-smoke-seed0")
    parser.add_argument("--kill-node-at", type=float, default=0.25, help="share of rows written when the node is lost")
    parser.add_argument("--kill-driver-at", type=float, default=0.6, help="share of rows written when the driver is killed")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the trial; exit 1 unless every line (so every digest) equals the local command's."""
    args = build_parser().parse_args(argv)
    if not 0 < args.kill_node_at < args.kill_driver_at < 1:
        raise SystemExit("error: need 0 < --kill-node-at < --kill-driver-at < 1")
    with tempfile.TemporaryDirectory(prefix="bench-node-loss.") as work:
        figures = trial(args.rows, args.model_dir.resolve(), Path(work), args.kill_node_at, args.kill_driver_at)
    print(markdown(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if figures["same_ids"] and figures["lines_equal"] == figures["rows"] else 1


if __name__ == "__main__":
    sys.exit(main())

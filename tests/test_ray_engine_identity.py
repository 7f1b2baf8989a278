"""One engine per Ray job (issue 47): a node holding another export at the model directory's path is refused.

A real two-node cluster on loopback: a head of 0 CPUs and one 1-CPU node started by
:class:`ray.cluster_utils.Cluster` in this process, plus one 1-CPU node started with
``ray start --block`` in a mount namespace of its own (``unshare -m``) where the model
directory's path is bind-mounted over another export of the same model and revision: a graph
optimised offline by onnxruntime (other bytes, the same float32 arithmetic re-arranged). Before
the fix the job exited 0 and the foreign node's rows silently came from another engine.

Needs the ``ray`` extra and root (``unshare -m``, ``mount --bind``); skips naming what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = pytest.mark.slow

LOOPBACK = "127.0.0.1"
RUN_TIMEOUT = 300


def _with_revision(directory: Path, **update: object) -> None:
    """Rewrite ``directory``'s manifest with ``update`` (and a requested revision, as a hub export records)."""
    from verifier.engine.manifest import read_manifest
    from verifier_export.manifest import write_manifest

    manifest = read_manifest(directory)
    write_manifest(directory, manifest.model_copy(update={"requested_revision": "0123456789abcdef0123456789abcdef01234567", **update}))


def _exports(tiny_model_dir: Path, root: Path) -> tuple[Path, Path]:
    """The driver's export (the tiny one, at a pinned revision) and a foreign one of the same model and revision
    whose ``model.onnx`` is onnxruntime's offline-optimised graph."""
    from verifier.engine.manifest import FileRecord, read_manifest, sha256_file
    from verifier.engine.session import create_session, session_options

    mine = Path(shutil.copytree(tiny_model_dir, root / "model"))
    _with_revision(mine)
    foreign = Path(shutil.copytree(tiny_model_dir, root / "foreign"))
    optimised = root / "optimised.onnx"
    create_session(foreign / "model.onnx", session_options(graph_optimization_level="basic", optimized_model_filepath=optimised),
                   where="model.onnx")
    os.replace(optimised, foreign / "model.onnx")
    graph = foreign / "model.onnx"
    files = {**read_manifest(foreign).files, "model.onnx": FileRecord(sha256=sha256_file(graph), size=graph.stat().st_size)}
    _with_revision(foreign, files=files)
    return mine, foreign


def _can_unshare() -> bool:
    try:
        return subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


#: A worker node (1 CPU, loopback) in a process of its own, as :meth:`ray.cluster_utils.Cluster.add_node` starts
#: one: run under ``unshare -m`` it sees the mounts of its own namespace. Up when it prints; gone when stdin closes.
NODE = """
import sys
from ray._private.node import Node
from ray._private.parameter import RayParams
params = RayParams(num_cpus=1, num_gpus=0, object_store_memory=150 * 1024 * 1024, min_worker_port=0, max_worker_port=0,
                   node_ip_address="127.0.0.1", gcs_address=sys.argv[1], include_log_monitor=False, node_manager_port=0)
params.dashboard_agent_listen_port = None
node = Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
print("up", flush=True)
sys.stdin.read()
node.kill_all_processes(check_alive=False, allow_graceful=True)
"""


class TwoNodes:
    """A head (0 CPUs), a node with the driver's export, and a node seeing ``foreign`` at ``model``'s path."""

    def __init__(self, model: Path, foreign: Path) -> None:
        self.cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "node_ip_address": LOOPBACK}
        )
        self.cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK)
        script = 'mount --bind "$1" "$2" && exec "$3" -c "$4" "$5"'
        self.foreign = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "node",
             str(foreign), str(model), sys.executable, NODE, self.cluster.gcs_address],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"},
        )
        try:
            assert self.foreign.stdout is not None
            if self.foreign.stdout.readline().strip() != "up":
                raise RuntimeError("the foreign node did not start")
            deadline = time.monotonic() + RUN_TIMEOUT
            while len(self.cluster.global_state._live_node_ids()) < 3:
                if time.monotonic() > deadline:
                    raise RuntimeError("the foreign node did not join the cluster")
                time.sleep(0.2)
        except BaseException:
            self.close()
            raise

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def close(self) -> None:
        try:
            self.foreign.communicate("", timeout=60)
        except subprocess.TimeoutExpired:
            self.foreign.kill()
            self.foreign.communicate()
        self.cluster.shutdown()


@pytest.fixture(scope="module")
def exports(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _exports(tiny_model_dir, tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="module")
def two_nodes(exports: tuple[Path, Path]) -> Iterator[TwoNodes]:
    if not _can_unshare():
        pytest.skip("unshare -m is not permitted here (needs root): the foreign node needs its own mount namespace")
    nodes = TwoNodes(*exports)
    try:
        yield nodes
    finally:
        nodes.close()


def _environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    return env


def test_the_foreign_export_differs_in_its_graph(exports: tuple[Path, Path]) -> None:
    """The fixture is what the test needs: the same model and revision, another graph, another identity."""
    from verifier.engine.engine_identity import identity_for_options
    from verifier.options import RuntimeOptions

    mine, theirs = (identity_for_options(path, RuntimeOptions()) for path in exports)
    assert (mine.model, mine.revision) == (theirs.model, theirs.revision)
    assert mine.digest != theirs.digest and mine.graph_sha256 != theirs.graph_sha256


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_node_with_another_export_stops_the_job_before_any_row(
    two_nodes: TwoNodes, exports: tuple[Path, Path], tmp_path: Path, workers: str
) -> None:
    """Issue 47: a node holding another export at the same path changed 8,768 of 20,000 results silently, and a
    node at another revision was refused only when it happened to get work. Every node is compared with the
    driver's engine first: refused every time, with one worker (the foreign node may get no work) or two,
    naming the node, what differs and the fix; nothing is written."""
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"id": f"r{n}", "claim": f"The launch is on day {n}.", "evidence": [
        {"reference": "m1", "memory_id": f"00000000-0000-4000-8000-{n:012d}", "text": f"The launch moved to day {n}."}]}) + "\n"
        for n in range(40)), encoding="utf-8")
    out, model = tmp_path / "out", exports[0]
    argv = [sys.executable, "-m", "verifier", "verify", str(source), "-o", str(out), "--engine", "ray", "--model-dir",
            str(model), "--address", two_nodes.address, "--workers", workers, "-q"]
    for _ in range(3):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=_environment())
        assert done.returncode == 1, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: node {LOOPBACK} (id "), last
        assert f"holds another engine at {model} than the driver (graph_sha256 " in last
        assert "copy the driver's model directory to that node" in last
        assert not out.exists() and not list(tmp_path.glob(".out.*"))


def test_a_library_job_refuses_a_node_with_another_engine(two_nodes: TwoNodes, exports: tuple[Path, Path], tmp_path: Path) -> None:
    """verify_dataset(expected_engine=...) compares every node before the job (an actor's own check alone was not
    enough: Ray Data let the foreign node's failed actor go and finished on the other, so whether the job failed
    depended on timing); with check_nodes=False the actor's check still keeps the foreign engine's scores out."""
    model = exports[0]
    script = f"""
import ray, sys
from pathlib import Path
from verifier.distributed import read_jsonl, verify_dataset
from verifier.engine.engine_identity import identity_for_options
from verifier.options import RuntimeOptions
ray.init(address={two_nodes.address!r}, logging_level="ERROR", log_to_driver=False)
engine = identity_for_options(Path({str(model)!r}), RuntimeOptions())
source = Path({str(tmp_path / 'in.jsonl')!r})
source.write_text("".join('{{"id": "r%d", "claim": "c%d."}}\\n' % (n, n) for n in range(8)))
try:
    verify_dataset(read_jsonl(str(source), num_cpus=0), {str(model)!r}, workers=2, expected_engine=engine)
    print("NOT REFUSED")
except Exception as exc:
    print("FAILED", type(exc).__name__, "holds another engine" in str(exc), "graph_sha256" in str(exc))
try:
    rows = verify_dataset(read_jsonl(str(source), num_cpus=0), {str(model)!r}, workers=2, expected_engine=engine,
                          check_nodes=False).take_all()
    digests = {{__import__("json").loads(row["result"])["engine"]["digest"] for row in rows}}
    print("SCORED", len(rows), digests == {{engine.digest}})
except Exception as exc:
    print("STOPPED", type(exc).__name__)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=RUN_TIMEOUT, env=_environment())
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "NOT REFUSED", "SCORED", "STOPPED"))]
    assert lines[0] == "FAILED ForeignEngineError True True", done.stdout
    # never a row of the foreign engine: the job finishes on the driver's engine, or stops (in Ray's words, which
    # CI once saw without the actor's own message: the node check above is what names the node)
    assert lines[-1] == "SCORED 8 True" or lines[-1].startswith("STOPPED "), done.stdout

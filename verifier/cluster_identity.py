"""One engine for a whole Ray job: every node's engine is compared with the driver's before any row is scored.

A node that holds another export at the model directory's path (another graph,
revision, variant or runtime version) would score its share of the rows with
another engine and silently change results (docs/bulk.md, "One engine per
job"). Two checks stop that, both against the driver's
:class:`~verifier.engine_identity.EngineIdentity`
(:func:`verifier.engine.engine_identity.identity_for_options`):

* :func:`check_cluster_engines`: before the job, one small task on every alive
  node with CPUs computes the identity its copy of the directory gives and re-hashes
  its files (no model is loaded; a node lost since it was listed is left out) and the
  driver compares them all
  (:data:`~verifier.engine_identity.RUN_FIELDS`: every part but the manifest's
  own digest), so a foreign node is named even when it would have got no work;
* :class:`verifier.distributed.VerifyBatch` compares its loaded engine's
  identity with the driver's in its constructor, before its first row (a node
  that joins after the check, or a library user's own job).

Needs the ``ray`` extra; :mod:`ray` is imported by the caller.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Optional

from .engine_identity import RUN_FIELDS, EngineIdentity
from .options import RuntimeOptions
from .types import ClaimVerificationError

__all__ = ["ForeignEngineError", "engine_here", "foreign_engine_message", "check_cluster_engines"]

#: Seconds the driver waits for every node's answer (each opens a manifest and hashes the model's files).
CHECK_TIMEOUT_S = 120.0


class ForeignEngineError(ClaimVerificationError):
    """A node's engine is not the driver's: its rows would be scored by another engine."""


def foreign_engine_message(where: str, model_dir: str, expected: EngineIdentity, found: EngineIdentity) -> str:
    """What differs between the driver's engine and a node's, and the fix, in one line."""
    differences = "; ".join(found.differences(expected, RUN_FIELDS))
    return (
        f"{where} holds another engine at {model_dir} than the driver ({differences}; the node's first): its rows "
        f"would be scored differently, so nothing was scored; copy the driver's model directory to that node "
        f"(the same files at the same path, e.g. rsync -a {model_dir}/ NODE:{model_dir}/) and run the same command again"
    )


def engine_here(model_dir: str, options: RuntimeOptions) -> tuple[str, Optional[dict[str, Any]], Optional[str]]:
    """On a node: its host name, and the identity its copy of ``model_dir`` gives (JSON), or why it gives none.

    Every file is re-hashed against the copy's manifest (as ``info --verify-files`` and each actor's load):
    a tampered copy keeps the manifest's identity, and its actors would fail where the others finish the job.
    """
    from .engine.engine_identity import identity_for_directory
    from .engine.model_directory import ModelDirectory

    host = socket.gethostname()
    try:
        directory = ModelDirectory.open(model_dir, options.variant)
        problems = directory.verify_all()
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return host, None, f"its files do not match its manifest.json: {problems[0]}{more}"
        return host, identity_for_directory(directory, options).model_dump(mode="json"), None
    except ClaimVerificationError as exc:
        return host, None, str(exc)
    except Exception as exc:  # an unreadable directory, a missing runtime: said, never a raw traceback
        return host, None, f"{type(exc).__name__}: {exc}"


def check_cluster_engines(ray: Any, model_dir: "str | os.PathLike[str]", options: RuntimeOptions, expected: EngineIdentity) -> int:
    """Compare the engine of every alive node with CPUs with ``expected`` (the driver's); return how many were checked.

    A node listed alive whose probe cannot be scheduled there or dies with it (a node lost moments ago, not
    yet marked dead) is left out: it gets no work, and an actor that starts on it later checks its own engine.

    Raises:
        ForeignEngineError: a node cannot open the directory, or its engine differs (the message names the
            node's address and id, what differs and the fix).
    """
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    path = os.fspath(model_dir)
    nodes = [node for node in ray.nodes() if node.get("Alive") and node.get("Resources", {}).get("CPU", 0) > 0]
    probe = ray.remote(num_cpus=0, max_retries=0)(engine_here)
    pending = [
        (node, probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)).remote(path, options))
        for node in nodes
    ]
    # A node lost moments ago is still listed alive until its heartbeats are missed (~30 s); its probe then
    # cannot be scheduled, or dies with it. It gets no work, and actors check their own engine if it returns.
    gone = (ray.exceptions.TaskUnschedulableError, ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError)
    checked = 0
    for node, reference in pending:
        try:
            host, found, problem = ray.get(reference, timeout=CHECK_TIMEOUT_S)
        except gone:
            continue
        checked += 1
        where = f"node {node.get('NodeManagerAddress', '?')} (id {str(node['NodeID'])[:12]}, host {host})"
        if found is None:
            raise ForeignEngineError(
                f"{where} cannot open model directory {path}: {problem}; nothing was scored (copy the driver's "
                f"model directory to that node, at the same path, and run the same command again)"
            )
        identity = EngineIdentity.model_validate(found)
        if identity.differences(expected, RUN_FIELDS):  # the manifest alone may differ (a variant added there)
            raise ForeignEngineError(foreign_engine_message(where, path, expected, identity))
    return checked

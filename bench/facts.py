"""Facts of one run: host, versions, token profile, ``import verifier`` time, numpy's ceiling, load.

* :func:`host_facts` -- date, CPU (``lscpu``), load average, versions, git state;
* :func:`token_profile` -- per workload and stage: pairs, real tokens with the
  export's own ``tokenizer.json`` (truncation at max length), analytic FLOPs
  (:mod:`bench.flops`);
* :func:`import_time` -- ``import verifier`` in fresh interpreters (and torch-free?);
* :func:`numpy_ceiling` -- ``python -m bench.flops`` in a subprocess with the run's threads;
* :func:`wait_for_quiet` -- wait for the 1-minute load average to drop.

Subprocesses go through :func:`bench.proc.run_python`.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from datetime import datetime, timezone
from typing import Any, Mapping

import numpy as np

from .flops import IMPLEMENTED, MINIMAL, total_flops
from .model import BenchModel
from .proc import REPO_ROOT, Log, python_env, run_python
from .workloads import Workload

__all__ = ["host_facts", "token_profile", "import_time", "numpy_ceiling", "wait_for_quiet"]


def _versions() -> dict[str, str]:
    from verifier_export.manifest import collect_versions

    return collect_versions(
        ("numpy", "onnxruntime", "tokenizers", "torch", "transformers", "sentence-transformers",
         "optimum-onnx", "onnx", "pydantic", "psutil")
    )


def _lscpu() -> dict[str, str]:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    wanted = ("Architecture", "Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
              "Socket(s)", "L2 cache", "L3 cache", "Hypervisor vendor", "CPU family", "Model")
    facts: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in wanted:
            facts[key.strip()] = value.strip()
        if key.strip() == "Flags":
            flags = set(value.split())
            facts["simd"] = " ".join(f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile") if f in flags)
    return facts


def _git() -> dict[str, Any]:
    def run(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {"commit": run("rev-parse", "HEAD"), "dirty": bool(run("status", "--porcelain", "--untracked-files=no"))}


def host_facts() -> dict[str, Any]:
    """Date, CPU, load average, versions and git state of this run."""
    return {
        "date_utc": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "date_local": subprocess.run(["date"], capture_output=True, text=True, check=False).stdout.strip(),
        "platform": platform.platform(),
        "cpu": _lscpu(),
        "logical_cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "versions": _versions(),
        "git": _git(),
    }


def token_profile(model: BenchModel, workloads: Mapping[str, Workload]) -> dict[str, Any]:
    """Per workload and stage: pairs, real tokens (export tokenizer, truncation at max length), FLOPs."""
    from verifier.engine.manifest import read_manifest
    from verifier.engine.tokenization import encode_pairs, load_tokenizer

    manifest = read_manifest(model.onnx_dir)
    tokenizer = load_tokenizer(model.onnx_dir / "tokenizer.json", max_length=manifest.max_length)
    profile: dict[str, Any] = {}
    for key, workload in workloads.items():
        stages = []
        for stage in workload.stages():
            lengths = [len(encoding.ids) for encoding in encode_pairs(tokenizer, stage)]
            stages.append(
                {
                    "pairs": len(stage),
                    "real_tokens": int(sum(lengths)),
                    "mean_tokens": float(np.mean(lengths)),
                    "max_tokens": int(max(lengths)),
                    "truncated": int(sum(length >= manifest.max_length for length in lengths)),
                    "flops_minimal": total_flops(lengths, MINIMAL),
                    "flops_implemented": total_flops(lengths, IMPLEMENTED),
                }
            )
        profile[key] = {
            "title": workload.title,
            "claims": len(workload.cases),
            "paths": workload.path_counts(),
            "stages": stages,
            "pairs": sum(s["pairs"] for s in stages),
            "real_tokens": sum(s["real_tokens"] for s in stages),
            "flops_minimal": sum(s["flops_minimal"] for s in stages),
            "flops_implemented": sum(s["flops_implemented"] for s in stages),
        }
    return profile


def import_time(threads: int, runs: int = 5) -> dict[str, Any]:
    """``import verifier`` (and ``import verifier.engine.scorer``) in fresh interpreters; median seconds, torch-free?"""
    code = (
        "import json, sys, time\n"
        "t = time.perf_counter(); import verifier; a = time.perf_counter() - t\n"
        "t = time.perf_counter(); import verifier.engine.scorer; b = time.perf_counter() - t\n"
        "print(json.dumps({'verifier': a, 'engine': b, 'torch': 'torch' in sys.modules,"
        " 'transformers': 'transformers' in sys.modules, 'onnxruntime': 'onnxruntime' in sys.modules}))\n"
    )
    rows = []
    for _ in range(runs):
        out = run_python(["-c", code], env=python_env(threads), check=False)
        if out.returncode == 0:
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    if not rows:
        return {"error": "import failed"}
    return {
        "runs": len(rows),
        "import_verifier_seconds": statistics.median(r["verifier"] for r in rows),
        "import_verifier_engine_seconds": statistics.median(r["engine"] for r in rows),
        "torch_imported": any(r["torch"] for r in rows),
        "transformers_imported": any(r["transformers"] for r in rows),
        "onnxruntime_imported_by_import_verifier_engine": any(r["onnxruntime"] for r in rows),
    }


def numpy_ceiling(threads: int) -> dict[str, Any]:
    """numpy float32 matmul GFLOP/s in a subprocess with ``threads`` BLAS threads."""
    out = run_python(["-m", "bench.flops", "--threads", str(threads)], env=python_env(threads))
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def wait_for_quiet(max_load: float, wait_seconds: float, log: Log) -> dict[str, Any]:
    """Wait (up to ``wait_seconds``) until the 1-minute load average is at most ``max_load``."""
    started = time.monotonic()
    while True:
        load = os.getloadavg()[0]
        if load <= max_load:
            return {"load_1m": load, "waited_seconds": time.monotonic() - started, "quiet": True}
        if wait_seconds <= 0:
            log(f"load average {load:.2f} above {max_load}; not waiting (--wait 0), measuring now "
                "(the load is recorded beside the figures)")
            return {"load_1m": load, "waited_seconds": 0.0, "quiet": False}
        if time.monotonic() - started >= wait_seconds:
            log(f"load average {load:.2f} still above {max_load} after {wait_seconds:.0f} s; measuring anyway (flagged)")
            return {"load_1m": load, "waited_seconds": time.monotonic() - started, "quiet": False}
        log(f"load average {load:.2f} > {max_load}; waiting for a quieter machine ...")
        time.sleep(30)

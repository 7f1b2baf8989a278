"""``python -m bench compare`` and ``python -m bench tune``: orchestrate workers, compute figures.

One run, one machine, same pairs, same threads:

1. host facts (date, CPU, load, versions, git commit) and the benchmark model
   (built once, cached: :mod:`bench.model`);
2. the workloads (:mod:`bench.workloads`) tokenized with the export's own
   ``tokenizer.json`` for real-token counts and the analytic FLOPs (:mod:`bench.flops`);
3. ``import verifier`` timed in fresh interpreters (and checked torch-free);
4. numpy's float32 matmul rate in a subprocess with the same thread count (the ceiling);
5. cold start and peak RSS: one worker process per backend, one after another
   (:mod:`bench.worker` ``--tasks rss``: import, load, first pair, one pass of
   b and d);
6. timing: one process holding every backend, taking turns on the same pairs
   (:mod:`bench.interleave`: rotated order per repetition for a, b, d; ABBA
   order over 50-claim chunks of c; staged vs eager on a, b), so load from
   other users of the machine falls on both sides alike;
7. numpy's rate again (drift check), then figures, ratios and agreement of the
   probabilities and decisions on workload (c).

Results go to ``bench/results/<name>.json`` and ``bench/results/<name>.md``.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from .flops import IMPLEMENTED, MINIMAL, total_flops
from .model import REPO_ROOT, BenchModel, build_bench_model
from .workloads import DEFAULT_CLAIMS, Workload, all_workloads, mix_with_pair_share
from .worker import workload_digest

__all__ = ["CompareSettings", "host_facts", "token_profile", "run_compare", "run_tune", "RESULTS_DIR"]

#: Where results are written (``*.json`` git-ignored; commit the markdown of the final run).
RESULTS_DIR = REPO_ROOT / "bench" / "results"

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class CompareSettings:
    """Knobs of one comparison run (defaults keep a run under ~15 minutes on 2 cores)."""

    name: str = "latest"
    threads: int = 2
    claims: int = DEFAULT_CLAIMS
    pair_share: Optional[float] = None
    reps_a: int = 20
    reps_b: int = 7
    reps_d: int = 3
    reps_c: int = 1
    reps_schedules: int = 5
    max_batch_tokens: int = 8192
    chunk_claims: int = 50
    variants: tuple[str, ...] = ("int8", "optimized")
    variants_throughput: tuple[str, ...] = ("int8",)
    max_load: float = 1.5
    wait_seconds: float = 600.0
    skip_torch: bool = False
    span: bool = False
    models_root: Optional[Path] = None


# --------------------------------------------------------------------------- host and inputs


def _versions() -> dict[str, str]:
    from importlib import metadata

    names = (
        "numpy", "onnxruntime", "tokenizers", "torch", "transformers", "sentence-transformers",
        "optimum-onnx", "onnx", "pydantic", "psutil",
    )
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


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
        "date_local": subprocess.run(["date"], capture_output=True, text=True).stdout.strip(),
        "platform": platform.platform(),
        "cpu": _lscpu(),
        "logical_cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "versions": _versions(),
        "git": _git(),
    }


def token_profile(model: BenchModel, workloads: Mapping[str, Workload]) -> dict[str, Any]:
    """Per workload and stage: pairs, real tokens (export tokenizer, truncation at max length), FLOPs."""
    from verifier.manifest import read_manifest
    from verifier.tokenization import encode_pairs, load_tokenizer

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


def _env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def import_time(threads: int, runs: int = 5) -> dict[str, Any]:
    """``import verifier`` (and ``import verifier.engine``) in fresh interpreters; median seconds, torch-free?"""
    code = (
        "import json, sys, time\n"
        "t = time.perf_counter(); import verifier; a = time.perf_counter() - t\n"
        "t = time.perf_counter(); import verifier.engine; b = time.perf_counter() - t\n"
        "print(json.dumps({'verifier': a, 'engine': b, 'torch': 'torch' in sys.modules,"
        " 'transformers': 'transformers' in sys.modules, 'onnxruntime': 'onnxruntime' in sys.modules}))\n"
    )
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=_env(threads), capture_output=True, text=True)
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
    out = subprocess.run(
        [sys.executable, "-m", "bench.flops", "--threads", str(threads)],
        cwd=REPO_ROOT, env=_env(threads), capture_output=True, text=True, check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def wait_for_quiet(max_load: float, wait_seconds: float, log: Log) -> dict[str, Any]:
    """Wait (up to ``wait_seconds``) until the 1-minute load average is at most ``max_load``."""
    started = time.monotonic()
    while True:
        load = os.getloadavg()[0]
        if load <= max_load:
            return {"load_1m": load, "waited_seconds": time.monotonic() - started, "quiet": True}
        if time.monotonic() - started >= wait_seconds:
            log(f"load average {load:.2f} still above {max_load} after {wait_seconds:.0f} s; measuring anyway (flagged)")
            return {"load_1m": load, "waited_seconds": time.monotonic() - started, "quiet": False}
        log(f"load average {load:.2f} > {max_load}; waiting for a quieter machine ...")
        time.sleep(30)


def run_worker(args: Sequence[str], threads: int, log: Log) -> dict[str, Any]:
    """Start ``python -m bench.worker ARGS`` and return its JSON (plus spawn time and load)."""
    out_path = Path(args[list(args).index("--out") + 1])
    load_before = list(os.getloadavg())
    spawn = time.time()
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "bench.worker", *args], cwd=REPO_ROOT, env=_env(threads), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    for line in completed.stdout.splitlines():
        if "regex pattern" not in line and line.strip():
            log("  " + line)
    if completed.returncode != 0:
        raise RuntimeError(f"worker {' '.join(args[:4])} failed with exit status {completed.returncode}")
    result: dict[str, Any] = json.loads(out_path.read_text(encoding="utf-8"))
    result["spawn_wall"] = spawn
    result["wall_seconds"] = time.perf_counter() - started
    result["load_before"] = load_before
    result["load_after"] = list(os.getloadavg())
    if "cold_start" in result:
        result["cold_start"]["process_to_ready_seconds"] = result["cold_start"]["ready_wall"] - spawn
    return result


# --------------------------------------------------------------------------- agreement


def agreement(workload: Workload, reference: np.ndarray, other: np.ndarray) -> dict[str, Any]:
    """How far ``other``'s probabilities on workload c are from ``reference``'s, and whether decisions match.

    * per pair: max |Δprob|, argmax agreement, and flips of the decision flags
      ``entailment >= t`` / ``contradiction >= t`` at the configured 0.8 and at
      thresholds placed where this model's probabilities actually lie (the
      50th/90th/99th percentiles of the reference), a stress test for a
      random model whose probabilities never reach 0.8;
    * per claim: the full SPEC §3 decision replayed through
      :class:`verifier.ClaimVerifier` on each side's recorded probabilities
      (``max_group_size`` 1 for claims designed to stop at singles, so the
      replay only asks for pairs that were scored), compared on status,
      groups, bases and limitations.
    """
    from verifier import ClaimVerificationConfig, ClaimVerificationError, ClaimVerifier, RecordedScorer

    pairs = workload.pairs()
    diff = np.abs(reference - other)
    flags: dict[str, Any] = {}
    thresholds = {"config_0.8": 0.8}
    for q in (50, 90, 99):
        thresholds[f"ent_p{q}"] = float(np.percentile(reference[:, 0], q))
        thresholds[f"con_p{q}"] = float(np.percentile(reference[:, 1], q))
    for name, t in thresholds.items():
        column = 1 if name.startswith("con") else 0
        columns = (0, 1) if name.startswith("config") else (column,)
        flips = sum(int(((reference[:, c] >= t) != (other[:, c] >= t)).sum()) for c in columns)
        flags[name] = {"threshold": t, "flag_flips": flips}

    def decisions(probs: np.ndarray) -> list[Any]:
        records = {pair: row for pair, row in zip(pairs, probs.tolist())}
        out: list[Any] = []
        for case in workload.cases:
            config = ClaimVerificationConfig(max_group_size=2 if case.needs_pairs else 1)
            try:
                result = ClaimVerifier(config, scorer=RecordedScorer(records)).verify_sync(case.claim, case.evidence())
            except ClaimVerificationError:
                out.append(None)
                continue
            out.append(
                (
                    result.status.value,
                    tuple(str(m) for m in result.supporting_group),
                    tuple(str(m) for m in result.refuting_group),
                    result.supporting_basis,
                    result.refuting_basis,
                    tuple(result.limitations),
                )
            )
        return out

    left, right = decisions(reference), decisions(other)
    statuses: dict[str, int] = {}
    for item in left:
        key = item[0] if item else "unreplayable"
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "pairs": len(pairs),
        "max_abs_prob_diff": float(diff.max()),
        "mean_abs_prob_diff": float(diff.mean()),
        "argmax_agreement": float((reference.argmax(axis=1) == other.argmax(axis=1)).mean()),
        "flags": flags,
        "claims": len(left),
        "identical_decisions": sum(1 for a, b in zip(left, right) if a is not None and a == b),
        "unreplayable": sum(1 for a, b in zip(left, right) if a is None or b is None),
        "reference_statuses": statuses,
    }


# --------------------------------------------------------------------------- runs


def _worker_args(
    backend: str, model_dir: Path, out: Path, settings: CompareSettings, digest: str, *,
    tasks: str, variant: Optional[str] = None, probs: Optional[Path] = None,
) -> list[str]:
    args = [
        "--backend", backend, "--model-dir", str(model_dir), "--out", str(out), "--threads", str(settings.threads),
        "--tasks", tasks, "--claims", str(settings.claims), "--digest", digest,
        "--reps-a", str(settings.reps_a), "--reps-b", str(settings.reps_b), "--reps-d", str(settings.reps_d),
        "--reps-c", str(settings.reps_c), "--reps-schedules", str(settings.reps_schedules),
        "--max-batch-tokens", str(settings.max_batch_tokens),
    ]
    if settings.pair_share is not None:
        args += ["--pair-share", str(settings.pair_share)]
    if variant is not None:
        args += ["--variant", variant]
    if probs is not None:
        args += ["--probs", str(probs)]
    return args


def _run_interleave(
    model: BenchModel,
    settings: CompareSettings,
    digest: str,
    keys: Sequence[str],
    out: Path,
    probs_dir: Optional[Path],
    log: Log,
    *,
    skip: str,
) -> dict[str, Any]:
    """Run :mod:`bench.interleave` over ``keys`` and return its JSON."""
    args = [
        "--onnx-dir", str(model.onnx_dir), "--hf-dir", str(model.hf_dir), "--backends", ",".join(keys),
        "--out", str(out), "--threads", str(settings.threads), "--claims", str(settings.claims), "--digest", digest,
        "--reps-a", str(settings.reps_a), "--reps-b", str(settings.reps_b), "--reps-d", str(settings.reps_d),
        "--reps-schedules", str(settings.reps_schedules), "--max-batch-tokens", str(settings.max_batch_tokens),
        "--chunk-claims", str(settings.chunk_claims),
    ]
    if model.span_ready():
        args += ["--span-dir", str(model.span_dir)]
    if settings.pair_share is not None:
        args += ["--pair-share", str(settings.pair_share)]
    if probs_dir is not None:
        args += ["--probs-dir", str(probs_dir)]
    if skip:
        args += ["--skip", skip]
    load_before = list(os.getloadavg())
    completed = subprocess.run(
        [sys.executable, "-m", "bench.interleave", *args], cwd=REPO_ROOT, env=_env(settings.threads), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    for line in completed.stdout.splitlines():
        if "regex pattern" not in line and line.strip():
            log("  " + line)
    if completed.returncode != 0:
        raise RuntimeError(f"bench.interleave failed with exit status {completed.returncode}")
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result["load_before"] = load_before
    result["load_after"] = list(os.getloadavg())
    return result


def run_compare(settings: CompareSettings, log: Log = _stderr) -> tuple[dict[str, Any], Path, Path]:
    """The side-by-side run; returns the result dict and the JSON and markdown paths written."""
    from .report import compute_figures, render_markdown

    started = time.perf_counter()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    scratch = RESULTS_DIR / f".{settings.name}.work"
    scratch.mkdir(parents=True, exist_ok=True)
    model = build_bench_model(settings.models_root, variants=settings.variants, span=settings.span, log=log)
    mix = mix_with_pair_share(settings.pair_share) if settings.pair_share is not None else None
    workloads = all_workloads(settings.claims, mix) if mix is not None else all_workloads(settings.claims)
    digest = workload_digest(workloads)
    profile = token_profile(model, workloads)
    log(f"workloads: " + "; ".join(f"{k}: {v['pairs']} pairs, {v['real_tokens']} tokens" for k, v in profile.items()))

    quiet = wait_for_quiet(settings.max_load, settings.wait_seconds, log)
    run: dict[str, Any] = {
        "name": settings.name,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in settings.__dict__.items()},
        "host": host_facts(),
        "quiet_check": quiet,
        "model": {"hf_dir": str(model.hf_dir), "onnx_dir": str(model.onnx_dir), "variants": list(model.variants())},
        "workload_digest": digest,
        "workloads": profile,
    }
    log("timing import verifier ...")
    run["import"] = import_time(settings.threads)
    log("numpy float32 matmul ceiling ...")
    run["numpy_before"] = numpy_ceiling(settings.threads)
    log(f"  {run['numpy_before']['ceiling_gflops']:.0f} GFLOP/s")

    keys = ["onnx"] + ([] if settings.skip_torch else ["torch"])
    keys += [f"onnx-{v}" for v in settings.variants if v in model.variants()]
    backends: dict[str, Any] = {}
    for key in keys:
        log(f"cold start and peak RSS: {key} in its own process ...")
        backend = "torch" if key == "torch" else "onnx"
        variant = None if key in ("torch", "onnx") else key.removeprefix("onnx-")
        directory = model.hf_dir if key == "torch" else model.onnx_dir
        backends[key] = run_worker(
            _worker_args(backend, directory, scratch / f"{key}.json", settings, digest, tasks="rss", variant=variant),
            settings.threads, log,
        )
    timed = [key for key in keys if key in ("onnx", "torch") or key.removeprefix("onnx-") in settings.variants_throughput]
    if settings.span:
        timed += ["span", "span-int8"]
    latency_only = [key for key in keys if key not in timed]
    log(f"interleaved timing, one process: {', '.join(timed)} ...")
    probs_dir = scratch / "probs"
    inter = _run_interleave(model, settings, digest, timed, scratch / "interleave.json", probs_dir, log, skip="")
    if latency_only:
        log(f"interleaved latency: {', '.join(['onnx', *latency_only])} ...")
        extra = _run_interleave(
            model, settings, digest, ["onnx", *latency_only], scratch / "interleave-latency.json", None, log,
            skip="throughput,schedules",
        )
        for work, rows in extra["latency"].items():
            for key in latency_only:
                inter["latency"][work][key] = rows[key]
            inter["latency"][work]["onnx (second pass)"] = rows["onnx"]
    for key in inter["backends"]:
        backends.setdefault(key, {"backend": "onnx", "variant": key})
    for key, value in backends.items():
        value["latency"] = {work: rows[key] for work, rows in inter["latency"].items() if key in rows}
        if key in inter.get("throughput", {}).get("c", {}):
            value["throughput"] = {"c": inter["throughput"]["c"][key]}
    if "schedules" in inter:
        backends["onnx"]["schedules"] = inter["schedules"]
    run["interleave_second_pass_onnx"] = {
        work: rows.get("onnx (second pass)") for work, rows in inter["latency"].items()
    }
    probs = {key: probs_dir / f"{key}.npy" for key in timed}
    log("numpy float32 matmul ceiling (again) ...")
    run["numpy_after"] = numpy_ceiling(settings.threads)
    run["backends"] = backends

    c = workloads["c"]
    loaded = {key: np.load(path) for key, path in probs.items() if path.is_file()}
    reference_key = "torch" if "torch" in loaded else "onnx"
    run["agreement"] = {
        key: agreement(c, loaded[reference_key], array)
        for key, array in loaded.items()
        if key != reference_key
    }
    run["agreement_reference"] = reference_key
    run["figures"] = compute_figures(run)
    run["total_seconds"] = time.perf_counter() - started
    run["load_average_end"] = list(os.getloadavg())

    json_path = RESULTS_DIR / f"{settings.name}.json"
    md_path = RESULTS_DIR / f"{settings.name}.md"
    json_path.write_text(json.dumps(run, indent=1, default=str), encoding="utf-8")
    md_path.write_text(render_markdown(run), encoding="utf-8")
    return run, json_path, md_path


def run_tune(settings: CompareSettings, *, tune_claims: int = 40, log: Log = _stderr) -> tuple[dict[str, Any], Path, Path]:
    """Engine settings sweep (token budget, row cap, threads, spinning, optimisation levels) and
    staged vs eager; writes ``bench/results/<name>-tune.{json,md}``."""
    from .report import render_tune_markdown

    started = time.perf_counter()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    scratch = RESULTS_DIR / f".{settings.name}.work"
    scratch.mkdir(parents=True, exist_ok=True)
    model = build_bench_model(settings.models_root, variants=settings.variants, log=log)
    workloads = all_workloads(settings.claims)
    digest = workload_digest(workloads)
    quiet = wait_for_quiet(settings.max_load, settings.wait_seconds, log)
    run: dict[str, Any] = {"name": f"{settings.name}-tune", "host": host_facts(), "quiet_check": quiet}
    subset = Workload("c", "tune subset", workloads["c"].cases[:tune_claims])
    run["subset_profile"] = token_profile(model, {"c": subset, "b": workloads["b"]})
    args = _worker_args("onnx", model.onnx_dir, scratch / "tune.json", settings, digest, tasks="tune")
    args += ["--tune-claims", str(tune_claims)]
    run["tune"] = run_worker(args, settings.threads, log)["tune"]
    args = _worker_args("onnx", model.onnx_dir, scratch / "schedules.json", settings, digest, tasks="schedules")
    run["schedules"] = run_worker(args, settings.threads, log)["schedules"]
    run["total_seconds"] = time.perf_counter() - started
    run["load_average_end"] = list(os.getloadavg())
    json_path = RESULTS_DIR / f"{settings.name}-tune.json"
    md_path = RESULTS_DIR / f"{settings.name}-tune.md"
    json_path.write_text(json.dumps(run, indent=1, default=str), encoding="utf-8")
    md_path.write_text(render_tune_markdown(run), encoding="utf-8")
    return run, json_path, md_path

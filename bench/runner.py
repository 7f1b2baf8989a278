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
   order over 50-claim chunks of c and 25-claim chunks of e; staged vs eager
   on a, b), so load from other users of the machine falls on both sides
   alike. The peers are the PyTorch CrossEncoder and, unless ``peers=False``,
   the sentence-transformers ONNX CrossEncoder on its own float32 and dynamic
   int8 exports (``st-onnx``, ``st-onnx-int8``; written once under
   ``models/bench-deberta-v3-base-random/st-onnx/`` by
   ``python -m bench.backends prepare-st-onnx``, in a subprocess);
7. numpy's rate again (drift check), then figures, ratios and agreement of the
   probabilities and decisions on workload (c).

Results go to ``bench/results/<name>.json`` and ``bench/results/<name>.md``.
Host facts and the inputs' profile come from :mod:`bench.facts`, agreement
from :mod:`bench.agreement`; the children report typed results
(:mod:`bench.results`), merged here into the run's JSON dict.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from verifier.engine.batching import DEFAULT_MAX_BATCH_TOKENS
from .agreement import agreement
from .facts import host_facts, import_time, numpy_ceiling, token_profile, wait_for_quiet
from .model import BenchModel, build_bench_model
from .proc import REPO_ROOT, Log, python_env, run_python
from .results import InterleaveResult, WorkerResult
from .backends import ST_KEYS, st_onnx_ready
from .workloads import (
    DEFAULT_CLAIMS,
    DEFAULT_CLAIMS_E,
    Workload,
    all_workloads,
    mix_with_pair_share,
    workload_digest,
    workload_e,
)

__all__ = ["CompareSettings", "run_compare", "run_tune", "merge_backends", "prepare_peers", "st_dir", "RESULTS_DIR"]

#: Where results are written (``*.json`` git-ignored; commit the markdown of the final run).
RESULTS_DIR = REPO_ROOT / "bench" / "results"


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
    reps_schedules: int = 5
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    chunk_claims: int = 50
    variants: tuple[str, ...] = ("int8", "optimized")
    variants_throughput: tuple[str, ...] = ("int8",)
    max_load: float = 1.5
    wait_seconds: float = 600.0
    skip_torch: bool = False
    span: bool = False
    models_root: Optional[Path] = None
    #: Time the sentence-transformers ONNX peers (``st-onnx``, ``st-onnx-int8``) too.
    peers: bool = True
    #: Claims in workload (e) (realistic longer text); ``None`` or 0: no (e).
    claims_e: Optional[int] = DEFAULT_CLAIMS_E
    chunk_claims_e: int = 25


# --------------------------------------------------------------------------- children


def st_dir(model: BenchModel) -> Path:
    """Where the sentence-transformers ONNX peers' files live (git-ignored, next to ``hf/`` and ``onnx/``)."""
    return model.root / "st-onnx"


def prepare_peers(model: BenchModel, log: Log) -> Path:
    """Write the peers' ONNX files when missing (``python -m bench.backends prepare-st-onnx``, a subprocess,
    so torch's and optimum's memory never stays here); return their directory."""
    directory = st_dir(model)
    if not st_onnx_ready(directory):
        run_python(["-m", "bench.backends", "prepare-st-onnx", str(model.hf_dir), str(directory)], log=log)
    return directory


def run_worker(args: Sequence[str], threads: int, log: Log) -> WorkerResult:
    """Start ``python -m bench.worker ARGS`` and return its result, plus the spawn time and load seen here."""
    out_path = Path(args[list(args).index("--out") + 1])
    load_before = list(os.getloadavg())
    spawn = time.time()
    started = time.perf_counter()
    run_python(["-m", "bench.worker", *args], env=python_env(threads), log=log)
    result = WorkerResult.from_json(json.loads(out_path.read_text(encoding="utf-8")))
    cold = result.cold_start
    return dataclasses.replace(
        result,
        spawn_wall=spawn,
        wall_seconds=time.perf_counter() - started,
        load_before=load_before,
        load_after=list(os.getloadavg()),
        cold_start=dataclasses.replace(cold, process_to_ready_seconds=cold.ready_wall - spawn) if cold else None,
    )


def _worker_args(
    backend: str, model_dir: Path, out: Path, settings: CompareSettings, digest: str, *,
    tasks: str, variant: Optional[str] = None,
) -> list[str]:
    args = [
        "--backend", backend, "--model-dir", str(model_dir), "--out", str(out), "--threads", str(settings.threads),
        "--tasks", tasks, "--claims", str(settings.claims), "--digest", digest,
        "--reps-schedules", str(settings.reps_schedules), "--max-batch-tokens", str(settings.max_batch_tokens),
    ]
    if settings.pair_share is not None:
        args += ["--pair-share", str(settings.pair_share)]
    if variant is not None:
        args += ["--variant", variant]
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
    digest_e: Optional[str] = None,
) -> InterleaveResult:
    """Run :mod:`bench.interleave` over ``keys`` and return its result."""
    args = [
        "--onnx-dir", str(model.onnx_dir), "--hf-dir", str(model.hf_dir), "--backends", ",".join(keys),
        "--out", str(out), "--threads", str(settings.threads), "--claims", str(settings.claims), "--digest", digest,
        "--reps-a", str(settings.reps_a), "--reps-b", str(settings.reps_b), "--reps-d", str(settings.reps_d),
        "--reps-schedules", str(settings.reps_schedules), "--max-batch-tokens", str(settings.max_batch_tokens),
        "--chunk-claims", str(settings.chunk_claims),
    ]
    if model.span_ready():
        args += ["--span-dir", str(model.span_dir)]
    if any(key in ST_KEYS for key in keys):
        args += ["--st-dir", str(st_dir(model))]
    if settings.claims_e and digest_e is not None:
        args += ["--claims-e", str(settings.claims_e), "--digest-e", digest_e,
                 "--chunk-claims-e", str(settings.chunk_claims_e)]
    if settings.pair_share is not None:
        args += ["--pair-share", str(settings.pair_share)]
    if probs_dir is not None:
        args += ["--probs-dir", str(probs_dir)]
    if skip:
        args += ["--skip", skip]
    run_python(["-m", "bench.interleave", *args], env=python_env(settings.threads), log=log)
    return InterleaveResult.from_json(json.loads(out.read_text(encoding="utf-8")))


def merge_backends(
    workers: dict[str, WorkerResult], inter: InterleaveResult, extra: Optional[InterleaveResult], latency_only: Sequence[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The run's ``backends`` JSON: each worker's result plus its interleaved latency, throughput and
    (onnx) schedules; and the second-pass onnx latency of the ``extra`` run (latency-only variants)."""
    latency = {work: dict(rows) for work, rows in inter.latency.items()}
    if extra is not None:
        for work, rows in extra.latency.items():
            for key in latency_only:
                latency[work][key] = rows[key]
            latency[work]["onnx (second pass)"] = rows["onnx"]
    backends: dict[str, dict[str, Any]] = {key: worker.to_json() for key, worker in workers.items()}
    for key in inter.backends:
        if key in ST_KEYS:
            backends.setdefault(key, {"backend": "st-onnx", "variant": "int8" if key.endswith("int8") else None})
        else:
            backends.setdefault(key, {"backend": "onnx", "variant": key})
    throughput = (inter.throughput or {}).get("c", {})
    throughput_e = (inter.throughput or {}).get("e", {})
    for key, value in backends.items():
        # new keys first: the last keys stay latency, throughput, schedules as before
        if key in ST_KEYS and inter.versions and key in inter.versions:
            value["versions"] = dict(inter.versions[key])
        if inter.load_seconds and key in inter.load_seconds:
            value["interleave_load_seconds"] = inter.load_seconds[key]
        value["latency"] = {work: rows[key].to_json() for work, rows in latency.items() if key in rows}
        if key in throughput:
            value["throughput"] = {"c": throughput[key].to_json()}
        if key in throughput_e:
            value.setdefault("throughput", {})["e"] = throughput_e[key].to_json()
    if inter.schedules is not None:
        backends["onnx"]["schedules"] = {name: row.to_json() for name, row in inter.schedules.items()}
    second = {work: rows["onnx (second pass)"].to_json() if "onnx (second pass)" in rows else None for work, rows in latency.items()}
    return backends, second


# --------------------------------------------------------------------------- runs


def _scratch(settings: CompareSettings) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    scratch = RESULTS_DIR / f".{settings.name}.work"
    scratch.mkdir(parents=True, exist_ok=True)
    return scratch


def _write(run: dict[str, Any], name: str, markdown: str) -> tuple[Path, Path]:
    json_path = RESULTS_DIR / f"{name}.json"
    md_path = RESULTS_DIR / f"{name}.md"
    json_path.write_text(json.dumps(run, indent=1, default=str), encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return json_path, md_path


def run_compare(settings: CompareSettings, log: Log = _stderr) -> tuple[dict[str, Any], Path, Path]:
    """The side-by-side run; returns the result dict and the JSON and markdown paths written."""
    from .report import compute_figures, render_markdown

    started = time.perf_counter()
    scratch = _scratch(settings)
    model = build_bench_model(settings.models_root, variants=settings.variants, span=settings.span, log=log)
    mix = mix_with_pair_share(settings.pair_share) if settings.pair_share is not None else None
    workloads = all_workloads(settings.claims, mix) if mix is not None else all_workloads(settings.claims)
    digest = workload_digest(workloads)
    e = None
    if settings.claims_e:
        e = workload_e(settings.claims_e, mix=mix) if mix is not None else workload_e(settings.claims_e)
    digest_e = workload_digest({"e": e}) if e is not None else None
    profile = token_profile(model, {**workloads, **({"e": e} if e is not None else {})})
    log("workloads: " + "; ".join(f"{k}: {v['pairs']} pairs, {v['real_tokens']} tokens" for k, v in profile.items()))
    peers_dir = prepare_peers(model, log) if settings.peers else None

    quiet = wait_for_quiet(settings.max_load, settings.wait_seconds, log)
    run: dict[str, Any] = {
        "name": settings.name,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(settings).items()},
        "host": host_facts(),
        "quiet_check": quiet,
        "model": {"hf_dir": str(model.hf_dir), "onnx_dir": str(model.onnx_dir), "variants": list(model.variants())},
        "workload_digest": digest,
        "workloads": profile,
    }
    if digest_e is not None:
        run["workload_digest_e"] = digest_e
    if peers_dir is not None:
        run["model"]["st_onnx_dir"] = str(peers_dir)
    log("timing import verifier ...")
    run["import"] = import_time(settings.threads)
    log("numpy float32 matmul ceiling ...")
    run["numpy_before"] = numpy_ceiling(settings.threads)
    log(f"  {run['numpy_before']['ceiling_gflops']:.0f} GFLOP/s")

    keys = ["onnx"] + ([] if settings.skip_torch else ["torch"])
    keys += [f"onnx-{v}" for v in settings.variants if v in model.variants()]
    workers: dict[str, WorkerResult] = {}
    for key in keys:
        log(f"cold start and peak RSS: {key} in its own process ...")
        backend = "torch" if key == "torch" else "onnx"
        variant = None if key in ("torch", "onnx") else key.removeprefix("onnx-")
        directory = model.hf_dir if key == "torch" else model.onnx_dir
        workers[key] = run_worker(
            _worker_args(backend, directory, scratch / f"{key}.json", settings, digest, tasks="rss", variant=variant),
            settings.threads, log,
        )
    timed = [key for key in keys if key in ("onnx", "torch") or key.removeprefix("onnx-") in settings.variants_throughput]
    if settings.span:
        timed += ["span", "span-int8"]
    if settings.peers:
        timed += [key for key in ST_KEYS if key not in timed]
    latency_only = [key for key in keys if key not in timed]
    log(f"interleaved timing, one process: {', '.join(timed)} ...")
    probs_dir = scratch / "probs"
    inter = _run_interleave(
        model, settings, digest, timed, scratch / "interleave.json", probs_dir, log, skip="", digest_e=digest_e
    )
    extra = None
    if latency_only:
        log(f"interleaved latency: {', '.join(['onnx', *latency_only])} ...")
        extra = _run_interleave(
            model, settings, digest, ["onnx", *latency_only], scratch / "interleave-latency.json", None, log,
            skip="throughput,schedules",
        )
    backends, run["interleave_second_pass_onnx"] = merge_backends(workers, inter, extra, latency_only)
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
    if e is not None:
        loaded_e = {key: np.load(probs_dir / "e" / f"{key}.npy") for key in timed if (probs_dir / "e" / f"{key}.npy").is_file()}
        reference_e = "torch" if "torch" in loaded_e else "onnx"
        if reference_e in loaded_e:
            run["agreement_e"] = {
                key: agreement(e, loaded_e[reference_e], array) for key, array in loaded_e.items() if key != reference_e
            }
            run["agreement_e_reference"] = reference_e
    run["figures"] = compute_figures(run)
    run["total_seconds"] = time.perf_counter() - started
    run["load_average_end"] = list(os.getloadavg())
    json_path, md_path = _write(run, settings.name, render_markdown(run))
    return run, json_path, md_path


def run_tune(settings: CompareSettings, *, tune_claims: int = 40, log: Log = _stderr) -> tuple[dict[str, Any], Path, Path]:
    """Engine settings sweep (token budget, row cap, threads, spinning, optimisation levels) and
    staged vs eager; writes ``bench/results/<name>-tune.{json,md}``."""
    from .report import render_tune_markdown

    started = time.perf_counter()
    scratch = _scratch(settings)
    model = build_bench_model(settings.models_root, variants=settings.variants, log=log)
    workloads = all_workloads(settings.claims)
    digest = workload_digest(workloads)
    quiet = wait_for_quiet(settings.max_load, settings.wait_seconds, log)
    run: dict[str, Any] = {"name": f"{settings.name}-tune", "host": host_facts(), "quiet_check": quiet}
    subset = Workload("c", "tune subset", workloads["c"].cases[:tune_claims])
    run["subset_profile"] = token_profile(model, {"c": subset, "b": workloads["b"]})
    args = _worker_args("onnx", model.onnx_dir, scratch / "tune.json", settings, digest, tasks="tune")
    args += ["--tune-claims", str(tune_claims)]
    tune = run_worker(args, settings.threads, log).tune
    assert tune is not None, "bench.worker --tasks tune wrote no tune result"
    run["tune"] = tune.to_json()
    args = _worker_args("onnx", model.onnx_dir, scratch / "schedules.json", settings, digest, tasks="schedules")
    found = run_worker(args, settings.threads, log).schedules or {}
    run["schedules"] = {name: row.to_json() for name, row in found.items()}
    run["total_seconds"] = time.perf_counter() - started
    run["load_average_end"] = list(os.getloadavg())
    json_path, md_path = _write(run, f"{settings.name}-tune", render_tune_markdown(run))
    return run, json_path, md_path

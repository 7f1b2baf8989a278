"""One backend measured in its own process: cold start, RSS, latency and throughput.

``python -m bench compare`` starts one worker per backend, one after the
other, so each side's peak RSS and cold start are its own and the two never
share cores. Every worker regenerates the same workloads from the same seeds
and checks their digest against the one the parent computed (``--digest``),
so both sides score byte-identical pairs.

Usage (normally started by ``python -m bench``)::

    python -m bench.worker --backend onnx  --model-dir models/bench-.../onnx --out r.json [--variant int8]
    python -m bench.worker --backend torch --model-dir models/bench-.../hf   --out r.json

Tasks (``--tasks``):

* ``latency`` -- workloads a, b, d: warm-up, then ``--reps-*`` timed runs of
  each claim's staged scorer calls (singles, then pairs when needed);
* ``throughput`` -- workload c once (``--reps-c``): all singles in one call,
  then all needed pairs in one call (the many-claims driver's batching);
  probabilities saved to ``--probs``;
* ``rss`` -- cold start, then one pass of b and d so the peak RSS covers real
  work (what ``python -m bench compare`` runs per backend; the timings come from
  :mod:`bench.interleave`);
* ``schedules`` -- (onnx) the real :class:`verifier.ClaimVerifier` on a and b,
  ``staged`` vs ``eager``, over a scorer that runs the engine on every pair it
  is sent and answers with the workload's scripted probabilities;
* ``tune`` -- (onnx) workload c's first ``--tune-claims`` claims under several
  token budgets, row caps, thread and spinning settings and optimisation levels.

Timings are wall-clock (``time.perf_counter``). Threads: PyTorch
``torch.set_num_threads(--threads)``; onnxruntime ``intra_op_num_threads=--threads``,
``inter_op_num_threads=1``; BLAS/OpenMP env vars are set to ``--threads`` too.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

_STARTED_WALL = time.time()
_STARTED = time.perf_counter()

import numpy as np  # noqa: E402  (timed from _STARTED on purpose)

from .workloads import NEUTRAL, ClaimCase, Pair, Workload, all_workloads, mix_with_pair_share  # noqa: E402

__all__ = ["workload_digest", "CostedScriptedScorer", "main"]

ScoreFn = Callable[[Sequence[Pair]], np.ndarray]


def workload_digest(workloads: Mapping[str, Workload]) -> str:
    """sha256 over every pair of every workload, in order (proves both sides got the same pairs)."""
    import hashlib

    digest = hashlib.sha256()
    for key in sorted(workloads):
        for stage in workloads[key].stages():
            for premise, hypothesis in stage:
                digest.update(premise.encode("utf-8") + b"\x00" + hypothesis.encode("utf-8") + b"\x01")
        digest.update(b"\x02")
    return digest.hexdigest()


class CostedScriptedScorer:
    """Does the real model work for every pair it is sent, then answers with scripted probabilities.

    With a random-weights model the decision layer would otherwise always go
    to pairs; this keeps each claim on its designed path (see
    :mod:`bench.workloads`) while the time spent is the engine's real time.

    Args:
        engine: the real scorer (an :class:`verifier.OnnxScorer`).
        scripted: (premise, claim) -> (entailment, contradiction, neutral).
        default: probabilities of every other pair.
    """

    def __init__(
        self,
        engine: Any,
        scripted: Mapping[Pair, tuple[float, float, float]],
        default: tuple[float, float, float] = NEUTRAL,
    ) -> None:
        self.engine = engine
        self.scripted = dict(scripted)
        self.default = default
        self.pairs_sent = 0
        self.calls = 0

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Run the engine on ``pairs`` (result discarded); return the scripted (n, 3) rows."""
        self.engine.score(pairs)
        self.pairs_sent += len(pairs)
        self.calls += 1
        return np.asarray([self.scripted.get((pair[0], pair[1]), self.default) for pair in pairs], dtype=np.float64).reshape(
            len(pairs), 3
        )


def _peak_rss() -> int:
    """Peak resident set size of this process in bytes (``ru_maxrss`` is KiB on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


class _Backend:
    """A loaded backend: ``score`` plus padding counters and compute-time accounting."""

    name: str
    score: ScoreFn

    def reset(self) -> None:
        raise NotImplementedError

    def counters(self) -> dict[str, float]:
        raise NotImplementedError


class _TorchBackend(_Backend):
    """sentence-transformers CrossEncoder on PyTorch (the reference implementation's runtime)."""

    def __init__(self, model_dir: Path, threads: int, batch_size: int) -> None:
        import torch
        from sentence_transformers import CrossEncoder

        torch.set_num_threads(threads)
        self.name = "torch"
        self.batch_size = batch_size
        self.model = CrossEncoder(str(model_dir), device="cpu", max_length=512)
        id2label = {int(k): str(v).lower() for k, v in self.model.model.config.id2label.items()}
        labels = [id2label[i] for i in range(len(id2label))]
        self.permutation = [labels.index(name) for name in ("entailment", "contradiction", "neutral")]
        self._real = 0
        self._padded = 0
        self._batches = 0
        original = self.model.preprocess

        def counting(*args: Any, **kwargs: Any) -> Any:
            features = original(*args, **kwargs)
            self._padded += int(features["input_ids"].numel())
            self._real += int(features["attention_mask"].sum())
            self._batches += 1
            return features

        self.model.preprocess = counting  # type: ignore[method-assign]
        self.versions = {"torch": torch.__version__, "sentence_transformers": _version("sentence-transformers")}

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:  # type: ignore[override]
        probs = self.model.predict(
            [list(pair) for pair in pairs],
            batch_size=self.batch_size,
            apply_softmax=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(probs, dtype=np.float64)[:, self.permutation]

    def reset(self) -> None:
        self._real = self._padded = self._batches = 0

    def counters(self) -> dict[str, float]:
        return {
            "batches": self._batches,
            "real_tokens": self._real,
            "padded_tokens": self._padded,
            "padding_overhead": self._padded / self._real if self._real else 1.0,
        }


class _OnnxBackend(_Backend):
    """This project's OnnxScorer, with onnxruntime ``run`` time accounted separately."""

    def __init__(
        self,
        model_dir: Path,
        *,
        variant: Optional[str],
        threads: int,
        max_batch_tokens: int,
        max_batch_size: Optional[int],
        graph_optimization_level: str = "all",
        session_config: Optional[Mapping[str, str]] = None,
    ) -> None:
        from verifier.engine import OnnxScorer

        self.name = "onnx" if variant is None else f"onnx-{variant}"
        scorer = OnnxScorer(
            model_dir,
            variant=variant,
            intra_op_num_threads=threads,
            inter_op_num_threads=1,
            graph_optimization_level=graph_optimization_level,
            max_batch_tokens=max_batch_tokens,
            max_batch_size=max_batch_size,
        )
        with _session_config(session_config or {}):
            self.scorer = scorer.load()
        self.run_seconds = 0.0
        session = self.scorer._ensure_loaded().session  # bench-only introspection
        original_run = session.run

        def timed_run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original_run(*args, **kwargs)
            finally:
                self.run_seconds += time.perf_counter() - started

        session.run = timed_run
        import onnxruntime

        self.versions = {"onnxruntime": onnxruntime.__version__}

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:  # type: ignore[override]
        return self.scorer.score(pairs)

    def reset(self) -> None:
        self.scorer.reset_stats()
        self.run_seconds = 0.0

    def counters(self) -> dict[str, float]:
        stats = self.scorer.stats.as_dict()
        stats["onnxruntime_run_seconds"] = self.run_seconds
        return stats


@contextlib.contextmanager
def _session_config(entries: Mapping[str, str]) -> Iterator[None]:
    """While loading, add onnxruntime session config entries (e.g. spinning) to the engine's options.

    Bench-only: the engine has no public hook for config entries yet.
    """
    import verifier.engine as engine

    if not entries:
        yield
        return
    original = engine._session_options

    def patched(**kwargs: Any) -> Any:
        options = original(**kwargs)
        for key, value in entries.items():
            options.add_session_config_entry(key, value)
        return options

    engine._session_options = patched  # type: ignore[assignment]
    try:
        yield
    finally:
        engine._session_options = original  # type: ignore[assignment]


def _version(distribution: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


def _time_stages(score: ScoreFn, stages: Sequence[Sequence[Pair]]) -> tuple[float, list[float], list[np.ndarray]]:
    """Run the scorer calls of one claim (or one throughput pass); total and per-stage seconds."""
    stage_seconds: list[float] = []
    outputs: list[np.ndarray] = []
    for stage in stages:
        started = time.perf_counter()
        outputs.append(score(stage))
        stage_seconds.append(time.perf_counter() - started)
    return sum(stage_seconds), stage_seconds, outputs


def _latency(backend: _Backend, workload: Workload, *, warmup: int, reps: int) -> dict[str, Any]:
    case = workload.cases[0]
    stages = case.stages()
    for _ in range(warmup):
        _time_stages(backend.score, stages)
    backend.reset()
    seconds: list[float] = []
    per_stage: list[list[float]] = []
    outputs: list[np.ndarray] = []
    for _ in range(reps):
        total, stage_seconds, outputs = _time_stages(backend.score, stages)
        seconds.append(total)
        per_stage.append(stage_seconds)
    return {
        "reps": reps,
        "warmup": warmup,
        "seconds": seconds,
        "stage_seconds": per_stage,
        "p50": _pct(seconds, 50),
        "p95": _pct(seconds, 95),
        "mean": float(np.mean(seconds)),
        "counters": backend.counters(),
        "probabilities": np.concatenate(outputs, axis=0).tolist() if outputs else [],
    }


def _throughput(backend: _Backend, workload: Workload, *, reps: int, probs_path: Optional[Path]) -> dict[str, Any]:
    stages = workload.stages()
    backend.reset()
    seconds: list[float] = []
    per_stage: list[list[float]] = []
    outputs: list[np.ndarray] = []
    for _ in range(reps):
        total, stage_seconds, outputs = _time_stages(backend.score, stages)
        seconds.append(total)
        per_stage.append(stage_seconds)
    if probs_path is not None and outputs:
        np.save(probs_path, np.concatenate(outputs, axis=0))
    counters = backend.counters()
    return {
        "reps": reps,
        "seconds": seconds,
        "stage_seconds": per_stage,
        "median": _pct(seconds, 50),
        "counters": counters,
        "probs_file": str(probs_path) if probs_path is not None else None,
    }


def _schedules(backend: _OnnxBackend, workloads: Mapping[str, Workload], *, reps: int) -> dict[str, Any]:
    from verifier import ClaimVerifier, RuntimeOptions

    results: dict[str, Any] = {}
    for key in ("a", "b"):
        case: ClaimCase = workloads[key].cases[0]
        for schedule in ("staged", "eager"):
            scorer = CostedScriptedScorer(backend.scorer, case.scripted_scores())
            verifier = ClaimVerifier(scorer=scorer, runtime=RuntimeOptions(schedule=schedule))
            verifier.verify_sync(case.claim, case.evidence())  # warm-up
            scorer.pairs_sent = scorer.calls = 0
            seconds = []
            status = ""
            for _ in range(reps):
                started = time.perf_counter()
                result = verifier.verify_sync(case.claim, case.evidence())
                seconds.append(time.perf_counter() - started)
                status = result.status.value
            results[f"{key}/{schedule}"] = {
                "reps": reps,
                "seconds": seconds,
                "p50": _pct(seconds, 50),
                "p95": _pct(seconds, 95),
                "pairs_per_claim": scorer.pairs_sent / reps,
                "calls_per_claim": scorer.calls / reps,
                "status": status,
                "expected_status": case.expected_status,
            }
    return results


def _tune(args: argparse.Namespace, workloads: Mapping[str, Workload]) -> dict[str, Any]:
    """Throughput of a slice of workload c (and latency of b) under several engine settings."""
    subset = Workload("c", "tune subset", workloads["c"].cases[: args.tune_claims])
    stages = subset.stages()
    settings: list[dict[str, Any]] = []
    for tokens in (1024, 2048, 4096, 8192, 16384):
        settings.append({"max_batch_tokens": tokens})
    settings.append({"max_batch_tokens": 8192, "max_batch_size": 32})
    for overhead in (0, 256, 4096):
        settings.append({"max_batch_tokens": 8192, "batch_overhead_tokens": overhead})
    settings.append({"max_batch_tokens": 8192, "threads": 1})
    settings.append({"max_batch_tokens": 8192, "session_config": {"session.intra_op.allow_spinning": "0"}})
    for level in ("disable", "basic", "extended"):
        settings.append({"max_batch_tokens": 8192, "graph_optimization_level": level})
    settings.append({"max_batch_tokens": 8192, "variant": "optimized", "graph_optimization_level": "basic"})
    rows = []
    for setting in settings:
        if setting.get("variant") and setting["variant"] not in _manifest_variants(Path(args.model_dir)):
            continue
        started = time.perf_counter()
        restore = _planner_overhead(setting.get("batch_overhead_tokens"))
        backend = _OnnxBackend(
            Path(args.model_dir),
            variant=setting.get("variant"),
            threads=setting.get("threads", args.threads),
            max_batch_tokens=setting["max_batch_tokens"],
            max_batch_size=setting.get("max_batch_size"),
            graph_optimization_level=setting.get("graph_optimization_level", "all"),
            session_config=setting.get("session_config"),
        )
        load_seconds = time.perf_counter() - started
        _time_stages(backend.score, stages[:1])  # warm-up on the singles
        backend.reset()
        total, stage_seconds, _ = _time_stages(backend.score, stages)
        counters = backend.counters()
        latency = _latency(backend, workloads["b"], warmup=1, reps=args.tune_reps_b)
        rows.append(
            {
                "setting": setting,
                "load_seconds": load_seconds,
                "seconds": total,
                "stage_seconds": stage_seconds,
                "counters": counters,
                "b_p50": latency["p50"],
                "b_p95": latency["p95"],
            }
        )
        print(f"tune {setting}: {total:.2f} s, b p50 {latency['p50'] * 1000:.0f} ms", file=sys.stderr, flush=True)
        restore()
        del backend
        gc.collect()  # the timed run() wrapper makes a reference cycle around each session
    return {"claims": len(subset.cases), "pairs": len(subset.pairs()), "rows": rows}


def _planner_overhead(overhead: Optional[float]) -> Callable[[], None]:
    """Make the engine's batch planner use ``overhead`` padded tokens per batch (None: unchanged).

    Bench-only: ``OnnxScorer`` does not expose ``batch_overhead_tokens`` (its
    default is :data:`verifier.engine.BATCH_OVERHEAD_TOKENS`). Returns the undo.
    """
    import functools

    import verifier.engine as engine

    if overhead is None:
        return lambda: None
    original = engine.plan_batches
    engine.plan_batches = functools.partial(original, batch_overhead_tokens=float(overhead))  # type: ignore[assignment]

    def restore() -> None:
        engine.plan_batches = original  # type: ignore[assignment]

    return restore


def _manifest_variants(model_dir: Path) -> set[str]:
    data = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    return set(data.get("variants", {}))


def build_parser() -> argparse.ArgumentParser:
    """The worker's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.worker", description="Measure one backend in this process.")
    parser.add_argument("--backend", choices=("onnx", "torch"), required=True)
    parser.add_argument("--model-dir", required=True, help="onnx: exported directory; torch: Hugging Face directory")
    parser.add_argument("--variant", default=None, help="onnx variant name recorded in the manifest")
    parser.add_argument("--out", type=Path, required=True, help="JSON result file")
    parser.add_argument("--probs", type=Path, default=None, help="where to save workload c probabilities (.npy)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tasks", default="latency,throughput", help="comma-separated: latency,throughput,schedules,rss,tune")
    parser.add_argument("--claims", type=int, default=200, help="claims in workload c")
    parser.add_argument("--pair-share", type=float, default=None, help="share of c's claims needing pairs")
    parser.add_argument("--digest", default=None, help="expected workload digest (refuse to run on a mismatch)")
    parser.add_argument("--reps-a", type=int, default=20)
    parser.add_argument("--reps-b", type=int, default=7)
    parser.add_argument("--reps-d", type=int, default=3)
    parser.add_argument("--reps-c", type=int, default=1)
    parser.add_argument("--reps-schedules", type=int, default=5)
    parser.add_argument("--max-batch-tokens", type=int, default=8192)
    parser.add_argument("--max-batch-size", type=int, default=None)
    parser.add_argument("--torch-batch-size", type=int, default=32, help="CrossEncoder.predict batch_size")
    parser.add_argument("--tune-claims", type=int, default=40)
    parser.add_argument("--tune-reps-b", type=int, default=3)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the requested tasks and write the result JSON; return 0, or 2 on a workload digest mismatch."""
    args = build_parser().parse_args(argv)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    tasks = {task.strip() for task in args.tasks.split(",") if task.strip()}
    mix = mix_with_pair_share(args.pair_share) if args.pair_share is not None else None
    workloads = all_workloads(args.claims, mix) if mix is not None else all_workloads(args.claims)
    digest = workload_digest(workloads)
    if args.digest is not None and digest != args.digest:
        print(f"workload digest {digest} != expected {args.digest}", file=sys.stderr)
        return 2
    ready = time.perf_counter()
    result: dict[str, Any] = {
        "backend": args.backend,
        "variant": args.variant,
        "threads": args.threads,
        "pid": os.getpid(),
        "digest": digest,
        "process_started_wall": _STARTED_WALL,
        "numpy_and_workloads_seconds": ready - _STARTED,
    }

    backend: _Backend
    if "tune" in tasks:
        result["tune"] = _tune(args, workloads)
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
        return 0

    started = time.perf_counter()
    if args.backend == "torch":
        import sentence_transformers  # noqa: F401  (import timed separately from load)
        import torch  # noqa: F401
    else:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401

        import verifier.engine  # noqa: F401
    imported = time.perf_counter()
    if args.backend == "torch":
        backend = _TorchBackend(Path(args.model_dir), args.threads, args.torch_batch_size)
    else:
        backend = _OnnxBackend(
            Path(args.model_dir),
            variant=args.variant,
            threads=args.threads,
            max_batch_tokens=args.max_batch_tokens,
            max_batch_size=args.max_batch_size,
        )
    loaded = time.perf_counter()
    rss_after_load = _rss()
    peak_after_load = _peak_rss()
    first_pair = workloads["a"].cases[0].single_pairs()[:1]
    backend.score(first_pair)
    first = time.perf_counter()
    result["cold_start"] = {
        "import_seconds": imported - started,
        "load_seconds": loaded - imported,
        "first_pair_seconds": first - loaded,
        "import_load_first_seconds": first - started,
        "ready_wall": time.time(),
    }
    result["rss"] = {"after_load_bytes": rss_after_load, "peak_after_load_bytes": peak_after_load}
    result["versions"] = {**getattr(backend, "versions", {}), "numpy": np.__version__, "python": sys.version.split()[0]}
    print(
        f"{backend.name}: import {imported - started:.2f} s, load {loaded - imported:.2f} s, "
        f"first pair {first - loaded:.2f} s, RSS {rss_after_load / 2**20:.0f} MiB",
        file=sys.stderr,
        flush=True,
    )

    if "latency" in tasks:
        result["latency"] = {}
        for key, reps in (("a", args.reps_a), ("b", args.reps_b), ("d", args.reps_d)):
            warmup = 2 if key == "a" else 1
            result["latency"][key] = _latency(backend, workloads[key], warmup=warmup, reps=reps)
            row = result["latency"][key]
            print(
                f"{backend.name} {key}: p50 {row['p50'] * 1000:.0f} ms, p95 {row['p95'] * 1000:.0f} ms",
                file=sys.stderr,
                flush=True,
            )
    if "throughput" in tasks:
        result["throughput"] = {"c": _throughput(backend, workloads["c"], reps=args.reps_c, probs_path=args.probs)}
        print(f"{backend.name} c: {result['throughput']['c']['seconds']} s", file=sys.stderr, flush=True)
    if "schedules" in tasks and isinstance(backend, _OnnxBackend):
        result["schedules"] = _schedules(backend, workloads, reps=args.reps_schedules)
    if "rss" in tasks:
        # One pass of (b) and (d) -- the widest batches -- so the peak RSS includes
        # the activations of real work, not only the loaded weights.
        probe = {}
        for key in ("b", "d"):
            total, _, _ = _time_stages(backend.score, workloads[key].cases[0].stages())
            probe[f"{key}_seconds"] = total
        result["rss_probe"] = probe
    result["rss"]["peak_bytes"] = _peak_rss()
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

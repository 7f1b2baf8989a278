"""The engine settings sweep of ``python -m bench tune`` (run inside one ``bench.worker --tasks tune``).

For each setting of :func:`tune_settings` -- token budgets, a row cap, the
planner's batch cost, one thread, spinning off, graph optimisation levels,
the saved ``optimized`` variant -- a fresh :class:`bench.backends.OnnxBackend`
is loaded (timed), warmed up on the singles, then timed once over the first
``tune_claims`` claims of (c) and over (b) (:func:`bench.measure.latency`).
Every option is a public :class:`verifier.engine.scorer.OnnxScorer` argument.
"""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from typing import Any, Mapping, Optional

from .backends import OnnxBackend
from .measure import latency, time_stages
from .proc import Log
from .results import TuneResult, TuneRow
from .workloads import Workload

__all__ = ["tune_settings", "run_tune_sweep"]


def tune_settings() -> list[dict[str, Any]]:
    """The settings swept, in report order (keys as in the report's "setting" column)."""
    settings: list[dict[str, Any]] = []
    for tokens in (1024, 2048, 4096, 8192, 16384):
        settings.append({"max_batch_tokens": tokens})
    settings.append({"max_batch_tokens": 8192, "max_batch_size": 32})
    for overhead in (0, 256, 4096):
        settings.append({"max_batch_tokens": 8192, "batch_overhead_tokens": overhead})
    settings.append({"max_batch_tokens": 8192, "threads": 1})
    # spinning is off by default since 2026-12-02 (verifier.engine.session.DEFAULT_CONFIG_ENTRIES): sweep it on
    settings.append({"max_batch_tokens": 8192, "session_config": {"session.intra_op.allow_spinning": "1"}})
    for level in ("disable", "basic", "extended"):
        settings.append({"max_batch_tokens": 8192, "graph_optimization_level": level})
    settings.append({"max_batch_tokens": 8192, "variant": "optimized", "graph_optimization_level": "basic"})
    return settings


def _manifest_variants(model_dir: Path) -> set[str]:
    data = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    return set(data.get("variants", {}))


def _load(model_dir: Path, setting: Mapping[str, Any], threads: int) -> OnnxBackend:
    overhead: Optional[float] = setting.get("batch_overhead_tokens")
    return OnnxBackend(
        model_dir,
        variant=setting.get("variant"),
        threads=setting.get("threads", threads),
        max_batch_tokens=setting["max_batch_tokens"],
        max_batch_size=setting.get("max_batch_size"),
        graph_optimization_level=setting.get("graph_optimization_level", "all"),
        session_config_entries=setting.get("session_config"),
        batch_overhead_tokens=float(overhead) if overhead is not None else None,
    )


def run_tune_sweep(
    model_dir: Path, workloads: Mapping[str, Workload], *, threads: int, tune_claims: int, reps_b: int, log: Log
) -> TuneResult:
    """Throughput of the first ``tune_claims`` claims of (c), and (b)'s latency, under every setting
    (a setting naming a variant the manifest lacks is skipped)."""
    subset = Workload("c", "tune subset", workloads["c"].cases[:tune_claims])
    stages = subset.stages()
    rows = []
    for setting in tune_settings():
        if setting.get("variant") and setting["variant"] not in _manifest_variants(model_dir):
            continue
        started = time.perf_counter()
        backend = _load(model_dir, setting, threads)
        load_seconds = time.perf_counter() - started
        time_stages(backend.score, stages[:1])  # warm-up on the singles
        backend.reset()
        total, stage_seconds, _ = time_stages(backend.score, stages)
        counters = backend.counters()
        b = latency({backend.name: backend}, workloads["b"], reps_b, warmup=1)[backend.name]
        rows.append(
            TuneRow(
                setting=setting,
                load_seconds=load_seconds,
                seconds=total,
                stage_seconds=stage_seconds,
                counters=counters,
                b_p50=b.p50,
                b_p95=b.p95,
            )
        )
        log(f"tune {setting}: {total:.2f} s, b p50 {b.p50 * 1000:.0f} ms")
        del backend
        gc.collect()  # free each session before the next one loads
    return TuneResult(claims=len(subset.cases), pairs=len(subset.pairs()), rows=rows)

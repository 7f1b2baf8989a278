"""The persistent score store on a re-run: claims × passages verified cold, 5 % of the passages changed, verified again.

``python -m bench.score_cache [--model-dir DIR]`` builds ``--claims`` claims of
``--passages`` encyclopedia-style passages each (:func:`bench.texts.encyclopedia_case`,
seeded), verifies them with :class:`verifier.ClaimVerifier` over an
:class:`verifier.engine.scorer.OnnxScorer` with ``score_cache`` in a fresh
store (cold), rewrites ``--change`` (5 %) of the passages, and verifies again
over a copy of that store (warm). A run of the changed claims without any
store checks that every result, digests included, is byte-identical; the warm
re-run is timed before and after it (each time on a fresh copy of the cold
store), so a change of load during the run shows in both.

Reported per run: onnxruntime time (every ``InferenceSession.run``, timed
through the public ``session_factory``), scorer time (tokenization, store
lookups and inserts, onnxruntime, softmax), wall time, the process's CPU time
(less disturbed by other jobs on a shared machine than wall time), pairs asked,
distinct pairs, pairs and tokens run, store hits and misses; plus the machine
and its load average. The target (docs/score-store.md): the warm re-run costs
at most 10 % of the cold run's model time. Measured, never asserted in a test.

Default model: ``models/bench-deberta-v3-base-random/onnx-span`` (``python -m bench build --span``),
else ``onnx``, else pass ``--model-dir`` (the tiny smoke model works: ``python -m export --smoke``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

from .model import bench_model
from .proc import REPO_ROOT
from .texts import encyclopedia_case

__all__ = ["main", "make_requests", "change_passages"]


def make_requests(claims: int, passages: int, seed: int) -> list[Any]:
    """``claims`` ClaimRequests of ``passages`` distinct passages each (seeded)."""
    from verifier import ClaimEvidence, ClaimRequest

    rng = random.Random(seed)
    requests = []
    for number in range(claims):
        texts, claim, _ = encyclopedia_case(rng, "insufficient", passages)
        evidence = tuple(
            ClaimEvidence(reference=f"c{number}-p{index}", memory_id=uuid.UUID(int=rng.getrandbits(128)), text=text)
            for index, text in enumerate(texts)
        )
        requests.append(ClaimRequest(id=f"claim-{number}", claim=claim, evidence=evidence))
    return requests


def change_passages(requests: Sequence[Any], share: float, seed: int) -> tuple[list[Any], int]:
    """The requests with ``share`` of all passages rewritten (same reference and memory id), and how many."""
    slots = [(i, j) for i, request in enumerate(requests) for j in range(len(request.evidence))]
    rng = random.Random(seed + 1)
    chosen = set(rng.sample(slots, round(share * len(slots))))
    changed = []
    for i, request in enumerate(requests):
        evidence = tuple(
            item.model_copy(update={"text": item.text + " The entry was revised in 2031."}) if (i, j) in chosen else item
            for j, item in enumerate(request.evidence)
        )
        changed.append(request.model_copy(update={"evidence": evidence}))
    return changed, len(chosen)


class _TimedSession:
    """An onnxruntime session whose ``run`` calls are timed (everything else forwarded)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.seconds = 0.0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.session.run(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _run(model_dir: Path, requests: Sequence[Any], store: Optional[Path], threads: int) -> tuple[list[str], dict[str, Any]]:
    from verifier import ClaimVerificationConfig, ClaimVerifier
    from verifier.engine.coalesce import EngineProxy
    from verifier.engine.manifest import read_manifest
    from verifier.engine.scorer import OnnxScorer
    from verifier.engine.session import create_session

    sessions: list[_TimedSession] = []

    def timed_session(model: Any, options: Any, **kwargs: Any) -> _TimedSession:
        sessions.append(_TimedSession(create_session(model, options, **kwargs)))
        return sessions[-1]

    class TimedScorer(EngineProxy):
        def __init__(self, engine: OnnxScorer) -> None:
            self.engine, self.seconds = engine, 0.0

        def score(self, pairs: Any) -> Any:
            started = time.perf_counter()
            try:
                return self.engine.score(pairs)
            finally:
                self.seconds += time.perf_counter() - started

    manifest = read_manifest(model_dir)
    config = ClaimVerificationConfig(model=manifest.model, revision=manifest.revision)
    engine = OnnxScorer(model_dir, intra_op_num_threads=threads, max_batch_size=config.batch_size,
                        session_factory=timed_session, score_cache=store).load()
    scorer = TimedScorer(engine)
    verifier = ClaimVerifier(config, scorer=scorer)
    started, cpu = time.perf_counter(), time.process_time()
    results = [result.model_dump_json() for result in verifier.verify_many_sync(list(requests))]
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    stats = engine.stats
    return results, {
        "onnxruntime_s": round(sum(session.seconds for session in sessions), 3),
        "scorer_s": round(scorer.seconds, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "pairs_asked": stats.pairs,
        "distinct_pairs": stats.unique_pairs,
        "pairs_run": stats.store_misses if store is not None else stats.unique_pairs,
        "store_hits": stats.store_hits,
        "store_misses": stats.store_misses,
        "real_tokens_run": stats.real_tokens,
        "batches": stats.batches,
        "statuses": sorted({json.loads(result)["status"] for result in results}),
    }


def _snapshot(source: Path, target: Path) -> int:
    """Copy an SQLite store consistently (its WAL included) with SQLite's backup API; the copy's size in bytes."""
    import sqlite3

    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    return target.stat().st_size


def _machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), "")
    except OSError:
        pass
    import onnxruntime  # type: ignore[import-untyped,unused-ignore]

    return {"cpu": model or platform.processor(), "logical_cpus": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "onnxruntime": onnxruntime.__version__}


def _default_model_dir() -> Optional[Path]:
    model = bench_model()
    for directory in (model.span_dir, model.onnx_dir):
        if (directory / "manifest.json").is_file():
            return directory
    return None


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m bench.score_cache`` argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.score_cache", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, default=None, help="exported model directory (default: the bench model)")
    parser.add_argument("--claims", type=int, default=30, help="claims (default 30)")
    parser.add_argument("--passages", type=int, default=8, help="passages per claim (default 8)")
    parser.add_argument("--change", type=float, default=0.05, help="share of passages changed for the re-run (default 0.05)")
    parser.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None, help="result file name (default score-cache-<UTC date>)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the benchmark; print the markdown; write ``bench/results/score-cache-<date>.json``."""
    args = build_parser().parse_args(argv)
    model_dir = args.model_dir or _default_model_dir()
    if model_dir is None:
        print("python -m bench.score_cache: no model: run `python -m bench build --span` or pass --model-dir", file=sys.stderr)
        return 2
    requests = make_requests(args.claims, args.passages, args.seed)
    changed, count = change_passages(requests, args.change, args.seed)
    load_before = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="score-cache-bench-") as scratch:
        store = Path(scratch) / "cold.sqlite"
        _, cold = _run(model_dir, requests, store, args.threads)
        store_bytes = _snapshot(store, Path(scratch) / "snapshot.sqlite")
        warms, warm_results = [], []
        for attempt in range(2):
            if attempt == 1:
                plain_results, plain = _run(model_dir, changed, None, args.threads)
            copy = Path(scratch) / f"warm-{attempt}.sqlite"
            _snapshot(Path(scratch) / "snapshot.sqlite", copy)
            results, timing = _run(model_dir, changed, copy, args.threads)
            warms.append(timing)
            warm_results.append(results)
    identical = warm_results[0] == plain_results == warm_results[1]
    warm = dict(warms[0])
    for key in ("onnxruntime_s", "scorer_s", "wall_s", "cpu_s"):  # the mean of the two timings
        warm[key] = round((warms[0][key] + warms[1][key]) / 2, 3)
    timed = ("onnxruntime_s", "scorer_s", "wall_s", "cpu_s")
    ratio = {key: round(warm[key] / cold[key], 4) if cold[key] else None for key in timed}
    ratio_plain = {key: round(warm[key] / plain[key], 4) if plain[key] else None for key in timed}
    report = {
        "date_utc": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        "machine": _machine(),
        "load_average_before": load_before,
        "load_average_after": list(os.getloadavg()),
        "model_dir": str(model_dir),
        "claims": args.claims, "passages_per_claim": args.passages, "passages_changed": count,
        "threads": args.threads,
        "cold": cold, "warm": warm, "warm_timings": warms, "rerun_without_store": plain,
        "warm_over_cold": ratio, "warm_over_rerun_without_store": ratio_plain,
        "tokens_run_warm_over_cold": round(warm["real_tokens_run"] / cold["real_tokens_run"], 4),
        "results_identical_with_and_without_store": identical,
        "store_bytes": store_bytes,
    }
    name = args.name or f"score-cache-{report['date_utc'][:10]}"
    out = REPO_ROOT / "bench" / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    rows = [("onnxruntime time", "onnxruntime_s", "s"), ("scorer time", "scorer_s", "s"), ("wall time", "wall_s", "s"),
            ("process CPU time", "cpu_s", "s"), ("pairs asked", "pairs_asked", ""),
            ("distinct pairs", "distinct_pairs", ""), ("pairs run", "pairs_run", ""),
            ("tokens run", "real_tokens_run", ""), ("store hits", "store_hits", ""), ("store misses", "store_misses", "")]
    print(f"score store re-run: {args.claims} claims x {args.passages} passages, {count} passages changed "
          f"({args.change:.0%}); {model_dir}; {report['machine']['cpu']}, {report['machine']['logical_cpus']} CPUs, "
          f"{args.threads} threads; load average {load_before[0]:.2f} before, {report['load_average_after'][0]:.2f} after\n")
    print("| | cold (empty store) | re-run (5 % changed, warm store; mean of 2) | re-run without store |\n"
          "|---|---:|---:|---:|")
    for label, key, unit in rows:
        print(f"| {label} | {cold[key]}{unit} | {warm[key]}{unit} | {plain[key]}{unit} |")
    for label, values in (("cold", ratio), ("the re-run without store", ratio_plain)):
        print(f"\nwarm re-run / {label}: onnxruntime {values['onnxruntime_s']:.1%}, scorer {values['scorer_s']:.1%}, "
              f"wall {values['wall_s']:.1%}, CPU {values['cpu_s']:.1%}")
    print(f"\nwarm onnxruntime timings: {warms[0]['onnxruntime_s']} s before, {warms[1]['onnxruntime_s']} s after the "
          f"run without store; tokens run {report['tokens_run_warm_over_cold']:.1%} of the cold run's; results "
          f"identical with and without the store: {identical}; store file {store_bytes / 1024:.0f} KiB")
    print(f"written: {out}", file=sys.stderr)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())

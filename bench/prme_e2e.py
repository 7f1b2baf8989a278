"""PRME's own ClaimVerifier against this project's, end to end, on the same weights, interleaved.

``python -m bench.prme_e2e`` starts warm worker processes (:mod:`bench.e2e_worker`),
one per verifier, and lets them take turns claim by claim on the same claims:

* ``prme`` -- PRME 0.15.0's ``ClaimVerifier`` with its real model path
  (sentence-transformers ``CrossEncoder`` on PyTorch), in the peer virtualenv
  ``.venv-prme-bench`` (``bash bench/setup_prme_peer.sh``), loading the bench
  model's Hugging Face directory through ``ClaimVerificationConfig(model=<that
  directory>, revision=<this project's revision string>)`` (a local directory:
  ``revision`` is not resolved, PRME's ``resolved_revision`` is ``None``);
* ``ours-fp32`` / ``ours-int8`` / ``ours-bf16`` -- :class:`verifier.ClaimVerifier.from_model_dir` on the
  export of the same weights (``models/bench-deberta-v3-base-random/onnx-span``,
  float32, its ``int8`` variant and its OpenVINO ``bf16`` variant, when built);
  with ``-eager`` (``ours-int8-eager``) on ``RuntimeOptions(schedule="eager")``, with ``-nospin``,
  ``-spin`` or ``-stopspin`` with other onnxruntime session entries.

Claims: ``--claims`` claims x 8 passages of workload (c) (memory-style notes,
:mod:`bench.workloads`) or (e) (encyclopedia-style, ``--texts e``). The model's
weights are random, so its probabilities sit near 1/3: no passage or pair is
ever entailed or contradicted by the model, and every claim is decided by the
real decision layer after its 8 singles *and* all 28 pairs (36 premises, two
model calls) -- unless a deterministic rule decides on the singles. Both
verifiers take that path on their own probabilities; nothing is scripted.

Phases (each records the 1-minute load average beside its figures):

1. **sequential** -- for every claim, each worker (order rotated) runs ``await
   verify`` once, then scores the very pairs that claim needed directly on its
   engine (``CrossEncoder.predict`` / ``OnnxScorer.score``, same calls): the
   end-to-end time and the pair-level time side by side;
2. **many** -- chunks of ``--chunk`` claims: ``await verify_many`` (ours) and a
   loop of ``await verify`` (PRME has no many-claims call), order alternating;
3. **sync vs async** (ours) -- every claim ``verify_sync`` and ``await verify``,
   adjacent, order alternating; then chunks of 8: eight ``verify_sync`` one after
   the other against eight concurrent ``await verify`` tasks;
4. **loop lag** -- a task that asks to wake every 5 ms while ``await verify`` runs
   (sequential, and 8 concurrent): how late it woke; plus the same on an idle loop.

Cold start is process start (just before ``Popen``) to the first result (the
worker's first ``await verify``, model load included); peak RSS is the worker's
``ru_maxrss`` at the end. Results: ``bench/results/<name>.json`` and ``.md``.

This is a speed comparison only: **the model's weights are random; its
decisions are not quality figures.** Statuses must be equal between PRME and
the float32 engine on equal weights (the same rules on probabilities equal to
~1e-7); the int8 agreement is reported as measured.

Usage::

    bash bench/setup_prme_peer.sh                        # once: .venv-prme-bench
    .venv/bin/python -m bench build --span               # once: the bench model (cached)
    .venv/bin/python -m bench.prme_e2e --claims 16       # ~15-25 min on 2 busy cores
    .venv/bin/python -m bench.prme_e2e --quick           # 4 claims, a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence

from .model import bench_model
from .prme_e2e_report import EAGER, SIDES, VARIANT_SUFFIXES, agreement, percentile, render_markdown, split_side, summary
from .proc import REPO_ROOT, THREAD_ENV_VARS

__all__ = ["PEER_VENV", "SIDES", "peer_python", "peer_problem", "build_parser", "main", "cases_of", "Worker"]

#: The peer virtualenv built by ``bash bench/setup_prme_peer.sh``.
PEER_VENV = REPO_ROOT / ".venv-prme-bench"
def peer_python(venv: Path = PEER_VENV) -> Path:
    """The peer virtualenv's interpreter."""
    return venv / "bin" / "python"


def peer_problem(python: Path) -> Optional[str]:
    """Why the PRME peer cannot run (one line), or ``None`` when its interpreter imports PRME and sentence-transformers."""
    if not python.is_file():
        return f"{python} not found: build the PRME peer with `bash bench/setup_prme_peer.sh`"
    probe = subprocess.run(
        [str(python), "-c", "import prme.retrieval.claim_verification, sentence_transformers, torch"],
        capture_output=True, text=True, check=False,
    )
    if probe.returncode != 0:
        last = [line for line in probe.stderr.splitlines() if line.strip()]
        return f"{python} cannot import PRME's verifier ({last[-1] if last else 'no output'}): rerun `bash bench/setup_prme_peer.sh`"
    return None


def cases_of(texts: str, claims: int) -> list[dict[str, Any]]:
    """``claims`` claim cases of workload (c) or (e) as JSON-ready dicts, with the pairs each scoring stage sends.

    ``stages``: the singles, then every 2-combination in caller order (what both
    verifiers score when no single passage decides; with 8 passages every
    passage is a candidate, ``group_candidate_limit`` 8).
    """
    from .workloads import workload_c, workload_e

    workload = workload_c(claims) if texts == "c" else workload_e(claims)
    out = []
    for case in workload.cases:
        out.append(
            {
                "claim": case.claim,
                "evidence": [
                    {"reference": p.reference, "memory_id": str(p.memory_id), "text": p.text} for p in case.passages
                ],
                "singles": [list(pair) for pair in case.single_pairs()],
                "pairs": [list(pair) for pair in case.group_pairs()],
            }
        )
    return out


class Worker:
    """One :mod:`bench.e2e_worker` process: started, answered its first claim, then request by request."""

    def __init__(self, key: str, command: list[str], env: dict[str, str], log_path: Path) -> None:
        self.key = key
        self.log_path = log_path
        self._log = open(log_path, "w", encoding="utf-8")
        self.spawned_wall = time.time()
        self.spawned = time.perf_counter()
        self.process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
        )
        self.ready = self._read()
        self.ready_after_s = time.perf_counter() - self.spawned
        if self.ready.get("op") != "ready":
            raise RuntimeError(f"{key}: expected a ready line, got {self.ready}")

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=30)
            tail = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
            raise RuntimeError(f"{self.key} worker exited ({self.process.returncode}): " + " | ".join(tail))
        return json.loads(line)

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self) -> dict[str, Any]:
        try:
            final = self.ask(op="exit")
        finally:
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self._log.close()
        return final


def _env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = str(REPO_ROOT)
    for name in THREAD_ENV_VARS:
        env[name] = str(threads)
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env.setdefault("TOKENIZERS_PARALLELISM", "true")
    return env


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _pause(gap_ms: float) -> None:
    """A short gap between turns, so one process's spinning threads do not land in the next one's timing."""
    if gap_ms > 0:
        time.sleep(gap_ms / 1000.0)


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.prme_e2e", description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=16, help="claims (default 16; --quick 4)")
    parser.add_argument("--texts", choices=("c", "e"), default="c", help="c: memory-style notes (default); e: encyclopedia")
    parser.add_argument("--chunk", type=int, default=8, help="claims per many-claims / concurrent chunk (default 8)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every side (default 2)")
    parser.add_argument(
        "--sides", default=None,
        help=f"comma-separated from {','.join(SIDES)} (default: all whose variant the bench model has)",
    )
    parser.add_argument("--phases", default="sequential,many,async,lag", help="comma-separated: sequential,many,async,lag")
    parser.add_argument("--lag-claims", type=int, default=4, help="claims verified while the loop lag is measured (default 4)")
    parser.add_argument("--concurrent-reps", type=int, default=1, help="passes over the 8-claim chunks, concurrent vs sync (default 1)")
    parser.add_argument("--gap-ms", type=float, default=100.0, help="pause between turns (default 100 ms)")
    parser.add_argument("--name", default=None, help="result name: bench/results/<name>.json/.md (default prme-e2e-<date>)")
    parser.add_argument("--models-root", type=Path, default=None)
    parser.add_argument("--model-dir", type=Path, default=None, help="our export (default: the bench model's onnx-span/)")
    parser.add_argument("--peer-python", type=Path, default=None, help=f"PRME's interpreter (default {peer_python()})")
    parser.add_argument(
        "--session-config", default=None,
        help="onnxruntime session config entries for our sides, JSON (e.g. '{\"session.intra_op.allow_spinning\": \"0\"}')",
    )
    parser.add_argument("--quick", action="store_true", help="4 claims, chunk 4, 2 lag claims: a smoke run (noisy)")
    parser.add_argument("--results-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the comparison; 0, or 2 when the peer venv or the bench model is missing."""
    args = build_parser().parse_args(argv)
    if args.quick:
        args.claims, args.chunk, args.lag_claims = 4, 4, 2
    sides = [side.strip() for side in (args.sides or ",".join(SIDES)).split(",") if side.strip()]
    phases = {phase.strip() for phase in args.phases.split(",") if phase.strip()}
    unknown = sorted(side for side in sides if split_side(side)[0] not in SIDES)
    if unknown:
        print(f"unknown side(s) {unknown}; choose from {list(SIDES)}", file=sys.stderr)
        return 2
    model = bench_model(args.models_root)
    our_dir = args.model_dir or model.span_dir
    if not (our_dir / "manifest.json").is_file() or not model.hf_ready():
        print(f"the bench model is not built ({our_dir}, {model.hf_dir}): run `.venv/bin/python -m bench build --span`", file=sys.stderr)
        return 2
    python = args.peer_python or peer_python()
    if "prme" in sides:
        problem = peer_problem(python)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
    manifest = json.loads((our_dir / "manifest.json").read_text(encoding="utf-8"))
    if args.sides is None:  # the default: every side the model can run (bf16 is built only when asked for)
        sides = [side for side in sides if not side.startswith("ours-") or side == "ours-fp32"
                 or side.removeprefix("ours-") in manifest.get("variants", {})]
    if "ours-int8" in sides and "int8" not in manifest.get("variants", {}):
        print(f"{our_dir} has no int8 variant: run `.venv/bin/python -m bench build --span`", file=sys.stderr)
        return 2
    if "ours-bf16" in sides and "bf16" not in manifest.get("variants", {}):
        print(f"{our_dir} has no bf16 variant: run `.venv/bin/python -m export.variants {our_dir} --variants bf16` "
              "(the openvino extra)", file=sys.stderr)
        return 2

    from verifier import ClaimVerifier

    ours_config = ClaimVerifier.from_model_dir(our_dir).config
    # PRME is named exactly as the export names the model, so the configuration digests can be compared:
    # the manifest's model is the Hugging Face directory it was exported from (when it is still there).
    prme_model = ours_config.model if Path(ours_config.model).is_dir() else str(model.hf_dir)
    prme_revision = ours_config.revision

    started_wall = time.time()
    name = args.name or f"prme-e2e-{datetime.now(timezone.utc):%Y-%m-%d}"
    args.results_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="prme-e2e-"))
    cases = cases_of(args.texts, args.claims)
    cases_path = scratch / "cases.json"
    cases_path.write_text(json.dumps([{"claim": c["claim"], "evidence": c["evidence"]} for c in cases]), encoding="utf-8")
    env = _env(args.threads)
    loads: list[tuple[str, float]] = [("start", os.getloadavg()[0])]
    _log(f"prme_e2e: {len(cases)} claims ({args.texts}), sides {sides}, load {loads[0][1]:.2f}; logs in {scratch}")

    commands = {
        "prme": [str(python), "-m", "bench.e2e_worker", "--side", "prme", "--model", prme_model, "--revision", prme_revision],
        "ours-fp32": [sys.executable, "-m", "bench.e2e_worker", "--side", "ours", "--model", str(our_dir)],
        "ours-int8": [sys.executable, "-m", "bench.e2e_worker", "--side", "ours", "--model", str(our_dir), "--variant", "int8"],
        "ours-bf16": [sys.executable, "-m", "bench.e2e_worker", "--side", "ours", "--model", str(our_dir), "--variant", "bf16"],
    }
    for key in sides:
        base, suffix = split_side(key)
        if suffix == EAGER:
            commands[key] = commands[base] + ["--schedule", "eager"]
        elif suffix is not None:
            commands[key] = commands[base] + ["--session-config", json.dumps(VARIANT_SUFFIXES[suffix])]
    workers: dict[str, Worker] = {}
    cold: dict[str, Any] = {}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the workers are told to exit (finally below)
    try:
        for key in sides:  # one after the other: each cold start has the machine to itself (apart from others' load)
            command = commands[key] + ["--threads", str(args.threads), "--cases", str(cases_path)]
            if key != "prme" and args.session_config and split_side(key)[1] in (None, EAGER):
                command += ["--session-config", args.session_config]
            load_before = os.getloadavg()[0]
            worker = Worker(key, command, env, scratch / f"{key}.log")
            workers[key] = worker
            ready = worker.ready
            cold[key] = {
                **{k: v for k, v in ready.items() if k not in ("op", "first")},
                "process_start_to_first_result_s": ready["first_result_wall"] - worker.spawned_wall,
                "first_status": ready["first"]["status"],
                "load_before": load_before,
                "load_after": os.getloadavg()[0],
            }
            _log(
                f"  {key}: first result {cold[key]['process_start_to_first_result_s']:.2f} s after spawn "
                f"(import {ready['import_s']:.2f} s, first verify {ready['first_result_s']:.2f} s), "
                f"RSS {ready['rss_after_first'] / 2**20:.0f} MiB, load {cold[key]['load_after']:.2f}"
            )
            _pause(500)

        run: dict[str, Any] = {
            "name": name,
            "claims": len(cases),
            "texts": args.texts,
            "threads": args.threads,
            "sides": sides,
            "chunk": args.chunk,
            "gap_ms": args.gap_ms,
            "model_dir": str(our_dir),
            "hf_dir": str(model.hf_dir),
            "prme_config": {"model": prme_model, "revision": prme_revision},
            "session_config": args.session_config,
            "cold": cold,
        }
        keys = list(workers)
        json_path = args.results_dir / f"{name}.json"

        def save_partial() -> None:  # after every phase, so a run cut short keeps what it measured
            json_path.write_text(json.dumps({**run, "partial": True}, indent=1), encoding="utf-8")

        if "sequential" in phases:
            per: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
            engine: dict[str, list[float]] = {key: [] for key in keys}
            phase_loads = []
            for i, case in enumerate(cases):
                phase_loads.append(os.getloadavg()[0])
                order = keys[i % len(keys):] + keys[: i % len(keys)]
                for key in order:
                    # the end-to-end call and the engine alone on its pairs, adjacent, which first alternating
                    # by claim (the second of two calls on the same process runs on warm caches)
                    engine_first = i % 2 == 1 and i > 0
                    stages = [case["singles"], case["pairs"]]
                    if engine_first:
                        engine_s = workers[key].ask(op="engine", stages=stages)["seconds"]
                        _pause(args.gap_ms)
                    reply = workers[key].ask(op="verify", i=i, mode="async", scores=True)
                    per[key].append(reply)
                    _pause(args.gap_ms)
                    if reply["groups"] != len(stages[0]) + len(stages[1]):  # decided on the singles: time those alone
                        stages, engine_first = [case["singles"]], False
                    if not engine_first:
                        engine_s = workers[key].ask(op="engine", stages=stages)["seconds"]
                        _pause(args.gap_ms)
                    engine[key].append(engine_s)
                _log(
                    f"  sequential {i + 1}/{len(cases)}: "
                    + ", ".join(f"{k} {per[k][-1]['seconds']:.2f} s ({per[k][-1]['status']})" for k in keys)
                    + f" (load {phase_loads[-1]:.2f})"
                )
            run["sequential"] = {
                key: {
                    **summary([r["seconds"] for r in per[key]]),
                    "seconds": [r["seconds"] for r in per[key]],
                    "engine": {**summary(engine[key]), "seconds": engine[key]},
                    "statuses": [r["status"] for r in per[key]],
                    "groups": [r["groups"] for r in per[key]],
                    "model": per[key][0]["model"] if per[key] else None,
                    "requested_revision": per[key][0]["requested_revision"] if per[key] else None,
                    "resolved_revision": per[key][0]["resolved_revision"] if per[key] else None,
                }
                for key in keys
            }
            run["sequential_loads"] = phase_loads
            if "prme" in per:
                run["agreement"] = {key: agreement(per["prme"], per[key]) for key in keys if key != "prme"}
            if "ours-fp32" in per and "ours-int8" in per:
                run["agreement_int8_vs_fp32"] = agreement(per["ours-fp32"], per["ours-int8"])
            if "ours-fp32" in per and "ours-bf16" in per:
                run["agreement_bf16_vs_fp32"] = agreement(per["ours-fp32"], per["ours-bf16"])
            save_partial()

        if "many" in phases:
            chunks = [list(range(s, min(s + args.chunk, len(cases)))) for s in range(0, len(cases), args.chunk)]
            many: dict[str, list[float]] = {key: [] for key in keys}
            statuses: dict[str, list[str]] = {key: [] for key in keys}
            phase_loads = []
            for number, chunk in enumerate(chunks):
                phase_loads.append(os.getloadavg()[0])
                for key in keys if number % 2 == 0 else list(reversed(keys)):
                    reply = workers[key].ask(op="many", indices=chunk)
                    many[key].append(reply["seconds"])
                    statuses[key].extend(reply["statuses"])
                    _pause(args.gap_ms)
                _log(f"  many {number + 1}/{len(chunks)}: " + ", ".join(f"{k} {many[k][-1]:.2f} s" for k in keys))
            run["many"] = {
                key: {
                    "chunk_seconds": many[key],
                    "total_s": sum(many[key]),
                    "claims_per_s": len(cases) / sum(many[key]),
                    "statuses": statuses[key],
                }
                for key in keys
            }
            run["many_loads"] = phase_loads
            save_partial()

        ours = [key for key in keys if key.startswith("ours")]
        if "async" in phases and ours:
            result: dict[str, Any] = {}
            for key in ours:
                sync_s: list[float] = []
                async_s: list[float] = []
                phase_loads = []
                for i in range(len(cases)):
                    phase_loads.append(os.getloadavg()[0])
                    for mode in (("sync", "async") if i % 2 == 0 else ("async", "sync")):
                        reply = workers[key].ask(op="verify", i=i, mode=mode)
                        (sync_s if mode == "sync" else async_s).append(reply["seconds"])
                        _pause(args.gap_ms)
                concurrent: list[float] = []
                sequential_sync: list[float] = []
                chunks = [list(range(s, s + 8)) for s in range(0, len(cases) - 7, 8)] or [list(range(len(cases)))]
                for number, chunk in enumerate(chunks * args.concurrent_reps):
                    phase_loads.append(os.getloadavg()[0])
                    for op in (("sync_seq", "concurrent") if number % 2 == 0 else ("concurrent", "sync_seq")):
                        reply = workers[key].ask(op=op, indices=chunk)
                        (sequential_sync if op == "sync_seq" else concurrent).append(reply["seconds"])
                        _pause(args.gap_ms)
                paired = [a / s for a, s in zip(async_s, sync_s)]
                result[key] = {
                    "sync": summary(sync_s),
                    "async": summary(async_s),
                    "async_over_sync_p50": percentile(async_s, 50) / percentile(sync_s, 50),
                    "async_over_sync_total": sum(async_s) / sum(sync_s),
                    "paired_ratio_median": percentile(paired, 50),
                    "concurrent_claims": len(chunks[0]),
                    "concurrent_s": concurrent,
                    "sync_sequence_s": sequential_sync,
                    "concurrent_over_sync": sum(concurrent) / sum(sequential_sync),
                    "loads": phase_loads,
                }
                _log(
                    f"  async vs sync ({key}): one at a time {result[key]['async_over_sync_total']:.3f}x, "
                    f"8 concurrent {result[key]['concurrent_over_sync']:.3f}x"
                )
            run["async"] = result
            save_partial()

        if "lag" in phases:
            indices = list(range(min(args.lag_claims, len(cases))))
            lag: dict[str, Any] = {}
            for key in keys:
                lag[key] = {"idle": workers[key].ask(op="lag", indices=[], idle_s=2.0)}
                _pause(args.gap_ms)
                lag[key]["sequential"] = workers[key].ask(op="lag", indices=indices, concurrent=False)
                _pause(args.gap_ms)
                if key.startswith("ours"):
                    lag[key]["concurrent"] = workers[key].ask(op="lag", indices=list(range(min(8, len(cases)))), concurrent=True)
                    _pause(args.gap_ms)
                _log(
                    f"  loop lag ({key}): idle max {lag[key]['idle']['lag']['max_ms']:.1f} ms, "
                    f"during await verify max {lag[key]['sequential']['lag']['max_ms']:.1f} ms"
                    + (f", 8 concurrent max {lag[key]['concurrent']['lag']['max_ms']:.1f} ms" if "concurrent" in lag[key] else "")
                )
            run["lag"] = lag

        for key, worker in workers.items():
            cold[key]["final"] = worker.ask(op="stats")
        loads.append(("end", os.getloadavg()[0]))
    finally:
        for worker in workers.values():
            try:
                worker.close()
            except Exception as exc:  # noqa: BLE001 - a dead worker must not hide the result
                _log(f"  {worker.key}: close failed: {exc}")

    from .facts import host_facts

    run["host"] = host_facts()
    run["loads"] = loads
    run["minutes"] = (time.time() - started_wall) / 60.0
    md_path = args.results_dir / f"{name}.md"
    json_path.write_text(json.dumps(run, indent=1), encoding="utf-8")
    md_path.write_text(render_markdown(run), encoding="utf-8")
    print(md_path.read_text(encoding="utf-8"))
    _log(f"written: {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

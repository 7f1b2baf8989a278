"""One warm claim verifier in its own process, driven over stdin/stdout by :mod:`bench.prme_e2e`.

Two sides, one protocol:

* ``--side prme`` -- PRME 0.15.0's own ``prme.retrieval.claim_verification.ClaimVerifier``
  with its real model path (sentence-transformers ``CrossEncoder`` on PyTorch),
  run from the peer virtualenv (``bash bench/setup_prme_peer.sh``). PRME loads
  ``ClaimVerificationConfig(model=<local Hugging Face directory>, revision=...)``
  as it loads any model: ``CrossEncoder(model, revision=revision, trust_remote_code=False)``;
  for a local directory transformers and sentence-transformers read the files
  in place and ignore ``revision`` (checked by :mod:`bench.prme_e2e`, which
  records the loaded ``resolved_revision``: ``None``, there is no commit).
* ``--side ours`` -- this project's :class:`verifier.ClaimVerifier` on an exported
  directory (``from_model_dir``), float32 or a manifest variant (``--variant int8``).

This module imports nothing but the standard library until the side's own
library loads, so PRME's process holds only PRME (import time and memory are
its own) and reads its claims from the JSON file the parent wrote
(``--cases``: a list of ``{"claim", "evidence": [{"reference", "memory_id", "text"}]}``).

Start-up: imports, verifier construction, then the first claim with ``await verify``
(the model loads lazily inside it); then one ``ready`` line with the cold-start
parts. Afterwards one JSON request per stdin line, one JSON reply per line on
the original stdout (the library's own prints go to stderr):

* ``{"op": "verify", "i": k, "mode": "async"|"sync", "scores": bool}`` -- claim
  ``k`` once; its seconds, status, digests (and its group scores when asked);
* ``{"op": "many", "indices": [...]}`` -- ``await verify_many`` (ours) or a loop of
  ``await verify`` (PRME, which has no many-claims call); total seconds, statuses;
* ``{"op": "engine", "stages": [[[premise, claim], ...], ...]}`` -- the same pairs scored
  directly on the verifier's model, one call per stage, as the verifier calls it
  (PRME: ``CrossEncoder.predict`` under its lock; ours: ``OnnxScorer.score``): the pair-level time;
* ``{"op": "sync_seq", "indices": [...]}`` -- ``verify_sync`` one after the other (ours);
* ``{"op": "concurrent", "indices": [...]}`` -- one ``await verify`` task per claim,
  all at once (``asyncio.gather``); the wall time of the whole;
* ``{"op": "lag", "indices": [...], "concurrent": bool, "tick_ms": t}`` -- the
  same work (sequential or concurrent ``await verify``) with a task that asks to
  wake every ``t`` ms; how late it woke (the event loop's responsiveness);
  ``"idle_s": s`` instead measures an idle loop for ``s`` seconds;
* ``{"op": "profile", "indices": [...], "mode": ..., "out": path}`` -- the same
  work under :mod:`cProfile`, stats dumped to ``out``;
* ``{"op": "stats"}`` -- RSS now and peak; ``{"op": "exit"}``.

Timings are taken here, around the library call alone (``time.perf_counter``),
so the pipe to the parent is not in them. Threads: ``--threads`` for PyTorch
(``torch.set_num_threads``) and onnxruntime (intra-op; inter-op 1), and the
BLAS/OpenMP variables are set before anything loads.
"""

from __future__ import annotations

import time

_STARTED_WALL = time.time()
_STARTED = time.perf_counter()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from typing import Any, Callable, Optional, Sequence  # noqa: E402

__all__ = ["main", "build_parser"]

_THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _peak_rss() -> int:
    """Peak resident set size of this process in bytes (``ru_maxrss`` is KiB on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _rss() -> int:
    """Resident set size now, in bytes (``/proc/self/statm``; no psutil needed)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return 0


def build_parser() -> argparse.ArgumentParser:
    """The worker's argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.e2e_worker", description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("prme", "ours"), required=True)
    parser.add_argument("--model", required=True, help="prme: Hugging Face directory; ours: exported directory")
    parser.add_argument("--model-name", default=None, help="prme: ClaimVerificationConfig.model (default: --model)")
    parser.add_argument("--revision", default="local", help="prme: ClaimVerificationConfig.revision")
    parser.add_argument("--variant", default=None, help="ours: manifest variant (e.g. int8)")
    parser.add_argument("--schedule", choices=("staged", "eager"), default="staged", help="ours: RuntimeOptions.schedule")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", required=True, help="JSON file of the claims")
    parser.add_argument(
        "--session-config", default=None,
        help="ours: onnxruntime session config entries as JSON (e.g. '{\"session.intra_op.allow_spinning\": \"0\"}')",
    )
    return parser


class _Side:
    """What the driver loop needs from a verifier: async and sync one-claim calls and a many-claims call."""

    def __init__(
        self,
        verify: Callable[[int], Any],
        verify_sync: Optional[Callable[[int], Any]],
        many: Callable[[list[int]], Any],
        engine: Callable[[list[tuple[str, str]]], Any],
    ):
        self.verify = verify
        self.verify_sync = verify_sync
        self.many = many
        self.engine = engine


def _result_fields(result: Any, scores: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "status": result.status.value,
        "model_called": bool(result.model_called),
        "groups": len(result.group_scores),
        "localized": len(result.localized_assessments),
        "supporting_basis": result.supporting_basis,
        "refuting_basis": result.refuting_basis,
        "limitations": list(result.limitations),
        "configuration_sha256": result.configuration_sha256,
        "evidence_sha256": result.evidence_sha256,
        "claim_sha256": result.claim_sha256,
        "evaluation_id": result.evaluation_id,
        "result_sha256": result.result_sha256,
        "model": result.model,
        "requested_revision": result.requested_revision,
        "resolved_revision": result.resolved_revision,
    }
    if scores:
        fields["group_scores"] = [
            [list(score.references), score.entailment, score.contradiction, score.neutral] for score in result.group_scores
        ]
    return fields


def _prme_side(args: argparse.Namespace, cases: list[dict[str, Any]]) -> tuple[_Side, dict[str, Any], dict[str, float]]:
    started = time.perf_counter()
    import torch
    from prme.retrieval.claim_verification import ClaimEvidence, ClaimVerificationConfig, ClaimVerifier
    import sentence_transformers  # noqa: F401  (PRME imports it lazily, at its first model call; timed here)

    torch.set_num_threads(args.threads)
    imported = time.perf_counter()
    config = ClaimVerificationConfig(model=args.model_name or args.model, revision=args.revision)
    verifier = ClaimVerifier(config)
    if args.model_name and args.model_name != args.model:
        raise SystemExit("--model-name must equal --model for the prme side (CrossEncoder loads config.model)")
    evidence = [
        [ClaimEvidence(reference=e["reference"], memory_id=e["memory_id"], text=e["text"]) for e in case["evidence"]]
        for case in cases
    ]
    built = time.perf_counter()

    async def verify(i: int) -> Any:
        return await verifier.verify(cases[i]["claim"], evidence[i])

    async def many(indices: list[int]) -> list[Any]:
        return [await verifier.verify(cases[i]["claim"], evidence[i]) for i in indices]

    def engine(pairs: list[tuple[str, str]]) -> Any:
        # the model call of PRME's _predict_sync (same arguments), without the decision layer around it
        with verifier._prediction_lock:
            verifier._ensure_model()
            return verifier._model.predict(
                list(pairs), batch_size=verifier.config.batch_size, apply_softmax=True, show_progress_bar=False
            )

    from importlib import metadata

    versions = {name: metadata.version(name) for name in ("prme", "torch", "sentence-transformers", "transformers", "tokenizers", "huggingface-hub")}
    versions["torch_threads"] = str(torch.get_num_threads())
    return _Side(verify, None, many, engine), versions, {"import_s": imported - started, "construct_s": built - imported}


def _ours_side(args: argparse.Namespace, cases: list[dict[str, Any]]) -> tuple[_Side, dict[str, Any], dict[str, float]]:
    started = time.perf_counter()
    from pathlib import Path

    from verifier import ClaimEvidence, ClaimRequest, ClaimVerifier, RuntimeOptions

    imported = time.perf_counter()
    entries = json.loads(args.session_config) if args.session_config else None
    runtime = RuntimeOptions(
        variant=args.variant, intra_op_num_threads=args.threads, inter_op_num_threads=1, session_config_entries=entries,
        schedule=args.schedule,
    )
    verifier = ClaimVerifier.from_model_dir(Path(args.model), runtime=runtime)
    evidence = [[ClaimEvidence(**e) for e in case["evidence"]] for case in cases]
    requests = [ClaimRequest(claim=case["claim"], evidence=evidence[i]) for i, case in enumerate(cases)]
    built = time.perf_counter()

    async def verify(i: int) -> Any:
        return await verifier.verify(cases[i]["claim"], evidence[i])

    def verify_sync(i: int) -> Any:
        return verifier.verify_sync(cases[i]["claim"], evidence[i])

    async def many(indices: list[int]) -> list[Any]:
        return await verifier.verify_many([requests[i] for i in indices])

    def engine(pairs: list[tuple[str, str]]) -> Any:
        return verifier.scorer.score(pairs)  # the engine the verifier built, called as the driver calls it

    from importlib import metadata

    versions = {name: metadata.version(name) for name in ("onnxruntime", "tokenizers", "numpy", "pydantic")}
    versions["model"] = verifier.config.model
    versions["revision"] = verifier.config.revision
    return _Side(verify, verify_sync, many, engine), versions, {"import_s": imported - started, "construct_s": built - imported}


async def _ticker(tick_s: float, lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        asked = loop.time()
        await asyncio.sleep(tick_s)
        lags.append(loop.time() - asked - tick_s)


def _lag_summary(lags: list[float]) -> dict[str, float]:
    if not lags:
        return {"ticks": 0, "max_ms": float("nan"), "p99_ms": float("nan"), "p50_ms": float("nan")}
    ordered = sorted(lags)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000.0

    return {"ticks": len(lags), "max_ms": ordered[-1] * 1000.0, "p99_ms": at(0.99), "p50_ms": at(0.5)}


async def _serve(side: _Side, cases: list[dict[str, Any]], out: Any, ready: dict[str, Any]) -> None:
    def reply(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    first_started = time.perf_counter()
    result = await side.verify(0)
    first = time.perf_counter()
    ready.update(
        first_result_s=first - first_started,
        first_result_wall=time.time(),
        start_to_first_in_process_s=first - _STARTED,
        rss_after_first=_rss(),
        peak_rss_after_first=_peak_rss(),
        torch_imported="torch" in sys.modules,
        onnxruntime_imported="onnxruntime" in sys.modules,
        first=_result_fields(result, scores=False),
    )
    reply({"op": "ready", **ready})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        op = request["op"]
        if op == "exit":
            reply({"op": "exit", "rss": _rss(), "peak_rss": _peak_rss()})
            return
        if op == "stats":
            reply({"op": "stats", "rss": _rss(), "peak_rss": _peak_rss()})
            continue
        indices: list[int] = list(request.get("indices", [request.get("i", 0)]))
        load = os.getloadavg()[0]
        if op == "verify":
            i = int(request["i"])
            if request.get("mode", "async") == "sync":
                if side.verify_sync is None:
                    raise SystemExit("this side has no verify_sync")
                started = time.perf_counter()
                result = side.verify_sync(i)  # blocking, in this (the loop's) thread: what a sync caller does
                seconds = time.perf_counter() - started
            else:
                started = time.perf_counter()
                result = await side.verify(i)
                seconds = time.perf_counter() - started
            reply({"op": op, "i": i, "seconds": seconds, "load": load, **_result_fields(result, bool(request.get("scores")))})
        elif op == "many":
            started = time.perf_counter()
            results = await side.many(indices)
            seconds = time.perf_counter() - started
            reply({"op": op, "seconds": seconds, "load": load, "statuses": [r.status.value for r in results]})
        elif op == "engine":
            stages = [[tuple(pair) for pair in stage] for stage in request["stages"]]
            started = time.perf_counter()
            for stage in stages:
                side.engine(stage)
            seconds = time.perf_counter() - started
            reply({"op": op, "seconds": seconds, "load": load, "pairs": sum(len(stage) for stage in stages)})
        elif op == "sync_seq":
            assert side.verify_sync is not None
            started = time.perf_counter()
            results = [side.verify_sync(i) for i in indices]
            seconds = time.perf_counter() - started
            reply({"op": op, "seconds": seconds, "load": load, "statuses": [r.status.value for r in results]})
        elif op == "concurrent":
            started = time.perf_counter()
            results = await asyncio.gather(*(side.verify(i) for i in indices))
            seconds = time.perf_counter() - started
            reply({"op": op, "seconds": seconds, "load": load, "statuses": [r.status.value for r in results]})
        elif op == "lag":
            lags: list[float] = []
            stop = asyncio.Event()
            ticker = asyncio.ensure_future(_ticker(float(request.get("tick_ms", 5.0)) / 1000.0, lags, stop))
            await asyncio.sleep(0)
            started = time.perf_counter()
            if request.get("idle_s"):
                await asyncio.sleep(float(request["idle_s"]))
                results = []
            elif request.get("concurrent"):
                results = await asyncio.gather(*(side.verify(i) for i in indices))
            else:
                results = [await side.verify(i) for i in indices]
            seconds = time.perf_counter() - started
            stop.set()
            await ticker
            reply({"op": op, "seconds": seconds, "load": load, "lag": _lag_summary(lags), "statuses": [r.status.value for r in results]})
        elif op == "profile":
            import cProfile

            profiler = cProfile.Profile()
            mode = request.get("mode", "async")
            started = time.perf_counter()
            profiler.enable()
            if mode == "sync":
                assert side.verify_sync is not None
                for i in indices:
                    side.verify_sync(i)
            elif mode == "many":
                await side.many(indices)
            else:
                for i in indices:
                    await side.verify(i)
            profiler.disable()
            seconds = time.perf_counter() - started
            profiler.dump_stats(request["out"])
            reply({"op": op, "seconds": seconds, "load": load, "out": request["out"]})
        else:
            raise SystemExit(f"unknown op {op!r}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Start the side, answer the first claim, then serve requests until ``exit`` or end of input."""
    args = build_parser().parse_args(argv)
    for name in _THREAD_ENV_VARS:
        os.environ.setdefault(name, str(args.threads))
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # library prints must not reach the protocol pipe
    with open(args.cases, encoding="utf-8") as handle:
        cases = json.load(handle)
    side_of = _prme_side if args.side == "prme" else _ours_side
    side, versions, parts = side_of(args, cases)
    ready: dict[str, Any] = {
        "side": args.side,
        "variant": args.variant,
        "schedule": args.schedule,
        "pid": os.getpid(),
        "process_started_wall": _STARTED_WALL,
        "python": sys.version.split()[0],
        "versions": versions,
        **parts,
    }
    asyncio.run(_serve(side, cases, out, ready))
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

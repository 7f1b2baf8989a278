"""How long ``/health/live`` waits while the server reads the largest bundle request it accepts (issue 49).

    .venv/bin/python -m bench.bundle_liveness --model-dir MODEL_DIR [--repeats 3]

Starts ``python -m verifier serve`` on loopback (bench.serve_load), then for each kind of
``rendered_context`` sends one ``/v1/verify/bundle`` body just under ``max_request_bytes`` (16 MiB)
with 801 candidates (one cited, 800 uncited references such as ``q[17``), while a second client asks
``/health/live`` in a loop. Prints one JSON object: per kind and repeat the body size, the bundle's
status and seconds, and the health latencies (count, p50, max in ms), with the host's facts.

The kinds: ``json`` (a context of JSON-looking memories) and ``quotes`` (a context of ``"a"``, three
million escaped quotes in the body). Measured, never asserted; figures go to bench/RESULTS.md.
Needs the ``server`` and ``test`` extras (uvicorn, starlette, httpx).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional
from uuid import UUID

from .facts import host_facts
from .serve_load import start_server

#: The server's default ``max_request_bytes`` (docs/serving.md); bodies are built just under it.
MAX_REQUEST_BYTES = 16 * 1024 * 1024


def bundle_body(kind: str, limit: int = MAX_REQUEST_BYTES) -> bytes:
    """A bundle request of ``kind`` (``json`` or ``quotes``) whose JSON is at most ``limit`` bytes."""
    candidates = [{"reference": "m1", "memory_id": str(UUID(int=1)), "rendered_text": "The launch is Tuesday."}]
    candidates += [{"reference": f"q[{i}", "memory_id": str(UUID(int=i + 2)), "rendered_text": f"text {i}"}
                   for i in range(800)]
    head = '{"id":"m1","text":"The launch is Tuesday."} ' if kind == "json" else "[m1] The launch is Tuesday. "
    unit = '{"id":"x","text":"some [text] here"} ' if kind == "json" else '"a"'
    unit_bytes = len(json.dumps(unit).encode()) - 2  # as escaped in the body
    frame = {"claim": "The launch is Tuesday.", "bundle": {"rendered_context": head, "candidates": candidates}}
    room = limit - len(json.dumps(frame).encode()) - 64
    frame["bundle"]["rendered_context"] = head + unit * (room // unit_bytes)
    body = json.dumps(frame).encode()
    if len(body) > limit:
        raise AssertionError(f"built {len(body)} bytes, over {limit}")
    return body


def one_run(url: str, body: bytes, *, poll: bool = True) -> dict[str, Any]:
    """Send ``body`` to ``/v1/verify/bundle`` while polling ``/health/live`` (unless ``poll`` is false, to time
    the bundle alone: each poll is served meanwhile and takes CPU from it); the latencies and the outcome."""
    import httpx

    outcome: dict[str, Any] = {}

    def post() -> None:
        with httpx.Client(base_url=url, timeout=600) as client:
            started = time.perf_counter()
            response = client.post("/v1/verify/bundle", content=body, headers={"content-type": "application/json"})
            outcome.update(status=response.status_code, bundle_s=round(time.perf_counter() - started, 3))

    latencies: list[float] = []
    with httpx.Client(base_url=url, timeout=60) as health:
        health.get("/health/live").raise_for_status()
        poster = threading.Thread(target=post)
        poster.start()
        while poll and poster.is_alive():
            started = time.perf_counter()
            health.get("/health/live").raise_for_status()
            latencies.append(time.perf_counter() - started)
        poster.join()
    latencies.sort()
    return {**outcome, "body_bytes": len(body), "health_count": len(latencies),
            "health_p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
            "health_max_ms": round(1000 * latencies[-1], 1) if latencies else None}


def build_parser() -> argparse.ArgumentParser:
    """The command line: a model directory, repeats, and whether to poll ``/health/live``."""
    parser = argparse.ArgumentParser(prog="python -m bench.bundle_liveness", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True, help="an exported model directory (the smoke model will do)")
    parser.add_argument("--repeats", type=int, default=3, help="bundle requests per kind")
    parser.add_argument("--no-health", action="store_true", help="time the bundle alone, without polling /health/live")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    facts = host_facts()
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        process, url = start_server(args.model_dir, coalesce=True, threads=None, max_wait_ms=5.0,
                                    log=Path(scratch) / "serve.log")
        try:
            for kind in ("json", "quotes"):
                body = bundle_body(kind)
                runs[kind] = [one_run(url, body, poll=not args.no_health) for _ in range(args.repeats)]
        finally:
            process.terminate()
            process.wait(timeout=60)
    print(json.dumps({"host": {"cpu": facts["cpu"].get("Model name", "?"), "logical_cpus": facts["logical_cpus"],
                               "load_average_before": facts["load_average"], "date_utc": facts["date_utc"]},
                      "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

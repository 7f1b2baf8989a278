"""What the engine identity costs (issue 47): per result, and at load.

    .venv/bin/python -m bench.engine_identity MODEL_DIR [--results 20000] [--repeats 5]

Per result the identity is one shared object set on the record after the model call and written
with it: the cost is in ``model_dump_json`` (about 700 more bytes a line). At load it is computed
once (:func:`verifier.engine.engine_identity.identity_for_options` opens the manifest; no model
is loaded). Prints one JSON object: median seconds per result with and without the identity, the
ratio, the extra bytes per line, and the load-time cost. Results come from a scripted scorer over
the directory's own identity, so no model time hides the difference.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from uuid import UUID

from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
from verifier.engine.engine_identity import identity_for_options
from verifier.options import RuntimeOptions

from .facts import host_facts


def build_parser() -> argparse.ArgumentParser:
    """The command line: a model directory, how many results, how many repeats."""
    parser = argparse.ArgumentParser(prog="python -m bench.engine_identity", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("model_dir", type=Path, help="an exported model directory (the smoke model will do)")
    parser.add_argument("--results", type=int, default=20_000, help="results dumped per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats (the median is reported)")
    return parser


def main(argv: "list[str] | None" = None) -> int:
    args = build_parser().parse_args(argv)

    loads = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        identity = identity_for_options(args.model_dir, RuntimeOptions())
        loads.append(time.perf_counter() - started)
    evidence = [ClaimEvidence(reference=f"m{k}", memory_id=UUID(int=k + 1), text=f"The launch moved to day {k}.") for k in range(3)]
    verifier = ClaimVerifier(scorer=ScriptedScorer({}, default=(0.7, 0.1)))
    bare = verifier.verify_many_sync([{"claim": f"The launch is on day {n % 7}.", "evidence": evidence} for n in range(args.results)])
    named = [result.model_copy(update={"engine": identity}) for result in bare]

    def per_result(results: list) -> float:
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            for result in results:
                result.model_dump_json()
            times.append((time.perf_counter() - started) / len(results))
        return statistics.median(times)

    without, with_identity = per_result(bare), per_result(named)
    extra = statistics.mean(len(a.model_dump_json()) - len(b.model_dump_json()) for a, b in zip(named[:100], bare[:100]))
    print(json.dumps({
        "cpu": host_facts()["cpu"].get("Model name", "?"),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "results": args.results,
        "dump_us_per_result_without": round(without * 1e6, 2),
        "dump_us_per_result_with": round(with_identity * 1e6, 2),
        "ratio": round(with_identity / without, 3),
        "extra_bytes_per_line": round(extra, 1),
        "identity_at_load_ms_median": round(statistics.median(loads) * 1e3, 2),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run this project's ClaimVerifier over differential cases (in-process, from tests/test_prme_differential.py).

Scores come from the same scripted function as oracle.py, through ``scorer=``.
``run_case(case, loop, schedule, bundle_dump=None)``: with ``bundle_dump`` (a PRME
``MemoryBundle.model_dump(mode="json")`` written by the oracle) the project verifies that
dump instead of the equivalent ``ContextBundle``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import traceback
from uuid import UUID

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prme_cases as C  # noqa: E402

import numpy as np  # noqa: E402
from verifier import (  # noqa: E402
    BundleCandidate,
    ClaimEvidence,
    ClaimRequest,
    ClaimVerificationConfig,
    ClaimVerifier,
    ContextBundle,
    RuntimeOptions,
)

# PRME's MemoryNode defaults: a bundle candidate there always carries these.
NODE_DEFAULTS = {"source_type": "user_stated", "epistemic_type": "asserted", "lifecycle_state": "tentative"}


class Scorer:
    def __init__(self, case: dict, record: list) -> None:
        self.case = case
        self.record = record

    def score(self, pairs):
        pairs = [tuple(p) for p in pairs]
        self.record.append(pairs)
        return C.build_output(self.case, pairs, np, order="ecn")


def error_of(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "mro": [k.__name__ for k in type(exc).__mro__],
            "message": str(exc)}


def evidence_of(items, mode: str):
    """ClaimEvidence objects ("model"), mappings ("dict"), a generator of mappings
    ("generator"), or the raw JSON value unchanged ("raw")."""
    if mode == "raw":
        return items
    if mode == "model":
        return [ClaimEvidence.model_validate(item) for item in items]
    if mode == "generator":
        return (dict(i) for i in items)
    return [dict(i) for i in items]


def bundle_of(spec: dict) -> ContextBundle:
    """The ContextBundle equivalent to oracle.bundle_of's MemoryBundle."""
    references = C.derive_references(spec["candidates"], spec.get("aliases", {}))
    candidates = []
    for cand, reference in zip(spec["candidates"], references):
        fields = {"reference": reference, "memory_id": cand["memory_id"], "rendered_text": cand["rendered_text"],
                  "valid_from": cand["valid_from"]}
        for field in ("source_type", "epistemic_type", "lifecycle_state"):
            fields[field] = cand.get(field) or NODE_DEFAULTS[field]
        for field in ("event_time", "valid_to"):
            if cand.get(field) is not None:
                fields[field] = cand[field]
        candidates.append(BundleCandidate(**fields))
    return ContextBundle(rendered_context=spec["rendered_context"], candidates=tuple(candidates))


def run_case(case: dict, loop: asyncio.AbstractEventLoop, schedule: str | None, bundle_dump: dict | None = None) -> dict:
    record: list = []
    out: dict = {"id": case["id"]}
    try:
        config = ClaimVerificationConfig(**case["config"])
        verifier = ClaimVerifier(config, scorer=Scorer(case, record),
                                 runtime=RuntimeOptions(schedule=schedule or case["schedule"]))
        kind = case["kind"]
        mode = case.get("evidence_as", "dict")
        as_model = mode == "model"
        if kind in ("verify", "verify_sync"):
            req = case["requests"][0]
            args = (req["claim"], evidence_of(req["evidence"], mode))
            if kind == "verify":
                result = loop.run_until_complete(verifier.verify(*args, requires_complete_set=req["requires_complete_set"]))
            else:
                result = verifier.verify_sync(*args, requires_complete_set=req["requires_complete_set"])
            out["outcome"] = {"result": result.model_dump(mode="json")}
        elif kind == "verify_many":
            requests = []
            for req in case["requests"]:
                item = {"claim": req["claim"], "evidence": evidence_of(req["evidence"], mode),
                        "requires_complete_set": req["requires_complete_set"]}
                requests.append(ClaimRequest(**item) if as_model else item)
            if case["seed"] % 2:
                results = loop.run_until_complete(verifier.verify_many(requests))
            else:
                results = verifier.verify_many_sync(requests)
            out["outcome"] = {"many": [{"result": r.model_dump(mode="json")} for r in results]}
        else:
            spec = case["bundle"]
            bundle = bundle_dump if bundle_dump is not None else bundle_of(spec)
            kwargs = dict(evidence_refs=spec["evidence_refs"], requires_complete_set=spec["requires_complete_set"])
            if kind == "bundle":
                result = loop.run_until_complete(verifier.verify_bundle(spec["claim"], bundle, **kwargs))
            else:
                result = verifier.verify_bundle_sync(spec["claim"], bundle, **kwargs)
            out["outcome"] = {"result": result.model_dump(mode="json")}
    except Exception as exc:  # noqa: BLE001
        out["outcome"] = {"error": error_of(exc)}
        if os.environ.get("DIFF_TRACE"):
            out["outcome"]["error"]["trace"] = traceback.format_exc()
    out["calls"] = [[list(p) for p in call] for call in record]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("input", nargs="?")
    parser.add_argument("--schedule", choices=["staged", "eager"])
    args = parser.parse_args()
    handle = open(args.input, encoding="utf-8") if args.input else sys.stdin
    loop = asyncio.new_event_loop()
    write = sys.stdout.write
    for line in handle:
        if line.strip():
            write(json.dumps(run_case(json.loads(line), loop, args.schedule), ensure_ascii=True) + "\n")
    loop.close()


if __name__ == "__main__":
    main()

"""Run PRME's ClaimVerifier (prme==0.15.0) over differential cases; one JSON line per case.

    .venv-prme/bin/python tests/prme_oracle/oracle.py [cases.jsonl]   (default: stdin)

Run by tests/test_prme_differential.py in the oracle virtualenv (scripts/setup_oracle.sh).

No model is loaded. The verifier's ``_model`` is set to a fake cross-encoder whose
``predict`` returns the case's scripted scores (columns in the real model's
contradiction/entailment/neutral order), so PRME's own ``_predict_sync`` — lock,
shape/finite/range/sum checks and label mapping — runs unchanged.  With
``--replace-predict`` the instance's ``_predict_sync`` is replaced instead (PRME's tests'
style): then only the pydantic checks of EvidenceGroupScore/LocalizedEvidenceAssessment
see the scores.
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
from prme.models.nodes import MemoryNode  # noqa: E402
from prme.retrieval.claim_verification import (  # noqa: E402
    ClaimEvidence,
    ClaimVerificationConfig,
    ClaimVerifier,
)
from prme.retrieval.models import MemoryBundle, RetrievalCandidate  # noqa: E402

LABELS = {"contradiction": 0, "entailment": 1, "neutral": 2}


class FakeCrossEncoder:
    def __init__(self, case: dict, record: list) -> None:
        self.case = case
        self.record = record

    def predict(self, pairs, batch_size=None, apply_softmax=None, show_progress_bar=None):
        pairs = [tuple(p) for p in pairs]
        self.record.append(pairs)
        return C.build_output(self.case, pairs, np, order="cen")


def error_of(exc: BaseException) -> dict:
    return {"type": type(exc).__name__, "mro": [k.__name__ for k in type(exc).__mro__],
            "message": str(exc)}


def make_verifier(case: dict, record: list, replace_predict: bool) -> ClaimVerifier:
    verifier = ClaimVerifier(ClaimVerificationConfig(**case["config"]))
    model = FakeCrossEncoder(case, record)
    if replace_predict:
        def predict(pairs):
            if not pairs:
                return []
            out = model.predict(list(pairs))
            values = np.asarray(out, dtype=float)
            return [(float(r[1]), float(r[0]), float(r[2])) for r in values]
        verifier._predict_sync = predict  # type: ignore[method-assign]
    else:
        verifier._model = model
        verifier._label_indexes = dict(LABELS)
    return verifier


def evidence_of(items, mode: str = "dict"):
    """PRME's verify takes ClaimEvidence objects: built here ("dict", "model"), handed over as
    a generator ("generator"), or the raw JSON value passed unchanged ("raw")."""
    if mode == "raw":
        return items
    built = [ClaimEvidence.model_validate(item) for item in items]
    return (e for e in built) if mode == "generator" else built


def bundle_of(spec: dict) -> MemoryBundle:
    sections: dict[str, list] = {}
    for cand in spec["candidates"]:
        node_fields = {"id": UUID(cand["memory_id"]), "user_id": "u", "node_type": "fact",
                       "content": cand.get("content") or "x", "valid_from": cand["valid_from"]}
        for field in ("source_type", "epistemic_type", "lifecycle_state", "event_time", "valid_to"):
            if cand.get(field) is not None:
                node_fields[field] = cand[field]
        node = MemoryNode(**node_fields)
        sections.setdefault(cand["section"], []).append(
            RetrievalCandidate(node=node, rendered_text=cand["rendered_text"]))
    refs = {k: UUID(v) for k, v in C.context_reference_map(spec["candidates"], spec.get("aliases", {})).items()}
    return MemoryBundle(sections=sections, rendered_context=spec["rendered_context"],
                        context_format=spec["context_format"], context_references=refs)


def run_case(case: dict, loop: asyncio.AbstractEventLoop, replace_predict: bool) -> dict:
    record: list = []
    out: dict = {"id": case["id"]}
    try:
        verifier = make_verifier(case, record, replace_predict)
        kind = case["kind"]
        if kind in ("verify", "verify_sync"):
            req = case["requests"][0]
            result = loop.run_until_complete(verifier.verify(
                req["claim"], evidence_of(req["evidence"], case.get("evidence_as", "dict")), requires_complete_set=req["requires_complete_set"]))
            out["outcome"] = {"result": result.model_dump(mode="json")}
        elif kind == "verify_many":
            outcomes = []
            for req in case["requests"]:
                try:
                    result = loop.run_until_complete(verifier.verify(
                        req["claim"], evidence_of(req["evidence"], case.get("evidence_as", "dict")),
                        requires_complete_set=req["requires_complete_set"]))
                    outcomes.append({"result": result.model_dump(mode="json")})
                except Exception as exc:  # noqa: BLE001
                    outcomes.append({"error": error_of(exc)})
            out["outcome"] = {"many": outcomes}
        else:
            spec = case["bundle"]
            bundle = bundle_of(spec)
            # the very bundle PRME verified, as JSON: the project is also given this dump
            out["bundle_dump"] = bundle.model_dump(mode="json")
            result = loop.run_until_complete(verifier.verify_bundle(
                spec["claim"], bundle, evidence_refs=spec["evidence_refs"],
                requires_complete_set=spec["requires_complete_set"]))
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
    parser.add_argument("--replace-predict", action="store_true")
    args = parser.parse_args()
    handle = open(args.input, encoding="utf-8") if args.input else sys.stdin
    loop = asyncio.new_event_loop()
    write = sys.stdout.write
    for line in handle:
        if line.strip():
            write(json.dumps(run_case(json.loads(line), loop, args.replace_predict), ensure_ascii=True) + "\n")
    loop.close()


if __name__ == "__main__":
    main()

"""A real PRME 0.15.0 retrieval bundle handed, unchanged, to PRME's verifier and to this project's.

Run by tests/test_prme_real_engine.py with ``.venv-prme/bin/python`` (scripts/setup_oracle.sh),
never by pytest directly. Offline: a deterministic embedding provider of our own, tiktoken's
``cl100k_base`` taken from the ``bpe-openai`` wheel, no model download (PRME's model call is
replaced by this project's own ONNX engine on a tiny exported test model, so both verifiers see
the same probabilities).

Usage::

    .venv-prme/bin/python tests/prme_oracle/real_engine.py MODEL_DIR WORK_DIR

Prints one JSON object: for each check, both results as JSON (``resolved_revision`` aside) or
both errors, plus what the product description's example printed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import bpe_openai
import tiktoken

# PRME's packer counts tokens with tiktoken's cl100k_base, which tiktoken would download.
tiktoken.get_encoding = lambda name: bpe_openai.get_encoding(name)  # type: ignore[assignment]
os.environ["PRME_PACKING__CONTEXT_CITATIONS"] = "true"

from prme import MemoryEngine, PRMEConfig  # noqa: E402
from prme.retrieval.claim_verification import ClaimVerificationConfig as PrmeConfig  # noqa: E402
from prme.retrieval.claim_verification import ClaimVerifier as PrmeVerifier  # noqa: E402

MEMORIES = (
    "The launch is Tuesday.",
    "The launch is not Tuesday; it is Wednesday.",
    "I want to deploy after the tests pass.",
    "The launch checklist lives in the ops wiki. Should we delay the launch?",
    "Bob owns the release notes for the launch.",
    "The launch moved to Wednesday rather than Tuesday.",
)
QUERY = "When is the launch?"
CLAIMS = (
    "The launch is Tuesday.",
    "The launch is Wednesday.",
    "Bob owns the release notes.",
    "The user deployed after the tests passed.",
)
REFERENCE_TIME = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
_TOKEN = re.compile(r"[a-z0-9]+")


class HashedEmbedding:
    """A deterministic hashed bag-of-words embedding (PRME's EmbeddingProvider protocol); no I/O."""

    model_name = "claim-verifier-tests/hashed-bow"
    model_version = "1"
    dimension = 64

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        vector[0] = 1e-3
        for token in _TOKEN.findall(text.lower()):
            digest = hashlib.sha256(token.encode()).digest()
            vector[int.from_bytes(digest[:4], "big") % self.dimension] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]


def _outcome(result: Any) -> dict[str, Any]:
    data = result.model_dump(mode="json")
    data.pop("resolved_revision", None)
    # this project's own addition beside PRME's fields (docs/audit.md, "Engine identity"): every PRME field is compared
    data.pop("engine", None)
    return {"result": data}


async def _run(call: Any) -> dict[str, Any]:
    try:
        return _outcome(await call)
    except Exception as exc:  # compared by family: both sides must refuse alike
        return {"error": {"family": "ValueError" if isinstance(exc, ValueError) else type(exc).__name__, "message": str(exc)}}


async def main(model_dir: Path, work: Path) -> dict[str, Any]:
    os.environ["CLAIM_VERIFIER_MODEL_DIR"] = str(model_dir)
    config = PRMEConfig(
        db_path=str(work / "memory.duckdb"), vector_path=str(work / "vectors.usearch"), lexical_path=str(work / "lexical")
    )
    engine = await MemoryEngine.create(config, embedding_provider=HashedEmbedding())
    try:
        for text in MEMORIES:
            await engine.store(text, user_id="alice")
        response = await engine.retrieve(QUERY, user_id="alice", reference_time=REFERENCE_TIME)
    finally:
        await engine.close()

    # ---- the product description's example, verbatim but for the import line ----
    from verifier import ClaimVerificationStatus, ClaimVerifier

    printed: list[str] = []
    verifier = ClaimVerifier()
    result = await verifier.verify_bundle(
        "The launch is Tuesday.",
        response.bundle,
    )
    if result.status == ClaimVerificationStatus.SUPPORTED:
        printed.append(str(result.supporting_group))
    elif result.status == ClaimVerificationStatus.CONTESTED:
        printed.append(f"{result.supporting_group} {result.refuting_group}")

    # ---- PRME's verifier on the same probabilities (this project's engine behind its model seam) ----
    engine_scorer = verifier.scorer
    prme = PrmeVerifier(PrmeConfig(model=verifier.config.model, revision=verifier.config.revision))
    prme._predict_sync = lambda pairs: [tuple(row) for row in engine_scorer.score(list(pairs)).tolist()]  # type: ignore[method-assign]

    bundle = response.bundle
    references = list(bundle.context_references)
    checks: dict[str, Any] = {}
    for claim in CLAIMS:
        checks[f"verify_bundle {claim}"] = (
            await _run(prme.verify_bundle(claim, bundle)),
            await _run(verifier.verify_bundle(claim, bundle)),
        )
    reversed_refs = list(reversed(references))[:3]
    checks["evidence_refs reversed"] = (
        await _run(prme.verify_bundle(CLAIMS[0], bundle, evidence_refs=reversed_refs)),
        await _run(verifier.verify_bundle(CLAIMS[0], bundle, evidence_refs=reversed_refs)),
    )
    checks["evidence_refs unknown"] = (
        await _run(prme.verify_bundle(CLAIMS[0], bundle, evidence_refs=["m999"])),
        await _run(verifier.verify_bundle(CLAIMS[0], bundle, evidence_refs=["m999"])),
    )
    checks["evidence_refs repeated"] = (
        await _run(prme.verify_bundle(CLAIMS[0], bundle, evidence_refs=references[:1] * 2)),
        await _run(verifier.verify_bundle(CLAIMS[0], bundle, evidence_refs=references[:1] * 2)),
    )
    checks["requires_complete_set"] = (
        await _run(prme.verify_bundle("There are exactly four launch concerns.", bundle, requires_complete_set=True)),
        await _run(verifier.verify_bundle("There are exactly four launch concerns.", bundle, requires_complete_set=True)),
    )
    sync = verifier.verify_bundle_sync(CLAIMS[1], bundle)
    checks["verify_bundle_sync"] = (await _run(prme.verify_bundle(CLAIMS[1], bundle)), _outcome(sync))
    checks["bundle dump as a dict"] = (
        await _run(prme.verify_bundle(CLAIMS[1], bundle)),
        await _run(verifier.verify_bundle(CLAIMS[1], bundle.model_dump(mode="json"))),
    )
    checks["bundle dump as JSON text"] = (
        await _run(prme.verify_bundle(CLAIMS[1], bundle)),
        await _run(verifier.verify_bundle(CLAIMS[1], bundle.model_dump_json())),
    )
    checks["bundle_evidence"] = (
        [item.model_dump(mode="json") for item in PrmeVerifier.bundle_evidence(bundle)],
        [item.model_dump(mode="json") for item in ClaimVerifier.bundle_evidence(bundle)],
    )

    # ---- a reader bundle without citations: both refuse ----
    os.environ.pop("PRME_PACKING__CONTEXT_CITATIONS")
    plain_dir = work / "uncited"
    plain = PRMEConfig(
        db_path=str(plain_dir / "memory.duckdb"),
        vector_path=str(plain_dir / "vectors.usearch"),
        lexical_path=str(plain_dir / "lexical"),
    )
    engine = await MemoryEngine.create(plain, embedding_provider=HashedEmbedding())
    try:
        for text in MEMORIES[:2]:
            await engine.store(text, user_id="alice")
        uncited = (await engine.retrieve(QUERY, user_id="alice", reference_time=REFERENCE_TIME)).bundle
    finally:
        await engine.close()
    checks["reader bundle without citations"] = (
        await _run(prme.verify_bundle(CLAIMS[0], uncited)),
        await _run(verifier.verify_bundle(CLAIMS[0], uncited)),
    )
    return {
        "bundle_type": f"{type(bundle).__module__}.{type(bundle).__qualname__}",
        "references": references,
        "example_status": result.status.value,
        "example_printed": printed,
        "example_model_called": result.model_called,
        "checks": {name: {"prme": pair[0], "project": pair[1]} for name, pair in checks.items()},
    }


if __name__ == "__main__":
    model_dir, work = Path(sys.argv[1]), Path(sys.argv[2])
    print(json.dumps(asyncio.run(main(model_dir, work))))

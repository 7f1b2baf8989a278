"""PRME's ClaimVerifier and this project's, given the same fake cross-encoder in another label order.

    .venv-prme/bin/python tests/prme_oracle/label_order.py SEED COUNT

Run by tests/test_prme_label_order.py in the oracle virtualenv, which holds both packages. For each
of the six label orders (PRME's ``_label_indexes``), COUNT seeded rows whose sum lies within a few
ulps of the 1e-5 tolerance are returned by a fake ``predict`` in that order, and both verifiers
verify one claim against one passage. Prints one JSON line per case: the label order, the raw row,
and each side's outcome (status and result digest, or the error's class and message).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import sys
from uuid import UUID

import numpy as np
import prme.retrieval.claim_verification as reference
import verifier

LABELS = ("contradiction", "entailment", "neutral")


class FakeCrossEncoder:
    def __init__(self, row: list[float]) -> None:
        self.row = row

    def predict(self, pairs, batch_size=None, apply_softmax=None, show_progress_bar=None):
        return np.asarray([self.row for _ in pairs], dtype=np.float64)


def edge_row(rng: np.random.Generator) -> list[float]:
    """Three probabilities in [0, 1] whose sum is 1 ± ~1e-5 (PRME's tolerance), a few ulps either side."""
    target = 1.0 + float(rng.choice([-1.0, 1.0])) * 1e-5 * (1.0 + float(rng.uniform(-3e-11, 3e-11)))
    cuts = sorted(rng.uniform(0.0, 1.0, size=2))
    parts = [cuts[0], cuts[1] - cuts[0], 1.0 - cuts[1]]
    return [min(1.0, part * target) for part in parts]


def outcome(module, indexes: dict[str, int], row: list[float]) -> dict:
    claim_verifier = module.ClaimVerifier()
    claim_verifier._model = FakeCrossEncoder(row)
    claim_verifier._label_indexes = dict(indexes)
    evidence = [module.ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="Ravi owns ingestion.")]
    try:
        result = asyncio.run(claim_verifier.verify("Ravi owns ingestion.", evidence))
    except Exception as exc:  # noqa: BLE001 - the outcome is the exception
        return {"error": type(exc).__name__, "message": str(exc)[:200]}
    return {"status": result.status.value, "result_sha256": result.result_sha256}


def main() -> None:
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(seed)
    for order in itertools.permutations(LABELS):
        indexes = {name: order.index(name) for name in LABELS}
        for _ in range(count):
            row = edge_row(rng)
            e, c, n = (row[indexes[name]] for name in ("entailment", "contradiction", "neutral"))
            print(json.dumps({
                "order": list(order), "row": row,
                "raw_sum_close": math.isclose(row[0] + row[1] + row[2], 1.0, rel_tol=1e-5, abs_tol=1e-5),
                "ecn_sum_close": math.isclose(e + c + n, 1.0, rel_tol=1e-5, abs_tol=1e-5),
                "prme": outcome(reference, indexes, row), "project": outcome(verifier, indexes, row),
            }))


if __name__ == "__main__":
    main()

"""A model in another label order: the project accepts exactly the score rows PRME 0.15.0 accepts.

Regression (a differential hunt): PRME checks a raw row's sum with ``np.allclose`` as the model
returns it, and ``math.isclose(e + c + n)`` only after picking the columns (its
``EvidenceGroupScore``). The project summed the raw row for both, so with a label order other
than the pinned model's (contradiction, entailment, neutral), a row within an ulp of the 1e-5
tolerance that PRME verified was refused as "not summing to 1". Both verifiers run in the oracle's
virtualenv (``tests/prme_oracle/label_order.py``) on the same fake cross-encoder rows, in all six
label orders.
"""

from __future__ import annotations

import json
import subprocess

from oracle_env import ROOT, oracle_python


def test_every_label_order_accepts_and_decides_what_prme_does() -> None:
    python = oracle_python()
    done = subprocess.run(
        [str(python), str(ROOT / "tests" / "prme_oracle" / "label_order.py"), "7", "150"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cases = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(cases) == 6 * 150
    for case in cases:
        prme, project = case["prme"], case["project"]
        if "status" in prme:
            assert project == prme, case
        else:  # PRME's own words for a sum its EvidenceGroupScore refuses are a ValidationError (documented)
            assert prme["error"] in ("ClaimVerificationError", "ValidationError"), case
            assert project["error"] == "ClaimVerificationError" and "not summing to 1" in project["message"], case
    # Not vacuous: rows whose raw-order and (entailment, contradiction, neutral)-order sums are judged
    # differently, some of which PRME verified, and rows both refuse.
    split = [case for case in cases if case["raw_sum_close"] != case["ecn_sum_close"]]
    assert sum("status" in case["prme"] for case in split) >= 3
    assert sum("error" in case["prme"] for case in cases) >= 50
    assert sum("status" in case["prme"] for case in cases) >= 300

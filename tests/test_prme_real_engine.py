"""A real PRME 0.15.0 engine's retrieval bundle, handed unchanged to this project (issue 22, drop-in).

``tests/prme_oracle/real_engine.py`` runs in the oracle virtualenv (PRME and this project side by
side): a ``MemoryEngine`` created offline over its embedded DuckDB, USearch and tantivy stores with
a deterministic embedder of our own, memories stored for a user, ``retrieve`` with context
citations on; then PRME's ``ClaimVerifier`` and ours verify ``response.bundle`` on the same
probabilities (our ONNX engine on the tiny exported test model behind PRME's model seam). Every
result field and digest must be equal (``resolved_revision`` aside), and both must refuse alike.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from oracle_env import ROOT, oracle_python

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python = oracle_python()
    work = tmp_path_factory.mktemp("prme-engine")
    env = {key: value for key, value in os.environ.items() if not key.startswith("PRME_")}
    completed = subprocess.run(
        [str(python), str(ROOT / "tests" / "prme_oracle" / "real_engine.py"), str(tiny_model_dir), str(work)],
        cwd=work,  # PRMEConfig reads a .env in the working directory: use an empty one
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_bundle_is_prmes_own_memory_bundle(report: dict[str, Any]) -> None:
    assert report["bundle_type"] == "prme.retrieval.models.MemoryBundle"
    assert report["references"], "retrieval packed no cited memory"


def test_the_product_descriptions_example_runs_verbatim(report: dict[str, Any]) -> None:
    """``from verifier import ClaimVerificationStatus, ClaimVerifier``; ``ClaimVerifier()``; ``await
    verifier.verify_bundle("The launch is Tuesday.", response.bundle)`` -> a status from the model."""
    assert report["example_model_called"] is True
    assert report["example_status"] in {"supported", "refuted", "contested", "insufficient"}


CHECKS = (
    "verify_bundle The launch is Tuesday.",
    "verify_bundle The launch is Wednesday.",
    "verify_bundle Bob owns the release notes.",
    "verify_bundle The user deployed after the tests passed.",
    "evidence_refs reversed",
    "evidence_refs unknown",
    "evidence_refs repeated",
    "requires_complete_set",
    "verify_bundle_sync",
    "bundle dump as a dict",
    "bundle dump as JSON text",
    "bundle_evidence",
    "reader bundle without citations",
)


@pytest.mark.parametrize("name", CHECKS)
def test_both_verifiers_agree_on_the_real_bundle(report: dict[str, Any], name: str) -> None:
    check = report["checks"][name]
    prme, project = check["prme"], check["project"]
    if isinstance(prme, dict) and "error" in prme:
        assert isinstance(project, dict) and "error" in project, f"PRME refused ({prme['error']}), the project did not"
        assert project["error"]["family"] == prme["error"]["family"]
        return
    assert project == prme


def test_refusals_carry_prmes_words(report: dict[str, Any]) -> None:
    unknown = report["checks"]["evidence_refs unknown"]["project"]["error"]["message"]
    assert "Unknown context reference: m999" in unknown
    repeated = report["checks"]["evidence_refs repeated"]["project"]["error"]["message"]
    assert "duplicate evidence reference" in repeated
    uncited = report["checks"]["reader bundle without citations"]["project"]["error"]["message"]
    assert "has no citation references" in uncited


def test_a_supported_or_contested_claim_was_among_the_checks(report: dict[str, Any]) -> None:
    """The comparison is not vacuous: the engine scored pairs and at least one check used evidence."""
    statuses = {
        report["checks"][name]["prme"]["result"]["status"]
        for name in CHECKS
        if isinstance(report["checks"][name]["prme"], dict) and "result" in report["checks"][name]["prme"]
    }
    assert "incomplete" in statuses and statuses - {"incomplete"}
    evidence = report["checks"]["bundle_evidence"]["prme"]
    assert len(evidence) >= 2 and {item["text"] for item in evidence} <= {
        "The launch is Tuesday.",
        "The launch is not Tuesday; it is Wednesday.",
        "I want to deploy after the tests pass.",
        "The launch checklist lives in the ops wiki. Should we delay the launch?",
        "Bob owns the release notes for the launch.",
        "The launch moved to Wednesday rather than Tuesday.",
    }

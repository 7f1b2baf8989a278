"""Shared by the JSON Lines CLI tests (test_bulk, test_cli_output): input rows, the input file, a scripted verifier."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from verifier import ClaimVerificationConfig, ClaimVerifier, RuntimeOptions, ScriptedScorer


def scripted_verifier(config: ClaimVerificationConfig, runtime: RuntimeOptions) -> ClaimVerifier:
    """``cli.main``'s ``make_verifier``: every pair scored (0.9, 0.05, 0.05), no model."""
    return ClaimVerifier(config, scorer=ScriptedScorer(default=(0.9, 0.05)), runtime=runtime)


def evidence_row(n: int, claim: str = "The deployment date is May 4.", **extra: Any) -> dict[str, Any]:
    """Input row ``r<n>``: ``claim`` with one passage that supports the default claim (memory id from ``n``)."""
    return {
        "id": f"r{n}",
        "claim": claim,
        "evidence": [{"reference": "M1", "memory_id": str(uuid.UUID(int=n + 1)), "text": "The deployment date is May 4."}],
        **extra,
    }


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Write ``rows`` as JSON Lines (strings as they are, for malformed lines) and return ``path``."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path

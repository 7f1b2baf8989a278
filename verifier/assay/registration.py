"""Registrations: an assay's input, configuration, policies, grid, gates and seed frozen before it runs.

A registration is a JSON object::

    {"format": "claim-verifier-assay-registration/1",
     "input": {"name": "cohort.jsonl", "sha256": "<sha256 of the input file's bytes>"},
     "plan": {<AssayPlan.describe()>},
     "registered_at": "2026-12-01T10:00:00Z",
     "registration_sha256": "<sha256 of the canonical JSON of the other keys>"}

:func:`check_registration` refuses an edited registration (its own digest),
a changed input (sha256) and a changed plan (any key of the plan); the
report of a registered run binds ``registration_sha256``. A key repeated in
the file is refused (:mod:`verifier.strictjson`: a second ``"gates"`` would
otherwise replace the first).

A registration is **not signed**: its digest catches accidental edits, but
whoever can edit the file can recompute it. To make a weakened gate fail,
keep the ``registration_sha256`` that ``--register`` printed somewhere the
editor cannot change, and run with ``--expect-registration-sha256``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from .. import strictjson
from ..decision import audit
from ..types import ClaimVerificationConfig
from .constraints import parse_constraint
from .runner import AssayPlan

__all__ = ["FORMAT", "file_sha256", "create_registration", "read_registration", "check_registration", "plan_from"]

FORMAT = "claim-verifier-assay-registration/1"


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _digest(document: dict[str, Any]) -> str:
    return audit.sha256_hex(audit.canonical({k: v for k, v in document.items() if k != "registration_sha256"}))


def create_registration(input_name: str, input_sha256: str, plan: AssayPlan, *, now: Optional[datetime] = None) -> dict[str, Any]:
    """A registration of ``plan`` on the input with this sha256, with its own digest."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    document: dict[str, Any] = {
        "format": FORMAT,
        "input": {"name": input_name, "sha256": input_sha256},
        "plan": plan.describe(),
        "registered_at": moment.isoformat().replace("+00:00", "Z"),
    }
    document["registration_sha256"] = _digest(document)
    return document


def read_registration(path: Path) -> dict[str, Any]:
    """Read a registration and check its own digest.

    Raises:
        ValueError: unreadable, not a registration, or edited (digest mismatch).
    """
    try:
        document = strictjson.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"registration {path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"unreadable registration {path}: {exc}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} registration")
    if document.get("registration_sha256") != _digest(document):
        raise ValueError(f"{path} was edited after registration (registration_sha256 does not match its content)")
    return document


def plan_from(document: dict[str, Any]) -> AssayPlan:
    """The :class:`AssayPlan` a registration froze.

    Raises:
        ValueError: the plan is malformed (e.g. a gate that no longer parses).
    """
    plan = document["plan"]
    try:
        return AssayPlan(
            config=ClaimVerificationConfig.model_validate(plan["configuration"]),
            entailment_thresholds=tuple(float(x) for x in plan["entailment_thresholds"]),
            contradiction_thresholds=tuple(float(x) for x in plan["contradiction_thresholds"]),
            entailment_policies=tuple(plan["entailment_policies"]),
            refutation_policies=tuple(plan["refutation_policies"]),
            seed=int(plan["seed"]),
            resamples=int(plan["resamples"]),
            targets=tuple(parse_constraint(text) for text in plan["targets"]),
            optimize=str(plan["optimize"]),
            gates=tuple(parse_constraint(text) for text in plan["gates"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"the registration's plan is malformed: {exc}") from None


def check_registration(document: dict[str, Any], input_sha256: str, plan: AssayPlan) -> list[str]:
    """Why this input and plan are not the registered ones (empty: they are)."""
    problems = []
    registered = document.get("input", {}).get("sha256")
    if registered != input_sha256:
        problems.append(f"the input changed: sha256 {input_sha256} != registered {registered}")
    frozen = document.get("plan", {})
    current = plan.describe()
    for key in sorted(set(frozen) | set(current)):
        if frozen.get(key) != current.get(key):
            if key == "configuration":
                fields = sorted(
                    name for name in set(frozen.get(key, {})) | set(current[key])
                    if frozen.get(key, {}).get(name) != current[key].get(name)
                )
                detail = ", ".join(f"{name} {current[key].get(name)!r} != registered {frozen.get(key, {}).get(name)!r}" for name in fields)
                problems.append(f"the configuration changed: {detail}")
            else:
                problems.append(f"{key} changed: {current.get(key)!r} != registered {frozen.get(key)!r}")
    return problems

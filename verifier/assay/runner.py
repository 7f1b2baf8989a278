"""One assay: the main evaluation, per-category metrics, bootstrap intervals, the sweep and the gates.

:func:`run_assay` drives :class:`~verifier.claim_verifier.ClaimVerifier` over the
cohort for the plan's configuration and for every sweep configuration, all
through one :class:`~verifier.assay.recording.RecordingScorer`, so every
(premise, hypothesis) pair is scored at most once and the record holds every
pair any of them needed. Given the same recorded scores, the report's
deterministic part (everything but ``run``) is identical whether the scores
came live or from the record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from ..decision import audit
from ..options import RuntimeOptions
from ..types import ClaimVerification, ClaimVerificationConfig
from .bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, intervals
from .constraints import Constraint, flat_metrics
from .labels import LabelledClaim
from .metrics import cohort_metrics, outcomes
from .recording import MissingScores, RecordingScorer
from .sweep import DEFAULT_GRID, WARNING, best_row, entailment_policies, refutation_policies, sweep_configs, sweep_row

__all__ = ["AssayPlan", "AssayOutcome", "run_assay", "count_missing"]


@dataclass(frozen=True)
class AssayPlan:
    """What an assay measures; :meth:`describe` is what a registration freezes."""

    config: ClaimVerificationConfig = field(default_factory=ClaimVerificationConfig)
    entailment_thresholds: tuple[float, ...] = DEFAULT_GRID
    contradiction_thresholds: tuple[float, ...] = DEFAULT_GRID
    entailment_policies: tuple[str, ...] = field(default_factory=entailment_policies)
    refutation_policies: tuple[str, ...] = field(default_factory=refutation_policies)
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    targets: tuple[Constraint, ...] = ()
    optimize: str = "recall"
    gates: tuple[Constraint, ...] = ()

    def describe(self) -> dict[str, Any]:
        """The plan as JSON-ready data (configuration dumped, constraints as text)."""
        return {
            "configuration": self.config.model_dump(mode="json"),
            "entailment_thresholds": list(self.entailment_thresholds),
            "contradiction_thresholds": list(self.contradiction_thresholds),
            "entailment_policies": list(self.entailment_policies),
            "refutation_policies": list(self.refutation_policies),
            "seed": self.seed,
            "resamples": self.resamples,
            "targets": [target.text for target in self.targets],
            "optimize": self.optimize,
            "gates": [gate.text for gate in self.gates],
        }


@dataclass
class AssayOutcome:
    """What :func:`run_assay` measured: the report body (deterministic), the main results and run counters."""

    body: dict[str, Any]
    results: list[ClaimVerification]
    run: dict[str, Any]


def _statuses(results: Sequence[ClaimVerification]) -> list[str]:
    return [result.status.value for result in results]


def _cohort(claims: Sequence[LabelledClaim], statuses: Sequence[str], plan: AssayPlan) -> dict[str, Any]:
    labels = [claim.label for claim in claims]
    metrics = cohort_metrics(labels, statuses, [claim.name for claim in claims])
    metrics["intervals"] = intervals(outcomes(labels, statuses), seed=plan.seed, resamples=plan.resamples)
    return metrics


def _verify(config: ClaimVerificationConfig, claims: Sequence[LabelledClaim], scorer: RecordingScorer,
            runtime: Optional[RuntimeOptions]) -> list[ClaimVerification]:
    from ..claim_verifier import ClaimVerifier  # lazy: importing verifier.cli stays cheap

    verifier = ClaimVerifier(config, scorer=scorer, runtime=runtime)
    return verifier.verify_many_sync([claim.request for claim in claims])


def run_assay(
    claims: Sequence[LabelledClaim],
    plan: AssayPlan,
    scorer: RecordingScorer,
    *,
    runtime: Optional[RuntimeOptions] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> AssayOutcome:
    """Run the assay of ``plan`` on ``claims`` with ``scorer``.

    Args:
        progress: called with (configurations done, configurations in all) after each.

    Raises:
        MissingScores: an offline scorer lacks a needed pair (see :func:`count_missing`).
        ClaimVerificationError: the model failed.
    """
    start = time.perf_counter()
    configs = sweep_configs(
        plan.config, plan.entailment_thresholds, plan.contradiction_thresholds,
        plan.entailment_policies, plan.refutation_policies,
    )
    total = 1 + len(configs)
    results = _verify(plan.config, claims, scorer, runtime)
    main_seconds = time.perf_counter() - start
    if progress is not None:
        progress(1, total)
    statuses = _statuses(results)
    overall = _cohort(claims, statuses, plan)
    categories: dict[str, Any] = {}
    for category in sorted({claim.category for claim in claims if claim.category is not None}):
        members = [index for index, claim in enumerate(claims) if claim.category == category]
        categories[category] = _cohort([claims[i] for i in members], [statuses[i] for i in members], plan)
    labels = [claim.label for claim in claims]
    rows = []
    for done, config in enumerate(configs, start=2):
        rows.append(sweep_row(config, labels, _statuses(_verify(config, claims, scorer, runtime))))
        if progress is not None:
            progress(done, total)
    flat = flat_metrics(overall, overall["intervals"])
    gates = [
        {"gate": gate.text, "actual": gate.actual(flat), "passed": gate.holds(flat)} for gate in plan.gates
    ]
    per_claim = [
        {
            "name": claim.name,
            "line": claim.line,
            "label": claim.label,
            "category": claim.category,
            "status": result.status.value,
            "evaluation_id": result.evaluation_id,
            "result_sha256": result.result_sha256,
        }
        for claim, result in zip(claims, results)
    ]
    body = {
        "configuration": plan.config.model_dump(mode="json"),
        "configuration_sha256": audit.configuration_sha256(plan.config),
        "plan": plan.describe(),
        "overall": overall,
        "categories": categories,
        "sweep": {
            "rows": rows,
            "targets": [target.text for target in plan.targets],
            "optimize": plan.optimize,
            "best": best_row(rows, plan.targets, plan.optimize),
            "warning": WARNING,
        },
        "gates": gates,
        "gates_passed": all(gate["passed"] for gate in gates) if gates else None,
        "claims": per_claim,
        "results_sha256": audit.sha256_hex(audit.canonical([result.result_sha256 for result in results])),
    }
    elapsed = time.perf_counter() - start
    run = {
        "model_calls": scorer.live_calls,
        "pairs_scored": scorer.live_pairs,
        "pairs_replayed": scorer.replayed_pairs,
        "pairs_recorded": len(scorer.records),
        "configurations": total,
        "verifications": total * len(claims),
        "elapsed_s": elapsed,
        "claims_per_s": (len(claims) / main_seconds) if main_seconds > 0 else None,
        "verifications_per_s": (total * len(claims) / elapsed) if elapsed > 0 else None,
    }
    return AssayOutcome(body=body, results=results, run=run)


def count_missing(claims: Sequence[LabelledClaim], plan: AssayPlan, scorer: RecordingScorer,
                  runtime: Optional[RuntimeOptions] = None) -> tuple[int, int]:
    """``(missing pairs, claims needing them)`` for an offline scorer: a lower bound.

    Each claim is run alone under each configuration until its first missing
    round; pairs later rounds would need (after scores not yet known) cannot
    be known offline.
    """
    configs = [plan.config, *sweep_configs(
        plan.config, plan.entailment_thresholds, plan.contradiction_thresholds,
        plan.entailment_policies, plan.refutation_policies,
    )]
    from ..claim_verifier import ClaimVerifier

    missing: set[tuple[str, str]] = set()
    needing: set[int] = set()
    for config in configs:
        verifier = ClaimVerifier(config, scorer=scorer, runtime=runtime)
        for index, claim in enumerate(claims):
            try:
                verifier.verify_many_sync([claim.request])
            except MissingScores as exc:
                missing.update(exc.pairs)
                needing.add(index)
    return len(missing), len(needing)

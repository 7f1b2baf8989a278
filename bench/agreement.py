"""Agreement of two backends' probabilities on workload (c), and of the decisions replayed on them.

Random weights make this a plumbing check, never a quality figure (bench/README.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .workloads import Workload

__all__ = ["agreement"]


def agreement(workload: Workload, reference: np.ndarray, other: np.ndarray) -> dict[str, Any]:
    """How far ``other``'s probabilities on workload c are from ``reference``'s, and whether decisions match.

    * per pair: max |Δprob|, argmax agreement, and flips of the decision flags
      ``entailment >= t`` / ``contradiction >= t`` at the configured 0.8 and at
      thresholds placed where this model's probabilities actually lie (the
      50th/90th/99th percentiles of the reference), a stress test for a
      random model whose probabilities never reach 0.8;
    * per claim: the full decision procedure (docs/decision.md §3) replayed through
      :class:`verifier.ClaimVerifier` on each side's recorded probabilities
      (``max_group_size`` 1 for claims designed to stop at singles, so the
      replay only asks for pairs that were scored), compared on status,
      groups, bases and limitations.
    """
    from verifier import (
        ClaimVerificationConfig,
        ClaimVerificationError,
        ClaimVerifier,
        RecordedScorer,
    )

    pairs = workload.pairs()
    diff = np.abs(reference - other)
    flags: dict[str, Any] = {}
    thresholds = {"config_0.8": 0.8}
    for q in (50, 90, 99):
        thresholds[f"ent_p{q}"] = float(np.percentile(reference[:, 0], q))
        thresholds[f"con_p{q}"] = float(np.percentile(reference[:, 1], q))
    for name, t in thresholds.items():
        column = 1 if name.startswith("con") else 0
        columns = (0, 1) if name.startswith("config") else (column,)
        flips = sum(int(((reference[:, c] >= t) != (other[:, c] >= t)).sum()) for c in columns)
        flags[name] = {"threshold": t, "flag_flips": flips}

    def decisions(probs: np.ndarray) -> list[Any]:
        records = {pair: row for pair, row in zip(pairs, probs.tolist())}
        out: list[Any] = []
        for case in workload.cases:
            config = ClaimVerificationConfig(max_group_size=2 if case.needs_pairs else 1)
            try:
                result = ClaimVerifier(config, scorer=RecordedScorer(records)).verify_sync(case.claim, case.evidence())
            except ClaimVerificationError:
                out.append(None)
                continue
            out.append(
                (
                    result.status.value,
                    tuple(str(m) for m in result.supporting_group),
                    tuple(str(m) for m in result.refuting_group),
                    result.supporting_basis,
                    result.refuting_basis,
                    tuple(result.limitations),
                )
            )
        return out

    left, right = decisions(reference), decisions(other)
    statuses: dict[str, int] = {}
    for item in left:
        key = item[0] if item else "unreplayable"
        statuses[key] = statuses.get(key, 0) + 1
    return {
        "pairs": len(pairs),
        "max_abs_prob_diff": float(diff.max()),
        "mean_abs_prob_diff": float(diff.mean()),
        "argmax_agreement": float((reference.argmax(axis=1) == other.argmax(axis=1)).mean()),
        "flags": flags,
        "claims": len(left),
        "identical_decisions": sum(1 for a, b in zip(left, right) if a is not None and a == b),
        "unreplayable": sum(1 for a, b in zip(left, right) if a is None or b is None),
        "reference_statuses": statuses,
    }

"""The threshold × policy sweep, replayed from recorded scores (docs/assay.md §Sweep).

Every combination of an entailment policy, a refutation policy, an
entailment threshold and a contradiction threshold is run through the whole
decision procedure on the cohort (the same :class:`~verifier.claim_verifier.ClaimVerifier`
code, a different configuration), and its support metrics form one row.
The *best* row is the one that satisfies every target and has the highest
``optimize`` metric; ties go to the lower false-support rate, then the higher
entailment threshold, the higher contradiction threshold, and the earlier
policy pair.

A threshold chosen on a cohort is fitted to that cohort: confirm it on a fresh
one (:data:`WARNING`).
"""

from __future__ import annotations

import math
import typing
from typing import Any, Callable, Iterable, Optional, Sequence

from ..types import ClaimVerificationConfig, EntailmentPolicy, RefutationPolicy
from .constraints import Constraint
from .metrics import METRICS, counts, outcomes, rates

__all__ = [
    "WARNING", "MAX_GRID_POINTS", "entailment_policies", "refutation_policies", "parse_grid", "sweep_configs", "sweep_row",
    "best_row",
]

WARNING = (
    "A threshold or policy chosen on this cohort is fitted to it and its metrics here are optimistic: "
    "confirm the chosen operating point on a fresh labelled cohort (ideally with a registration) before relying on it."
)

#: The default threshold grid: 0.50, 0.55, ..., 0.95.
DEFAULT_GRID: tuple[float, ...] = tuple(round(0.5 + 0.05 * step, 2) for step in range(10))
#: The most thresholds one grid may hold (``0.5:1.0:0.005``); a longer grid is refused before anything is built.
MAX_GRID_POINTS = 101


def entailment_policies() -> tuple[str, ...]:
    """Every entailment policy of :mod:`verifier.types`, read at run time (new policies included)."""
    return tuple(typing.get_args(EntailmentPolicy))


def refutation_policies() -> tuple[str, ...]:
    """Every refutation policy of :mod:`verifier.types`, read at run time (new policies included)."""
    return tuple(typing.get_args(RefutationPolicy))


def parse_grid(text: str) -> tuple[float, ...]:
    """``"0.6,0.8,0.9"`` or ``"START:STOP:STEP"`` (STOP included) → sorted unique thresholds in [0.5, 1.0].

    At most :data:`MAX_GRID_POINTS` thresholds: a longer grid (``0.5:1.0:1e-10``)
    is refused at once, before any list is built, and so is a range that is not
    finite (``0.5:inf:0.1``).

    Raises:
        ValueError: not numbers, a step that is not positive, a value outside
            [0.5, 1.0], or more than :data:`MAX_GRID_POINTS` thresholds.
    """
    try:
        if ":" in text:
            start, stop, step = (float(part) for part in text.split(":"))
            if not (math.isfinite(start) and math.isfinite(stop)):
                raise ValueError("START and STOP must be finite numbers")
            if not (step > 0 and math.isfinite(step)):
                raise ValueError("the step must be a positive finite number")
            span = (stop - start + 1e-9) / step  # the loop below makes floor(span) + 1 points
            if not span < MAX_GRID_POINTS:  # also an infinite span (a huge range over a tiny step)
                count_text = f"{math.floor(span) + 1}" if math.isfinite(span) else "unboundedly many"
                raise ValueError(f"{count_text} thresholds, more than the {MAX_GRID_POINTS} a grid may hold")
            values = []
            count = 0
            while start + count * step <= stop + 1e-9 and count <= MAX_GRID_POINTS:
                values.append(round(start + count * step, 6))
                count += 1
        else:
            values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a threshold grid (0.6,0.8 or 0.5:0.95:0.05): {exc}") from None
    if len(values) > MAX_GRID_POINTS:
        raise ValueError(f"{text!r}: {len(values)} thresholds, more than the {MAX_GRID_POINTS} a grid may hold")
    if not values:
        raise ValueError(f"{text!r} is an empty threshold grid")
    for value in values:
        if not 0.5 <= value <= 1.0:
            raise ValueError(f"{text!r}: threshold {value} is outside [0.5, 1.0]")
    return tuple(sorted(set(values)))


def sweep_configs(
    base: ClaimVerificationConfig,
    entailment_thresholds: Sequence[float],
    contradiction_thresholds: Sequence[float],
    entailment_policy_values: Sequence[str],
    refutation_policy_values: Sequence[str],
) -> list[ClaimVerificationConfig]:
    """Every configuration of the sweep, in row order (policies outermost, then thresholds)."""
    configs = []
    dumped = base.model_dump()
    for entailment_policy in entailment_policy_values:
        for refutation_policy in refutation_policy_values:
            for entailment in entailment_thresholds:
                for contradiction in contradiction_thresholds:
                    configs.append(
                        ClaimVerificationConfig.model_validate(
                            {
                                **dumped,
                                "entailment_policy": entailment_policy,
                                "refutation_policy": refutation_policy,
                                "entailment_threshold": float(entailment),
                                "contradiction_threshold": float(contradiction),
                            }
                        )
                    )
    return configs


def sweep_row(config: ClaimVerificationConfig, labels: Sequence[str], statuses: Sequence[str]) -> dict[str, Any]:
    """One operating point: its policies and thresholds, counts, rates (``None`` if undefined), unsafe-support count."""
    count = counts(outcomes(labels, statuses))
    rate = rates(count)
    row: dict[str, Any] = {
        "entailment_policy": config.entailment_policy,
        "refutation_policy": config.refutation_policy,
        "entailment_threshold": config.entailment_threshold,
        "contradiction_threshold": config.contradiction_threshold,
    }
    row.update({name: int(value) for name, value in count.items()})
    for name in METRICS:
        value = float(rate[name])
        row[name] = None if value != value else value
    row["unsafe_supports"] = row["fp"]
    return row


def best_row(rows: Iterable[dict[str, Any]], targets: Sequence[Constraint], optimize: str) -> Optional[dict[str, Any]]:
    """The row satisfying every target with the highest ``optimize`` (ties: see the module docstring); ``None`` if none."""
    candidates = [(index, row) for index, row in enumerate(rows) if all(target.holds(row) for target in targets)]
    if not candidates:
        return None

    def key(item: tuple[int, dict[str, Any]]) -> tuple[float, float, float, float, int]:
        index, row = item
        value = row.get(optimize)
        false_support = row.get("false_support_rate")
        return (
            -(float(value) if value is not None else float("-inf")),
            float(false_support) if false_support is not None else 0.0,
            -row["entailment_threshold"],
            -row["contradiction_threshold"],
            index,
        )

    return min(candidates, key=key)[1]


ProgressCallback = Callable[[int], None]

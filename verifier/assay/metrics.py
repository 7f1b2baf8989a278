"""The metrics of an assay (docs/assay.md §Metrics), from counts, with numpy so the bootstrap can vectorise them.

Support is the positive class: a claim is *predicted supported* when its
status is ``supported`` (``contested`` is not a support), and *labelled
supported* when its label is ``supported`` (:func:`verifier.assay.labels.is_supported`).

* precision = TP / (TP + FP); recall = TP / (TP + FN);
* F1 = 2·TP / (2·TP + FP + FN) (the harmonic mean of precision and recall,
  and 0 rather than undefined when there is no predicted support but some error);
* balanced accuracy = (TP / (TP + FN) + TN / (TN + FP)) / 2;
* false-support rate = FP / (FP + TN), over the claims labelled not supported;
* unsafe supports: the claims predicted supported but labelled not supported (the FP), by name;
* refutation precision = (predicted refuted and labelled refuted) / (predicted
  refuted), over claims whose label is one of the five statuses.

A metric whose denominator is 0 is undefined: ``None`` in reports, NaN in arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from ..types import ClaimVerificationStatus
from .labels import LABELS, is_supported, names_status

__all__ = ["METRICS", "Outcomes", "outcomes", "counts", "rates", "cohort_metrics", "confusion_matrix"]

#: The rate metrics, in report order (each may be undefined).
METRICS: tuple[str, ...] = (
    "precision",
    "recall",
    "f1",
    "balanced_accuracy",
    "false_support_rate",
    "refutation_precision",
)

_STATUSES = tuple(status.value for status in ClaimVerificationStatus)


@dataclass(frozen=True)
class Outcomes:
    """Per-claim boolean arrays (one entry per claim, cohort order)."""

    gold_supported: np.ndarray
    predicted_supported: np.ndarray
    status_labelled: np.ndarray
    gold_refuted: np.ndarray
    predicted_refuted: np.ndarray

    def __len__(self) -> int:
        return int(self.gold_supported.shape[0])

    def take(self, index: np.ndarray) -> "Outcomes":
        """The outcomes of the claims at ``index`` (any shape; used for resamples)."""
        return Outcomes(*(getattr(self, name)[index] for name in self.__dataclass_fields__))


def outcomes(labels: Sequence[str], statuses: Sequence[str]) -> Outcomes:
    """The :class:`Outcomes` of claims with these labels and predicted statuses."""
    return Outcomes(
        gold_supported=np.array([is_supported(label) for label in labels], dtype=bool),
        predicted_supported=np.array([status == "supported" for status in statuses], dtype=bool),
        status_labelled=np.array([names_status(label) for label in labels], dtype=bool),
        gold_refuted=np.array([label == "refuted" for label in labels], dtype=bool),
        predicted_refuted=np.array([status == "refuted" for status in statuses], dtype=bool),
    )


def counts(values: Outcomes) -> dict[str, np.ndarray]:
    """TP, FP, FN, TN of support and refutation TP/FP, summed over the last axis."""
    gold, pred = values.gold_supported, values.predicted_supported
    refuted = values.predicted_refuted & values.status_labelled
    return {
        "tp": np.sum(gold & pred, axis=-1),
        "fp": np.sum(~gold & pred, axis=-1),
        "fn": np.sum(gold & ~pred, axis=-1),
        "tn": np.sum(~gold & ~pred, axis=-1),
        "refuted_tp": np.sum(refuted & values.gold_refuted, axis=-1),
        "refuted_fp": np.sum(refuted & ~values.gold_refuted, axis=-1),
    }


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def rates(count: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every metric of :data:`METRICS` from :func:`counts` (NaN where undefined)."""
    tp, fp, fn, tn = count["tp"], count["fp"], count["fn"], count["tn"]
    return {
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "balanced_accuracy": (_ratio(tp, tp + fn) + _ratio(tn, tn + fp)) / 2.0,
        "false_support_rate": _ratio(fp, fp + tn),
        "refutation_precision": _ratio(count["refuted_tp"], count["refuted_tp"] + count["refuted_fp"]),
    }


def _value(x: Any) -> Optional[float]:
    value = float(x)
    return None if np.isnan(value) else value


def confusion_matrix(labels: Sequence[str], statuses: Sequence[str]) -> dict[str, dict[str, int]]:
    """``{label: {predicted status: count}}`` for every label present, all five statuses as columns."""
    matrix: dict[str, dict[str, int]] = {}
    for label in LABELS:
        if label in labels:
            matrix[label] = {status: 0 for status in _STATUSES}
    for label, status in zip(labels, statuses):
        matrix[label][status] += 1
    return matrix


def cohort_metrics(labels: Sequence[str], statuses: Sequence[str], names: Sequence[str]) -> dict[str, Any]:
    """Every metric of one cohort: counts, rates (``None`` when undefined), unsafe supports, confusion matrix.

    Example:
        >>> m = cohort_metrics(["supported", "not_supported"], ["supported", "supported"], ["a", "b"])
        >>> m["precision"], m["recall"], m["unsafe_supports"]
        (0.5, 1.0, ['b'])
    """
    values = outcomes(labels, statuses)
    count = counts(values)
    rate = rates(count)
    unsafe = [name for name, gold, pred in zip(names, values.gold_supported, values.predicted_supported) if pred and not gold]
    result: dict[str, Any] = {"claims": len(labels)}
    result.update({name: int(value) for name, value in count.items()})
    result.update({name: _value(rate[name]) for name in METRICS})
    result["unsafe_supports"] = unsafe
    result["confusion_matrix"] = confusion_matrix(labels, statuses)
    return result

"""Labels of an assay cohort and how they map onto the support question (docs/assay.md).

A labelled row is a ``verify`` input row (evidence row or bundle row) plus
``label`` and an optional ``category``. Accepted labels:

* the five statuses: ``supported``, ``refuted``, ``contested``, ``insufficient``, ``incomplete``;
* binary: ``supported`` / ``not_supported``;
* three-way: ``supported`` / ``partially_supported`` / ``not_supported``.

For support as the positive class only ``supported`` is positive; every other
label (``partially_supported`` included) is *not supported*. Refutation
precision needs to know which claims are false, so it counts only claims
labelled with one of the five statuses (``refuted`` is the positive there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..types import ClaimVerificationStatus
from ..validation import ValidRequest

__all__ = [
    "STATUS_LABELS",
    "LABELS",
    "LabelledClaim",
    "LabelError",
    "split_labelled",
    "is_supported",
    "names_status",
]

#: The five statuses, usable as labels.
STATUS_LABELS: tuple[str, ...] = tuple(status.value for status in ClaimVerificationStatus)
#: Every accepted label, in the order the confusion matrix lists them.
LABELS: tuple[str, ...] = (*STATUS_LABELS, "partially_supported", "not_supported")

#: Keys a labelled row may carry besides those of a ``verify`` row.
LABEL_KEYS = ("label", "category")


class LabelError(ValueError):
    """A row's ``label`` or ``category`` is missing or invalid; ``field`` names which."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"field {field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class LabelledClaim:
    """One claim of a cohort: its validated request, its label and its category.

    ``line`` is the 1-based input line (or ``.json`` item); ``name`` is the
    row's ``id``, else ``line N``.
    """

    line: int
    request: ValidRequest
    label: str
    category: Optional[str] = None

    @property
    def name(self) -> str:
        """The row's ``id``, else ``line N``."""
        return self.request.id if self.request.id is not None else f"line {self.line}"


def split_labelled(row: Any) -> tuple[Any, str, Optional[str]]:
    """``(the row without label/category, label, category)``; a non-object row is returned as is.

    Raises:
        LabelError: ``label`` missing or not one of :data:`LABELS`, or
            ``category`` not a non-empty string (``null`` means none).
    """
    if not isinstance(row, dict):
        raise LabelError("label", f"expected a JSON object, got {type(row).__name__}")
    rest = {key: value for key, value in row.items() if key not in LABEL_KEYS}
    if "label" not in row:
        raise LabelError("label", f"missing; one of {', '.join(LABELS)}")
    label = row["label"]
    if not isinstance(label, str) or label.strip() not in LABELS:
        raise LabelError("label", f"{label!r} is not one of {', '.join(LABELS)}")
    category = row.get("category")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise LabelError("category", f"{category!r} is not a non-empty string")
    return rest, label.strip(), category.strip() if isinstance(category, str) else None


def is_supported(label: str) -> bool:
    """Whether ``label`` is the positive class of the support question (only ``supported``)."""
    return label == "supported"


def names_status(label: str) -> bool:
    """Whether ``label`` is one of the five statuses (so it says whether the claim is refuted)."""
    return label in STATUS_LABELS

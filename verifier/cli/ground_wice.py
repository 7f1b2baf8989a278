"""``ground`` over WiCE's test file: PRME's registered oracle-retrieval grounding protocol (docs/grounding.md).

A WiCE row (``{"label", "claim", "evidence": [sentences], "meta": {"id"}, ...}``)
is one *oracle variant* of a claim; the rows of one ``meta.id`` are its
variants. As PRME's ``benchmarks/integrations/run_wice_grounding_model.py``
scores them: each variant's document is its evidence sentences that are not
blank, joined by ``"\\n"`` (not stripped); the claim's score is the maximum
over its variants; it is predicted supported when that is strictly above 0.5;
``"supported"`` is the positive label, ``"partially_supported"`` and
``"not_supported"`` the negatives. The counts and rates printed at the end are
PRME's ``_binary_metrics`` (true/false positives and negatives, precision,
recall, balanced accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .errors import UsageError

__all__ = ["WICE_LABELS", "WiceCase", "check_text", "is_wice_row", "wice_cases", "binary_metrics", "describe_metrics"]

#: WiCE's claim labels; ``supported`` is the positive class.
WICE_LABELS = ("supported", "partially_supported", "not_supported")


@dataclass(frozen=True)
class WiceCase:
    """One WiCE claim: its id, label, claim and one document per oracle variant."""

    id: str
    label: str
    claim: str
    documents: tuple[str, ...]


def check_text(value: str, where: str) -> None:
    """A text the engine and the output can take: at most :data:`~verifier.grounding.MAX_TEXT_CHARS` characters,
    and valid Unicode (a lone surrogate, which JSON's ``\\ud800`` escapes can make, is no character).

    Raises:
        UsageError: naming ``where`` and the limit.
    """
    from ..grounding import MAX_TEXT_CHARS

    if len(value) > MAX_TEXT_CHARS:
        raise UsageError(f"error: {where}: {len(value):,} characters; at most {MAX_TEXT_CHARS:,}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"error: {where}: a lone surrogate ({exc.object[exc.start:exc.end]!r}) at character {exc.start} "
                         "is not text") from None


def is_wice_row(row: Any) -> bool:
    """Whether a parsed input row has WiCE's shape (``claim``, ``evidence`` and ``meta``)."""
    return isinstance(row, dict) and {"claim", "evidence", "meta"} <= set(row)


def _variant(row: Any, where: str) -> tuple[str, str, str, str]:
    if not is_wice_row(row):
        raise UsageError(f"error: {where}: not a WiCE row (claim, evidence, meta); rows of one file share one shape")
    label, claim, evidence, meta = row.get("label"), row["claim"], row["evidence"], row["meta"]
    if label not in WICE_LABELS:
        raise UsageError(f"error: {where}: field label: must be one of {list(WICE_LABELS)}, got {label!r}")
    if not isinstance(claim, str) or not claim.strip():
        raise UsageError(f"error: {where}: field claim: must be a non-empty string")
    if not isinstance(evidence, list) or not all(isinstance(item, str) for item in evidence):
        raise UsageError(f"error: {where}: field evidence: must be a list of strings")
    for field, value in (("claim", claim), *((f"evidence[{index}]", item) for index, item in enumerate(evidence))):
        check_text(value, f"{where}: field {field}")
    document = "\n".join(item for item in evidence if item.strip())
    if not document:
        raise UsageError(f"error: {where}: field evidence: every sentence is blank")
    case_id = meta.get("id") if isinstance(meta, dict) else None
    if not isinstance(case_id, str) or not case_id.strip():
        raise UsageError(f"error: {where}: field meta.id: must be a non-empty string")
    return case_id, label, claim, document


def wice_cases(rows: Sequence[tuple[int, Any]], source: str) -> list[WiceCase]:
    """Group ``(line number, parsed row)`` WiCE rows by ``meta.id``, in first-seen order.

    Raises:
        UsageError: a row is malformed, or the variants of one id disagree on the claim or the label.
    """
    grouped: dict[str, list[tuple[str, str, str]]] = {}
    for number, row in rows:
        case_id, label, claim, document = _variant(row, f"{source} line {number}")
        variants = grouped.setdefault(case_id, [])
        if variants and (variants[0][0], variants[0][1]) != (label, claim):
            raise UsageError(f"error: {source} line {number}: the oracle variants of {case_id!r} disagree on the "
                             "claim or the label")
        variants.append((label, claim, document))
    return [WiceCase(case_id, variants[0][0], variants[0][1], tuple(document for _, _, document in variants))
            for case_id, variants in grouped.items()]


def binary_metrics(labels: Sequence[str], predicted: Sequence[bool]) -> dict[str, float]:
    """PRME's ``_binary_metrics`` with ``supported`` positive: counts, precision, recall, balanced accuracy."""
    tp = sum(label == "supported" and hit for label, hit in zip(labels, predicted))
    fn = sum(label == "supported" and not hit for label, hit in zip(labels, predicted))
    fp = sum(label != "supported" and hit for label, hit in zip(labels, predicted))
    tn = sum(label != "supported" and not hit for label, hit in zip(labels, predicted))

    def ratio(numerator: float, denominator: float) -> float:
        return numerator / denominator if denominator else 0.0

    recall, specificity = ratio(tp, tp + fn), ratio(tn, tn + fp)
    return {"true_positive": tp, "false_positive": fp, "true_negative": tn, "false_negative": fn,
            "precision": ratio(tp, tp + fp), "recall": recall, "balanced_accuracy": (recall + specificity) / 2}


def describe_metrics(metrics: dict[str, float]) -> str:
    """One line: ``TP 63, FP 18, TN 230, FN 47; precision 77.8 %, recall 57.3 %, balanced accuracy 75.0 %``."""
    return (f"TP {metrics['true_positive']:.0f}, FP {metrics['false_positive']:.0f}, TN {metrics['true_negative']:.0f}, "
            f"FN {metrics['false_negative']:.0f}; precision {100 * metrics['precision']:.1f} %, "
            f"recall {100 * metrics['recall']:.1f} %, balanced accuracy {100 * metrics['balanced_accuracy']:.1f} %")

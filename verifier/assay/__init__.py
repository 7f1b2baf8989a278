"""Assays: measure a decision configuration (policies, thresholds) on your own labelled claims (docs/assay.md).

Decision side: pure Python and numpy. The ONNX engine is reached only through
a scorer handed in by the caller (a :class:`~verifier.claim_verifier.ClaimVerifier`
builds it lazily), never imported here; matplotlib is imported only when
figures are drawn.

Modules: :mod:`.labels` (label schemes), :mod:`.metrics` (confusion matrix and
support/refutation metrics), :mod:`.bootstrap` (percentile intervals),
:mod:`.recording` (the recorded-scores file and the recording scorer),
:mod:`.constraints` (``"precision>=0.9"`` expressions for targets and gates),
:mod:`.sweep` (thresholds × policies from recorded scores), :mod:`.registration`
(frozen plans), :mod:`.runner` (one assay), :mod:`.report` (JSON, markdown,
figures).
"""

from __future__ import annotations

from .constraints import Constraint, parse_constraint
from .labels import LABELS, LabelledClaim, split_labelled
from .metrics import cohort_metrics
from .recording import MissingScores, RecordingScorer, ScoreIdentity
from .runner import AssayPlan, run_assay

__all__ = [
    "LABELS",
    "LabelledClaim",
    "split_labelled",
    "cohort_metrics",
    "Constraint",
    "parse_constraint",
    "MissingScores",
    "RecordingScorer",
    "ScoreIdentity",
    "AssayPlan",
    "run_assay",
]

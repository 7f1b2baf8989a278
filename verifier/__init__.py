"""Torch-free, auditable claim verification with a local three-label NLI cross-encoder.

Given one declarative claim and a few exact evidence passages, decide whether
the passages support, refute, contest or fail to establish it — or return
``incomplete`` for exhaustive count/list claims — using an NLI cross-encoder
exported to ONNX (``python -m export``) and run with onnxruntime. See docs/decision.md
for the contract.

Example:
    >>> from verifier import ClaimVerifier, ClaimEvidence
    >>> verifier = ClaimVerifier()  # loads models/nli-deberta-v3-base-6c749ce3425c lazily
    >>> result = verifier.verify_sync("The launch is Tuesday.", [...])  # doctest: +SKIP

Importing this package is cheap: public names load their submodule on first
access, onnxruntime and tokenizers are imported only when the engine first
loads a model, and torch/transformers never.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

#: onnxruntime's telemetry (1DS on Linux and macOS since 1.2x) writes a device id and queued events under the
#: user's cache directory from its first import on; set before that import, this turns all of it off
#: (docs/security.md, "Network"). A value the user set, "0" included, is left as it is.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from .clash import DISTRIBUTION as __distribution__, warn_if_shared

#: ``__distribution__`` marks this package as onnx-claim-verifier's: the unrelated PyPI project
#: ``verifier`` installs a package of the same name (README, first section; verifier/clash.py).
warn_if_shared(__path__[0])

if TYPE_CHECKING:  # pragma: no cover - for type checkers; at run time names load on first access
    from .decision.bundle import BundleCandidate, ContextBundle
    from .decision.check import CheckReport, check_result
    from .claim_verifier import ClaimVerifier, EvidenceInput
    from .engine.scorer import OnnxScorer
    from .engine.coalesce import CoalescingScorer, ScorerBusy
    from .engine_identity import EngineIdentity
    from .engine.grounding_scorer import GroundingScorer
    from .grounding import GroundingChecker, GroundingResult
    from .options import InputLimits, RuntimeOptions, default_model_dir
    from .scoring import RecordedScorer, Scorer, ScriptedScorer, validate_scores
    from .types import (
        CLAIM_VERIFICATION_SCHEMA_VERSION,
        DEFAULT_NLI_MODEL,
        DEFAULT_NLI_REVISION,
        ClaimVerificationDecisionBasis,
        ClaimVerificationLimitation,
        DEFAULT_MODEL,
        DEFAULT_REVISION,
        SCHEMA_VERSION,
        SUPPORTED_SCHEMA_VERSIONS,
        ClaimEvidence,
        ClaimRequest,
        ClaimVerification,
        ClaimVerificationConfig,
        ClaimVerificationError,
        ClaimVerificationStatus,
        EpistemicType,
        EvidenceGroupScore,
        LifecycleState,
        LocalizedEvidenceAssessment,
        SourceType,
        StrictRuling,
    )

__all__ = [
    "__version__",
    "DEFAULT_MODEL",
    "DEFAULT_REVISION",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "DEFAULT_NLI_MODEL",
    "DEFAULT_NLI_REVISION",
    "CLAIM_VERIFICATION_SCHEMA_VERSION",
    "ClaimVerificationDecisionBasis",
    "ClaimVerificationLimitation",
    "BundleCandidate",
    "CheckReport",
    "ClaimEvidence",
    "ClaimRequest",
    "ClaimVerification",
    "ClaimVerificationConfig",
    "ClaimVerificationError",
    "ClaimVerificationStatus",
    "ClaimVerifier",
    "ContextBundle",
    "EngineIdentity",
    "EpistemicType",
    "GroundingChecker",
    "GroundingResult",
    "GroundingScorer",
    "EvidenceGroupScore",
    "EvidenceInput",
    "LifecycleState",
    "LocalizedEvidenceAssessment",
    "OnnxScorer",
    "RecordedScorer",
    "RuntimeOptions",
    "InputLimits",
    "CoalescingScorer",
    "ScorerBusy",
    "StrictRuling",
    "Scorer",
    "ScriptedScorer",
    "SourceType",
    "check_result",
    "default_model_dir",
    "validate_scores",
]

#: Public name -> submodule defining it. Names load on first access (PEP 562), so
#: ``import verifier`` stays cheap for latency-sensitive callers.
_LAZY = {
    "BundleCandidate": "decision.bundle",
    "ContextBundle": "decision.bundle",
    "CheckReport": "decision.check",
    "check_result": "decision.check",
    "ClaimVerifier": "claim_verifier",
    "EvidenceInput": "claim_verifier",
    "OnnxScorer": "engine.scorer",
    "RuntimeOptions": "options",
    "InputLimits": "options",
    "CoalescingScorer": "engine.coalesce",
    "ScorerBusy": "engine.coalesce",
    "EngineIdentity": "engine_identity",
    "GroundingChecker": "grounding",
    "GroundingResult": "grounding",
    "GroundingScorer": "engine.grounding_scorer",
    "StrictRuling": "types",
    "default_model_dir": "options",
    "RecordedScorer": "scoring",
    "Scorer": "scoring",
    "ScriptedScorer": "scoring",
    "validate_scores": "scoring",
    **{
        name: "types"
        for name in (
            "DEFAULT_NLI_MODEL",
            "DEFAULT_NLI_REVISION",
            "CLAIM_VERIFICATION_SCHEMA_VERSION",
            "ClaimVerificationDecisionBasis",
            "ClaimVerificationLimitation",
            "DEFAULT_MODEL",
            "DEFAULT_REVISION",
            "SCHEMA_VERSION",
            "SUPPORTED_SCHEMA_VERSIONS",
            "ClaimEvidence",
            "ClaimRequest",
            "ClaimVerification",
            "ClaimVerificationConfig",
            "ClaimVerificationError",
            "ClaimVerificationStatus",
            "EpistemicType",
            "EvidenceGroupScore",
            "LifecycleState",
            "LocalizedEvidenceAssessment",
            "SourceType",
        )
    },
}


def _package_version() -> str:
    """The installed distribution's version (``onnx-claim-verifier``), else the source tree's."""
    from importlib import metadata

    try:
        return metadata.version("onnx-claim-verifier")  # verifier.messages.DISTRIBUTION
    except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0.0.0+unknown"


def __getattr__(name: str) -> Any:
    """Import a public name's submodule only when the name is first asked for."""
    if name == "__version__":
        globals()[name] = value = _package_version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'verifier' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

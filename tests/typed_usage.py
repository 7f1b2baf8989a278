"""Calls every public signature with precise types; checked by mypy in tests/test_typing.py.

Never executed by pytest (no ``test_`` prefix): it only has to type-check.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Optional
from uuid import UUID

import numpy as np

from verifier import (
    EngineIdentity,
    DEFAULT_MODEL,
    DEFAULT_REVISION,
    SCHEMA_VERSION,
    ClaimEvidence,
    ClaimRequest,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationStatus,
    ClaimVerifier,
    ContextBundle,
    EpistemicType,
    GroundingChecker,
    GroundingResult,
    GroundingScorer,
    LifecycleState,
    OnnxScorer,
    RecordedScorer,
    RuntimeOptions,
    Scorer,
    ScriptedScorer,
    SourceType,
    validate_scores,
)


def usage(model_dir: Path, bundle: ContextBundle) -> list[ClaimVerification]:
    config = ClaimVerificationConfig(model=DEFAULT_MODEL, revision=DEFAULT_REVISION, max_group_size=3)
    runtime = RuntimeOptions(model_dir=model_dir, intra_op_num_threads=2, schedule="eager")
    evidence = [
        ClaimEvidence(
            reference="m1",
            memory_id=UUID(int=1),
            text="The launch is Tuesday.",
            source_type=SourceType.USER_STATED,
            epistemic_type=EpistemicType.OBSERVED,
            lifecycle_state=LifecycleState.STABLE,
        )
    ]
    scorer: Scorer = ScriptedScorer({"The launch is Tuesday.": (0.9, 0.05)}, default=(0.1, 0.1))
    by_premise: dict[str, tuple[float, float]] = {"The launch is Tuesday.": (0.9, 0.05)}
    by_pair: dict[tuple[str, str], tuple[float, float, float]] = {("a", "b"): (0.2, 0.3, 0.5)}
    scripted: list[Scorer] = [ScriptedScorer(by_premise), ScriptedScorer(by_pair)]
    recorded: Scorer = RecordedScorer({("a", "b"): (0.2, 0.3, 0.5)}, resolved_revision="x")
    engine: Scorer = OnnxScorer(model_dir, intra_op_num_threads=2, max_batch_tokens=4096)
    probabilities: np.ndarray = engine.score([("premise", "hypothesis")])
    checked: np.ndarray = validate_scores(probabilities, 1)
    verifier = ClaimVerifier(config, scorer=scorer, runtime=runtime)
    one: ClaimVerification = verifier.verify_sync("The launch is Tuesday.", evidence, requires_complete_set=False)
    two: ClaimVerification = asyncio.run(verifier.verify("The launch is Tuesday.", evidence))
    three: ClaimVerification = verifier.verify_bundle_sync("The launch is Tuesday.", bundle, evidence_refs=["m1"])
    four: ClaimVerification = asyncio.run(verifier.verify_bundle("The launch is Tuesday.", bundle))
    many: list[ClaimVerification] = verifier.verify_many_sync(
        [ClaimRequest(claim="c", evidence=tuple(evidence))], progress=lambda done: None
    )
    more: list[ClaimVerification] = asyncio.run(verifier.verify_many([{"claim": "c", "evidence": evidence}]))
    cited: tuple[ClaimEvidence, ...] = ClaimVerifier.bundle_evidence(bundle, ["m1"])
    stats: dict[str, int] = verifier.stats
    named: Optional[EngineIdentity] = verifier.engine_identity()  # None: a scripted scorer names no engine
    loaded: EngineIdentity = OnnxScorer(model_dir).engine_identity
    differs: list[str] = loaded.differences(loaded) + ([] if one.engine is None else one.engine.differences(loaded))
    assert one.status is ClaimVerificationStatus.SUPPORTED and SCHEMA_VERSION == 3
    del recorded, checked, cited, stats, named, differs
    return [one, two, three, four, *many, *more]


def grounding_usage(model_dir: Path) -> list[GroundingResult]:
    checker = GroundingChecker(model_dir, splitter="auto", intra_op_num_threads=2)
    labels, best, chunks, per_chunk = checker.score(["A document."], ["A claim."], chunk_size=None)
    first: int = labels[0]
    probability: float = best[0] + per_chunk[0][0]
    text: str = chunks[0][0]
    one: GroundingResult = checker.check("A document.", "A claim.", chunk_size=0)
    scorer = GroundingScorer(model_dir, padding="none", verify_golden=True)
    support: np.ndarray = scorer.score([("A document.", "A claim.")])
    cut: list[bool] = scorer.truncated([("A document.", "A claim.")])
    counts: list[int] = scorer.count_tokens(["A sentence."])
    named: EngineIdentity = GroundingChecker(scorer=scorer).scorer.engine_identity
    del first, probability, text, support, cut, counts, named
    return [one, *checker.check_many(["A document."], ["A claim."])]

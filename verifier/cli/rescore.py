"""``check --rescore``: re-score a record's premises with the engine the record names (docs/audit.md, "Engine identity").

A record made by the ONNX engine names it (``ClaimVerification.engine``). The
re-scoring engine is built from ``--model-dir`` for that record's variant,
padding aside (each pair runs alone), and must agree with the record on every
part that decides a score (:data:`verifier.engine_identity.SCORE_FIELDS`): a
directory or ``--variant`` that contradicts the record is refused, naming what
differs. The tolerance is that engine's own run-to-run spread: exact for a
float32 graph and for a record made with ``padding="none"``; otherwise
:data:`SPREAD_MARGIN` times the spread the exporter measured and recorded for
the variant (``ParityReport.run_prob_spread``), never its export gate. A record
without an identity (PRME's, or one written before identities) is held to a
float32 graph's exactness.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from ..decision.replay import ReplayedPair
from ..engine_identity import SCORE_FIELDS, EngineIdentity
from ..types import ClaimVerification, ClaimVerificationError

__all__ = ["SPREAD_MARGIN", "SPREAD_FLOOR", "Rescorer", "rescorer_for"]

#: A batched non-float32 record is held to this many times the spread measured at export: the exporter
#: tries five layouts of the golden pairs, a run batches other pairs (docs/audit.md, "Engine identity").
SPREAD_MARGIN = 2.0
#: ...and to at least 2**-7, the relative step of bf16's 8-bit mantissa and of an int8 scale: the golden
#: layouts can miss the batch shapes that change a kernel (a bf16 pair of the smoke model moved 0.005 in a
#: verify batch while every golden layout moved 0; docs/audit.md).
SPREAD_FLOOR = 2.0 ** -7


class _Engine:
    """One re-scoring engine (loaded on first score) and the identity it has (computed on first need)."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self.identity: Optional[EngineIdentity] = None


class _Hold:
    """What one record is held to: the engine, its tolerance and how that reads in a note."""

    def __init__(self, engine: _Engine, tolerance: float, why: str) -> None:
        self.engine, self.tolerance, self.why = engine, tolerance, why


class Rescorer:
    """Re-scores a replay's pairs with the engine each record names and compares them with its scores.

    Args:
        model_dir: the exported model directory (``--model-dir``).
        variant: ``--variant`` (``None``: the record's own); a record naming another one is refused.
        exact: ``--exact``: a record that cannot be held to exact scores (a batched non-float32 engine, or
            no engine named) is refused instead of compared within a tolerance.

    Raises:
        ClaimVerificationError: the directory has no readable manifest.
    """

    def __init__(self, model_dir: Path, variant: Optional[str], *, exact: bool = False) -> None:
        from ..engine.identity import read_manifest_if_present
        from ..engine.manifest import MANIFEST_NAME

        manifest = read_manifest_if_present(model_dir)
        if manifest is None:
            raise ClaimVerificationError(f"{model_dir / MANIFEST_NAME} not found: --model-dir must be a directory written by export")
        self.model_dir, self.asked_variant, self.manifest, self.exact = model_dir, variant, manifest, exact
        self.model, self.revision = manifest.model, manifest.revision
        self.pairs_scored = 0
        self._engines: dict[tuple[Optional[str], str], _Engine] = {}

    def _build(self, variant: Optional[str], level: str) -> Any:
        from ..engine.engine_identity import float32_graph
        from ..engine.scorer import OnnxScorer

        # golden.json re-scored at load for a float32 graph; a variant's own gate (which may accept flipped
        # argmaxes: ov-int8 on the smoke model) was judged at export, and its file is hashed at load all the same
        return OnnxScorer(
            self.model_dir, variant=variant, padding="none", verify_golden=float32_graph(self.manifest, variant),
            graph_optimization_level=level, expected_model=self.manifest.model, expected_revision=self.manifest.revision,
        )

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Which pairs the model cuts to its maximum length (the directory's tokenizer; the strict replay asks)."""
        engine = next(iter(self._engines.values()), None)
        scorer = engine.scorer if engine is not None else self._engine_for(None, "all").scorer
        return list(scorer.truncated(pairs))

    def _engine_for(self, variant: Optional[str], level: str) -> _Engine:
        """The engine for ``variant`` at optimisation ``level``, built once (loaded on first score)."""
        key = (variant, level)
        if key not in self._engines:
            self._engines[key] = _Engine(self._build(variant, level))
        return self._engines[key]

    def _tolerance(self, identity: Optional[EngineIdentity]) -> tuple[float, str]:
        """The tolerance a record of ``identity`` is held to and why (``-1``: none recorded)."""
        from ..engine.engine_identity import float32_graph

        variant = identity.variant if identity is not None else self.asked_variant
        if identity is None or identity.exact_across_batches or float32_graph(self.manifest, variant):
            return 0.0, "exactly"
        spread = self.manifest.variants[variant or ""].parity.run_prob_spread
        if spread is None:
            return -1.0, ""
        tolerance = max(SPREAD_MARGIN * spread, SPREAD_FLOOR)
        how = (f"{SPREAD_MARGIN:g} x the run-to-run spread variant {variant} recorded at export" if tolerance > SPREAD_FLOOR
               else f"the floor 2^-7: variant {variant} recorded a run-to-run spread of {spread:.3g} at export")
        return tolerance, f"within {tolerance:.3g} ({how})"

    def hold(self, result: ClaimVerification) -> tuple[Optional[_Hold], list[str]]:
        """The engine that re-scores ``result`` and the problems that refuse it (then no engine)."""
        from ..engine.engine_identity import engine_identity, float32_graph
        from ..engine.model_directory import ModelDirectory

        identity = result.engine
        if identity is None:  # PRME's record, or one written before identities: held to a float32 graph's exactness
            variant = self.asked_variant
            if variant is not None and (variant not in self.manifest.variants or not float32_graph(self.manifest, variant)):
                return None, [
                    f"the record names no engine (PRME's, or written before engine identities), so it is held to a "
                    f"float32 graph's exactness; --variant {variant} is not a float32 graph of {self.model_dir}"
                ]
            bound = SPREAD_MARGIN * (self.manifest.parity.max_abs_prob_diff if variant is None
                                     else self.manifest.variants[variant].parity.max_abs_prob_diff)
            return _Hold(self._engine_for(variant, "all"), bound, (
                f"within {bound:.3g} ({SPREAD_MARGIN:g} x the float32 graph's distance from PyTorch measured at export: "
                "the record names no engine, and PRME's own records are PyTorch's)"
            )), []
        if self.asked_variant is not None and self.asked_variant != identity.variant:
            return None, [
                f"the record was scored by {f'variant {identity.variant}' if identity.variant else 'the float32 export'}; "
                f"--variant {self.asked_variant} contradicts it (leave --variant out: check re-scores with the record's engine)"
            ]
        if identity.variant is not None and identity.variant not in self.manifest.variants:
            return None, [f"the record was scored by variant {identity.variant}, which {self.model_dir} does not hold "
                          f"(it holds {sorted(self.manifest.variants) or 'no variant'})"]
        engine = self._engine_for(identity.variant, identity.graph_optimization_level)
        if engine.identity is None:
            try:
                directory = ModelDirectory.open(self.model_dir, identity.variant)
                engine.identity = engine_identity(
                    directory, padding="none", graph_optimization_level=identity.graph_optimization_level
                )
            except ClaimVerificationError as exc:  # e.g. the variant's gate failed, or its runtime is missing here
                return None, [f"--model-dir {self.model_dir} cannot re-score the record's engine: {exc}"]
        differences = identity.differences(engine.identity, SCORE_FIELDS)
        if differences:
            return None, [
                f"--model-dir {self.model_dir} does not hold the engine the record names ({'; '.join(differences)}, "
                "the record's first): re-score with the model directory that scored it"
            ]
        tolerance, why = self._tolerance(identity)
        if tolerance < 0:
            return None, [
                f"variant {identity.variant}'s manifest records no run-to-run spread (it was built before it was measured), "
                f"so a batched record of it cannot be held to one: rebuild it (python -m export.variants {self.model_dir} "
                f"--variants {identity.variant} --overwrite-variants), or verify with --padding none, whose records are exact"
            ]
        if identity.manifest_sha256 != engine.identity.manifest_sha256:  # the tolerance comes from this manifest
            why += " (this directory's manifest.json is not the record's: a variant added or figures re-recorded since)"
        mine = (engine.identity.runtime_version, engine.identity.tokenizers_version)
        if (identity.runtime_version, identity.tokenizers_version) != mine:  # said in the note; the scores decide
            why += (f" (scored with {identity.runtime} {identity.runtime_version}, tokenizers {identity.tokenizers_version}; "
                    f"re-scored with {mine[0]}, tokenizers {mine[1]})")
        return _Hold(engine, tolerance, why), []

    def compare(self, result: ClaimVerification, pairs: Sequence[ReplayedPair]) -> tuple[list[str], str]:
        """One sentence per recorded score the record's engine does not give (empty: every score follows from
        the model), and how they were compared (for the note)."""
        hold, refused = self.hold(result)
        if hold is None:
            return refused, ""
        if self.exact and hold.tolerance > 0 and pairs:
            return [f"--exact: the record's scores can be held only {hold.why}, not exactly (verify with --padding none "
                    "for records every engine reproduces exactly)"], ""
        if not pairs:
            return [], hold.why
        try:
            scores = hold.engine.scorer.score([(pair.premise, pair.hypothesis) for pair in pairs])
        except ClaimVerificationError as exc:  # this engine does not load here (a tampered variant file): this record's
            return [f"--model-dir {self.model_dir} cannot re-score the record's engine: {exc}"], ""
        self.pairs_scored += len(pairs)
        problems = []
        for pair, row in zip(pairs, scores):
            worst = max(abs(float(a) - b) for a, b in zip(row, pair.recorded))
            if worst > hold.tolerance:
                kind = "recheck" if pair.localized else "group"
                shown = pair.premise if len(pair.premise) <= 40 else pair.premise[:37] + "..."
                problems.append(
                    f"the model scores the {kind} premise {shown!r} at "
                    f"({float(row[0])!r}, {float(row[1])!r}, {float(row[2])!r}), the record says "
                    f"{pair.recorded!r} (|diff| {worst:.3g} > tolerance {hold.tolerance:g}: held to its engine {hold.why})"
                )
        return problems, hold.why


def rescorer_for(model_dir: str, variant: Optional[str], *, exact: bool = False) -> Rescorer:
    """A :class:`Rescorer` over ``model_dir`` (each engine loads on first use, golden outputs verified).

    Raises:
        ClaimVerificationError: the directory has no readable manifest, or ``variant`` is not recorded in it.
    """
    rescorer = Rescorer(Path(model_dir), variant, exact=exact)
    if variant is not None and variant not in rescorer.manifest.variants:
        raise ClaimVerificationError(
            f"variant {variant!r} is not recorded in {Path(model_dir) / 'manifest.json'} "
            f"(recorded: {sorted(rescorer.manifest.variants) or 'none'})"
        )
    return rescorer

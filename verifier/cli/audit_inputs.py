"""What ``check --inputs``, ``check --rescore`` and ``verify --resume`` need beyond a record: its input row, and the model.

A result carries the digests of its passages, not the passages, so a full
replay of the decision (:func:`verifier.decision.replay.replay`) and a
re-scoring of its premises need the input row it answers.
:class:`RowCursor` finds rows by a key while reading the input forward from
where the last row was found: outputs are in input order, so checking a whole
output reads the input once (an output in another order re-reads it, at worst
once per record). Only one row is held at a time.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, Hashable, Iterator, Optional, Sequence, TypeVar

from ..decision.replay import ReplayedPair
from ..rows import InputRow, InvalidRow

__all__ = ["RowCursor", "Rescorer"]

K = TypeVar("K", bound=Hashable)
Row = "InputRow | InvalidRow"


class RowCursor(Generic[K]):
    """Input rows found by ``key(row)``, reading ``rows()`` forward from the last row found.

    Args:
        rows: a fresh iterator over the input each call.
        key: a row's key (``None``: never found).
    """

    def __init__(self, rows: Callable[[], Iterator["InputRow | InvalidRow"]], key: Callable[["InputRow | InvalidRow"], Optional[K]]) -> None:
        self._rows, self._key = rows, key
        self._iterator: Optional[Iterator[InputRow | InvalidRow]] = None
        self._position = 0

    def rows(self) -> Iterator["InputRow | InvalidRow"]:
        """Every row of the input, read afresh."""
        return self._rows()

    def find(
        self, wanted: Optional[K], where: Optional[Callable[["InputRow | InvalidRow"], bool]] = None
    ) -> "Optional[InputRow | InvalidRow]":
        """The first row at or after the last one found whose key is ``wanted`` (and, with ``where``, that
        ``where`` accepts), else the first before it; ``None``: none. ``wanted=None`` finds rows without a
        key (invalid rows)."""
        if self._iterator is None:
            self._iterator, self._position = self._rows(), 0
        for item in self._iterator:
            self._position += 1
            if self._key(item) == wanted and (where is None or where(item)):
                return item
        stop, self._iterator = self._position, None  # exhausted: look before where we started
        for position, item in enumerate(self._rows(), start=1):
            if position > stop:
                break
            if self._key(item) == wanted and (where is None or where(item)):
                self._iterator = None
                return item
        return None


class Rescorer:
    """Re-scores a replay's pairs with the model and compares them with the recorded scores (``check --rescore``).

    Args:
        scorer: an :class:`~verifier.engine.scorer.OnnxScorer` (any object with
            ``score(pairs) -> (n, 3)`` and, for strict replays, ``truncated``).
        tolerance: the largest |Δprobability| accepted; ``0.0`` for a float32
            graph (bit-identical across batches on the CPU provider,
            docs/score-store.md), else the variant's recorded parity bound.
        model, revision: the model and revision the directory's manifest names
            (a record naming others is refused).
    """

    def __init__(self, scorer: Any, *, tolerance: float, model: str, revision: str) -> None:
        self.scorer, self.tolerance, self.model, self.revision = scorer, tolerance, model, revision
        self.pairs_scored = 0

    def describe(self) -> str:
        """How the scores were re-scored (a ``check`` note)."""
        bound = "exactly (a float32 graph)" if self.tolerance == 0.0 else f"within {self.tolerance:g} (the variant's parity bound)"
        return f"every replayed score re-scored with the model: equal {bound}"

    def compare(self, pairs: Sequence[ReplayedPair]) -> list[str]:
        """One sentence per recorded score the model does not give (empty: every score follows from the model)."""
        if not pairs:
            return []
        scores = self.scorer.score([(pair.premise, pair.hypothesis) for pair in pairs])
        self.pairs_scored += len(pairs)
        problems = []
        for pair, row in zip(pairs, scores):
            worst = max(abs(float(a) - b) for a, b in zip(row, pair.recorded))
            if worst > self.tolerance:
                kind = "recheck" if pair.localized else "group"
                shown = pair.premise if len(pair.premise) <= 40 else pair.premise[:37] + "..."
                problems.append(
                    f"the model scores the {kind} premise {shown!r} at "
                    f"({float(row[0])!r}, {float(row[1])!r}, {float(row[2])!r}), the record says "
                    f"{pair.recorded!r} (|diff| {worst:.3g} > tolerance {self.tolerance:g})"
                )
        return problems


def rescorer_for(model_dir: str, variant: Optional[str]) -> Rescorer:
    """A :class:`Rescorer` over the model directory (loaded now; golden outputs verified).

    Raises:
        ClaimVerificationError: the directory cannot be loaded.
    """
    from pathlib import Path

    from ..engine.identity import read_manifest_if_present
    from ..engine.manifest import MANIFEST_NAME
    from ..engine.scorer import OnnxScorer
    from ..types import ClaimVerificationError

    directory = Path(model_dir)
    manifest = read_manifest_if_present(directory)
    if manifest is None:
        raise ClaimVerificationError(f"{directory / MANIFEST_NAME} not found: --model-dir must be a directory written by export")
    scorer = OnnxScorer(
        directory, variant=variant, padding="none", verify_golden=True,
        expected_model=manifest.model, expected_revision=manifest.revision,
    )
    tolerance = 0.0
    if variant is not None:
        record = manifest.variants.get(variant)
        description = record.description.lower() if record is not None else ""
        if not (description.startswith("float32") and "int8" not in description and "quantiz" not in description):
            parity = record.parity if record is not None else manifest.parity
            tolerance = parity.max_prob_diff_gate if parity.max_prob_diff_gate is not None else parity.max_abs_prob_diff
    return Rescorer(scorer, tolerance=tolerance, model=manifest.model, revision=manifest.revision)

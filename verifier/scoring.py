"""The scorer seam (docs/decision.md §7) and two in-library scorers for tests and replay.

A *scorer* is any object with ``score(pairs) -> ndarray (n, 3)`` returning
(entailment, contradiction, neutral) probabilities for (premise, hypothesis)
pairs, where the hypothesis is the claim. The ONNX engine
(:class:`verifier.engine.scorer.OnnxScorer`) is one; :class:`ScriptedScorer` (fixed
scores, records what it was asked, like httpx's ``MockTransport``) and
:class:`RecordedScorer` (replays scores recorded from real model runs) are the
others shipped here.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from .engine_identity import EngineIdentity
from .strictjson import loads as strict_loads
from .types import PROBABILITY_SUM_TOLERANCE, ClaimVerificationError

__all__ = ["Scorer", "ScriptedScorer", "RecordedScorer", "validate_scores", "engine_of", "Probabilities"]

#: (entailment, contradiction) with neutral = 1 - both, or all three.
Probabilities = Union[tuple[float, float], tuple[float, float, float]]


@runtime_checkable
class Scorer(Protocol):
    """Scores (premise, hypothesis) pairs with a three-label NLI model.

    ``score(pairs)`` returns a float array of shape ``(len(pairs), 3)`` whose
    rows are (entailment, contradiction, neutral) probabilities in the order of
    ``pairs``. Implementations may batch or reorder internally. Optional
    attributes read by the verifier: ``resolved_revision`` (the commit actually
    loaded) and ``engine_identity`` (:func:`engine_of`).
    """

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:  # pragma: no cover - protocol
        ...


def engine_of(scorer: Any) -> Optional[EngineIdentity]:
    """``scorer.engine_identity`` when it is an :class:`~verifier.engine_identity.EngineIdentity` (the ONNX
    engine's, or a proxy's), else ``None`` (docs/audit.md, "Engine identity").

    Raises:
        ClaimVerificationError: reading it failed (a model that does not load: a model failure, never a status).
    """
    try:
        identity = getattr(scorer, "engine_identity", None)
    except ClaimVerificationError:
        raise
    except Exception as exc:
        raise ClaimVerificationError(f"scorer's engine_identity failed: {type(exc).__name__}: {exc}") from exc
    return identity if isinstance(identity, EngineIdentity) else None  # a Mock's made-up attribute names no engine


_LABELS = ("entailment", "contradiction", "neutral")


def _not_summing(row: int, values: np.ndarray) -> ClaimVerificationError:
    return ClaimVerificationError(
        f"scorer returned scores not summing to 1 (rel/abs tolerance {PROBABILITY_SUM_TOLERANCE:g}) "
        f"at row {row}: {values.tolist()} (claim verifier probabilities must be normalized to [0, 1])"
    )


def _row_sums_to_one(entailment: float, contradiction: float, neutral: float) -> bool:
    """The reference's per-group check: ``math.isclose(e + c + n, 1, rel_tol=1e-5, abs_tol=1e-5)``,
    summed left to right in (entailment, contradiction, neutral) order (PRME 0.15.0's
    ``EvidenceGroupScore``; docs/compatibility.md)."""
    return math.isclose(
        entailment + contradiction + neutral, 1.0, rel_tol=PROBABILITY_SUM_TOLERANCE, abs_tol=PROBABILITY_SUM_TOLERANCE
    )


def validate_scores(
    scores: object, expected_rows: int, *, columns: Optional[Mapping[str, int]] = None
) -> np.ndarray:
    """Check a scorer's output and return it as a float64 array of shape (n, 3), values unchanged.

    The checks are the reference's (PRME 0.15.0, docs/compatibility.md), and
    nothing is repaired: no clipping, no renormalisation. A row is accepted
    exactly when PRME accepts it: every value finite and within [0, 1], the
    row sum within ``np.allclose(sum, 1, rtol=1e-5, atol=1e-5)`` and
    ``math.isclose(e + c + n, 1, rel_tol=1e-5, abs_tol=1e-5)``. A float32
    softmax always passes; values are converted to float64 exactly, so recorded
    scores replay bit for bit.

    Args:
        scores: what the scorer returned: an array-like of shape ``(n, 3)`` of
            (entailment, contradiction, neutral) rows, pair order.
        expected_rows: ``n``, the number of pairs scored.
        columns: where ``entailment``, ``contradiction`` and ``neutral`` are in a row, for a
            model's raw rows in its own label order (PRME's ``_label_indexes``); ``None``: rows are
            already (entailment, contradiction, neutral). ``np.allclose`` sums a row as it is;
            ``math.isclose`` sums it in (entailment, contradiction, neutral) order, as PRME does
            after picking the columns (its ``EvidenceGroupScore``).

    Raises:
        ClaimVerificationError: not an array of real numbers (complex, bool,
            strings and objects are refused), the wrong shape, a non-finite
            value ("must return three finite probabilities per group"), a value
            outside [0, 1] or a row not summing to 1 ("probabilities must be
            normalized to [0, 1]"). The message names the first offending row.
    """
    try:
        raw = np.asarray(scores)
    except Exception as exc:  # arbitrary objects can fail conversion in arbitrary ways
        raise ClaimVerificationError(f"scorer returned something that is not an array: {exc}") from exc
    if raw.dtype.kind not in "fiu":
        raise ClaimVerificationError(
            f"scorer returned {raw.dtype} values; expected real numbers (float or integer)"
        )
    # A private float64 copy: a scorer may reuse its output buffer on the next call.
    array = np.array(raw, dtype=np.float64, copy=True)
    if array.shape != (expected_rows, 3):
        raise ClaimVerificationError(
            f"scorer returned scores of shape {array.shape}, expected ({expected_rows}, 3): "
            "the claim verifier must return three finite probabilities per group"
        )
    if expected_rows == 0:
        return array
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ClaimVerificationError(
            f"scorer returned non-finite scores at row {row}: {array[row].tolist()} "
            "(the claim verifier must return three finite probabilities per group)"
        )
    bounded = np.asarray(((array >= 0.0) & (array <= 1.0)).all(axis=1))
    in_range = [bool(ok) for ok in bounded.reshape(-1)]
    close = np.asarray(np.isclose(array.sum(axis=1), 1.0, rtol=PROBABILITY_SUM_TOLERANCE, atol=PROBABILITY_SUM_TOLERANCE))
    summed = [bool(ok) for ok in close.reshape(-1)]
    # PRME's order: its _predict_sync checks every raw row (range, then np.allclose), and only then
    # does its EvidenceGroupScore check each row's e + c + n (math.isclose).
    for row in range(expected_rows):
        if not in_range[row]:
            raise ClaimVerificationError(
                f"scorer returned scores outside [0, 1] at row {row}: {array[row].tolist()} "
                "(claim verifier probabilities must be normalized to [0, 1])"
            )
        if not summed[row]:
            raise _not_summing(row, array[row])
    picks = (0, 1, 2) if columns is None else tuple(columns[name] for name in _LABELS)
    for row in range(expected_rows):
        entailment, contradiction, neutral = (float(array[row, index]) for index in picks)
        if not _row_sums_to_one(entailment, contradiction, neutral):
            raise _not_summing(row, array[row])
    return array


def _as_row(value: Probabilities) -> tuple[float, float, float]:
    if len(value) == 2:
        entailment, contradiction = float(value[0]), float(value[1])
        neutral = 1.0 - entailment - contradiction
        if neutral < 0.0 and math.isclose(neutral, 0.0, abs_tol=1e-12):
            neutral = 0.0
        return entailment, contradiction, neutral
    if len(value) == 3:
        return float(value[0]), float(value[1]), float(value[2])
    raise ValueError(f"scripted probabilities need 2 or 3 values, got {value!r}")


#: ``ScriptedScorer``'s keys: premises, (premise, hypothesis) pairs or both. A union of mappings,
#: because ``Mapping`` is invariant in its key: a ``dict[str, ...]`` is no ``Mapping[str | tuple, ...]``.
ScriptedScores = Union[
    Mapping[str, Probabilities], Mapping[tuple[str, str], Probabilities], Mapping[Union[str, tuple[str, str]], Probabilities]
]


class ScriptedScorer:
    """A scorer with fixed probabilities per premise, recording every call.

    Args:
        scores: premise text → ``(entailment, contradiction)`` (neutral is the
            rest) or ``(entailment, contradiction, neutral)``. A key may also be
            a ``(premise, hypothesis)`` tuple, which wins over a premise key.
        default: probabilities for premises not in ``scores``; ``None`` makes an
            unknown premise a ``KeyError`` (a test asked for something unplanned).
        resolved_revision: reported to the verifier as the loaded revision.

    Attributes:
        calls: one list of (premise, hypothesis) pairs per ``score`` call.

    Example:
        >>> scorer = ScriptedScorer({"The deployment date is May 4.": (0.98, 0.01)}, default=(0.02, 0.01))
        >>> scorer.score([("The deployment date is May 4.", "The deployment is May 4.")]).round(2).tolist()
        [[0.98, 0.01, 0.01]]
    """

    def __init__(
        self,
        scores: Optional[ScriptedScores] = None,
        *,
        default: Optional[Probabilities] = None,
        resolved_revision: Optional[str] = None,
    ) -> None:
        self._scores = {key: _as_row(value) for key, value in (scores or {}).items()}
        self._default = _as_row(default) if default is not None else None
        self.resolved_revision = resolved_revision
        self.calls: list[list[tuple[str, str]]] = []
        self._lock = threading.Lock()

    @property
    def premises(self) -> list[str]:
        """Every premise sent, in call order."""
        return [premise for call in self.calls for premise, _ in call]

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Return the scripted (n, 3) float64 probabilities for ``pairs``.

        Raises:
            KeyError: a premise has no scripted score and there is no default.
        """
        rows = []
        for premise, hypothesis in pairs:
            row = self._scores.get((premise, hypothesis)) or self._scores.get(premise) or self._default
            if row is None:
                raise KeyError(f"no scripted score for premise {premise!r}")
            rows.append(row)
        with self._lock:
            self.calls.append([(premise, hypothesis) for premise, hypothesis in pairs])
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)


class RecordedScorer:
    """Replays probabilities recorded from real model runs, keyed by (premise, hypothesis).

    Args:
        records: ``(premise, hypothesis)`` → (entailment, contradiction, neutral).
        resolved_revision: the revision the recording was made with.

    Raises (from :meth:`score`):
        ClaimVerificationError: a pair was never recorded (the replay diverged).
    """

    def __init__(
        self,
        records: Mapping[tuple[str, str], Sequence[float]],
        *,
        resolved_revision: Optional[str] = None,
    ) -> None:
        self._records = {key: _as_row(tuple(value)) for key, value in records.items()}  # type: ignore[arg-type]
        self.resolved_revision = resolved_revision

    @classmethod
    def from_jsonl(cls, path: Path, *, resolved_revision: Optional[str] = None) -> "RecordedScorer":
        """Load records from JSON Lines with keys premise, hypothesis, entailment, contradiction, neutral.

        Raises:
            ValueError: a line is not valid JSON or lacks a key (message names the line number).
        """
        records: dict[tuple[str, str], Sequence[float]] = {}
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    item = strict_loads(line)
                    key = (str(item["premise"]), str(item["hypothesis"]))
                    records[key] = (
                        float(item["entailment"]),
                        float(item["contradiction"]),
                        float(item["neutral"]),
                    )
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}:{number}: invalid score record: {exc}") from exc
        return cls(records, resolved_revision=resolved_revision)

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Return the recorded (n, 3) float64 probabilities for ``pairs``."""
        rows = []
        for index, (premise, hypothesis) in enumerate(pairs):
            row = self._records.get((premise, hypothesis))
            if row is None:
                raise ClaimVerificationError(
                    f"pair {index} was not recorded: premise={premise!r} hypothesis={hypothesis!r}"
                )
            rows.append(row)
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)

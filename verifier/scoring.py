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

import json
import math
import threading
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from .types import PROBABILITY_SUM_TOLERANCE, ClaimVerificationError

__all__ = ["Scorer", "ScriptedScorer", "RecordedScorer", "validate_scores", "score_tolerance", "Probabilities"]

#: (entailment, contradiction) with neutral = 1 - both, or all three.
Probabilities = Union[tuple[float, float], tuple[float, float, float]]


@runtime_checkable
class Scorer(Protocol):
    """Scores (premise, hypothesis) pairs with a three-label NLI model.

    ``score(pairs)`` returns a float array of shape ``(len(pairs), 3)`` whose
    rows are (entailment, contradiction, neutral) probabilities in the order of
    ``pairs``. Implementations may batch or reorder internally. Optional
    attributes read by the verifier: ``resolved_revision`` (the commit actually
    loaded).
    """

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:  # pragma: no cover - protocol
        ...


def score_tolerance(dtype: "np.dtype[Any]") -> float:
    """How far a scorer's probabilities may stray from [0, 1] and from summing to 1.

    ``max(1e-5, 8 × machine epsilon of dtype)``: 1e-5 (the result models' own
    tolerance, docs/decision.md §1) for float32/float64 and integers, and
    about 7.8e-3 for float16, whose rounding alone moves a row's sum that far.
    """
    eps = float(np.finfo(dtype).eps) if np.issubdtype(dtype, np.floating) else 0.0
    return max(PROBABILITY_SUM_TOLERANCE, 8.0 * eps)


def validate_scores(scores: object, expected_rows: int) -> np.ndarray:
    """Check a scorer's output and return it as a float64 array of shape (n, 3).

    Rounding is forgiven within :func:`score_tolerance` of the input dtype: a
    value in [-tol, 0) or (1, 1 + tol] is clipped into [0, 1] (e.g. a neutral of
    -2.8e-17 computed as ``1 - e - c``), and a row whose sum is within tol of 1
    but not within 1e-5 (float16 rounding) is divided by its sum. Rows already
    in [0, 1] and summing to 1 within 1e-5 are returned bit for bit, so
    recorded scores replay exactly.

    Raises:
        ClaimVerificationError: not an array of real numbers (complex, bool,
            strings and objects are refused), wrong shape,
            non-finite values, a value outside [-tol, 1 + tol], or a row not
            summing to 1 within tol (docs/decision.md §2). The message names the
            first offending row.
    """
    try:
        raw = np.asarray(scores)
    except Exception as exc:  # arbitrary objects can fail conversion in arbitrary ways
        raise ClaimVerificationError(f"scorer returned something that is not an array: {exc}") from exc
    if raw.dtype.kind not in "fiu":
        raise ClaimVerificationError(
            f"scorer returned {raw.dtype} values; expected real numbers (float or integer)"
        )
    tolerance = score_tolerance(raw.dtype)
    # A private float64 copy: a scorer may reuse its output buffer on the next call.
    array = np.array(raw, dtype=np.float64, copy=True)
    if array.shape != (expected_rows, 3):
        raise ClaimVerificationError(
            f"scorer returned scores of shape {array.shape}, expected ({expected_rows}, 3)"
        )
    if expected_rows == 0:
        return array
    finite = np.isfinite(array).all(axis=1)
    if not finite.all():
        row = int(np.argmin(finite))
        raise ClaimVerificationError(f"scorer returned non-finite scores at row {row}: {array[row].tolist()}")
    in_range = ((array >= -tolerance) & (array <= 1.0 + tolerance)).all(axis=1)
    if not in_range.all():
        row = int(np.argmin(in_range))
        raise ClaimVerificationError(f"scorer returned scores outside [0, 1] at row {row}: {array[row].tolist()}")
    np.clip(array, 0.0, 1.0, out=array)
    sums = array.sum(axis=1)
    sums_ok = np.abs(sums - 1.0) <= tolerance
    if not sums_ok.all():
        row = int(np.argmin(sums_ok))
        raise ClaimVerificationError(
            f"scorer returned scores not summing to 1 (±{tolerance:g}) at row {row}: "
            f"{array[row].tolist()}"
        )
    loose = np.abs(sums - 1.0) > PROBABILITY_SUM_TOLERANCE
    if loose.any():
        array[loose] /= sums[loose, None]
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
        scores: Optional[Mapping[Union[str, tuple[str, str]], Probabilities]] = None,
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
                    item = json.loads(line)
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

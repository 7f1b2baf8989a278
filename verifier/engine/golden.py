"""``golden.json``: fixed pairs with their PyTorch reference logits, and the one re-check against them.

The exporter scores a fixed set of (premise, hypothesis) pairs with PyTorch
and writes them, with the runtime token ids and the float32 logits, to
``golden.json`` (format 1, see docs/model-directory.md)::

    {
      "format_version": 1,
      "labels": ["contradiction", "entailment", "neutral"],   # logit column order
      "max_length": 512, "pad_token_id": 0,
      "inputs": ["input_ids", "attention_mask"],              # ONNX graph inputs
      "atol": 0.0001,
      "pairs": [
        {"index": 0, "category": "short", "premise": "...", "hypothesis": "...",
         "input_ids": [1, ...], "token_type_ids": [0, ...],   # truncated, special tokens included
         "logits": [4.81, -12.2, -6.7]},                      # PyTorch float32 reference, raw logits
        ...
      ]
    }

Everything that later re-checks a model against it — the runtime's
``verify_golden``, the exporter re-verifying an existing directory, the
variant gates, the benchmarks — parses it with :func:`parse_golden` and
compares with :func:`compare_to_golden`, which collects every failure into
one :class:`GoldenComparison` before anyone decides. :func:`softmax` is the
one softmax of the project (the engine's probabilities use it too).

This module imports numpy and pydantic only (no onnxruntime, no torch).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..strictjson import loads as strict_loads
from .manifest import ParityReport

__all__ = [
    "GOLDEN_NAME",
    "GOLDEN_FORMAT_VERSION",
    "DEFAULT_GOLDEN_ATOL",
    "GoldenFormatError",
    "GoldenRecord",
    "Golden",
    "GoldenComparison",
    "parse_golden",
    "read_golden",
    "write_golden",
    "softmax",
    "compare_to_golden",
    "quote_indices",
]

#: File name of the golden set inside an exported model directory.
GOLDEN_NAME = "golden.json"
#: The only ``format_version`` this module reads and writes.
GOLDEN_FORMAT_VERSION = 1
#: Logit tolerance used when neither the parity report nor ``golden.json`` records one.
DEFAULT_GOLDEN_ATOL = 1e-4
#: Largest number of pair indices quoted in one message.
_MAX_QUOTED_INDICES = 16


class GoldenFormatError(ValueError):
    """``golden.json`` is not a format-1 golden file (the message says what is wrong)."""


def quote_indices(indices: Sequence[int]) -> str:
    """``[3, 9, 12]``, or ``[3, 9, …] (40 pairs)`` past 16 indices, for messages.

    Example:
        >>> quote_indices([3, 9, 12])
        '[3, 9, 12]'
    """
    shown = [int(i) for i in list(indices)[:_MAX_QUOTED_INDICES]]
    if len(indices) <= _MAX_QUOTED_INDICES:
        return str(shown)
    return f"{str(shown)[:-1]}, …] ({len(indices)} pairs)"


@dataclass(frozen=True)
class GoldenRecord:
    """One golden pair: its texts, the recorded runtime token ids and the PyTorch logits.

    Attributes:
        premise, hypothesis: the pair's texts.
        logits: float32 PyTorch logits, one per label, in :attr:`Golden.labels` order.
        input_ids: runtime token ids recorded at export (``None`` when not recorded).
        token_type_ids: recorded token type ids (``None`` when not recorded).
        category: a free label for reports (``short``, ``long-both``, ...).
    """

    premise: str
    hypothesis: str
    logits: tuple[float, ...]
    input_ids: Optional[tuple[int, ...]] = None
    token_type_ids: Optional[tuple[int, ...]] = None
    category: str = ""


@dataclass(frozen=True)
class Golden:
    """A parsed ``golden.json``.

    Attributes:
        labels: the logit column order of every record.
        records: the golden pairs, in file order (at least one).
        atol: the export gate's max |Δlogit| (``None`` when not recorded).
        max_length, pad_token_id, inputs: the export settings it was made with.
    """

    labels: tuple[str, ...]
    records: tuple[GoldenRecord, ...]
    atol: Optional[float] = None
    max_length: Optional[int] = None
    pad_token_id: Optional[int] = None
    inputs: Optional[tuple[str, ...]] = None
    #: A grounding export's whole grounding record (its manifest's, as JSON), so an edited template, support
    #: column, label tokens or chunking in ``manifest.json`` is refused at open (docs/grounding.md); ``None``
    #: for NLI, whose golden.json is as before.
    grounding: Optional[dict[str, Any]] = None

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The (premise, hypothesis) texts, in file order."""
        return [(record.premise, record.hypothesis) for record in self.records]

    @property
    def recorded_ids(self) -> list[Optional[tuple[int, ...]]]:
        """The recorded runtime token ids per pair (``None`` where not recorded)."""
        return [record.input_ids for record in self.records]

    def logits(self, labels: Optional[Sequence[str]] = None) -> np.ndarray:
        """The reference logits as float64 (n, k), columns in ``labels`` order (default: :attr:`labels`).

        Raises:
            GoldenFormatError: ``labels`` is not a reordering of :attr:`labels`.
        """
        values = np.asarray([record.logits for record in self.records], dtype=np.float64)
        if labels is None:
            return values
        wanted = tuple(labels)
        if len(wanted) != len(self.labels) or set(wanted) != set(self.labels):
            raise GoldenFormatError(f"labels {list(self.labels)} differ from the manifest's {list(wanted)}")
        return values[:, [self.labels.index(label) for label in wanted]]

    def to_json(self) -> dict[str, Any]:
        """The format-1 JSON document (see the module docstring)."""
        pairs = []
        for index, record in enumerate(self.records):
            item: dict[str, Any] = {
                "index": index,
                "category": record.category,
                "premise": record.premise,
                "hypothesis": record.hypothesis,
            }
            if record.input_ids is not None:
                item["input_ids"] = list(record.input_ids)
            if record.token_type_ids is not None:
                item["token_type_ids"] = list(record.token_type_ids)
            item["logits"] = list(record.logits)
            pairs.append(item)
        document: dict[str, Any] = {"format_version": GOLDEN_FORMAT_VERSION, "labels": list(self.labels)}
        if self.max_length is not None:
            document["max_length"] = self.max_length
        if self.pad_token_id is not None:
            document["pad_token_id"] = self.pad_token_id
        if self.inputs is not None:
            document["inputs"] = list(self.inputs)
        if self.atol is not None:
            document["atol"] = self.atol
        if self.grounding is not None:
            document["grounding"] = self.grounding
        document["pairs"] = pairs
        return document


def _int_tuple(value: Any, where: str) -> Optional[tuple[int, ...]]:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, int) and not isinstance(item, bool) for item in value):
        raise GoldenFormatError(f"{where} must be a list of integers")
    return tuple(value)


def _finite_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise GoldenFormatError(f"{where} must be a finite number")
    return float(value)


def parse_golden(data: "bytes | str") -> Golden:
    """Parse a format-1 ``golden.json`` document.

    Args:
        data: the file's bytes (UTF-8) or text.

    Returns:
        The parsed :class:`Golden` (at least one pair, one logit per label).

    Raises:
        GoldenFormatError: not JSON, not a format-1 object, no pairs, or a pair
            without string texts or with the wrong number of finite logits (the
            message names the pair index).
    """
    try:
        document: Any = strict_loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise GoldenFormatError(f"not JSON: {exc}") from None
    version = document.get("format_version") if isinstance(document, dict) else None
    if type(version) is not int or version != GOLDEN_FORMAT_VERSION:  # not true or 1.0 (== 1)
        raise GoldenFormatError("not a format-1 golden.json object")
    labels = document.get("labels")
    if not isinstance(labels, list) or not labels or not all(isinstance(label, str) for label in labels):
        raise GoldenFormatError("labels must be a non-empty list of strings")
    items = document.get("pairs")
    if not isinstance(items, list) or not items:
        raise GoldenFormatError("pairs must be a non-empty list")
    records: list[GoldenRecord] = []
    for index, item in enumerate(items):
        where = f"golden pair {index}"
        if not isinstance(item, dict):
            raise GoldenFormatError(f"{where} is not an object")
        premise, hypothesis = item.get("premise"), item.get("hypothesis")
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise GoldenFormatError(f"{where} is not a pair of strings")
        logits = item.get("logits")
        if not isinstance(logits, list) or len(logits) != len(labels):
            raise GoldenFormatError(f"{where} needs {len(labels)} logits, one per label")
        records.append(
            GoldenRecord(
                premise=premise,
                hypothesis=hypothesis,
                logits=tuple(_finite_number(value, f"{where} logits") for value in logits),
                input_ids=_int_tuple(item.get("input_ids"), f"{where} input_ids"),
                token_type_ids=_int_tuple(item.get("token_type_ids"), f"{where} token_type_ids"),
                category=str(item.get("category", "")),
            )
        )
    atol = document.get("atol")
    max_length = document.get("max_length")
    pad_token_id = document.get("pad_token_id")
    inputs = document.get("inputs")
    if inputs is not None and (not isinstance(inputs, list) or not all(isinstance(name, str) for name in inputs)):
        raise GoldenFormatError("inputs must be a list of strings")
    for name, value in (("max_length", max_length), ("pad_token_id", pad_token_id)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise GoldenFormatError(f"{name} must be a non-negative integer")
    grounding = document.get("grounding")
    if grounding is not None and not isinstance(grounding, dict):
        raise GoldenFormatError("grounding must be an object")
    return Golden(
        labels=tuple(labels),
        records=tuple(records),
        atol=_finite_number(atol, "atol") if atol is not None else None,
        max_length=max_length,
        pad_token_id=pad_token_id,
        inputs=tuple(inputs) if inputs is not None else None,
        grounding=grounding,
    )


def read_golden(path: "str | os.PathLike[str]") -> Golden:
    """Read and parse a ``golden.json`` file.

    Raises:
        OSError: the file cannot be read.
        GoldenFormatError: as :func:`parse_golden`.
    """
    return parse_golden(Path(path).read_bytes())


def write_golden(path: "str | os.PathLike[str]", golden: Golden) -> Path:
    """Write ``golden`` as compact UTF-8 JSON (non-ASCII kept) plus a newline; return the path."""
    target = Path(path)
    text = json.dumps(golden.to_json(), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    target.write_text(text + "\n", encoding="utf-8")
    return target


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax computed in float64 after subtracting each row's maximum.

    Args:
        logits: finite array of shape (n, k), any float dtype.

    Returns:
        float64 array of shape (n, k); each row sums to 1 (within float64 rounding)
        and no entry overflows, however large the logits.

    Raises:
        ValueError: ``logits`` is not two-dimensional.

    Example:
        >>> softmax(np.array([[1000.0, 1000.0]])).tolist()
        [[0.5, 0.5]]
    """
    values = np.asarray(logits, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"logits must have shape (n, k), got {values.shape}")
    shifted = values - values.max(axis=1, keepdims=True) if values.size else values
    exps = np.exp(shifted)
    result: np.ndarray = exps / exps.sum(axis=1, keepdims=True)
    return result


@dataclass(frozen=True)
class GoldenComparison:
    """Every golden pair of one or more runs compared with the PyTorch reference.

    Attributes:
        logit_diff: float64 (n,): per pair, the largest |Δlogit| over every run
            (NaN when a run gave a non-finite logit).
        prob_diff: float64 (n,): the same after :func:`softmax`.
        argmax_agrees: bool (n,): every run picks the reference's argmax.
        changed_ids: indices of pairs whose runtime token ids differ from the
            recorded ones.
        finite: every logit of every run is finite.
        run_prob_spread: the largest |Δprobability| between the first run (each pair alone) and
            any other run of the same pair (other batch layouts): how far this graph's own
            scores move with the other pairs of a padded batch (``None``: one run only).
    """

    logit_diff: np.ndarray
    prob_diff: np.ndarray
    argmax_agrees: np.ndarray
    changed_ids: tuple[int, ...]
    finite: bool
    run_prob_spread: Optional[float] = None

    @property
    def pairs(self) -> int:
        """Number of golden pairs compared."""
        return int(self.logit_diff.shape[0])

    @property
    def max_abs_logit_diff(self) -> float:
        """Largest |Δlogit| over every pair and run (NaN if any logit was non-finite)."""
        return float(np.max(self.logit_diff)) if self.finite else float("nan")

    @property
    def max_abs_prob_diff(self) -> float:
        """Largest |Δprobability| over every pair and run (NaN if any logit was non-finite)."""
        return float(np.max(self.prob_diff)) if self.finite else float("nan")

    @property
    def argmax_agreement(self) -> float:
        """Fraction of pairs whose argmax agrees with the reference in every run."""
        return float(np.mean(self.argmax_agrees))

    @property
    def token_ids_identical(self) -> bool:
        """Whether every recorded token id sequence was reproduced."""
        return not self.changed_ids

    def failures(
        self,
        *,
        atol: Optional[float] = None,
        max_prob_diff: Optional[float] = None,
        min_argmax_agreement: float = 1.0,
    ) -> list[str]:
        """Every way these runs miss the given gate (empty when they pass).

        Args:
            atol: largest allowed |Δlogit| (``None``: not gated).
            max_prob_diff: largest allowed |Δprobability| (``None``: not gated).
            min_argmax_agreement: smallest allowed argmax agreement; at 1.0 the
                message lists the pairs that flipped.
        """
        found: list[str] = []
        if self.changed_ids:
            found.append(
                f"tokenizer.json no longer gives the recorded token ids for golden pairs {quote_indices(self.changed_ids)}"
            )
        if not self.finite:
            found.append("non-finite logits on the golden pairs")
        if atol is not None and not self.max_abs_logit_diff <= atol:
            worst = int(np.nanargmax(self.logit_diff)) if np.isfinite(self.logit_diff).any() else 0
            found.append(f"max |Δlogit| {self.max_abs_logit_diff:.3g} > atol {atol:g} (worst: golden pair {worst})")
        if max_prob_diff is not None and not self.max_abs_prob_diff <= max_prob_diff:
            worst = int(np.nanargmax(self.prob_diff)) if np.isfinite(self.prob_diff).any() else 0
            found.append(f"max |Δprob| {self.max_abs_prob_diff:.3g} > {max_prob_diff:g} (worst: golden pair {worst})")
        if min_argmax_agreement >= 1.0:
            flipped = np.flatnonzero(~self.argmax_agrees).tolist()
            if flipped:
                found.append(f"argmax differs for golden pairs {quote_indices(flipped)}")
        elif not self.argmax_agreement >= min_argmax_agreement:
            found.append(f"argmax agreement {self.argmax_agreement:.1%} < {min_argmax_agreement:.1%}")
        return found

    def parity_report(
        self, *, passed: bool, atol: Optional[float] = None, max_prob_diff_gate: Optional[float] = None
    ) -> ParityReport:
        """The manifest's summary of this comparison, with the verdict and gate it was judged by."""
        return ParityReport(
            passed=passed,
            pairs=self.pairs,
            atol=atol,
            max_prob_diff_gate=max_prob_diff_gate,
            max_abs_logit_diff=self.max_abs_logit_diff,
            max_abs_prob_diff=self.max_abs_prob_diff,
            argmax_agreement=self.argmax_agreement,
            token_ids_identical=self.token_ids_identical,
            run_prob_spread=self.run_prob_spread if self.finite else None,
        )


def compare_to_golden(
    reference: np.ndarray,
    runs: Sequence[np.ndarray],
    *,
    token_ids: Optional[Sequence[Sequence[int]]] = None,
    recorded_ids: Optional[Sequence[Optional[Sequence[int]]]] = None,
) -> GoldenComparison:
    """Compare one or more runs' logits with the reference logits, pair by pair.

    Args:
        reference: float (n, k) reference logits (PyTorch), columns in the same
            order as every run.
        runs: one or more float (n, k) logit arrays (e.g. each pair alone and
            all pairs in one padded batch); the first is the reference of ``run_prob_spread``.
        token_ids: the runtime token ids each pair was scored with.
        recorded_ids: the ids recorded at export (``None`` entries are skipped).

    Returns:
        A :class:`GoldenComparison`; nothing is decided here.

    Raises:
        ValueError: no runs, or a run whose shape differs from ``reference``.
    """
    expected = np.asarray(reference, dtype=np.float64)
    if not runs:
        raise ValueError("compare_to_golden needs at least one run")
    arrays = [np.asarray(run, dtype=np.float64) for run in runs]
    for array in arrays:
        if array.shape != expected.shape:
            raise ValueError(f"logits of shape {array.shape} do not match the golden shape {expected.shape}")
    finite = bool(all(np.isfinite(array).all() for array in arrays) and np.isfinite(expected).all())
    with np.errstate(invalid="ignore", over="ignore"):
        logit_diff = np.max([np.abs(array - expected).max(axis=1) for array in arrays], axis=0)
        reference_probs = softmax(np.nan_to_num(expected))
        prob_diff = np.max(
            [np.abs(softmax(np.nan_to_num(array)) - reference_probs).max(axis=1) for array in arrays], axis=0
        )
    if not finite:
        bad = ~np.all([np.isfinite(array).all(axis=1) for array in arrays], axis=0)
        logit_diff = np.where(bad, np.nan, logit_diff)
        prob_diff = np.where(bad, np.nan, prob_diff)
    spread = None
    if len(arrays) > 1 and finite:
        first = softmax(arrays[0])
        spread = float(max(np.abs(softmax(array) - first).max() for array in arrays[1:]))
    target = expected.argmax(axis=1)
    agrees = np.all([array.argmax(axis=1) == target for array in arrays], axis=0)
    changed: list[int] = []
    if token_ids is not None and recorded_ids is not None:
        changed = [
            index
            for index, (ids, recorded) in enumerate(zip(token_ids, recorded_ids))
            if recorded is not None and tuple(ids) != tuple(recorded)
        ]
    return GoldenComparison(
        logit_diff=logit_diff,
        prob_diff=prob_diff,
        argmax_agrees=np.asarray(agrees, dtype=bool),
        changed_ids=tuple(changed),
        finite=finite,
        run_prob_spread=spread,
    )

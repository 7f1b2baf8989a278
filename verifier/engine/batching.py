"""Batching: sort encoded pairs by length, cut them into token-budgeted padded batches, run them.

The cost of one onnxruntime run on CPU grows with rows × padded length, plus
a fixed cost per call. :func:`plan_batches` finds the cheapest cut of the
length-sorted sequences under a token budget; :func:`run_batches` pads each
batch to its own longest sequence (int64), runs it through a caller-supplied
function and returns the logits in caller order with the token counts, as a
typed :class:`BatchedLogits`.

Pure numpy: no onnxruntime here (the run function is the engine's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

import numpy as np

from ..options import BATCH_OVERHEAD_TOKENS, DEFAULT_MAX_BATCH_TOKENS
from .tokenization import pad_encodings

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Encoding  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "BATCH_OVERHEAD_TOKENS", "BatchedLogits", "BatchRun", "EncodedPairs", "ScorerStats", "plan_batches", "run_batches",
]


#: Runs one padded batch: ``(feed, indices, number, total) -> logits (rows, k)``, where
#: ``feed`` maps input names to int64 (rows, length) arrays, ``indices`` are the batch's
#: positions in the caller's list and ``number`` is 0-based out of ``total`` batches.
BatchRun = Callable[[Mapping[str, np.ndarray], np.ndarray, int, int], np.ndarray]


@dataclass(frozen=True)
class BatchedLogits:
    """Logits of one :func:`run_batches` call and what it cost.

    Attributes:
        logits: float32 (n, k) in caller order, model label order.
        real_tokens: tokens of the encodings (special tokens included, after truncation).
        padded_tokens: tensor cells fed to the model (rows × padded length, summed).
        batches: onnxruntime runs.
        truncated_pairs: encodings cut to the maximum length.
        overflowing: bool (n,), caller order: which encodings were cut (``None``: not recorded).
    """

    logits: np.ndarray
    real_tokens: int
    padded_tokens: int
    batches: int
    truncated_pairs: int
    overflowing: Optional[np.ndarray] = None


@dataclass(frozen=True)
class EncodedPairs:
    """Validated (premise, hypothesis) pairs with their encodings, ready to be run (possibly merged with others).

    Made by :meth:`verifier.engine.scorer.OnnxScorer.encode`; run by
    :meth:`verifier.engine.scorer.OnnxScorer.score_encoded`. A pair's encoding depends
    only on that pair, so encoded pairs from different callers can be
    concatenated (:meth:`concat`) and run in one pass.

    Attributes:
        pairs: the pairs, caller order.
        encodings: one ``tokenizers.Encoding`` per pair (same order).
    """

    pairs: tuple[tuple[str, str], ...]
    encodings: tuple["Encoding", ...]

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def tokens(self) -> int:
        """Tokens of the encodings (special tokens included, after truncation)."""
        return sum(len(encoding.ids) for encoding in self.encodings)

    @classmethod
    def concat(cls, parts: Sequence["EncodedPairs"]) -> "EncodedPairs":
        """The pairs of ``parts`` one after another (rows of part ``k`` follow those of part ``k-1``)."""
        return cls(
            pairs=tuple(pair for part in parts for pair in part.pairs),
            encodings=tuple(encoding for part in parts for encoding in part.encodings),
        )


@dataclass(frozen=True)
class ScorerStats:
    """Cumulative counters of one :class:`OnnxScorer` (a snapshot; see :attr:`verifier.engine.scorer.OnnxScorer.stats`).

    Attributes:
        calls: :meth:`~verifier.engine.scorer.OnnxScorer.score` / ``score_logits`` calls with
            at least one pair.
        pairs: pairs asked for.
        unique_pairs: distinct pairs actually run (identical pairs of one call run once).
        batches: onnxruntime ``run`` calls.
        real_tokens: tokens of the encoded pairs (special tokens included, after
            truncation).
        padded_tokens: tensor cells fed to the model (rows × padded length summed
            over batches), i.e. real tokens plus padding.
        truncated_pairs: distinct pairs cut to the manifest's ``max_length``
            (``longest_first``), as the reference CrossEncoder also does silently; pairs
            served from the score store count as when they were scored (the row keeps the flag).
        store_hits: distinct pairs served from the score store (docs/score-store.md),
            not run; the token and batch counters count only what ran.
        store_misses: distinct pairs looked up in the score store and run (then stored).
        store_rejected: stored rows that failed their MAC (written without this store's key:
            forged, edited or from a verifier before the MAC), size or finiteness (counted as misses too).
        store_errors: score store operations that failed and were skipped (logged).
    """

    calls: int = 0
    pairs: int = 0
    unique_pairs: int = 0
    batches: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0
    truncated_pairs: int = 0
    store_hits: int = 0
    store_misses: int = 0
    store_rejected: int = 0
    store_errors: int = 0

    @property
    def padding_overhead(self) -> float:
        """``padded_tokens / real_tokens`` (≥ 1.0; 1.0 means no padding; 1.0 before any call)."""
        if self.real_tokens == 0:
            return 1.0
        return self.padded_tokens / self.real_tokens

    def as_dict(self) -> dict[str, float]:
        """The counters and ``padding_overhead`` as a JSON-ready dict."""
        return {
            "calls": self.calls,
            "pairs": self.pairs,
            "unique_pairs": self.unique_pairs,
            "batches": self.batches,
            "real_tokens": self.real_tokens,
            "padded_tokens": self.padded_tokens,
            "truncated_pairs": self.truncated_pairs,
            "padding_overhead": self.padding_overhead,
            "store_hits": self.store_hits,
            "store_misses": self.store_misses,
            "store_rejected": self.store_rejected,
            "store_errors": self.store_errors,
        }

    def plus(
        self, *, pairs: int, unique_pairs: int, run: BatchedLogits, store: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
    ) -> "ScorerStats":
        """These counters after one more call of ``pairs`` pairs that ran as ``run``; ``store`` is the
        score store's (hits, misses, rejected, errors, hits that had been truncated) for it."""
        return ScorerStats(
            calls=self.calls + 1,
            pairs=self.pairs + pairs,
            unique_pairs=self.unique_pairs + unique_pairs,
            batches=self.batches + run.batches,
            real_tokens=self.real_tokens + run.real_tokens,
            padded_tokens=self.padded_tokens + run.padded_tokens,
            truncated_pairs=self.truncated_pairs + run.truncated_pairs + store[4],
            store_hits=self.store_hits + store[0],
            store_misses=self.store_misses + store[1],
            store_rejected=self.store_rejected + store[2],
            store_errors=self.store_errors + store[3],
        )


def plan_batches(
    lengths: Sequence[int] | np.ndarray,
    *,
    max_batch_tokens: int,
    max_batch_size: Optional[int] = None,
    batch_overhead_tokens: float = BATCH_OVERHEAD_TOKENS,
) -> list[np.ndarray]:
    """Group sequences into padded batches: sorted by length, bounded by a token budget.

    Sequences are sorted by ascending length (ties in input order) and cut
    into contiguous batches that minimise ``Σ rows × longest length +
    batch_overhead_tokens × batches`` — the tensor cells onnxruntime computes
    plus a fixed cost per ``run`` call — subject to ``rows × longest length ≤
    max_batch_tokens`` and ``rows ≤ max_batch_size``. (Dynamic programming
    over the sorted lengths, exact; O(n × rows per batch) numpy work.) A
    sequence longer than the budget on its own gets a batch of its own.

    Args:
        lengths: token count of each sequence (≥ 0).
        max_batch_tokens: token budget of one padded batch (≥ 1).
        max_batch_size: optional cap on rows per batch (≥ 1).
        batch_overhead_tokens: cost of one extra batch in padded-token units
            (≥ 0; 0 minimises padding alone, a large value packs batches full).

    Returns:
        Index arrays (int64, into ``lengths``), one per batch, in ascending length
        order; together they hold every index exactly once.

    Raises:
        ValueError: a budget or cap below 1, a negative overhead or a negative length.

    Example:
        >>> [b.tolist() for b in plan_batches([5, 2, 9, 2], max_batch_tokens=15)]
        [[1, 3, 0], [2]]
        >>> [b.tolist() for b in plan_batches([5, 2, 9, 2], max_batch_tokens=15, batch_overhead_tokens=0)]
        [[1, 3], [0], [2]]
    """
    if max_batch_tokens < 1:
        raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
    if max_batch_size is not None and max_batch_size < 1:
        raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
    if not batch_overhead_tokens >= 0:
        raise ValueError(f"batch_overhead_tokens must be >= 0, got {batch_overhead_tokens}")
    sizes = np.asarray(lengths, dtype=np.int64).reshape(-1)
    count = int(sizes.size)
    if count and int(sizes.min()) < 0:
        raise ValueError("lengths must be >= 0")
    order = np.argsort(sizes, kind="stable")
    widths = sizes[order]
    row_cap = max_batch_size if max_batch_size is not None else max(count, 1)
    # best[j]: least cost of the first j sorted sequences; start[j]: where the last batch begins.
    best = np.zeros(count + 1, dtype=np.float64)
    start = np.zeros(count + 1, dtype=np.int64)
    rows_desc = np.arange(min(row_cap, count), 0, -1, dtype=np.float64)  # rows for starts lo..end
    for end in range(count):
        width = int(widths[end])  # ascending: the last sequence of a batch is its longest
        max_rows = row_cap if width == 0 else max(1, min(row_cap, max_batch_tokens // width))
        low = max(0, end + 1 - max_rows)
        span = end + 1 - low
        costs = best[low : end + 1] + rows_desc[len(rows_desc) - span :] * width
        choice = int(np.argmin(costs))  # first minimum: the larger batch on ties
        best[end + 1] = costs[choice] + batch_overhead_tokens
        start[end + 1] = low + choice
    batches: list[np.ndarray] = []
    end = count
    while end > 0:
        begin = int(start[end])
        batches.append(order[begin:end])
        end = begin
    batches.reverse()
    return batches


def run_batches(
    encodings: Sequence["Encoding"],
    run: BatchRun,
    *,
    width: int,
    pad_token_id: int,
    with_token_type_ids: bool,
    max_batch_tokens: int,
    max_batch_size: Optional[int] = None,
    batch_overhead_tokens: float = BATCH_OVERHEAD_TOKENS,
) -> BatchedLogits:
    """Plan, pad and run ``encodings``; logits come back in caller order.

    Args:
        encodings: tokenized pairs (``tokenizers.Encoding``).
        run: runs one padded batch (see :data:`BatchRun`); it raises on failure.
        width: number of logit columns (labels).
        pad_token_id: pad id for ``input_ids`` (``attention_mask`` is 0 there).
        with_token_type_ids: also feed ``token_type_ids`` (pad 0).
        max_batch_tokens, max_batch_size, batch_overhead_tokens: as :func:`plan_batches`.

    Returns:
        A :class:`BatchedLogits`.
    """
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
    batches = plan_batches(
        lengths,
        max_batch_tokens=max_batch_tokens,
        max_batch_size=max_batch_size,
        batch_overhead_tokens=batch_overhead_tokens,
    )
    out = np.empty((len(encodings), width), dtype=np.float32)
    padded = 0
    for number, indices in enumerate(batches):
        feed = pad_encodings(
            [encodings[i] for i in indices], pad_token_id=pad_token_id, with_token_type_ids=with_token_type_ids
        )
        padded += int(feed["input_ids"].size)
        out[indices] = run(feed, indices, number, len(batches))
    overflowing = np.fromiter((bool(encoding.overflowing) for encoding in encodings), dtype=bool, count=len(encodings))
    return BatchedLogits(
        logits=out,
        real_tokens=int(lengths.sum()),
        padded_tokens=padded,
        batches=len(batches),
        truncated_pairs=int(overflowing.sum()),
        overflowing=overflowing,
    )

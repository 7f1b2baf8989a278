"""Torch-free ONNX scorer: (premise, hypothesis) pairs in, NLI probabilities out.

:class:`OnnxScorer` is the default implementation of the scorer seam of
SPEC §7: ``score(pairs) -> ndarray (n, 3)`` of (entailment, contradiction,
neutral) probabilities, rows in caller order, whatever the model's own label
order. It loads one exported model directory (``python -m export``; see
DESIGN.md, "The exported model directory") and runs it with onnxruntime and
the Rust ``tokenizers`` library. Neither torch nor transformers is ever
imported, and onnxruntime/tokenizers are imported only when the model is first
needed, so ``import verifier`` stays fast.

Pipeline of one :meth:`OnnxScorer.score` call::

    pairs ─▶ validate ─▶ tokenize all at once (Rust, truncation longest_first)
          ─▶ sort by token length ─▶ batches bounded by a token budget
          ─▶ pad each batch to its own longest (int64) ─▶ onnxruntime
          ─▶ check shape / finiteness ─▶ stable softmax (float64)
          ─▶ columns to (entailment, contradiction, neutral) ─▶ caller order

Exceptions::

    RuntimeError
     └── ClaimVerificationError   missing or tampered model directory, bad label
                                  set, unusable graph, unavailable provider,
                                  golden mismatch, tokenizer or onnxruntime
                                  failure, malformed or non-finite logits
    ValueError                    bad constructor argument, or a pair that is not
                                  a 2-tuple of str (names its index)

Thread safety: loading happens once, under a lock, however many threads or
asyncio tasks (via :func:`asyncio.to_thread`) ask at once; afterwards the
loaded state is read-only. ``InferenceSession.run`` is thread-safe, and the
tokenizer is never reconfigured after loading, so :meth:`OnnxScorer.score`
may be called concurrently.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np
from pydantic import ValidationError

from .manifest import MANIFEST_NAME, NLI_LABELS, Manifest, read_manifest, verify_files
from .options import RuntimeOptions
from .tokenization import encode_pairs, load_tokenizer, pad_encodings
from .types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from onnxruntime import InferenceSession, SessionOptions  # type: ignore[import-untyped,unused-ignore]
    from tokenizers import Tokenizer  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "OUTPUT_LABELS",
    "GRAPH_OPTIMIZATION_LEVELS",
    "DEFAULT_PROVIDERS",
    "GOLDEN_NAME",
    "BATCH_OVERHEAD_TOKENS",
    "OnnxScorer",
    "ScorerStats",
    "plan_batches",
    "stable_softmax",
]

_LOG = logging.getLogger(__name__)

#: Column order of :meth:`OnnxScorer.score` (SPEC preamble: probabilities are always
#: reported as entailment, contradiction, neutral).
OUTPUT_LABELS: tuple[str, str, str] = ("entailment", "contradiction", "neutral")
#: Accepted ``graph_optimization_level`` names (onnxruntime ``GraphOptimizationLevel``).
GRAPH_OPTIMIZATION_LEVELS: tuple[str, ...] = ("disable", "basic", "extended", "all")
#: Execution providers used when none are requested: CPU only (STYLE §7).
DEFAULT_PROVIDERS: tuple[str, ...] = ("CPUExecutionProvider",)
#: Golden pairs + PyTorch reference logits written by the exporter (``export/parity.py``).
GOLDEN_NAME = "golden.json"
#: The Hugging Face config of the exported model (its ``id2label`` is the label order).
CONFIG_NAME = "config.json"
#: ``config.json`` key the seeded test-model builders set (``export/testmodels.py``).
RANDOM_WEIGHTS_MARKER = "claim_verifier_random_weights"
#: Cost of one onnxruntime ``run`` call in padded-token units, for :func:`plan_batches`.
#: Measured for the DeBERTa-v3-base configuration (onnxruntime 1.32, 2 CPU cores): a
#: run's fixed cost (dispatch, relative-position projections) is ~7-20 tokens of work.
BATCH_OVERHEAD_TOKENS = 16.0
#: Logit tolerance for ``verify_golden`` when the manifest's parity report records none.
_DEFAULT_GOLDEN_ATOL = 1e-4
#: Graph inputs the engine knows how to feed (all int64, shape (batch, length)).
_KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
#: Largest number of pair indices quoted in one error message.
_MAX_QUOTED_INDICES = 16


@dataclass(frozen=True)
class ScorerStats:
    """Cumulative counters of one :class:`OnnxScorer` (a snapshot; see :attr:`OnnxScorer.stats`).

    Attributes:
        calls: :meth:`OnnxScorer.score` / :meth:`OnnxScorer.score_logits` calls with
            at least one pair.
        pairs: pairs asked for.
        unique_pairs: distinct pairs actually run (identical pairs of one call run once).
        batches: onnxruntime ``run`` calls.
        real_tokens: tokens of the encoded pairs (special tokens included, after
            truncation).
        padded_tokens: tensor cells fed to the model (rows × padded length summed
            over batches), i.e. real tokens plus padding.
        truncated_pairs: distinct pairs cut to the manifest's ``max_length``
            (``longest_first``), as the reference CrossEncoder also does silently.
    """

    calls: int = 0
    pairs: int = 0
    unique_pairs: int = 0
    batches: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0
    truncated_pairs: int = 0

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
        }


def stable_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax computed in float64 after subtracting each row's maximum.

    Args:
        logits: finite array of shape (n, k), any float dtype.

    Returns:
        float64 array of shape (n, k); each row sums to 1 (within float64 rounding)
        and no entry overflows, however large the logits.

    Example:
        >>> stable_softmax(np.array([[1000.0, 1000.0]])).tolist()
        [[0.5, 0.5]]
    """
    values = np.asarray(logits, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"logits must have shape (n, k), got {values.shape}")
    shifted = values - values.max(axis=1, keepdims=True) if values.size else values
    exps = np.exp(shifted)
    return exps / exps.sum(axis=1, keepdims=True)


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


def _quote_indices(indices: Sequence[int]) -> str:
    """``[3, 9, 12]`` or ``[3, 9, …] (40 pairs)`` for error messages."""
    shown = [int(i) for i in indices[:_MAX_QUOTED_INDICES]]
    if len(indices) <= _MAX_QUOTED_INDICES:
        return str(shown)
    return f"{str(shown)[:-1]}, …] ({len(indices)} pairs)"


def _validate_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Copy ``pairs`` to a list of ``(premise, hypothesis)`` tuples; ``ValueError`` names a bad index."""
    if isinstance(pairs, (str, bytes)):
        raise ValueError("pairs must be a sequence of (premise, hypothesis) tuples, not a string")
    checked: list[tuple[str, str]] = []
    for index, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(
                f"pair {index} must be a (premise, hypothesis) 2-tuple of str, got {type(pair).__name__}"
                + (f" of length {len(pair)}" if isinstance(pair, (tuple, list)) else "")
            )
        premise, hypothesis = pair
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise ValueError(
                f"pair {index} must be a (premise, hypothesis) 2-tuple of str, "
                f"got ({type(premise).__name__}, {type(hypothesis).__name__})"
            )
        checked.append((premise, hypothesis))
    return checked


def _session_options(
    *,
    intra_op_num_threads: Optional[int],
    inter_op_num_threads: Optional[int],
    graph_optimization_level: str,
) -> "SessionOptions":
    """The one place onnxruntime ``SessionOptions`` are built (STYLE §7).

    Sequential execution (one model, one request: the parallelism is intra-op),
    onnxruntime's own thread defaults unless threads are given, errors-only
    logging.
    """
    import onnxruntime as ort

    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[graph_optimization_level]
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only; onnxruntime warnings are noise here
    if intra_op_num_threads is not None:
        options.intra_op_num_threads = intra_op_num_threads
    if inter_op_num_threads is not None:
        options.inter_op_num_threads = inter_op_num_threads
    return options


def _create_hint(expected_model: Optional[str], expected_revision: Optional[str], model_dir: Path) -> str:
    """How to create a model directory, for 'missing' errors."""
    model = expected_model or "<hub id>"
    revision = expected_revision or "<revision>"
    return (
        f"create it with `python -m export --model {model} --revision {revision} --output {model_dir}`, "
        f"or load an existing export with ClaimVerifier.from_model_dir(<dir>) / $CLAIM_VERIFIER_MODEL_DIR "
        f"(offline: `python -m export --smoke` writes a random-weights plumbing model)"
    )


@dataclass(frozen=True)
class _Golden:
    """The parts of ``golden.json`` the runtime re-checks."""

    pairs: tuple[tuple[str, str], ...]
    logits: np.ndarray  # float64 (n, k): PyTorch reference, columns in ``labels`` order
    labels: tuple[str, ...]
    input_ids: tuple[Optional[tuple[int, ...]], ...]  # recorded runtime token ids, per pair
    atol: Optional[float]


def _read_golden(path: Path) -> _Golden:
    """Parse ``golden.json`` (format 1, written by ``export/parity.py``)::

        {"format_version": 1, "labels": [...], "atol": 1e-4, ...,
         "pairs": [{"premise": ..., "hypothesis": ..., "input_ids": [...], "logits": [...]}, ...]}

    Raises:
        OSError: unreadable file.
        ValueError, KeyError, TypeError: malformed content (json errors are ValueErrors).
    """
    data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format_version") != 1:
        raise ValueError("not a format-1 golden.json object")
    pairs: list[tuple[str, str]] = []
    rows: list[list[float]] = []
    ids: list[Optional[tuple[int, ...]]] = []
    for index, item in enumerate(data["pairs"]):
        premise, hypothesis = item["premise"], item["hypothesis"]
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise ValueError(f"golden pair {index} is not a pair of strings")
        pairs.append((premise, hypothesis))
        rows.append([float(value) for value in item["logits"]])
        recorded = item.get("input_ids")
        ids.append(tuple(int(value) for value in recorded) if recorded is not None else None)
    labels = tuple(str(label) for label in data["labels"])
    logits = np.asarray(rows, dtype=np.float64)
    if not pairs or logits.shape != (len(pairs), len(labels)):
        raise ValueError(f"{len(pairs)} golden pairs with logits of shape {logits.shape} for labels {list(labels)}")
    atol = data.get("atol")
    return _Golden(
        pairs=tuple(pairs),
        logits=logits,
        labels=labels,
        input_ids=tuple(ids),
        atol=float(atol) if atol is not None else None,
    )


@dataclass(frozen=True)
class _Loaded:
    """Everything :meth:`OnnxScorer._ensure_loaded` builds; read-only afterwards."""

    manifest: Manifest
    model_file: str
    session: "InferenceSession"
    tokenizer: "Tokenizer"
    input_names: tuple[str, ...]
    output_name: str
    with_token_type_ids: bool
    permutation: np.ndarray  # model columns in OUTPUT_LABELS order, int64 (3,)
    providers: tuple[str, ...]


class OnnxScorer:
    """Scores (premise, hypothesis) pairs with one exported NLI cross-encoder on onnxruntime.

    Construction is cheap and touches no file: the model directory is read,
    verified and loaded on first use (or :meth:`load`), once, under a lock.

    Args:
        model_dir: exported model directory (``manifest.json``, ``model.onnx``,
            ``tokenizer.json``, ``config.json``, ``golden.json``).
        variant: name of an ONNX variant recorded in the manifest (``None``: the
            manifest's float32 ``model_file``).
        providers: onnxruntime execution providers in priority order (default
            :data:`DEFAULT_PROVIDERS`, CPU only); each must be available.
        intra_op_num_threads: onnxruntime intra-op threads (``None``: onnxruntime's
            default, one per physical core).
        inter_op_num_threads: onnxruntime inter-op threads (``None``: default).
        graph_optimization_level: one of :data:`GRAPH_OPTIMIZATION_LEVELS`.
        max_batch_tokens: token budget of one padded batch (rows × padded length).
        max_batch_size: optional cap on rows per batch.
        verify_golden: at load, re-score ``golden.json`` and refuse the model when
            its logits differ from the PyTorch reference beyond the manifest's
            parity tolerance.
        expected_model: when given, the manifest's ``model`` must equal it.
        expected_revision: when given, and the manifest records a revision (a hub
            export; local and smoke exports have none), the manifest's requested
            or resolved revision must equal it.

    Raises:
        ValueError: an argument out of range (checked here, without loading).

    Example:
        >>> scorer = OnnxScorer(Path("models/nli-deberta-v3-base-6c749ce3425c"))  # doctest: +SKIP
        >>> probs = scorer.score([("The launch is Tuesday.", "The launch is on Tuesday.")])  # doctest: +SKIP
        >>> probs.shape, probs.dtype  # doctest: +SKIP
        ((1, 3), dtype('float64'))
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        variant: Optional[str] = None,
        providers: Optional[Sequence[str]] = None,
        intra_op_num_threads: Optional[int] = None,
        inter_op_num_threads: Optional[int] = None,
        graph_optimization_level: str = "all",
        max_batch_tokens: int = 8192,
        max_batch_size: Optional[int] = None,
        verify_golden: bool = False,
        expected_model: Optional[str] = None,
        expected_revision: Optional[str] = None,
    ) -> None:
        if graph_optimization_level not in GRAPH_OPTIMIZATION_LEVELS:
            raise ValueError(
                f"graph_optimization_level must be one of {list(GRAPH_OPTIMIZATION_LEVELS)}, "
                f"got {graph_optimization_level!r}"
            )
        for name, value in (
            ("intra_op_num_threads", intra_op_num_threads),
            ("inter_op_num_threads", inter_op_num_threads),
            ("max_batch_size", max_batch_size),
        ):
            if value is not None and (isinstance(value, bool) or int(value) < 1):
                raise ValueError(f"{name} must be >= 1 or None, got {value!r}")
        if isinstance(max_batch_tokens, bool) or int(max_batch_tokens) < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens!r}")
        if providers is not None:
            if isinstance(providers, str):
                raise ValueError("providers must be a sequence of provider names, not a string")
            if not providers:
                raise ValueError("providers must not be empty (None means CPU only)")
        self._model_dir = Path(model_dir)
        self._variant = variant
        self._providers = tuple(providers) if providers is not None else DEFAULT_PROVIDERS
        self._intra_op_num_threads = intra_op_num_threads
        self._inter_op_num_threads = inter_op_num_threads
        self._graph_optimization_level = graph_optimization_level
        self._max_batch_tokens = int(max_batch_tokens)
        self._max_batch_size = int(max_batch_size) if max_batch_size is not None else None
        self._verify_golden = verify_golden
        self._expected_model = expected_model
        self._expected_revision = expected_revision
        self._load_lock = threading.Lock()
        self._loaded: Optional[_Loaded] = None
        self._stats_lock = threading.Lock()
        self._stats = ScorerStats()

    @classmethod
    def from_options(
        cls,
        options: RuntimeOptions,
        model: str,
        revision: str,
        *,
        max_batch_size: Optional[int] = None,
    ) -> "OnnxScorer":
        """Build a scorer for ``model`` at ``revision`` from runtime settings (nothing is loaded).

        The directory is ``options.resolve_model_dir(model, revision)``; at load
        the manifest must name the same model, and ``revision`` must be its
        requested or resolved revision when it records one (an audit result must
        never name a model that did not run).

        Args:
            options: runtime settings (directory, variant, providers, threads,
                optimisation level, token budget, golden check).
            model: hub id the decision configuration names.
            revision: revision the decision configuration names.
            max_batch_size: optional cap on rows per batch (e.g. the decision
                configuration's ``batch_size``).

        Raises:
            ValueError: an option out of range.
        """
        return cls(
            options.resolve_model_dir(model, revision),
            variant=options.variant,
            providers=options.providers,
            intra_op_num_threads=options.intra_op_num_threads,
            inter_op_num_threads=options.inter_op_num_threads,
            graph_optimization_level=options.graph_optimization_level,
            max_batch_tokens=options.max_batch_tokens,
            max_batch_size=max_batch_size,
            verify_golden=options.verify_golden,
            expected_model=model,
            expected_revision=revision,
        )

    # ------------------------------------------------------------------ properties

    @property
    def model_dir(self) -> Path:
        """The exported model directory (no loading)."""
        return self._model_dir

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (no loading)."""
        return self._loaded is not None

    @property
    def manifest(self) -> Manifest:
        """The verified manifest (loads the model)."""
        return self._ensure_loaded().manifest

    @property
    def model(self) -> str:
        """Model id recorded in the manifest (loads the model)."""
        return self.manifest.model

    @property
    def requested_revision(self) -> Optional[str]:
        """Revision the export asked for (loads the model)."""
        return self.manifest.requested_revision

    @property
    def resolved_revision(self) -> Optional[str]:
        """Commit the export actually downloaded (loads the model)."""
        return self.manifest.resolved_revision

    @property
    def labels(self) -> tuple[str, ...]:
        """The model's own label order: logit column ``i`` of :meth:`score_logits` is ``labels[i]``."""
        return self.manifest.labels

    @property
    def input_names(self) -> tuple[str, ...]:
        """Graph input names in graph order (loads the model)."""
        return self._ensure_loaded().input_names

    @property
    def providers(self) -> tuple[str, ...]:
        """Execution providers the session actually uses (loads the model)."""
        return self._ensure_loaded().providers

    @property
    def stats(self) -> ScorerStats:
        """Snapshot of the cumulative counters (debug hook; see :class:`ScorerStats`)."""
        with self._stats_lock:
            return self._stats

    def reset_stats(self) -> ScorerStats:
        """Zero the counters; return the snapshot they had."""
        with self._stats_lock:
            previous, self._stats = self._stats, ScorerStats()
        return previous

    def __repr__(self) -> str:
        state = "loaded" if self._loaded is not None else "not loaded"
        variant = f", variant={self._variant!r}" if self._variant else ""
        return f"OnnxScorer({str(self._model_dir)!r}{variant}, {state})"

    # ------------------------------------------------------------------ scoring

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Entailment, contradiction and neutral probabilities of (premise, hypothesis) pairs.

        Identical pairs are run once. A pair's probabilities do not depend on
        the other pairs of the call (each batch is padded with an attention
        mask), so any batching gives the same numbers.

        Args:
            pairs: ``(premise, hypothesis)`` 2-tuples of str; in SPEC terms the
                premise is the evidence text and the hypothesis the claim.

        Returns:
            float64 array of shape (n, 3): column 0 entailment, 1 contradiction,
            2 neutral (:data:`OUTPUT_LABELS`), whatever the model's label order;
            row ``i`` belongs to ``pairs[i]``; each row sums to 1 within 1e-12.
            Shape ``(0, 3)`` for no pairs (the model is not loaded for that).

        Raises:
            ValueError: a pair is not a 2-tuple of str (the message names its index).
            ClaimVerificationError: the model cannot be loaded (missing or tampered
                directory, bad labels, unavailable provider, golden mismatch), or
                tokenization or inference fails, or the model returns logits of the
                wrong shape or non-finite logits (the message names the batch and
                the pair indices).

        Example:
            >>> scorer.score([("The launch is Tuesday.", "The launch is on Tuesday.")]).shape  # doctest: +SKIP
            (1, 3)
        """
        logits, permutation = self._score(pairs)
        if logits.shape[0] == 0:
            return np.zeros((0, len(OUTPUT_LABELS)), dtype=np.float64)
        return stable_softmax(logits)[:, permutation]

    def score_logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw logits in the model's own label order (:attr:`labels`), rows in caller order.

        Args:
            pairs: as :meth:`score`.

        Returns:
            float32 array of shape (n, 3); column ``i`` is ``labels[i]``.
            Shape ``(0, 3)`` for no pairs.

        Raises:
            ValueError, ClaimVerificationError: as :meth:`score`.
        """
        return self._score(pairs)[0]

    def load(self) -> "OnnxScorer":
        """Load now instead of on first use; return ``self``.

        Raises:
            ClaimVerificationError: the model cannot be loaded (see :meth:`score`).
        """
        self._ensure_loaded()
        return self

    def _score(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Logits (n, 3) float32 in caller order and the column permutation to OUTPUT_LABELS."""
        checked = _validate_pairs(pairs)
        if not checked:
            return np.zeros((0, len(OUTPUT_LABELS)), dtype=np.float32), np.arange(len(OUTPUT_LABELS))
        loaded = self._ensure_loaded()
        first_seen: dict[tuple[str, str], int] = {}
        inverse = np.fromiter(
            (first_seen.setdefault(pair, len(first_seen)) for pair in checked), dtype=np.int64, count=len(checked)
        )
        unique = list(first_seen)
        logits, real, padded, batches, truncated = self._run(loaded, unique)
        if len(unique) != len(checked):
            logits = logits[inverse]
        with self._stats_lock:
            old = self._stats
            self._stats = ScorerStats(
                calls=old.calls + 1,
                pairs=old.pairs + len(checked),
                unique_pairs=old.unique_pairs + len(unique),
                batches=old.batches + batches,
                real_tokens=old.real_tokens + real,
                padded_tokens=old.padded_tokens + padded,
                truncated_pairs=old.truncated_pairs + truncated,
            )
        if _LOG.isEnabledFor(logging.DEBUG):
            _LOG.debug(
                "scored %d pairs (%d unique) in %d batches: %d real tokens, %d padded (overhead %.3f)",
                len(checked), len(unique), batches, real, padded, padded / real if real else 1.0,
            )
        return logits, loaded.permutation

    def _run(self, loaded: _Loaded, pairs: list[tuple[str, str]]) -> tuple[np.ndarray, int, int, int, int]:
        """Logits (n, k) float32 in caller order, plus real tokens, padded tokens, batches, truncated pairs."""
        try:
            encodings = encode_pairs(loaded.tokenizer, pairs)
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise ClaimVerificationError(f"tokenization of {len(pairs)} pairs failed: {exc}") from exc
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        batches = plan_batches(
            lengths, max_batch_tokens=self._max_batch_tokens, max_batch_size=self._max_batch_size
        )
        width = len(loaded.manifest.labels)
        out = np.empty((len(pairs), width), dtype=np.float32)
        padded = 0
        for number, indices in enumerate(batches):
            batch_encodings = [encodings[i] for i in indices]
            feed = pad_encodings(
                batch_encodings,
                pad_token_id=loaded.manifest.pad_token_id,
                with_token_type_ids=loaded.with_token_type_ids,
            )
            padded += int(feed["input_ids"].size)
            logits = self._run_batch(loaded, feed, number, len(batches), indices)
            out[indices] = logits
        truncated = sum(1 for encoding in encodings if encoding.overflowing)
        if truncated:
            _LOG.debug("%d of %d pairs truncated to %d tokens", truncated, len(pairs), loaded.manifest.max_length)
        return out, int(lengths.sum()), padded, len(batches), truncated

    def _run_batch(
        self,
        loaded: _Loaded,
        feed: Mapping[str, np.ndarray],
        number: int,
        total: int,
        indices: np.ndarray,
    ) -> np.ndarray:
        """Run one padded batch; return its (rows, k) float32 logits or raise with the cause."""
        rows = len(indices)
        where = f"batch {number + 1}/{total} (pair indices {_quote_indices(indices.tolist())})"
        inputs = {name: feed[name] for name in loaded.input_names}
        try:
            outputs = loaded.session.run([loaded.output_name], inputs)
        except Exception as exc:  # onnxruntime raises its own Exception subclasses
            raise ClaimVerificationError(f"onnxruntime failed on {where}: {exc}") from exc
        logits = np.asarray(outputs[0])
        width = len(loaded.manifest.labels)
        if logits.shape != (rows, width):
            raise ClaimVerificationError(
                f"model returned logits of shape {logits.shape} for {where}; expected ({rows}, {width})"
            )
        if not np.issubdtype(logits.dtype, np.floating):
            raise ClaimVerificationError(f"model returned {logits.dtype} logits for {where}; expected float")
        finite = np.isfinite(logits).all(axis=1)
        if not finite.all():
            bad = indices[~finite].tolist()
            raise ClaimVerificationError(f"model returned non-finite logits in {where} for pairs {_quote_indices(bad)}")
        return logits.astype(np.float32, copy=False)

    # ------------------------------------------------------------------ loading

    def _ensure_loaded(self) -> _Loaded:
        """Load once under the lock; later calls return the same read-only state.

        A failed load is not cached: the next call tries again (after the
        directory has been fixed, say) and raises again if it is still broken.
        """
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> _Loaded:
        model_dir = self._model_dir
        hint = _create_hint(self._expected_model, self._expected_revision, model_dir)
        if not model_dir.is_dir():
            raise ClaimVerificationError(f"model directory {model_dir} does not exist; {hint}")
        if not (model_dir / MANIFEST_NAME).is_file():
            raise ClaimVerificationError(
                f"model directory {model_dir} has no {MANIFEST_NAME} (not an export, or the export "
                f"did not pass its parity gate); {hint}"
            )
        try:
            manifest = read_manifest(model_dir)
        except (ValidationError, ValueError, OSError) as exc:
            raise ClaimVerificationError(f"{model_dir / MANIFEST_NAME} is not a valid manifest: {exc}") from exc
        self._check_identity(manifest)
        self._check_labels(manifest)
        model_file = self._model_file(manifest)
        problems = verify_files(model_dir, manifest)
        if problems:
            raise ClaimVerificationError(
                f"model directory {model_dir} does not match its manifest "
                f"(tampered or incomplete; re-export it): " + "; ".join(problems)
            )
        random_weights = self._check_config(manifest)
        if random_weights:
            _LOG.warning("%s holds a random-weights model: its probabilities mean nothing", model_dir)
        tokenizer = self._load_tokenizer(manifest)
        session, providers = self._create_session(model_dir / model_file)
        input_names, output_name, with_token_type_ids = self._graph_io(session, manifest, model_file)
        permutation = np.array([manifest.labels.index(label) for label in OUTPUT_LABELS], dtype=np.int64)
        loaded = _Loaded(
            manifest=manifest,
            model_file=model_file,
            session=session,
            tokenizer=tokenizer,
            input_names=input_names,
            output_name=output_name,
            with_token_type_ids=with_token_type_ids,
            permutation=permutation,
            providers=providers,
        )
        if self._verify_golden:
            self._check_golden(loaded)
        _LOG.debug(
            "loaded %s (%s @ %s) from %s with %s",
            model_file, manifest.model, manifest.resolved_revision, model_dir, ", ".join(providers),
        )
        return loaded

    def _check_identity(self, manifest: Manifest) -> None:
        if self._expected_model is not None and manifest.model != self._expected_model:
            raise ClaimVerificationError(
                f"model directory {self._model_dir} holds {manifest.model!r}, but {self._expected_model!r} "
                f"was requested; export the requested model or configure model={manifest.model!r}"
            )
        recorded = {manifest.requested_revision, manifest.resolved_revision, manifest.revision} - {None}
        if self._expected_revision is not None and self._expected_revision not in recorded:
            raise ClaimVerificationError(
                f"model directory {self._model_dir} holds {manifest.model!r} at revision "
                f"{manifest.revision!r} (commit {manifest.resolved_revision!r}), but revision "
                f"{self._expected_revision!r} was requested; configure "
                f"ClaimVerificationConfig(model={manifest.model!r}, revision={manifest.revision!r}) "
                f"or use ClaimVerifier.from_model_dir({str(self._model_dir)!r})"
            )

    def _check_config(self, manifest: Manifest) -> bool:
        """Cross-check the manifest against the sha256-verified ``config.json``.

        The label order the engine permutes by must be ``id2label`` of the
        config the parity gate ran, so an edited ``manifest.json`` cannot swap
        entailment and contradiction. Returns whether the model has random
        weights (manifest flag or the test-model builders' config marker).

        Raises:
            ClaimVerificationError: unreadable config, or labels that differ.
        """
        if CONFIG_NAME not in manifest.files:
            return manifest.random_weights
        path = self._model_dir / CONFIG_NAME
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
            id2label = {int(key): str(value).strip().lower() for key, value in config["id2label"].items()}
            labels = tuple(id2label[index] for index in range(len(id2label)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ClaimVerificationError(f"cannot read id2label from {path}: {exc}") from exc
        if labels != tuple(manifest.labels):
            raise ClaimVerificationError(
                f"{self._model_dir / MANIFEST_NAME} records labels {list(manifest.labels)} but {path} has "
                f"id2label {list(labels)}; the directory was edited after export — re-export it"
            )
        return manifest.random_weights or bool(config.get(RANDOM_WEIGHTS_MARKER, False))

    def _check_labels(self, manifest: Manifest) -> None:
        labels = manifest.labels
        if len(labels) != len(NLI_LABELS) or set(labels) != NLI_LABELS:
            raise ClaimVerificationError(
                f"model in {self._model_dir} has labels {list(labels)}; a three-label NLI model with exactly "
                f"{sorted(NLI_LABELS)} (any order) is required"
            )

    def _model_file(self, manifest: Manifest) -> str:
        if self._variant is None:
            name = manifest.model_file
        else:
            record = manifest.variants.get(self._variant)
            if record is None:
                raise ClaimVerificationError(
                    f"variant {self._variant!r} is not in {self._model_dir / MANIFEST_NAME}; "
                    f"available: {sorted(manifest.variants) or 'none'}"
                )
            name = record.file
        if name not in manifest.files:
            raise ClaimVerificationError(
                f"{name} is not recorded in {self._model_dir / MANIFEST_NAME}: refusing an unverified model file"
            )
        return name

    def _load_tokenizer(self, manifest: Manifest) -> "Tokenizer":
        path = self._model_dir / "tokenizer.json"
        try:
            return load_tokenizer(path, max_length=manifest.max_length)
        except FileNotFoundError as exc:
            raise ClaimVerificationError(f"tokenizer.json missing from {self._model_dir}; re-export it") from exc
        except Exception as exc:  # tokenizers raises plain Exception on parse errors
            raise ClaimVerificationError(f"cannot load tokenizer {path}: {exc}") from exc

    def _create_session(self, path: Path) -> tuple["InferenceSession", tuple[str, ...]]:
        import onnxruntime as ort

        available = ort.get_available_providers()
        missing = [p for p in self._providers if p not in available]
        if missing:
            raise ClaimVerificationError(
                f"execution provider(s) {missing} not available in this onnxruntime build; available: {available}"
            )
        options = _session_options(
            intra_op_num_threads=self._intra_op_num_threads,
            inter_op_num_threads=self._inter_op_num_threads,
            graph_optimization_level=self._graph_optimization_level,
        )
        try:
            session = ort.InferenceSession(str(path), sess_options=options, providers=list(self._providers))
        except Exception as exc:  # onnxruntime raises its own Exception subclasses
            raise ClaimVerificationError(f"onnxruntime cannot load {path}: {exc}") from exc
        return session, tuple(session.get_providers())

    def _graph_io(
        self, session: "InferenceSession", manifest: Manifest, model_file: str
    ) -> tuple[tuple[str, ...], str, bool]:
        where = self._model_dir / model_file
        inputs = session.get_inputs()
        names = tuple(node.name for node in inputs)
        unknown = [name for name in names if name not in _KNOWN_INPUTS]
        if unknown or "input_ids" not in names:
            raise ClaimVerificationError(
                f"{where} has inputs {list(names)}; the engine feeds input_ids plus optionally "
                f"{sorted(_KNOWN_INPUTS - {'input_ids'})}"
            )
        for node in inputs:
            if node.type != "tensor(int64)":
                raise ClaimVerificationError(f"{where} input {node.name} has type {node.type}; expected tensor(int64)")
        if set(names) != set(manifest.inputs):
            raise ClaimVerificationError(
                f"{where} has inputs {list(names)} but the manifest records {list(manifest.inputs)}"
            )
        outputs = session.get_outputs()
        output_names = [node.name for node in outputs]
        if "logits" in output_names:
            output = outputs[output_names.index("logits")]
        elif len(outputs) == 1:
            output = outputs[0]
        else:
            raise ClaimVerificationError(f"{where} has outputs {output_names} and none is named 'logits'")
        shape = list(output.shape)
        width = len(manifest.labels)
        if len(shape) != 2 or (isinstance(shape[1], int) and shape[1] != width):
            raise ClaimVerificationError(
                f"{where} output {output.name} has shape {shape}; expected (batch, {width})"
            )
        return names, output.name, "token_type_ids" in names

    def _check_golden(self, loaded: _Loaded) -> None:
        """Re-score ``golden.json``; refuse the model beyond the parity tolerance.

        Checks, collecting every failure before deciding: the runtime token
        ids equal the recorded ones; every argmax agrees; and the gates of the
        parity report (the variant's own for a variant) hold: max |Δlogit|
        against the PyTorch reference ≤ ``atol`` and max |Δprobability| ≤
        ``max_prob_diff_gate``, each when recorded. A report with neither falls
        back to golden.json's ``atol`` (else 1e-4).
        """
        manifest = loaded.manifest
        path = self._model_dir / GOLDEN_NAME
        if GOLDEN_NAME not in manifest.files:
            raise ClaimVerificationError(
                f"verify_golden: {GOLDEN_NAME} is not recorded in the manifest of {self._model_dir}"
            )
        try:
            golden = _read_golden(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ClaimVerificationError(f"verify_golden: cannot read {path}: {exc}") from exc
        if set(golden.labels) != set(manifest.labels) or len(golden.labels) != len(manifest.labels):
            raise ClaimVerificationError(
                f"verify_golden: {path} labels {list(golden.labels)} differ from the manifest's {list(manifest.labels)}"
            )
        reference = golden.logits[:, [golden.labels.index(label) for label in manifest.labels]]
        parity = manifest.parity if self._variant is None else manifest.variants[self._variant].parity
        atol, gate = parity.atol, parity.max_prob_diff_gate
        if atol is None and gate is None:  # an ungated report: golden.json's own tolerance
            atol = golden.atol if golden.atol is not None else _DEFAULT_GOLDEN_ATOL

        failures: list[str] = []
        encodings = encode_pairs(loaded.tokenizer, list(golden.pairs))
        changed = [
            index
            for index, (encoding, recorded) in enumerate(zip(encodings, golden.input_ids))
            if recorded is not None and tuple(encoding.ids) != recorded
        ]
        if changed:
            failures.append(f"tokenizer.json no longer gives the recorded token ids for golden pairs {_quote_indices(changed)}")
        actual = self._run(loaded, list(golden.pairs))[0]
        logit_diff = np.abs(actual.astype(np.float64) - reference).max(axis=1)
        if atol is not None and not float(logit_diff.max()) <= atol:
            worst = int(np.argmax(logit_diff))
            failures.append(f"max |Δlogit| {float(logit_diff.max()):.3g} > atol {atol:g} (worst: golden pair {worst})")
        if gate is not None:
            prob_diff = np.abs(stable_softmax(actual) - stable_softmax(reference)).max(axis=1)
            if not float(prob_diff.max()) <= gate:
                worst = int(np.argmax(prob_diff))
                failures.append(f"max |Δprob| {float(prob_diff.max()):.3g} > {gate:g} (worst: golden pair {worst})")
        flipped = np.flatnonzero(actual.argmax(axis=1) != reference.argmax(axis=1)).tolist()
        if flipped:
            failures.append(f"argmax differs for golden pairs {_quote_indices(flipped)}")
        if failures:
            raise ClaimVerificationError(
                f"verify_golden: {self._model_dir / loaded.model_file} disagrees with its golden.json: "
                + "; ".join(failures)
            )

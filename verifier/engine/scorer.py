"""Torch-free ONNX scorer: (premise, hypothesis) pairs in, NLI probabilities out.

:class:`OnnxScorer` is the default implementation of the scorer seam
(docs/decision.md §7): ``score(pairs) -> ndarray (n, 3)`` of (entailment,
contradiction, neutral) probabilities, rows in caller order, whatever the
model's own label order. It loads one exported model directory
(docs/model-directory.md) and runs it with onnxruntime and the Rust
``tokenizers`` library. Neither torch nor transformers is ever imported, and
onnxruntime/tokenizers are imported only when the model is first needed, so
``import verifier`` stays fast.

Pipeline of one :meth:`OnnxScorer.score` call::

    pairs ─▶ validate ─▶ tokenize all at once (Rust, truncation longest_first)
          ─▶ sort by token length ─▶ batches bounded by a token budget   (verifier.engine.batching)
          ─▶ pad each batch to its own longest (int64) ─▶ onnxruntime   (verifier.engine.session)
          ─▶ check shape / finiteness ─▶ stable softmax (float64)       (verifier.engine.golden.softmax)
          ─▶ columns to (entailment, contradiction, neutral) ─▶ caller order

The model directory is opened and verified by
:meth:`verifier.engine.model_directory.ModelDirectory.open`; the loaded state (files,
tokenizer, session, graph I/O) is a :class:`verifier.engine.loaded.LoadedModel`.

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

import logging
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from .batching import BATCH_OVERHEAD_TOKENS, DEFAULT_MAX_BATCH_TOKENS, BatchedLogits, EncodedPairs, ScorerStats, plan_batches
from .golden import GOLDEN_NAME
from .golden import softmax as stable_softmax
from .handle import ModelHandle
from .loaded import SessionFactory, engine_settings
from .model_directory import OUTPUT_LABELS
from .score_store import DEFAULT_MAX_ROWS, StoreSettings
from .args import check_engine_arguments, validate_pairs
from ..options import PADDING_LAYOUTS, RuntimeOptions, default_batch_overhead_tokens, describe_lookup
from .session import DEFAULT_PROVIDERS, GRAPH_OPTIMIZATION_LEVELS

__all__ = [
    "OUTPUT_LABELS",
    "GRAPH_OPTIMIZATION_LEVELS",
    "DEFAULT_PROVIDERS",
    "GOLDEN_NAME",
    "BATCH_OVERHEAD_TOKENS",
    "OnnxScorer",
    "ScorerStats",
    "SessionFactory",
    "plan_batches",
    "stable_softmax",
]

_LOG = logging.getLogger("verifier.engine")


def _distinct(pairs: Sequence[tuple[str, str]]) -> tuple[dict[tuple[str, str], int], np.ndarray]:
    """Each distinct pair's index in first-seen order, and int64 (n,) the index of each of ``pairs``."""
    first_seen: dict[tuple[str, str], int] = {}
    inverse = np.fromiter((first_seen.setdefault(pair, len(first_seen)) for pair in pairs), dtype=np.int64, count=len(pairs))
    return first_seen, inverse


class OnnxScorer(ModelHandle):
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
        session_config_entries: onnxruntime session config entries (e.g.
            ``{"session.intra_op.allow_spinning": "0"}``), set at load.
        batch_overhead_tokens: cost of one onnxruntime run in padded tokens for
            the batch planner (``None``: :func:`verifier.options.default_batch_overhead_tokens`
            of ``variant``: 16 for float32, 64 for ``int8``, 200 for the OpenVINO variants).
        session_factory: makes the inference session from the verified model file
            (see :data:`SessionFactory`; e.g. to wrap or instrument onnxruntime's).
        enable_cpu_mem_arena: onnxruntime's CPU memory arena (default on; off
            costs memory and speed, see :func:`verifier.engine.session.session_options`).
        enable_mem_pattern: onnxruntime's memory-pattern planning (default off:
            the engine's batch shapes vary; see :func:`verifier.engine.session.session_options`).
        padding: ``"batched"`` (length-sorted padded batches) or ``"none"`` (each pair
            runs alone, unpadded: bit-identical under any load even for graphs whose
            results depend on the batch, e.g. dynamic int8; see docs/serving.md).
        score_cache: a persistent score store file (docs/score-store.md; ``None``: none): distinct
            pairs already scored by this engine configuration are not run again. Opened at load.
        score_cache_max_rows: the store's bound in rows (least recently used rows go first).
        score_cache_key: the store's secret key file (must exist; ``None``: ``score_cache`` + ``.key``,
            created 0600 when missing); rows are authenticated with HMAC-SHA256 under it.
        missing_hint: appended to the load error when ``model_dir`` does not exist (``from_options``
            passes where the default lookup looked, :func:`verifier.options.describe_lookup`).

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
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_batch_size: Optional[int] = None,
        verify_golden: bool = False,
        expected_model: Optional[str] = None,
        expected_revision: Optional[str] = None,
        session_config_entries: Optional[Mapping[str, str]] = None,
        batch_overhead_tokens: Optional[float] = None,
        session_factory: Optional[SessionFactory] = None,
        padding: str = "batched",
        enable_cpu_mem_arena: bool = True,
        enable_mem_pattern: bool = False,
        score_cache: Optional[Path] = None,
        score_cache_max_rows: int = DEFAULT_MAX_ROWS,
        score_cache_key: Optional[Path] = None,
        missing_hint: str = "",
    ) -> None:
        if padding not in PADDING_LAYOUTS:
            raise ValueError(f"padding must be one of {list(PADDING_LAYOUTS)}, got {padding!r}")
        if batch_overhead_tokens is None:
            batch_overhead_tokens = default_batch_overhead_tokens(variant)
        check_engine_arguments(
            graph_optimization_level=graph_optimization_level,
            intra_op_num_threads=intra_op_num_threads,
            inter_op_num_threads=inter_op_num_threads,
            max_batch_size=max_batch_size,
            max_batch_tokens=max_batch_tokens,
            batch_overhead_tokens=batch_overhead_tokens,
            providers=providers,
        )
        session, batching = engine_settings(
            providers=providers, intra_op_num_threads=intra_op_num_threads, inter_op_num_threads=inter_op_num_threads,
            graph_optimization_level=graph_optimization_level, session_config_entries=session_config_entries,
            max_batch_tokens=max_batch_tokens, max_batch_size=max_batch_size, padding=padding,
            batch_overhead_tokens=batch_overhead_tokens, enable_cpu_mem_arena=enable_cpu_mem_arena,
            enable_mem_pattern=enable_mem_pattern, session_factory=session_factory,
        )
        super().__init__(
            Path(model_dir),
            variant=variant,
            session_settings=session,
            batching=batching,
            verify_golden=verify_golden,
            expected_model=expected_model,
            expected_revision=expected_revision,
            padding=padding,
            score_cache=None if score_cache is None else StoreSettings(
                Path(score_cache), int(score_cache_max_rows), None if score_cache_key is None else Path(score_cache_key)),
            missing_hint=missing_hint,
        )

    @classmethod
    def from_options(
        cls,
        options: RuntimeOptions,
        model: str,
        revision: str,
        *,
        max_batch_size: Optional[int] = None,
        missing_hint: Optional[str] = None,
    ) -> "OnnxScorer":
        """Build a scorer for ``model`` at ``revision`` from runtime settings (nothing is loaded).

        The directory is ``options.resolve_model_dir(model, revision)``; at load
        the manifest must name the same model, and ``revision`` must be its
        requested or resolved revision when it records one (an audit result must
        never name a model that did not run).

        Args:
            options: runtime settings (directory, variant, providers, threads,
                optimisation level, session config entries, token budget, golden check).
            model: hub id the decision configuration names.
            revision: revision the decision configuration names.
            max_batch_size: optional cap on rows per batch (e.g. the decision
                configuration's ``batch_size``).
            missing_hint: appended to the load error when the directory does not exist;
                ``None``: where the default lookup looked when ``options`` names no directory.

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
            session_config_entries=options.session_config_entries,
            batch_overhead_tokens=options.batch_overhead_tokens,
            padding=options.padding,
            enable_cpu_mem_arena=options.enable_cpu_mem_arena,
            enable_mem_pattern=options.enable_mem_pattern,
            score_cache=options.score_cache,
            score_cache_max_rows=options.score_cache_max_rows,
            score_cache_key=options.score_cache_key,
            missing_hint=(
                missing_hint if missing_hint is not None
                else describe_lookup(model, revision) if options.model_dir is None else ""
            ),
        )

    # ------------------------------------------------------------------ scoring

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Entailment, contradiction and neutral probabilities of (premise, hypothesis) pairs.

        Identical pairs are run once. A pair's probabilities do not depend on
        the other pairs of the call (each batch is padded with an attention
        mask), so any batching gives the same numbers.

        Args:
            pairs: ``(premise, hypothesis)`` 2-tuples of str; the premise is the
                evidence text and the hypothesis the claim.

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

    def encode(self, pairs: Sequence[tuple[str, str]]) -> EncodedPairs:
        """Validate and tokenize ``pairs`` for :meth:`score_encoded` (loads the model); raises as :meth:`score`."""
        checked = validate_pairs(pairs)
        return EncodedPairs(tuple(checked), tuple(self._ensure_loaded().encode(checked)) if checked else ())

    def score_encoded(self, encoded: EncodedPairs) -> tuple[np.ndarray, BatchedLogits]:
        """:meth:`score` of pairs from :meth:`encode` (possibly merged from several callers), and what the run cost.

        The probabilities equal :meth:`score` of ``encoded.pairs``; identical pairs run once, and
        pairs in the score store not at all (``run`` then counts only what ran).
        """
        loaded = self._ensure_loaded()
        first_seen, inverse = _distinct(encoded.pairs)
        unique = [encoded.encodings[i] for i in np.unique(inverse, return_index=True)[1]]
        store, counts = self._store, (0, 0, 0, 0, 0)
        if store is not None and unique:
            logits, run, call = store.logits(
                list(first_seen), lambda misses: loaded.run_encoded([unique[i] for i in misses], self._batching)
            )
            counts = (call.hits, call.misses, call.rejected, call.errors, call.truncated_hits)
        else:
            run = loaded.run_encoded(unique, self._batching)
            logits = run.logits
        with self._stats_lock:
            self._stats = self._stats.plus(pairs=len(encoded), unique_pairs=len(unique), run=run, store=counts)
        if not len(encoded):
            return np.zeros((0, len(OUTPUT_LABELS)), dtype=np.float64), run
        return stable_softmax(logits[inverse])[:, loaded.directory.permutation], run

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Which ``(premise, hypothesis)`` pairs exceed the model's maximum length (loads the model).

        ``True`` for a pair that :meth:`score` cuts (``longest_first``) to the
        manifest's ``max_length``, so the model never sees all of it. The strict
        policy asks for it through an optional ``truncated`` attribute of the
        scorer (docs/policy.md); a scorer that wraps this one can forward it as is.

        Raises:
            ValueError, ClaimVerificationError: as :meth:`score`.
        """
        checked = validate_pairs(pairs)
        if not checked:
            return []
        return [bool(encoding.overflowing) for encoding in self._ensure_loaded().encode(checked)]

    def _score(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Logits (n, 3) float32 in caller order and the column permutation to OUTPUT_LABELS."""
        checked = validate_pairs(pairs)
        if not checked:
            return np.zeros((0, len(OUTPUT_LABELS)), dtype=np.float32), np.arange(len(OUTPUT_LABELS))
        loaded = self._ensure_loaded()
        first_seen, inverse = _distinct(checked)
        unique = list(first_seen)
        store, counts = self._store, (0, 0, 0, 0, 0)
        if store is not None:
            found, run, call = store.logits(unique, lambda misses: loaded.run([unique[i] for i in misses], self._batching))
            counts = (call.hits, call.misses, call.rejected, call.errors, call.truncated_hits)
        else:
            run = loaded.run(unique, self._batching)
            found = run.logits
        logits = found[inverse] if len(unique) != len(checked) else found
        with self._stats_lock:
            self._stats = self._stats.plus(pairs=len(checked), unique_pairs=len(unique), run=run, store=counts)
        if _LOG.isEnabledFor(logging.DEBUG):
            _LOG.debug(
                "scored %d pairs (%d unique) in %d batches: %d real tokens, %d padded, %d truncated",
                len(checked), len(unique), run.batches, run.real_tokens, run.padded_tokens, run.truncated_pairs,
            )
        return logits, loaded.directory.permutation

"""Torch-free grounding scorer: (document, claim) pairs in, P(support) out (docs/grounding.md).

:class:`GroundingScorer` loads one exported *grounding* model directory
(``manifest.kind == "grounding"``: MiniCheck, FactCG; :mod:`verifier.engine.kinds`)
behind the same seams as :class:`verifier.engine.scorer.OnnxScorer`: the
directory verified by :meth:`~verifier.engine.model_directory.ModelDirectory.open`,
one onnxruntime session (or an OpenVINO variant), the Rust tokenizer, and
token-budgeted, length-sorted, padded batches (:mod:`verifier.engine.batching`).
Only the reading of a pair differs: the manifest's template renders it into one
text (``document + eos + claim`` for MiniCheck), tokenized as a single sequence
and cut from the right at the manifest's ``max_length``; P(support) is the
softmax over the two logit columns, read at the manifest's support column.

Exceptions: ``ClaimVerificationError`` (a ``RuntimeError``) for a missing,
tampered or NLI directory (the message names both kinds) and for any
tokenizer or runtime failure; ``ValueError`` for a bad argument or pair.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from .args import check_engine_arguments, validate_pairs
from .batching import DEFAULT_MAX_BATCH_TOKENS
from .golden import softmax as stable_softmax
from .handle import ModelHandle
from .kinds import GroundingRecord
from .loaded import engine_settings
from .tokenization import encode_texts
from ..options import PADDING_LAYOUTS, default_batch_overhead_tokens
from ..types import ClaimVerificationError

__all__ = ["GroundingScorer"]


class GroundingScorer(ModelHandle):
    """Scores (document, claim) pairs with one exported grounding checker.

    Construction touches no file; the directory is verified and loaded on first use, once, under a lock.

    Args:
        model_dir: an exported grounding model directory (``python -m export --model
            lytang/MiniCheck-DeBERTa-v3-Large --revision ...``; docs/grounding.md).
        variant: a variant recorded in the manifest (``None``: the float32 ``model_file``).
        providers: onnxruntime execution providers (default CPU only).
        intra_op_num_threads, inter_op_num_threads: onnxruntime threads (``None``: its default).
        graph_optimization_level: onnxruntime's level (``"all"``).
        max_batch_tokens: token budget of one padded batch (rows × padded length).
        max_batch_size: optional cap on rows per batch.
        padding: ``"batched"`` or ``"none"`` (each pair alone).
        verify_golden: at load, re-score ``golden.json`` against the PyTorch reference logits.
        session_config_entries: onnxruntime session config entries.

    Raises:
        ValueError: an argument out of range (before anything loads).
    """

    def __init__(
        self,
        model_dir: "str | Path",
        *,
        variant: Optional[str] = None,
        providers: Optional[Sequence[str]] = None,
        intra_op_num_threads: Optional[int] = None,
        inter_op_num_threads: Optional[int] = None,
        graph_optimization_level: str = "all",
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_batch_size: Optional[int] = None,
        padding: str = "batched",
        verify_golden: bool = False,
        session_config_entries: Optional[Mapping[str, str]] = None,
    ) -> None:
        if padding not in PADDING_LAYOUTS:
            raise ValueError(f"padding must be one of {list(PADDING_LAYOUTS)}, got {padding!r}")
        overhead = default_batch_overhead_tokens(variant)
        check_engine_arguments(
            graph_optimization_level=graph_optimization_level, intra_op_num_threads=intra_op_num_threads,
            inter_op_num_threads=inter_op_num_threads, max_batch_size=max_batch_size,
            max_batch_tokens=max_batch_tokens, batch_overhead_tokens=overhead, providers=providers,
        )
        session, batching = engine_settings(
            providers=providers, intra_op_num_threads=intra_op_num_threads, inter_op_num_threads=inter_op_num_threads,
            graph_optimization_level=graph_optimization_level, session_config_entries=session_config_entries,
            max_batch_tokens=max_batch_tokens, max_batch_size=max_batch_size, padding=padding, batch_overhead_tokens=overhead,
        )
        super().__init__(
            Path(model_dir),
            variant=variant,
            session_settings=session,
            batching=batching,
            verify_golden=verify_golden,
            expected_model=None,
            expected_revision=None,
            padding=padding,
            kind="grounding",
        )

    @property
    def grounding(self) -> GroundingRecord:
        """The manifest's record of how the model reads a pair (loads the model)."""
        record = self._ensure_loaded().manifest.grounding
        if record is None:  # pragma: no cover - ModelDirectory.open(kind="grounding") refuses any other directory
            raise ClaimVerificationError(f"{self.model_dir} holds no grounding record")
        return record

    @property
    def max_length(self) -> int:
        """The maximum rendered length in tokens, special tokens included (loads the model)."""
        return self._ensure_loaded().manifest.max_length

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P(support) of each (document, claim) pair.

        Args:
            pairs: ``(document, claim)`` 2-tuples of str.

        Returns:
            float64 array of shape (n,), each in [0, 1], row ``i`` for ``pairs[i]``; shape (0,)
            for no pairs (nothing is loaded for that). Identical pairs run once.

        Raises:
            ValueError: a pair is not a 2-tuple of str (names its index).
            ClaimVerificationError: the directory cannot be loaded, is not a grounding model,
                or tokenization or inference failed.
        """
        probabilities = self.probabilities(pairs)
        if not len(probabilities):
            return np.zeros((0,), dtype=np.float64)
        return probabilities[:, self.grounding.support_column]

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Softmax over both columns, float64 (n, 2), in the manifest's label order (:attr:`labels`).

        Raises:
            ValueError, ClaimVerificationError: as :meth:`score`.
        """
        logits = self.score_logits(pairs)
        return stable_softmax(logits) if len(logits) else np.zeros((0, 2), dtype=np.float64)

    def score_logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw logits, float32 (n, 2), in the manifest's label order; rows in caller order.

        Raises:
            ValueError, ClaimVerificationError: as :meth:`score`.
        """
        return self.logits_and_truncation(pairs)[0]

    def logits_and_truncation(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, list[bool]]:
        """:meth:`score_logits` and :meth:`truncated` from one tokenization of ``pairs`` (identical pairs once).

        Raises:
            ValueError, ClaimVerificationError: as :meth:`score`.
        """
        checked = validate_pairs(pairs)
        if not checked:
            return np.zeros((0, 2), dtype=np.float32), []
        loaded = self._ensure_loaded()
        first_seen: dict[tuple[str, str], int] = {}
        inverse = np.fromiter((first_seen.setdefault(pair, len(first_seen)) for pair in checked), np.int64, len(checked))
        encodings = loaded.encode(list(first_seen))
        run = loaded.run_encoded(encodings, self._batching)
        with self._stats_lock:
            self._stats = self._stats.plus(pairs=len(checked), unique_pairs=len(first_seen), run=run, store=(0, 0, 0, 0, 0))
        logits: np.ndarray = run.logits[inverse]
        cut = [bool(encodings[index].overflowing) for index in inverse.tolist()]
        return logits, cut

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Which (document, claim) pairs render longer than the maximum length, so the model reads
        only their beginning (loads the model).

        Raises:
            ValueError, ClaimVerificationError: as :meth:`score`.
        """
        checked = validate_pairs(pairs)
        if not checked:
            return []
        return [bool(encoding.overflowing) for encoding in self._ensure_loaded().encode(checked)]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text without special tokens, at most the maximum length: what MiniCheck's
        chunker counts per sentence (``tokenizer(s, add_special_tokens=False, max_length=...,
        truncation=True)``; Liyan06/MiniCheck ``minicheck/inference.py``). Loads the model.

        Raises:
            ClaimVerificationError: the tokenizer failed.
        """
        if not texts:
            return []
        try:
            encodings = encode_texts(self._ensure_loaded().tokenizer, texts, add_special_tokens=False)
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise ClaimVerificationError(f"tokenization of {len(texts)} sentences failed: {exc}") from exc
        return [len(encoding.ids) for encoding in encodings]

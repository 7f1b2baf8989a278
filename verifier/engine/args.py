"""Checks of :class:`verifier.engine.scorer.OnnxScorer`'s arguments and of the pairs it is given.

Both run before anything is loaded and raise ``ValueError`` naming the
argument (or the pair index) and the limit.
"""

from __future__ import annotations

from typing import Optional, Sequence

from ..options import available_cpus
from .session import GRAPH_OPTIMIZATION_LEVELS

__all__ = ["validate_pairs", "check_engine_arguments"]


def validate_pairs(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
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


def check_engine_arguments(
    *,
    graph_optimization_level: str,
    intra_op_num_threads: Optional[int],
    inter_op_num_threads: Optional[int],
    max_batch_size: Optional[int],
    max_batch_tokens: int,
    batch_overhead_tokens: float,
    providers: Optional[Sequence[str]],
) -> None:
    """Constructor checks, without loading anything (``ValueError`` names the argument)."""
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
    cpus = available_cpus()
    for name, value in (("intra_op_num_threads", intra_op_num_threads), ("inter_op_num_threads", inter_op_num_threads)):
        if value is not None and int(value) > cpus:
            raise ValueError(f"{name} must be at most the {cpus} CPUs available to this process, got {value!r}")
    if isinstance(max_batch_tokens, bool) or int(max_batch_tokens) < 1:
        raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens!r}")
    if not (isinstance(batch_overhead_tokens, (int, float)) and 0 <= batch_overhead_tokens < float("inf")):
        raise ValueError(f"batch_overhead_tokens must be a finite number >= 0, got {batch_overhead_tokens!r}")
    if providers is not None:
        if isinstance(providers, str):
            raise ValueError("providers must be a sequence of provider names, not a string")
        if not providers:
            raise ValueError("providers must not be empty (None means CPU only)")

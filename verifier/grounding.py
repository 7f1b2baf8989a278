"""``GroundingChecker``: document-level grounding checks, MiniCheck-compatible (docs/grounding.md).

A grounding checker (MiniCheck-DeBERTa, -RoBERTa, -Flan-T5, FactCG) reads a
whole document and a claim and gives P(support). :class:`GroundingChecker`
runs an exported grounding directory torch-free
(:class:`verifier.engine.grounding_scorer.GroundingScorer`) with MiniCheck's
chunking (:mod:`verifier.decision.chunking`): the document's chunks are scored
in one batched pass per call, a claim's score is the maximum over its chunks,
and a claim is supported when that is strictly above 0.5
(:data:`verifier.engine.kinds.SUPPORT_THRESHOLD`). ``chunk_size=0`` scores
the whole document, cut at the model's maximum length (PRME's registered WiCE
protocol), and says when it was cut.

:meth:`GroundingChecker.score` returns what MiniCheck's ``MiniCheck.score``
returns; :meth:`GroundingChecker.check` returns one auditable
:class:`GroundingResult` per (document, claim), naming the engine and the chunking.

Errors: ``ValueError`` for bad input (names the field and the index);
``ClaimVerificationError`` for a missing, tampered or NLI directory or a
failed inference; ``ImportError`` when chunking needs NLTK (the ``grounding`` extra).
"""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field

from .decision.chunking import Chunk, chunk_document, count_words, sentence_splitter
from .engine.golden import softmax
from .engine_identity import EngineIdentity

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .engine.grounding_scorer import GroundingScorer

__all__ = ["GroundingChunk", "Chunking", "GroundingResult", "GroundingChecker"]

#: The largest document or claim accepted, in characters (a bound on tokenizer memory, not a model limit).
MAX_TEXT_CHARS = 4_000_000


class GroundingChunk(BaseModel):
    """One scored chunk: ``document[start:end]`` covers it; ``text`` is what the model read in it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    support_probability: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    truncated: bool


class Chunking(BaseModel):
    """How a document was cut: MiniCheck's greedy sentence packing (``unit``, ``size``, ``splitter``), or
    ``None`` in :attr:`GroundingResult.chunking` for a whole-document score."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unit: str
    size: int
    splitter: str


class GroundingResult(BaseModel):
    """The grounding check of one (document, claim).

    Attributes:
        claim: the claim as given.
        support_probability: the maximum P(support) over the chunks.
        supported: ``support_probability > 0.5`` (MiniCheck's published threshold).
        chunks: every scored chunk, in document order.
        truncated: some chunk rendered longer than the model's maximum length and lost its end
            (with the claim, for a MiniCheck template): the model never saw all of it.
        chunking: how the document was chunked, ``None`` for the whole document.
        engine: the engine that scored it (docs/audit.md, "Engine identity"; its ``grounding`` part
            names the kind, the template and the maximum length).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    claim: str
    support_probability: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    supported: bool
    chunks: tuple[GroundingChunk, ...]
    truncated: bool
    chunking: Optional[Chunking]
    engine: EngineIdentity


def _check_texts(name: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{name} must be a list of str, not a single string")
    if isinstance(values, (set, frozenset, dict)) or not hasattr(values, "__len__") or getattr(values, "ndim", 1) != 1:
        raise ValueError(f"{name} must be a list, tuple or one-dimensional array of str, in the order of the other list")
    checked = [str(value) if type(value).__name__ == "str_" else value for value in values]  # numpy's str_ is a str
    for index, value in enumerate(checked):
        if not isinstance(value, str):
            raise ValueError(f"{name}[{index}] must be str, got {type(value).__name__}")
        if not value.strip():
            raise ValueError(f"{name}[{index}] is empty: a {name[:-1]} needs a visible character")
        if len(value) > MAX_TEXT_CHARS:
            raise ValueError(f"{name}[{index}] has {len(value):,} characters; at most {MAX_TEXT_CHARS:,}")
    return checked


class GroundingChecker:
    """MiniCheck's ``score`` and an auditable ``check`` over an exported grounding directory.

    Args:
        model_dir: an exported grounding model directory (docs/grounding.md).
        splitter: ``"auto"`` (NLTK's trained Punkt when installed, else its untrained Punkt),
            ``"nltk-punkt"`` or ``"nltk-punkt-untrained"`` (:mod:`verifier.decision.chunking`).
        scorer: a :class:`~verifier.engine.grounding_scorer.GroundingScorer` to use instead of one built
            from ``model_dir`` and ``scorer_options`` (to share one, or set threads and variants).
        **scorer_options: passed to :class:`~verifier.engine.grounding_scorer.GroundingScorer`
            (``variant``, ``intra_op_num_threads``, ``max_batch_tokens``, ``padding``, ...).

    Raises:
        ValueError: neither ``model_dir`` nor ``scorer``, or an unknown splitter.

    Example:
        >>> checker = GroundingChecker("models/MiniCheck-DeBERTa-v3-Large-<rev>")  # doctest: +SKIP
        >>> labels, probabilities, chunks, per_chunk = checker.score([document], [claim])  # doctest: +SKIP
    """

    def __init__(
        self,
        model_dir: "str | Path | None" = None,
        *,
        splitter: str = "auto",
        scorer: Optional["GroundingScorer"] = None,
        **scorer_options: object,
    ) -> None:
        if splitter not in ("auto", "nltk-punkt", "nltk-punkt-untrained"):
            raise ValueError(f"splitter must be one of ['auto', 'nltk-punkt', 'nltk-punkt-untrained'], got {splitter!r}")
        if scorer is None:
            if model_dir is None:
                raise ValueError("GroundingChecker needs model_dir (an exported grounding directory) or scorer")
            from .engine.grounding_scorer import GroundingScorer  # onnxruntime and tokenizers load on first need

            scorer = GroundingScorer(Path(model_dir), **scorer_options)  # type: ignore[arg-type]
        self._scorer = scorer
        self._splitter = splitter

    @property
    def scorer(self) -> "GroundingScorer":
        """The grounding scorer (loaded on first use)."""
        return self._scorer

    def score(
        self, docs: Sequence[str], claims: Sequence[str], chunk_size: Optional[int] = None
    ) -> tuple[list[int], list[float], list[list[str]], list[list[float]]]:
        """MiniCheck's ``MiniCheck.score``: labels, maximum support probabilities, chunks, chunk probabilities.

        Args:
            docs, claims: equally long lists of documents and claims.
            chunk_size: units per chunk (``None``: the model's default, 400 tokens or 500 words for
                Flan-T5); ``0``: no chunking, the whole document cut at the maximum length.

        Returns:
            ``(pred_labels, max_support_probs, used_chunks, support_prob_per_chunk)``: 1/0 per claim
            (1 when the probability is > 0.5), the maximum P(support) per claim, the chunk texts per
            claim, and each chunk's P(support) (MiniCheck returns numpy arrays there; these are lists).

        Raises:
            ValueError: lists of different lengths, an empty document or claim, a negative chunk size.
            ClaimVerificationError, ImportError: as the class docstring says.
        """
        results = self.check_many(docs, claims, chunk_size=chunk_size)
        return (
            [int(result.supported) for result in results],
            [result.support_probability for result in results],
            [[chunk.text for chunk in result.chunks] for result in results],
            [[chunk.support_probability for chunk in result.chunks] for result in results],
        )

    def check(self, document: str, claim: str, *, chunk_size: Optional[int] = None) -> GroundingResult:
        """The grounding check of one (document, claim): :meth:`check_many` of one."""
        return self.check_many([document], [claim], chunk_size=chunk_size)[0]

    def check_many(
        self, docs: Sequence[str], claims: Sequence[str], *, chunk_size: Optional[int] = None
    ) -> list[GroundingResult]:
        """Check each (document, claim); every chunk of every document is scored in one batched call.

        Raises:
            ValueError, ClaimVerificationError, ImportError: as :meth:`score`.
        """
        documents, statements = _check_texts("docs", docs), _check_texts("claims", claims)
        if len(documents) != len(statements):
            raise ValueError(f"docs and claims must be equally long, got {len(documents)} and {len(statements)}")
        if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral)
                                       or not 0 <= chunk_size <= 100_000):
            raise ValueError(f"chunk_size must be None, 0 (no chunking) or an int from 1 to 100000, got {chunk_size!r}")
        chunk_size = None if chunk_size is None else int(chunk_size)
        if not documents:
            return []
        chunking, chunked = self._chunks(documents, chunk_size)
        pairs = [(chunk.text, claim) for chunks, claim in zip(chunked, statements) for chunk in chunks]
        logits, truncated = self._scorer.logits_and_truncation(pairs)  # one tokenization for both
        probabilities = softmax(logits)[:, self._scorer.grounding.support_column]
        engine = self._scorer.engine_identity
        results, at = [], 0
        for chunks, claim in zip(chunked, statements):
            scored = tuple(
                GroundingChunk(text=chunk.text, start=chunk.start, end=chunk.end,
                               support_probability=float(probabilities[at + i]), truncated=truncated[at + i])
                for i, chunk in enumerate(chunks)
            )
            at += len(chunks)
            best = max(chunk.support_probability for chunk in scored)
            results.append(GroundingResult(
                claim=claim, support_probability=best, supported=best > 0.5, chunks=scored,
                truncated=any(chunk.truncated for chunk in scored), chunking=chunking, engine=engine,
            ))
        return results

    def _chunks(self, documents: list[str], chunk_size: Optional[int]) -> tuple[Optional[Chunking], list[list[Chunk]]]:
        """Each document's chunks (a whole document is one chunk spanning it), and how they were cut."""
        if chunk_size == 0:
            return None, [[Chunk(document, 0, len(document))] for document in documents]
        record = self._scorer.grounding
        size = chunk_size or record.chunk_size
        name, splitter = sentence_splitter(self._splitter)
        count = count_words if record.chunk_unit == "words" else self._scorer.count_tokens
        chunked = [chunk_document(document, size=size, count=count, splitter=splitter) for document in documents]
        return Chunking(unit=record.chunk_unit, size=size, splitter=name), chunked

"""Chunking a document as MiniCheck does, with each chunk's span in the document (docs/grounding.md).

MiniCheck (Liyan06/MiniCheck ``minicheck/inference.py``) splits a document at
``"\\n"`` into blocks, splits each block into sentences with NLTK's
``sent_tokenize`` (Punkt, English), keeps a ``"\\n"`` marker between blocks,
and packs the sequence greedily: a sentence joins the current chunk while the
chunk's count stays within ``size``, else it starts the next one (a first
sentence over ``size`` therefore leaves an empty chunk, later dropped). The
count is model tokens without special tokens (DeBERTa, RoBERTa: 400) or
whitespace words (Flan-T5: 500). A chunk is its items joined by ``" "`` with
``" \\n "`` turned back into ``"\\n"``, stripped; empty chunks are dropped.
:func:`chunk_document` reproduces that and adds each chunk's character span
(from its first sentence's start to its last sentence's end).

The sentence splitter (:func:`sentence_splitter`): ``"nltk-punkt"`` is NLTK's
pretrained English Punkt model (``punkt_tab``), exactly MiniCheck's; NLTK
fetches it from the network (``python -m nltk.downloader punkt_tab``) and no
package registry carries it. Where it is not installed,
``"nltk-punkt-untrained"`` runs NLTK's same Punkt algorithm without the
trained English parameters (no abbreviation list: ``"Dr. Smith"`` splits after
``"Dr."``); chunk boundaries can then differ from MiniCheck's, and every result
names the splitter that ran. Both need the ``grounding`` extra (``nltk``).

Pure text: no engine, no model. The counter is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional, Sequence

__all__ = ["SPLITTERS", "Splitter", "Sentence", "Chunk", "sentence_splitter", "split_sentences", "chunk_document",
           "count_words"]

#: The sentence splitters (module docstring); ``"auto"`` picks the first one installed.
Splitter = Literal["nltk-punkt", "nltk-punkt-untrained"]
SPLITTERS: tuple[Splitter, ...] = ("nltk-punkt", "nltk-punkt-untrained")
#: A function counting each text's units (tokens or words), one call for many texts.
Counter = Callable[[Sequence[str]], list[int]]
_NEWLINE = "\n"


@dataclass(frozen=True)
class Sentence:
    """One item of the split document: a sentence with its span, or the ``"\\n"`` block marker (span ``None``)."""

    text: str
    start: Optional[int] = None
    end: Optional[int] = None


@dataclass(frozen=True)
class Chunk:
    """One chunk: its text as MiniCheck builds it, and ``document[start:end]`` covering its sentences."""

    text: str
    start: int
    end: int


_SPLITTERS: dict[str, Any] = {}


def sentence_splitter(name: str = "auto") -> tuple[Splitter, Any]:
    """The splitter ``name`` (or the first installed, for ``"auto"``) and its NLTK Punkt tokenizer.

    Raises:
        ImportError: NLTK (the ``grounding`` extra) is not installed.
        ValueError: ``name`` is unknown, or ``"nltk-punkt"`` is asked for and its ``punkt_tab`` data
            is not installed (the message says how to install it).
    """
    if name not in ("auto", *SPLITTERS):
        raise ValueError(f"splitter must be one of {['auto', *SPLITTERS]}, got {name!r}")
    try:
        from nltk.tokenize.punkt import PunktSentenceTokenizer
    except ImportError as exc:
        from ..messages import install_hint

        raise ImportError(f"chunking documents needs NLTK, the grounding extra ({install_hint('grounding')}); "
                          "or score whole documents with chunk_size=0 / --no-chunking") from exc
    if name in _SPLITTERS:
        return name, _SPLITTERS[name]  # type: ignore[return-value]
    if name in ("auto", "nltk-punkt"):
        try:
            from nltk.tokenize import PunktTokenizer  # the pickle-free punkt_tab loader (NLTK 3.9+)

            trained = PunktTokenizer("english")
            _SPLITTERS["nltk-punkt"] = _SPLITTERS["auto"] = trained
            return "nltk-punkt", trained
        except (LookupError, ImportError) as exc:
            if name == "nltk-punkt":
                raise ValueError("splitter 'nltk-punkt' needs NLTK's punkt_tab data: python -m nltk.downloader punkt_tab "
                                 "(network), or use 'nltk-punkt-untrained'") from exc
    untrained = PunktSentenceTokenizer()
    _SPLITTERS["nltk-punkt-untrained"] = untrained
    return "nltk-punkt-untrained", untrained


def split_sentences(document: str, splitter: Any) -> list[Sentence]:
    """MiniCheck's ``sent_tokenize_with_newlines``: each ``"\\n"`` block's sentences, a ``"\\n"`` marker between
    blocks; each sentence is ``document[start:end]``.

    Example:
        >>> from nltk.tokenize.punkt import PunktSentenceTokenizer  # doctest: +SKIP
        >>> [s.text for s in split_sentences("One. Two.\\nThree.", PunktSentenceTokenizer())]  # doctest: +SKIP
        ['One.', 'Two.', '\\n', 'Three.']
    """
    items: list[Sentence] = []
    offset = 0
    for number, block in enumerate(document.split(_NEWLINE)):
        if number:
            items.append(Sentence(_NEWLINE))
        for start, end in splitter.span_tokenize(block):
            items.append(Sentence(block[start:end], offset + start, offset + end))
        offset += len(block) + 1
    return items


def count_words(texts: Sequence[str]) -> list[int]:
    """Whitespace words of each text (``len(text.split())``): Flan-T5's chunk unit in MiniCheck."""
    return [len(text.split()) for text in texts]


def chunk_document(document: str, *, size: int, count: Counter, splitter: Any) -> list[Chunk]:
    """The chunks MiniCheck scores for ``document`` at ``size`` units, with their spans.

    Args:
        document: the document text.
        size: the most units a chunk may hold (a single longer sentence still makes one chunk).
        count: counts each item's units (model tokens without special tokens, or :func:`count_words`);
            called once for all items.
        splitter: an NLTK Punkt tokenizer (:func:`sentence_splitter`).

    Returns:
        The non-empty chunks in document order (at least one when the document has a visible character).

    Raises:
        ValueError: ``size`` below 1.
    """
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    items = split_sentences(document, splitter) or [Sentence("")]
    counts = count([item.text for item in items])
    groups: list[list[Sentence]] = []
    current: list[Sentence] = []
    total = 0
    for item, units in zip(items, counts):
        if total + units > size:
            groups.append(current)
            current, total = [item], units
        else:
            current.append(item)
            total += units
    if current:
        groups.append(current)
    chunks = []
    for group in groups:
        text = " ".join(item.text for item in group).replace(" \n ", "\n").strip()
        spans = [(item.start, item.end) for item in group if item.start is not None and item.end is not None]
        if text and spans:
            chunks.append(Chunk(text, spans[0][0], spans[-1][1]))
    return chunks

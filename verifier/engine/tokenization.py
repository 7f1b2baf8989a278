"""The one place the runtime tokenizer is configured .

Both the engine and the exporter's parity gate call :func:`load_tokenizer`, so
the token ids the runtime feeds onnxruntime are exactly the ids the parity gate
checked against the transformers fast tokenizer.

Padding is *off* in the tokenizer: :func:`pad_encodings` pads each batch with
numpy to that batch's own longest sequence, using the manifest's pad id.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from .kinds import GroundingRecord, render
from .long_pairs import LONG_TEXT_CHARS, encode_long_pairs

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Encoding, Tokenizer

__all__ = ["TRUNCATION", "load_tokenizer", "tokenizer_from_json", "encode_pairs", "encode_texts", "encode_for_model",
           "pad_encodings"]

#: How a pair longer than the maximum length is cut (what transformers' ``truncation=True`` does for pairs).
TRUNCATION = "longest_first"


def load_tokenizer(path: Path, *, max_length: int) -> "Tokenizer":
    """Load a ``tokenizer.json`` file with the runtime's fixed settings (:func:`tokenizer_from_json`).

    Args:
        path: a ``tokenizer.json`` file (Hugging Face ``tokenizers`` format).
        max_length: maximum sequence length in tokens (512 for DeBERTa-v3).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        Exception: ``tokenizers`` could not parse the file (re-raised by callers
            as ``ClaimVerificationError``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer file not found: {path}")
    return tokenizer_from_json(path.read_text(encoding="utf-8"), max_length=max_length)


def tokenizer_from_json(text: str, *, max_length: int) -> "Tokenizer":
    """A tokenizer from the text of a ``tokenizer.json``, with the runtime's fixed settings.

    Truncation: ``longest_first`` at ``max_length`` tokens per pair, special
    tokens included (what transformers' ``truncation=True`` does for pairs).
    Padding: disabled (see :func:`pad_encodings`). The engine passes the
    verified bytes of the model directory's file, never its path.

    Raises:
        Exception: ``tokenizers`` could not parse the text.
    """
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(text)
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length, strategy=TRUNCATION, stride=0)
    return tokenizer


def encode_pairs(tokenizer: "Tokenizer", pairs: Sequence[tuple[str, str]]) -> list["Encoding"]:
    """Tokenize (premise, hypothesis) pairs in one Rust batch call, special tokens added.

    Uses ``encode_batch_fast`` (no character offsets) when the installed
    ``tokenizers`` has it. Pairs holding a text over :data:`LONG_TEXT_CHARS`
    characters go through :func:`verifier.engine.long_pairs.encode_long_pairs`
    first, which bounds the memory ``tokenizers`` spends on their truncation
    and returns the very same ids.

    Raises:
        ValueError: a long pair this tokenizer cannot truncate in bounded memory.
        Exception: ``tokenizers`` failed.
    """
    inputs = [(premise, hypothesis) for premise, hypothesis in pairs]
    encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
    long = {i for i, (premise, hypothesis) in enumerate(inputs) if max(len(premise), len(hypothesis)) > LONG_TEXT_CHARS}
    if not long:
        return list(encode(inputs, add_special_tokens=True))
    short = [pair for i, pair in enumerate(inputs) if i not in long]
    encoded_short = iter(encode(short, add_special_tokens=True) if short else [])
    encoded_long = iter(encode_long_pairs(tokenizer, [pair for i, pair in enumerate(inputs) if i in long]))
    return [next(encoded_long) if i in long else next(encoded_short) for i in range(len(inputs))]


def encode_texts(tokenizer: "Tokenizer", texts: Sequence[str], *, add_special_tokens: bool = True) -> list["Encoding"]:
    """Tokenize single texts in one Rust batch call (a grounding model's rendered inputs, docs/grounding.md).

    A single sequence longer than the maximum length loses its end (``longest_first`` on one
    sequence cuts from the right, as transformers' ``truncation=True`` does with
    ``truncation_side="right"``); ``Encoding.overflowing`` is then non-empty.

    Raises:
        Exception: ``tokenizers`` failed.
    """
    encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
    return list(encode(list(texts), add_special_tokens=add_special_tokens))


def encode_for_model(
    tokenizer: "Tokenizer", pairs: Sequence[tuple[str, str]], grounding: "GroundingRecord | None"
) -> list["Encoding"]:
    """Tokenize pairs as the model of a manifest reads them: NLI (premise, hypothesis) text pairs
    (:func:`encode_pairs`), or -- with the manifest's ``grounding`` record -- (document, claim) pairs
    rendered by its template into single texts (:func:`encode_texts`; docs/grounding.md).

    Raises:
        ValueError, Exception: as :func:`encode_pairs` and :func:`encode_texts`.
    """
    if grounding is None:
        return encode_pairs(tokenizer, pairs)
    return encode_texts(tokenizer, [render(grounding.template, document, claim) for document, claim in pairs])


def pad_encodings(
    encodings: Sequence["Encoding"], *, pad_token_id: int, with_token_type_ids: bool
) -> dict[str, np.ndarray]:
    """Pad encodings to their own longest sequence as int64 arrays of shape (batch, length).

    Returns ``input_ids`` (pad: ``pad_token_id``), ``attention_mask`` (1 real, 0 pad)
    and, when ``with_token_type_ids``, ``token_type_ids`` (pad: 0).
    """
    lengths = [len(encoding.ids) for encoding in encodings]
    width = max(lengths) if lengths else 0
    batch = len(encodings)
    input_ids = np.full((batch, width), pad_token_id, dtype=np.int64)
    attention_mask = np.zeros((batch, width), dtype=np.int64)
    token_type_ids = np.zeros((batch, width), dtype=np.int64) if with_token_type_ids else None
    for row, (encoding, length) in enumerate(zip(encodings, lengths)):
        input_ids[row, :length] = encoding.ids
        attention_mask[row, :length] = 1
        if token_type_ids is not None:
            token_type_ids[row, :length] = encoding.type_ids
    arrays = {"input_ids": input_ids, "attention_mask": attention_mask}
    if token_type_ids is not None:
        arrays["token_type_ids"] = token_type_ids
    return arrays

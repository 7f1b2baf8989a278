"""Long (premise, hypothesis) pairs tokenized in bounded memory, with exactly the ids of a plain pair encoding.

``tokenizers`` truncates a pair (``longest_first``, stride 0) by cutting each
side into windows of the kept length and then building *every combination* of
the two sides' windows as ``overflowing`` encodings before the engine drops
them: memory grows with (premise tokens / kept) x (hypothesis tokens / kept).
A 10,000-character claim against 100,000-character passages took gigabytes
and aborted the process (a 5,000-word claim against a 20,000-word passage:
1,579 windows, 0.5 GB, with the DeBERTa-v3 tokenizer).

Only the first tokens of each side survive truncation, so for a pair with a
text over :data:`LONG_TEXT_CHARS` characters this module

1. tokenizes each text of the pair alone (no special tokens): its length in
   tokens and the character offsets of its first tokens (linear memory);
2. works out how many tokens of each side a plain pair encoding keeps
   (:func:`kept_lengths`, the rule of ``tokenizers``' ``truncate_encodings``);
3. cuts a side longer than ``2 * CUT_MARGIN`` tokens beyond the kept maximum
   just after one of its tokens, keeping more tokens than can survive and the
   sides' order by length (which decides the rule); a cut that ends in whitespace
   gets a ``.`` after it (a normalizer's ``Strip`` would drop trailing tokens the
   middle of a text keeps, e.g. U+0085); and tokenizes the cut pair with the
   tokenizer itself (its template, type ids and truncation);
4. checks that the cut pair kept exactly the first ``n`` tokens of each side,
   as the plain encoding does, and was truncated as it is. A pair that fails the
   check (a tokenizer whose tokens depend on text far ahead) is encoded plainly
   when that is affordable (:data:`MAX_PLAIN_WINDOWS`), and refused with a
   ``ValueError`` naming the lengths otherwise: never different ids.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Encoding, Tokenizer

__all__ = ["LONG_TEXT_CHARS", "CUT_MARGIN", "MAX_PLAIN_WINDOWS", "kept_lengths", "encode_long_pairs"]

#: Pairs with a text longer than this (characters) are cut before pair encoding. A text this short has
#: at most ~4 tokens per character (byte fallback), so two of them make at most a few hundred windows.
LONG_TEXT_CHARS = 2048
#: Tokens kept beyond the most a side can keep, so a cut never changes a kept token or the rule.
CUT_MARGIN = 32
#: A pair failing the check is encoded plainly only if its two sides make at most this many window combinations
#: (measured ~0.35-0.4 MB each at 512 tokens with DeBERTa-v3: at most ~0.4 GB).
MAX_PLAIN_WINDOWS = 1024


def kept_lengths(first: int, second: int, budget: int) -> tuple[int, int]:
    """Tokens of each side a ``longest_first`` pair truncation keeps (``tokenizers`` 0.13-0.22,
    ``utils/truncation.rs``, ``truncate_encodings``).

    Args:
        first: tokens of the first sequence (the premise), special tokens excluded.
        second: tokens of the second sequence (the hypothesis).
        budget: the maximum length minus the special tokens a pair adds (509 for DeBERTa-v3).

    Returns:
        ``(kept first, kept second)``; ``(first, second)`` when the pair fits.
    """
    if first + second <= budget:
        return first, second
    short, long = sorted((first, second))
    long = short if short > budget else max(short, budget - short)
    if short + long > budget:
        short, long = budget // 2, budget // 2 + budget % 2
    return (long, short) if first > second else (short, long)


def _ids(encoding: "Encoding", count: int) -> list[int]:
    """The first ``count`` ids of a single-text encoding, through its overflowing windows."""
    ids = list(encoding.ids)
    for window in encoding.overflowing:
        if len(ids) >= count:
            break
        ids += window.ids
    return ids[:count]


def _cut(text: str, encoding: "Encoding", target: int) -> str:
    """``text`` cut after its ``target``-th token. A cut that ends in whitespace gets a ``.`` after it: a
    normalizer's ``Strip`` would otherwise drop trailing whitespace tokens that the middle of a text keeps
    (DeBERTa-v3 keeps U+0085 as tokens), leaving the cut side shorter than planned; the stop only touches
    tokens past the target, far beyond what truncation keeps (the check in :func:`encode_long_pairs` proves it)."""
    index = 0
    for window in (encoding, *encoding.overflowing):
        for _, end in window.offsets:
            index += 1
            if index >= target:
                cut = text[:end]
                return cut + "." if cut[-1:].isspace() else cut
    return text


def _length(encoding: "Encoding") -> int:
    return len(encoding.ids) + sum(len(window.ids) for window in encoding.overflowing)


def encode_long_pairs(tokenizer: "Tokenizer", pairs: Sequence[tuple[str, str]]) -> list["Encoding"]:
    """Pair encodings of ``pairs`` (special tokens added) with the ids, type ids and length a plain
    ``tokenizer.encode_batch(pairs)`` gives, in memory linear in the texts (see the module docstring).

    Raises:
        ValueError: a pair failed the check and is too long to encode plainly (the message names
            its index and token counts).
    """
    truncation = tokenizer.truncation
    if not pairs:
        return []
    if not truncation or truncation.get("strategy") != "longest_first" or truncation.get("stride", 0) != 0:
        raise ValueError(f"long pairs need longest_first truncation with stride 0, the tokenizer has {truncation}")
    max_length = int(truncation["max_length"])
    budget = max_length - tokenizer.num_special_tokens_to_add(True)
    texts = sorted({text for pair in pairs for text in pair})
    alone = dict(zip(texts, tokenizer.encode_batch(texts, add_special_tokens=False)))
    cut_pairs: list[tuple[str, str]] = []
    expected: list[tuple[list[int], list[int]]] = []
    lengths_of: list[tuple[int, int]] = []
    for premise, hypothesis in pairs:
        lengths = (_length(alone[premise]), _length(alone[hypothesis]))
        lengths_of.append(lengths)
        kept = kept_lengths(lengths[0], lengths[1], budget)
        expected.append((_ids(alone[premise], kept[0]), _ids(alone[hypothesis], kept[1])))
        cut = [
            text if target is None else _cut(text, alone[text], target)
            for text, target in zip((premise, hypothesis), _cut_targets(lengths, budget))
        ]
        cut_pairs.append((cut[0], cut[1]))
    encode = getattr(tokenizer, "encode_batch_fast", None) or tokenizer.encode_batch
    encodings = list(encode(cut_pairs, add_special_tokens=True))
    for index, (encoding, (first, second), lengths) in enumerate(zip(encodings, expected, lengths_of)):
        sides: tuple[list[int], list[int]] = ([], [])
        for token, sequence in zip(encoding.ids, encoding.sequence_ids):
            if sequence is not None:
                sides[sequence].append(token)
        truncated = sum(lengths) > budget
        if sides == (first, second) and bool(encoding.overflowing) == truncated:  # what ran, and "truncated"
            continue
        windows = _windows(lengths, budget)
        if windows > MAX_PLAIN_WINDOWS:
            raise ValueError(
                f"pair {index}: a premise of {lengths[0]} and a hypothesis of {lengths[1]} tokens cannot be truncated "
                f"in bounded memory by this tokenizer ({windows} windows; at most {MAX_PLAIN_WINDOWS}): shorten them"
            )
        encodings[index] = encode([pairs[index]], add_special_tokens=True)[0]
    return encodings


def _cut_targets(lengths: tuple[int, int], budget: int) -> tuple[Optional[int], Optional[int]]:
    """Where to cut each side (a token count), ``None`` for a side left whole.

    Only a side longer than ``budget + 2 * CUT_MARGIN`` is cut; it keeps more than ``budget`` tokens,
    and the sides keep their order by length: the longer of two cut sides keeps ``CUT_MARGIN`` more,
    equal sides keep the same, and a side cut beside a whole one keeps ``CUT_MARGIN`` more than that one.
    """
    first, second = lengths
    limit = budget + 2 * CUT_MARGIN
    if first > limit and second > limit:
        if first == second:
            return budget + CUT_MARGIN, budget + CUT_MARGIN
        longer, shorter = budget + 2 * CUT_MARGIN, budget + CUT_MARGIN
        return (longer, shorter) if first > second else (shorter, longer)
    if first > limit:
        target = max(budget, second) + CUT_MARGIN  # at most budget + 3 * CUT_MARGIN
        return (target if target < first else None), None
    if second > limit:
        target = max(budget, first) + CUT_MARGIN
        return None, (target if target < second else None)
    return None, None


def _windows(lengths: tuple[int, int], budget: int) -> int:
    """How many window combinations a plain pair encoding of these lengths builds (an estimate)."""
    kept = kept_lengths(lengths[0], lengths[1], budget)
    counts = [max(1, -(-length // max(1, keep))) for length, keep in zip(lengths, kept)]
    return counts[0] * counts[1]

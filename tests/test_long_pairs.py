"""Long pairs are tokenized in bounded memory with exactly the ids of a plain pair encoding.

Regression: ``tokenizers`` builds every combination of the two sides' truncation windows
(``overflowing``) before the engine drops them, so a 10,000-character claim against 100,000-character
passages took gigabytes and aborted the CLI and the server (found by an adversarial run). The
reference here is the tokenizer itself, encoding the uncut pair, wherever that is affordable.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.engine.long_pairs import LONG_TEXT_CHARS, kept_lengths
from verifier.engine.tokenization import encode_pairs, tokenizer_from_json

ROOT = Path(__file__).resolve().parents[1]
DEBERTA = (ROOT / "tests" / "data" / "deberta-v3-tokenizer" / "tokenizer.json").read_text(encoding="utf-8")
#: Words of many kinds: plain, punctuated, digits, accents, CJK, emoji (byte fallback), odd spacing.
WORDS = ["the", "launch", "moved", "to", "Wednesday.", "Dana's", "1,234", "naïve", "東京", "🚀🚀", "x", "—", "\n", "  ",
         "supercalifragilistic", "(see", "E1)", "don't", "ünïcödé", "\t", "a.b.c", "Straße"]


@functools.lru_cache(maxsize=None)
def _deberta(max_length: int):  # type: ignore[no-untyped-def]
    return tokenizer_from_json(DEBERTA, max_length=max_length)


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _plain(tokenizer, pair):  # type: ignore[no-untyped-def]
    return tokenizer.encode_batch([pair], add_special_tokens=True)[0]


@pytest.mark.parametrize("max_length", [24, 41, 512])
def test_the_kept_lengths_are_the_tokenizers_own(max_length: int) -> None:
    """:func:`kept_lengths` against ``tokenizers`` itself over a grid of side lengths around every case
    (both fit, one long, both long, equal, odd and even budgets)."""
    tokenizer = _deberta(max_length)
    budget = max_length - tokenizer.num_special_tokens_to_add(True)
    grid = sorted({0, 1, 2, budget // 2 - 1, budget // 2, budget // 2 + 1, budget - 1, budget, budget + 1, budget + 7, 2 * budget})
    for first in grid:
        for second in grid:
            encoding = _plain(tokenizer, ("x " * first, "y " * second))  # "▁x" and "▁y" are one token each
            kept = (encoding.sequence_ids.count(0), encoding.sequence_ids.count(1))
            assert kept == kept_lengths(first, second, budget), (first, second, budget)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), premise_words=st.integers(0, 1200), hypothesis_words=st.integers(0, 1200),
       max_length=st.sampled_from([48, 128, 512]))
def test_long_pairs_get_the_plain_ids(seed: int, premise_words: int, hypothesis_words: int, max_length: int) -> None:
    tokenizer = _deberta(max_length)
    rng = random.Random(seed)
    pair = (_text(rng, premise_words), _text(rng, hypothesis_words))
    ours, plain = encode_pairs(tokenizer, [pair])[0], _plain(tokenizer, pair)
    assert (ours.ids, ours.type_ids, ours.attention_mask) == (plain.ids, plain.type_ids, plain.attention_mask)
    assert bool(ours.overflowing) == bool(plain.overflowing)  # "truncated" is counted from this


def test_a_batch_mixing_long_and_short_pairs_keeps_its_order() -> None:
    tokenizer = _deberta(64)
    rng = random.Random(7)
    pairs = [(_text(rng, n), _text(rng, m)) for n, m in [(5, 3), (900, 4), (2, 1200), (700, 800), (0, 0), (3000, 3000)]]
    assert any(max(map(len, pair)) > LONG_TEXT_CHARS for pair in pairs)
    ours = encode_pairs(tokenizer, pairs)
    assert [e.ids for e in ours] == [_plain(tokenizer, pair).ids for pair in pairs]


def test_the_pair_that_took_gigabytes_is_cut_to_a_few_windows() -> None:
    """5,000 words against 20,000: the plain encoding builds 1,579 overflowing windows (0.5 GB); this one a few,
    and it keeps the same ids as the plain encoding of the same pair cut far past what truncation keeps."""
    tokenizer = _deberta(512)
    premise, hypothesis = "y " * 20_000, "x " * 5_000
    ours = encode_pairs(tokenizer, [(premise, hypothesis)])[0]
    assert len(ours.overflowing) <= 16
    reference = _plain(tokenizer, ("y " * 2_000, "x " * 1_000))  # both longer than any kept length, premise longer
    assert ours.ids == reference.ids and ours.type_ids == reference.type_ids
    assert ours.sequence_ids.count(0) == 255 and ours.sequence_ids.count(1) == 254  # 509 halved, the longer side odd


@pytest.mark.export
def test_a_wordpiece_tokenizer_gets_the_plain_ids_too(tiny_bert_model_dir: Path) -> None:
    text = (tiny_bert_model_dir / "tokenizer.json").read_text(encoding="utf-8")
    tokenizer = tokenizer_from_json(text, max_length=64)
    rng = random.Random(3)
    pairs = [(_text(rng, n), _text(rng, m)) for n, m in [(1500, 20), (30, 1500), (1400, 1600), (1600, 1600)]]
    assert [e.ids for e in encode_pairs(tokenizer, pairs)] == [_plain(tokenizer, pair).ids for pair in pairs]


@pytest.mark.parametrize(("max_length", "premise", "hypothesis"), [
    # a run of U+0085 where the premise is cut: Strip dropped it from the cut text, which then fitted (no truncation
    # reported) or changed the rule and was refused, though the plain encoding was cheap
    (64, " ".join(["w"] * 56) + " \x85" * 1100 + " tail", "y y y y y"),
    (512, "word " * 100 + " \x85" * 3000 + " more" * 3000, "claim " * 2000),
    (128, "x " * 200 + "\u2028 " * 900 + "end", "claim " * 40),
    (128, "a " * 150 + "\t\r\n " * 600 + "b", "c " * 700),
])
def test_whitespace_the_normalizer_strips_at_the_cut_is_not_cut_at(max_length: int, premise: str, hypothesis: str) -> None:
    """Regression (second adversarial run): DeBERTa-v3's normalizer strips trailing whitespace (U+0085 included)
    that Unigram keeps as tokens in the middle of a text."""
    tokenizer = _deberta(max_length)
    ours, plain = encode_pairs(tokenizer, [(premise, hypothesis)])[0], _plain(tokenizer, (premise, hypothesis))
    assert (ours.ids, ours.type_ids, ours.attention_mask) == (plain.ids, plain.type_ids, plain.attention_mask)
    assert bool(ours.overflowing) == bool(plain.overflowing)


def test_a_long_whitespace_run_at_both_cuts_stays_bounded() -> None:
    """Regression (second adversarial run): skipping forward past whitespace tokens to cut found nowhere to cut in a
    long U+0085 run (what "…" becomes from Windows-1252 read as Latin-1), so both sides stayed whole and the
    overflow windows multiplied again (25,121 windows, 6.9 GB at 41,000 characters per side)."""
    tokenizer = _deberta(512)
    side = "word " * 200 + " \x85" * 20_000 + " end"
    ours = encode_pairs(tokenizer, [(side, side)])[0]
    assert len(ours.overflowing) <= 16
    short = "word " * 200 + " \x85" * 400 + " end"  # still longer than anything kept
    reference = _plain(tokenizer, (short, short))
    assert ours.ids == reference.ids and ours.type_ids == reference.type_ids


def test_a_whitespace_run_at_one_cut_keeps_the_sides_order() -> None:
    """Regression (second adversarial run): moving one side's cut past a whitespace run made it the longer cut side,
    the odd budget's extra token went to the other side, and the fallback refused a pair the plain encoding handles."""
    tokenizer = _deberta(128)
    premise = "word " * 3000
    hypothesis = "claim " * 80 + " \x85" * 300 + " more" * 1000
    ours, plain = encode_pairs(tokenizer, [(premise, hypothesis)])[0], _plain(tokenizer, (premise, hypothesis))
    assert (ours.ids, ours.type_ids) == (plain.ids, plain.type_ids) and bool(ours.overflowing) == bool(plain.overflowing)
    assert len(ours.overflowing) <= 16  # cut, not the plain fallback

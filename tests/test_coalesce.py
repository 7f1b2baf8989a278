"""The coalescing scorer: shared passes, own rows back, backpressure, deadlines, shutdown, and bit-reproducible
probabilities whatever the batch layout (alone, same length, mixed lengths, coalesced with strangers)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence
from uuid import UUID

import numpy as np
import pytest

from verifier import ClaimEvidence, ClaimVerificationError, ClaimVerifier
from verifier.engine.batching import BatchedLogits, EncodedPairs
from verifier.engine.coalesce import CoalescingScorer, ScorerBusy, ScorerClosed, ScorerTimeout
from verifier.engine.scorer import OnnxScorer
from verifier.options import RuntimeOptions

WORDS = "the launch moved to wednesday after a long review of every open issue by the whole release team".split()


def _pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = np.random.default_rng(seed)
    return [
        (" ".join(rng.choice(WORDS, size=int(rng.integers(1, 40)))) + f" ({seed}.{i})", "The launch is on Tuesday.")
        for i in range(count)
    ]


# ---------------------------------------------------------------- a stub engine (the public encode/score_encoded pair)


@dataclass(frozen=True)
class _Encoding:
    ids: tuple[int, ...]
    overflowing: tuple[()] = ()


class StubEngine:
    """Deterministic per-pair probabilities; optionally fails; records the passes it ran."""

    resolved_revision = "abc123"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.passes: list[int] = []

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        return [False for _ in pairs]

    def encode(self, pairs: Sequence[tuple[str, str]]) -> EncodedPairs:
        for index, pair in enumerate(pairs):
            if not (isinstance(pair, tuple) and len(pair) == 2):
                raise ValueError(f"pair {index} must be a (premise, hypothesis) 2-tuple of str")
        return EncodedPairs(tuple(pairs), tuple(_Encoding(tuple(range(len(p) + len(h)))) for p, h in pairs))

    def score_encoded(self, encoded: EncodedPairs) -> tuple[np.ndarray, BatchedLogits]:
        if self.fail:
            raise ClaimVerificationError("onnxruntime failed on batch 1/1")
        self.passes.append(len(encoded))
        rows = np.array([[len(p) % 7 + 1.0, len(h) % 5 + 1.0, 1.0] for p, h in encoded.pairs])
        tokens = encoded.tokens
        return rows / rows.sum(axis=1, keepdims=True), BatchedLogits(rows, tokens, tokens, 1, 0)


def _expected(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
    return StubEngine().score_encoded(StubEngine().encode(pairs))[0]


def _wait_queued(scorer: CoalescingScorer, pairs: int) -> None:
    while scorer.queued_pairs < pairs:
        threading.Event().wait(0.001)


def test_concurrent_threads_get_their_own_rows_in_their_own_order() -> None:
    engine = StubEngine()
    with CoalescingScorer(engine, max_wait_ms=50) as scorer:
        groups = [_pairs(5 + k, seed=k) for k in range(12)]
        out: dict[int, np.ndarray] = {}
        threads = [threading.Thread(target=lambda k=k: out.__setitem__(k, scorer.score(groups[k]))) for k in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for k, group in enumerate(groups):
        assert np.array_equal(out[k], _expected(group))
    assert sum(engine.passes) == sum(len(g) for g in groups)
    assert len(engine.passes) < 12  # callers shared passes


def test_asyncio_tasks_coalesce() -> None:
    engine = StubEngine()
    groups = [_pairs(3, seed=k) for k in range(8)]

    async def main(scorer: CoalescingScorer) -> list[np.ndarray]:
        return await asyncio.gather(*(scorer.score_async(group) for group in groups))

    with CoalescingScorer(engine, max_wait_ms=50) as scorer:
        results = asyncio.run(main(scorer))
    for group, result in zip(groups, results):
        assert np.array_equal(result, _expected(group))


def test_full_queue_refuses_at_once_and_close_drains_accepted_work() -> None:
    scorer = CoalescingScorer(StubEngine(), max_wait_ms=60_000, max_batch_tokens=1 << 20, max_queue_pairs=3)
    first = _pairs(3)
    out: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: out.append(scorer.score(first)))
    thread.start()
    _wait_queued(scorer, 3)
    with pytest.raises(ScorerBusy, match="max_queue_pairs=3"):
        scorer.score(_pairs(1, seed=9))
    scorer.close(drain=True)
    thread.join()
    assert np.array_equal(out[0], _expected(first))
    with pytest.raises(ScorerClosed):
        scorer.score(first)


def test_a_call_larger_than_the_queue_runs_when_the_queue_is_empty() -> None:
    with CoalescingScorer(StubEngine(), max_queue_pairs=2) as scorer:
        pairs = _pairs(5)
        assert np.array_equal(scorer.score(pairs), _expected(pairs))


def test_a_deadline_removes_the_callers_pending_pairs() -> None:
    with CoalescingScorer(StubEngine(), max_wait_ms=60_000, max_batch_tokens=1 << 20) as scorer:
        with pytest.raises(ScorerTimeout, match="queued pairs removed"):
            scorer.score(_pairs(4), timeout=0.05)
        assert scorer.queued_pairs == 0


def test_cancelling_a_task_removes_its_pending_pairs() -> None:
    async def main(scorer: CoalescingScorer) -> int:
        task = asyncio.create_task(scorer.score_async(_pairs(4)))
        while scorer.queued_pairs < 4:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return scorer.queued_pairs

    with CoalescingScorer(StubEngine(), max_wait_ms=60_000, max_batch_tokens=1 << 20) as scorer:
        assert asyncio.run(main(scorer)) == 0


def test_close_without_drain_fails_queued_calls() -> None:
    scorer = CoalescingScorer(StubEngine(), max_wait_ms=60_000, max_batch_tokens=1 << 20)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            scorer.score(_pairs(2))
        except ScorerClosed as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    _wait_queued(scorer, 2)
    scorer.close(drain=False)
    thread.join()
    assert len(errors) == 1


def test_a_model_failure_reaches_every_caller_of_the_pass() -> None:
    with CoalescingScorer(StubEngine(fail=True)) as scorer:
        with pytest.raises(ClaimVerificationError, match="onnxruntime failed"):
            scorer.score(_pairs(2))
        # the worker survives a failed pass
        assert scorer.score([]).shape == (0, 3)


def test_forwards_optional_scorer_attributes_and_checks_pairs() -> None:
    with CoalescingScorer(StubEngine()) as scorer:
        assert scorer.resolved_revision == "abc123"
        assert scorer.truncated([("a", "b")]) == [False]
        with pytest.raises(ValueError, match="pair 0"):
            scorer.score(["not a pair"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_queue_pairs"):
        CoalescingScorer(StubEngine(), max_queue_pairs=0)


# ---------------------------------------------------------------- the real engine: bit-reproducible under any layout


@pytest.mark.parametrize("fixture", ["tiny_model_dir", "tiny_bert_model_dir"])
def test_probabilities_are_bit_identical_across_layouts(fixture: str, request: pytest.FixtureRequest) -> None:
    model_dir: Path = request.getfixturevalue(fixture)
    pairs = _pairs(48, seed=1)
    one_batch = OnnxScorer(model_dir, max_batch_tokens=1 << 20, batch_overhead_tokens=1e6)  # one mixed-length batch
    small = OnnxScorer(model_dir, max_batch_tokens=64, batch_overhead_tokens=0)  # many short batches
    alone = np.concatenate([one_batch.score([pair]) for pair in pairs])
    assert np.array_equal(one_batch.score(pairs), alone)
    assert np.array_equal(small.score(pairs), alone)
    assert one_batch.stats.padding_overhead > 1.0  # the mixed batch really was padded
    lengths = np.array([len(e.ids) for e in one_batch.encode(pairs).encodings])
    same = [pair for pair, length in zip(pairs, lengths) if length == np.bincount(lengths).argmax()]
    assert np.array_equal(one_batch.score(same), np.concatenate([one_batch.score([p]) for p in same]))
    # coalesced with strangers' pairs from other threads
    with CoalescingScorer(one_batch, max_wait_ms=50) as scorer:
        out: dict[int, np.ndarray] = {}
        chunks = [pairs[k::6] for k in range(6)]
        threads = [threading.Thread(target=lambda k=k: out.__setitem__(k, scorer.score(chunks[k]))) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for k, chunk in enumerate(chunks):
        assert np.array_equal(out[k], alone[k::6])


def test_score_encoded_equals_score(tiny_model_dir: Path) -> None:
    engine = OnnxScorer(tiny_model_dir)
    pairs = _pairs(10) + _pairs(3)  # with repeats
    probabilities, run = engine.score_encoded(engine.encode(pairs))
    assert np.array_equal(probabilities, engine.score(pairs))
    assert run.real_tokens > 0 and run.padded_tokens >= run.real_tokens


def test_verifier_over_the_coalescer_equals_the_plain_engine(tiny_model_dir: Path) -> None:
    plain = ClaimVerifier.from_model_dir(tiny_model_dir)
    requests = [
        {
            "claim": f"The launch is on day {k}.",
            "evidence": [
                ClaimEvidence(reference=f"m{j}", memory_id=UUID(int=100 * k + j), text=text)
                for j, (text, _) in enumerate(_pairs(3, seed=k))
            ],
        }
        for k in range(8)
    ]
    expected = plain.verify_many_sync(requests)
    with CoalescingScorer(OnnxScorer(tiny_model_dir), max_wait_ms=20) as scorer:
        coalesced = ClaimVerifier(plain.config, scorer=scorer)
        out: dict[int, object] = {}
        threads = [
            threading.Thread(target=lambda k=k: out.__setitem__(k, coalesced.verify_many_sync([requests[k]])[0]))
            for k in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        async def both() -> list[object]:
            return list(await asyncio.gather(*(coalesced.verify_many([r]) for r in requests)))

        via_async = [result[0] for result in asyncio.run(both())]  # type: ignore[index]
    assert [out[k] for k in range(8)] == expected
    assert via_async == expected
    assert [r.result_sha256 for r in via_async] == [r.result_sha256 for r in expected]  # type: ignore[attr-defined]


def test_padding_none_runs_each_pair_alone_with_the_same_bits(tiny_bert_model_dir: Path) -> None:
    pairs = _pairs(12, seed=3)
    unpadded = OnnxScorer(tiny_bert_model_dir, padding="none")
    batched = OnnxScorer(tiny_bert_model_dir)
    assert np.array_equal(unpadded.score(pairs), batched.score(pairs))
    assert unpadded.stats.batches == len(pairs) and unpadded.stats.padding_overhead == 1.0
    through_options = ClaimVerifier.from_model_dir(tiny_bert_model_dir, runtime=RuntimeOptions(padding="none")).scorer
    assert np.array_equal(through_options.score(pairs), batched.score(pairs))
    assert through_options.stats.batches == len(pairs)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="padding"):
        OnnxScorer(tiny_bert_model_dir, padding="bucketed")
    with pytest.raises(ValueError):
        RuntimeOptions(padding="bucketed")  # type: ignore[arg-type]

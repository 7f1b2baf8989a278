"""pytest-benchmark suite for the engine's hot paths (``pytest bench/ --benchmark-only``).

Not part of the main test suite (its ``testpaths`` is ``tests/``): these
functions measure, they never assert on speed (bench/README.md). Each benchmark
checks only that it computed something sensible, so a broken hot path fails
loudly instead of timing nothing.

Hot paths:

* tokenize + plan + pad: the 1,600 singles of workload (c) with the real
  DeBERTa-v3 tokenizer (``encode_batch_fast``), :func:`verifier.engine.batching.plan_batches`
  and :func:`verifier.engine.tokenization.pad_encodings`;
* one padded batch through onnxruntime: the tiny exported model (always) and the
  random DeBERTa-v3-base (when ``python -m bench build`` has run);
* :class:`verifier.engine.scorer.OnnxScorer.score` end to end on the tiny model;
* the guards on long passages (docs/decision.md §4-5: modes, entailment and refutation
  guards, exact negation, localisation) at ~2.5 kB and ~100 kB;
* the decision layer (:class:`verifier.ClaimVerifier` ``verify_many_sync``) over
  200 claims with a scripted scorer: the pure-Python cost per claim.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from bench.workloads import NEUTRAL, workload_a, workload_c, workload_d

if TYPE_CHECKING:  # pragma: no cover
    from tokenizers import Tokenizer


def _session(path: Path, threads: int = 2) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


# --------------------------------------------------------------------------- tokenizer + padding


def test_tokenize_plan_pad_1600_singles(benchmark: Any, real_tokenizer: "Tokenizer") -> None:
    """Tokenize workload (c)'s 1,600 singles, plan token-budget batches, pad every batch (int64)."""
    from verifier.engine.scorer import plan_batches
    from verifier.engine.tokenization import encode_pairs, pad_encodings

    pairs = workload_c(200).stages()[0]

    def run() -> int:
        encodings = encode_pairs(real_tokenizer, pairs)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        cells = 0
        for batch in plan_batches(lengths, max_batch_tokens=8192):
            feed = pad_encodings([encodings[i] for i in batch], pad_token_id=0, with_token_type_ids=False)
            cells += int(feed["input_ids"].size)
        return cells

    cells = benchmark(run)
    assert cells >= 40_000


def test_tokenize_only_1600_singles(benchmark: Any, real_tokenizer: "Tokenizer") -> None:
    """Tokenization alone (Rust ``encode_batch_fast`` over 1,600 pairs)."""
    from verifier.engine.tokenization import encode_pairs

    pairs = workload_c(200).stages()[0]
    encodings = benchmark(encode_pairs, real_tokenizer, pairs)
    assert len(encodings) == len(pairs)


def test_plan_batches_2720_lengths(benchmark: Any, real_tokenizer: "Tokenizer") -> None:
    """The padding-aware batch planner over every length of workload (c) (dynamic programming)."""
    from verifier.engine.scorer import plan_batches
    from verifier.engine.tokenization import encode_pairs

    lengths = np.array([len(e.ids) for e in encode_pairs(real_tokenizer, workload_c(200).pairs())], dtype=np.int64)
    batches = benchmark(plan_batches, lengths, max_batch_tokens=8192)
    assert sum(len(b) for b in batches) == len(lengths)


# --------------------------------------------------------------------------- onnxruntime


def _feed(tokenizer: "Tokenizer", pairs: list[tuple[str, str]], names: list[str]) -> dict[str, np.ndarray]:
    from verifier.engine.tokenization import encode_pairs, pad_encodings

    arrays = pad_encodings(encode_pairs(tokenizer, pairs), pad_token_id=0, with_token_type_ids="token_type_ids" in names)
    return {name: arrays[name] for name in names}


def test_onnxruntime_batch_tiny_model(benchmark: Any, tiny_onnx_dir: Path) -> None:
    """One padded batch (32 workload-(c) singles) through onnxruntime on the tiny exported model."""
    from verifier.engine.manifest import read_manifest
    from verifier.engine.tokenization import load_tokenizer

    manifest = read_manifest(tiny_onnx_dir)
    tokenizer = load_tokenizer(tiny_onnx_dir / "tokenizer.json", max_length=manifest.max_length)
    session = _session(tiny_onnx_dir / manifest.model_file)
    names = [node.name for node in session.get_inputs()]
    feed = _feed(tokenizer, workload_c(200).stages()[0][:32], names)
    logits = benchmark(session.run, ["logits"], feed)[0]
    assert logits.shape == (32, 3) and np.isfinite(logits).all()


def test_onnx_scorer_tiny_model_200_pairs(benchmark: Any, tiny_onnx_dir: Path) -> None:
    """``OnnxScorer.score`` end to end (tokenize, plan, pad, run, softmax, reorder) on 200 pairs."""
    from verifier.engine.scorer import OnnxScorer

    scorer = OnnxScorer(tiny_onnx_dir, intra_op_num_threads=2, inter_op_num_threads=1).load()
    pairs = workload_c(200).stages()[0][:200]
    probs = benchmark(scorer.score, pairs)
    assert probs.shape == (200, 3)


@pytest.mark.parametrize("variant", [None, "optimized", "int8"])
def test_onnxruntime_batch_deberta_v3_base(benchmark: Any, bench_onnx_dir: Path, variant: Any) -> None:
    """One padded batch of 32 workload-(a)/(c) singles (~32 x 40 tokens) through random DeBERTa-v3-base."""
    from verifier.engine.manifest import read_manifest
    from verifier.engine.tokenization import load_tokenizer

    manifest = read_manifest(bench_onnx_dir)
    if variant is not None and variant not in manifest.variants:
        pytest.skip(f"variant {variant} not built")
    file = manifest.model_file if variant is None else manifest.variants[variant].file
    tokenizer = load_tokenizer(bench_onnx_dir / "tokenizer.json", max_length=manifest.max_length)
    session = _session(bench_onnx_dir / file)
    names = [node.name for node in session.get_inputs()]
    feed = _feed(tokenizer, workload_c(200).stages()[0][:32], names)
    logits = benchmark.pedantic(session.run, args=(["logits"], feed), rounds=5, warmup_rounds=1)[0]
    assert logits.shape == (32, 3)


# --------------------------------------------------------------------------- guards


def _long_text(target: int) -> str:
    text = workload_d().cases[0].passages[0].text
    return (text + " ") * max(1, target // len(text))


@pytest.mark.parametrize("size", [2_500, 100_000], ids=["2.5kB", "100kB"])
def test_guards_long_passage(benchmark: Any, size: int) -> None:
    """Every guard of docs/decision.md §4-5 on one long passage against a plain claim."""
    from verifier.decision.guards import (
        PassageView,
        entailment_guard,
        exact_negation,
        localize,
        refutation_guard,
        speech_act_modes,
    )

    claim = workload_d().cases[0].claim
    passages = [PassageView(text=_long_text(size))]

    def run() -> tuple[Any, ...]:
        return (
            speech_act_modes(passages[0].text),
            entailment_guard(claim, passages),
            refutation_guard(claim, passages),
            exact_negation(claim, passages),
            localize(claim, passages),
        )

    result = benchmark(run)
    assert len(result) == 5


# --------------------------------------------------------------------------- decision layer


def test_decision_layer_200_claims_scripted(benchmark: Any) -> None:
    """``verify_many_sync`` over workload (c)'s 200 claims with scripted scores (no model)."""
    from verifier import ClaimVerifier, ScriptedScorer

    workload = workload_c(200)
    scripted: dict[Any, Any] = {}  # (premise, claim) -> probabilities
    for case in workload.cases:
        scripted.update(case.scripted_scores())
    requests = [{"claim": case.claim, "evidence": case.evidence()} for case in workload.cases]

    def run() -> list[Any]:
        verifier = ClaimVerifier(scorer=ScriptedScorer(scripted, default=NEUTRAL))
        return verifier.verify_many_sync(requests)

    results = benchmark(run)
    expected = [case.expected_status for case in workload.cases]
    assert [r.status.value for r in results] == expected


def test_decision_layer_one_claim_scripted(benchmark: Any) -> None:
    """``verify_sync`` of workload (a)'s claim with scripted scores: the per-claim Python floor."""
    from verifier import ClaimVerifier, ScriptedScorer

    case = workload_a().cases[0]
    scores: dict[Any, Any] = dict(case.scripted_scores())
    verifier = ClaimVerifier(scorer=ScriptedScorer(scores, default=NEUTRAL))
    result = benchmark(verifier.verify_sync, case.claim, case.evidence())
    assert result.status.value == "supported"

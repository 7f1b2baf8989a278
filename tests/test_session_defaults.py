"""The engine's onnxruntime session defaults (verifier.engine.session.DEFAULT_CONFIG_ENTRIES, docs/performance.md):
what each default does to the graph onnxruntime runs (the SkipLayerNormalization fusion is off in the int8 graph,
and float32 graphs and scores do not change), and that a caller's entry wins. Speed itself is measured in bench/, not here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verifier.engine.scorer import OnnxScorer
from verifier.engine.session import create_session, effective_config_entries, session_options

FUSION_ON = {"optimization.disable_specified_optimizers": ""}
SENTENCES = [
    "The launch moved to Wednesday after the review.",
    "Maria paid the invoice for the new office chairs on Friday, two days before the deadline.",
    "No.",
    "The team met in Lisbon; the notes say the budget was approved, then cut by a third in March.",
]


def _optimized_op_types(model: Path, out: Path, entries: "dict[str, str] | None") -> list[str]:
    onnx = pytest.importorskip("onnx")
    create_session(model, session_options(config_entries=entries, optimized_model_filepath=out))
    return [node.op_type for node in onnx.load(str(out), load_external_data=False).graph.node]


def test_skip_layer_norm_fusion_is_off_by_default_and_a_callers_entry_wins(tiny_int8_dir: Path, tmp_path: Path) -> None:
    model = tiny_int8_dir / "model.int8.onnx"
    default = _optimized_op_types(model, tmp_path / "default.onnx", None)
    fused = _optimized_op_types(model, tmp_path / "fused.onnx", FUSION_ON)
    # in the int8 graph onnxruntime fuses a residual Add + LayerNormalization of each layer unless told not to
    assert fused.count("SkipLayerNormalization") > 0
    assert default.count("SkipLayerNormalization") == 0
    assert default.count("LayerNormalization") == fused.count("LayerNormalization") + fused.count("SkipLayerNormalization")


def test_float32_graphs_and_scores_do_not_change(tiny_model_dir: Path, tmp_path: Path) -> None:
    """onnxruntime 1.32 does not fuse SkipLayerNormalization in these float32 graphs: the default changes nothing there."""
    model = tiny_model_dir / "model.onnx"
    assert _optimized_op_types(model, tmp_path / "a.onnx", None) == _optimized_op_types(model, tmp_path / "b.onnx", FUSION_ON)
    pairs = [(premise, hypothesis) for premise in SENTENCES for hypothesis in SENTENCES]  # padded batches
    default = OnnxScorer(tiny_model_dir).score_logits(pairs)
    fused = OnnxScorer(tiny_model_dir, session_config_entries=FUSION_ON).score_logits(pairs)
    assert default.dtype == np.float32 and default.shape == (len(pairs), 3)
    assert np.ascontiguousarray(default).tobytes() == np.ascontiguousarray(fused).tobytes()


def test_defaults_and_caller_entries() -> None:
    assert session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert session_options().get_session_config_entry("optimization.disable_specified_optimizers") == "SkipLayerNormFusion"
    assert session_options().get_session_config_entry("session.x64quantprecision") == "1"  # exact int8 sums without VNNI
    chosen = session_options(config_entries={"session.intra_op.allow_spinning": "1", **FUSION_ON})
    assert chosen.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert chosen.get_session_config_entry("optimization.disable_specified_optimizers") == ""
    assert effective_config_entries({"x.y": "1"}) == {
        "optimization.disable_specified_optimizers": "SkipLayerNormFusion",
        "session.intra_op.allow_spinning": "0",
        "session.x64quantprecision": "1",
        "x.y": "1",
    }


def _batches(model_dir: Path, pairs: "list[tuple[str, str]]", **kwargs: object) -> int:
    scorer = OnnxScorer(model_dir, **kwargs)  # type: ignore[arg-type]
    scorer.score(pairs)
    return int(scorer.stats.batches)


def test_the_planners_per_run_cost_defaults_by_variant(tiny_int8_dir: Path) -> None:
    """verifier.options.default_batch_overhead_tokens: 64 padded tokens a run for int8 (its tokens are cheaper,
    its per-run cost is not), 16 otherwise; an explicit value wins, and RuntimeOptions leaves it to the engine."""
    from verifier.options import RuntimeOptions, default_batch_overhead_tokens

    assert (default_batch_overhead_tokens("int8"), default_batch_overhead_tokens(None)) == (64.0, 16.0)
    assert (default_batch_overhead_tokens("bf16"), default_batch_overhead_tokens("ov-int8")) == (200.0, 200.0)
    assert RuntimeOptions().batch_overhead_tokens is None
    words = "the launch moved to wednesday after a long review of every open issue".split()
    pairs = [(" ".join(words[: 1 + i % len(words)] * (1 + i // len(words))), "The launch is on Tuesday.") for i in range(48)]
    int8 = {"variant": "int8"}
    default_int8 = _batches(tiny_int8_dir, pairs, **int8)
    assert default_int8 == _batches(tiny_int8_dir, pairs, batch_overhead_tokens=64.0, **int8)
    assert default_int8 < _batches(tiny_int8_dir, pairs, batch_overhead_tokens=16.0, **int8)
    assert _batches(tiny_int8_dir, pairs) == _batches(tiny_int8_dir, pairs, batch_overhead_tokens=16.0)


def test_the_openvino_variants_plan_fewer_fuller_batches(tiny_bf16_dir: Path) -> None:
    """An OpenVINO call's fixed cost is larger than onnxruntime's (docs/performance.md): bf16 defaults to
    200 padded tokens a run, so the same pairs run in fewer batches than under float32's 16."""
    words = "the launch moved to wednesday after a long review of every open issue".split()
    pairs = [(" ".join(words[: 1 + i % len(words)] * (1 + i // len(words))), "The launch is on Tuesday.") for i in range(48)]
    bf16 = {"variant": "bf16", "max_batch_tokens": 256}
    default_bf16 = _batches(tiny_bf16_dir, pairs, **bf16)
    assert default_bf16 == _batches(tiny_bf16_dir, pairs, batch_overhead_tokens=200.0, **bf16)
    assert default_bf16 < _batches(tiny_bf16_dir, pairs, batch_overhead_tokens=16.0, **bf16)

"""The benchmark instrument's own correctness (no timing): workloads, FLOP formula, export variants.

Speed is never asserted here (STYLE §16); these tests check that the
instrument measures what it says: every workload case takes its designed
SPEC §3 path through the real decision layer, the workloads are
deterministic, the FLOP formula matches a hand count, and
:func:`export.variants.build_variants` gates, records and fails closed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from bench.flops import HIDDEN, INTERMEDIATE, LAYERS, flops_per_sequence, total_flops
from bench.workloads import (
    PASSAGES_PER_CLAIM,
    all_workloads,
    check_paths,
    mix_with_pair_share,
    workload_a,
    workload_b,
    workload_c,
    workload_d,
)
from bench.worker import CostedScriptedScorer, workload_digest


class TestWorkloads:
    def test_every_case_takes_its_designed_path(self) -> None:
        """A case that misses its path would make the staged/eager and (c) figures measure the wrong work."""
        for workload in (workload_a(), workload_b(), workload_c(60), workload_d()):
            assert check_paths(workload) == []

    def test_shapes_of_a_b_d(self) -> None:
        a, b, d = workload_a(), workload_b(), workload_d()
        assert [len(stage) for stage in a.stages()] == [8]
        assert [len(stage) for stage in b.stages()] == [8, 28]
        assert [len(stage) for stage in d.stages()] == [8]
        assert all(len(case.passages) == PASSAGES_PER_CLAIM for w in (a, b, d) for case in w.cases)
        assert min(len(p.text) for p in d.cases[0].passages) > 2000

    def test_c_mix_and_staging(self) -> None:
        c = workload_c(200)
        assert c.path_counts() == {"single-support": 130, "single-refute": 30, "pair-support": 20, "insufficient": 20}
        singles, pairs = c.stages()
        assert len(singles) == 1600 and len(pairs) == 40 * 28
        assert len(set(c.pairs())) == len(c.pairs())

    def test_pair_share_rescales_the_mix(self) -> None:
        mix = mix_with_pair_share(0.5)
        assert mix["pair-support"] + mix["insufficient"] == pytest.approx(0.5)
        assert sum(mix.values()) == pytest.approx(1.0)
        with pytest.raises(ValueError, match=re.escape("pair share must be in [0, 1], got 1.5")):
            mix_with_pair_share(1.5)

    def test_deterministic_across_calls(self) -> None:
        """Both backends regenerate the workloads in their own processes: same seed, same bytes."""
        assert workload_digest(all_workloads(20)) == workload_digest(all_workloads(20))
        assert workload_digest(all_workloads(20)) != workload_digest(all_workloads(21))

    def test_costed_scripted_scorer_runs_the_engine_and_answers_the_script(self) -> None:
        sent: list[list[tuple[str, str]]] = []

        class Engine:
            def score(self, pairs: list[tuple[str, str]]) -> np.ndarray:
                sent.append(list(pairs))
                return np.full((len(pairs), 3), 1 / 3)

        case = workload_a().cases[0]
        scorer = CostedScriptedScorer(Engine(), case.scripted_scores())
        probs = scorer.score(case.single_pairs())
        assert sent == [case.single_pairs()]
        assert probs[case.deciding[0]].tolist() == [0.95, 0.02, 0.03]
        assert scorer.pairs_sent == 8 and scorer.calls == 1


class TestFlops:
    def test_hand_count_at_64_tokens(self) -> None:
        d, f, n, length = HIDDEN, INTERMEDIATE, LAYERS, 64
        per_layer = 8 * length * d * d + 4 * length * d * f + 4 * length * length * d + 4 * length * (2 * length) * d
        assert flops_per_sequence(length) == n * per_layer + 2 * d * d + 6 * d

    def test_relative_span_caps_at_512(self) -> None:
        d = HIDDEN
        extra = flops_per_sequence(400, "implemented") - flops_per_sequence(400, "minimal")
        assert extra == pytest.approx(LAYERS * 4 * 400 * (512 - 512) * d)
        assert flops_per_sequence(100, "implemented") > flops_per_sequence(100, "minimal")

    def test_total_and_empty(self) -> None:
        assert flops_per_sequence(0) == 0.0
        assert total_flops([10, 20]) == flops_per_sequence(10) + flops_per_sequence(20)


# --------------------------------------------------------------------------- export variants


@pytest.fixture
def variants_dir(tiny_model_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny export to add variants to."""
    return Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))


@pytest.mark.export
class TestVariants:
    def test_build_records_gated_variants_and_the_engine_loads_them(self, variants_dir: Path) -> None:
        from export.variants import VariantGate, build_variants
        from verifier.engine import OnnxScorer
        from verifier.manifest import read_manifest, verify_files

        # The tiny model (hidden 32, logits scaled far apart) loses more to int8 than
        # the default gate allows; the gate is the caller's to set, and is recorded.
        loose = VariantGate(max_abs_logit_diff=5.0, max_prob_diff=1.0, min_argmax_agreement=0.0)
        report = build_variants(variants_dir, gates={"int8": loose})
        manifest = read_manifest(variants_dir)
        assert sorted(manifest.variants) == ["int8", "optimized"]
        assert manifest.variants["optimized"].file == "model.optimized.onnx"
        assert manifest.variants["int8"].file == "model.int8.onnx"
        assert verify_files(variants_dir, manifest) == []
        optimized = manifest.variants["optimized"].parity
        assert optimized.passed and optimized.max_abs_logit_diff <= 1e-4 and optimized.argmax_agreement == 1.0
        int8 = manifest.variants["int8"].parity
        assert int8.passed and int8.max_prob_diff_gate == 1.0 and int8.atol == 5.0
        assert [r.status for r in report.results] == ["built", "built"]
        assert not list(variants_dir.glob(".*partial*"))

        pairs = [("The launch is Tuesday.", "The launch is on Tuesday."), ("Ravi owns ingestion.", "Tessa owns it.")]
        base = OnnxScorer(variants_dir).score(pairs)
        fast = OnnxScorer(variants_dir, variant="optimized", verify_golden=True).score(pairs)
        np.testing.assert_allclose(fast, base, atol=1e-5)
        small = OnnxScorer(variants_dir, variant="int8").score(pairs)
        assert small.shape == (2, 3)

    def test_rerun_keeps_verified_variants(self, variants_dir: Path) -> None:
        from export.variants import build_variants

        build_variants(variants_dir, ["optimized"])
        before = (variants_dir / "manifest.json").read_bytes()
        report = build_variants(variants_dir, ["optimized"])
        assert [r.status for r in report.results] == ["kept"]
        assert (variants_dir / "manifest.json").read_bytes() == before

    def test_failed_gate_records_nothing(self, variants_dir: Path) -> None:
        """Fail closed: one variant missing its gate leaves the manifest and directory as they were."""
        from export.errors import ParityError
        from export.variants import VariantGate, build_variants

        before = (variants_dir / "manifest.json").read_bytes()
        files = sorted(p.name for p in variants_dir.iterdir())
        impossible = VariantGate(max_abs_logit_diff=1e-12, max_prob_diff=None, min_argmax_agreement=1.0)
        with pytest.raises(ParityError, match=re.escape("1 variant(s) failed their parity gate")):
            build_variants(variants_dir, ["optimized", "int8"], gates={"int8": impossible})
        assert (variants_dir / "manifest.json").read_bytes() == before
        assert sorted(p.name for p in variants_dir.iterdir()) == files

    def test_unknown_name_and_tampered_dir(self, variants_dir: Path) -> None:
        from export.errors import ExportError, ManifestError
        from export.variants import build_variants

        with pytest.raises(ExportError, match=re.escape("unknown variant(s) ['fp16']")):
            build_variants(variants_dir, ["fp16"])
        (variants_dir / "config.json").write_text("{}", encoding="utf-8")
        with pytest.raises(ManifestError, match="files do not match manifest.json"):
            build_variants(variants_dir, ["int8"])

    def test_cli(self, variants_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from export.variants import main

        args = ["--int8-max-prob-diff", "0.9", "--int8-max-logit-diff", "5", "--int8-min-argmax-agreement", "0"]
        assert main([str(variants_dir), "--variants", "int8", *args]) == 0
        out = capsys.readouterr().out
        assert "int8 (model.int8.onnx" in out and "PASS" in out
        manifest = json.loads((variants_dir / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["variants"]["int8"]["parity"]["max_prob_diff_gate"] == 0.9


# --------------------------------------------------------------------------- span-sliced attention


@pytest.mark.export
class TestSpanSlicedAttention:
    def test_same_logits_as_transformers_for_short_and_long_inputs(self, tiny_source_dir: Path) -> None:
        """The patched relative-attention bias must reproduce transformers' logits exactly enough
        (1e-5) below, at and beyond the position-bucket span (the tiny model has 64 buckets)."""
        torch = pytest.importorskip("torch")
        from transformers import AutoModelForSequenceClassification

        from export.fast_attention import span_sliced_attention

        model = AutoModelForSequenceClassification.from_pretrained(str(tiny_source_dir)).eval()
        generator = torch.Generator().manual_seed(0)
        vocab = model.config.vocab_size
        for batch, length in ((3, 5), (2, 40), (2, 64), (2, 100), (1, 300)):
            ids = torch.randint(5, vocab, (batch, length), generator=generator)
            mask = torch.ones_like(ids)
            mask[-1, length // 2 :] = 0
            with torch.no_grad():
                reference = model(input_ids=ids, attention_mask=mask).logits
                with span_sliced_attention():
                    patched = model(input_ids=ids, attention_mask=mask).logits
            assert float((reference - patched).abs().max()) <= 1e-5, (batch, length)

    def test_context_manager_restores_the_original(self) -> None:
        pytest.importorskip("torch")
        from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

        from export.fast_attention import patched_bias, span_sliced_attention

        original = deberta.DisentangledSelfAttention.disentangled_attention_bias
        with span_sliced_attention():
            assert deberta.DisentangledSelfAttention.disentangled_attention_bias is patched_bias
        assert deberta.DisentangledSelfAttention.disentangled_attention_bias is original

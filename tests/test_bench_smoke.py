"""The benchmark instrument's own correctness (no timing): workloads, FLOP formula, export variants, plumbing.

Speed is never asserted here (speed lives in bench/, see bench/README.md);
these tests check that the instrument measures what it says: every workload
case takes its designed path (docs/decision.md §3) through the real decision
layer, the workloads are deterministic, the FLOP formula matches a hand
count, :func:`verifier_export.variants.build_variants` gates, records and fails
closed, and bench's own plumbing (typed results and their JSON, the
subprocess helper, the up-front check, the OnnxScorer backend's public
options) does what bench/README.md says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from bench.flops import HIDDEN, INTERMEDIATE, LAYERS, flops_per_sequence, total_flops
from bench.measure import CostedScriptedScorer
from bench.workloads import (
    PASSAGES_PER_CLAIM,
    all_workloads,
    check_paths,
    mix_with_pair_share,
    workload_a,
    workload_b,
    workload_c,
    workload_d,
    workload_digest,
)


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
    @pytest.mark.slow
    def test_build_records_gated_variants_and_the_engine_loads_them(self, variants_dir: Path) -> None:
        from verifier_export.variants import VariantGate, build_variants
        from verifier.engine.scorer import OnnxScorer
        from verifier.engine.manifest import read_manifest, verify_files

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
        from verifier_export.variants import build_variants

        build_variants(variants_dir, ["optimized"])
        before = (variants_dir / "manifest.json").read_bytes()
        report = build_variants(variants_dir, ["optimized"])
        assert [r.status for r in report.results] == ["kept"]
        assert (variants_dir / "manifest.json").read_bytes() == before


    @pytest.mark.slow
    def test_a_failed_gate_keeps_the_variants_that_passed(self, variants_dir: Path) -> None:
        """Regression: `--variants optimized int8` where int8 failed its gate discarded the optimized variant
        that passed. Now the passing one is recorded, the failing one is not, and the error says both."""
        from verifier_export.errors import ParityError
        from verifier_export.variants import VariantGate, build_variants
        from verifier.engine.manifest import read_manifest, verify_files

        impossible = VariantGate(max_abs_logit_diff=1e-12, max_prob_diff=None, min_argmax_agreement=1.0)
        with pytest.raises(ParityError, match=re.escape("1 variant(s) failed their parity gate")) as caught:
            build_variants(variants_dir, ["optimized", "int8"], gates={"int8": impossible})
        # the same collector as every golden re-check: each bound missed, with its worst pair
        assert re.search(r"int8: max \|Δlogit\| \S+ > atol 1e-12 \(worst: golden pair \d+\)", str(caught.value))
        assert str(caught.value).endswith("; recorded anyway: optimized")
        manifest = read_manifest(variants_dir)
        assert sorted(manifest.variants) == ["optimized"] and "model.int8.onnx" not in manifest.files
        assert verify_files(variants_dir, manifest) == []
        assert not (variants_dir / "model.int8.onnx").exists() and not list(variants_dir.glob(".*partial*"))

    def test_a_failed_gate_alone_records_nothing(self, variants_dir: Path) -> None:
        """Fail closed for the failing variant: the manifest and directory stay as they were."""
        from verifier_export.errors import ParityError
        from verifier_export.variants import VariantGate, build_variants

        before = (variants_dir / "manifest.json").read_bytes()
        files = sorted(p.name for p in variants_dir.iterdir())
        impossible = VariantGate(max_abs_logit_diff=1e-12, max_prob_diff=None, min_argmax_agreement=1.0)
        with pytest.raises(ParityError, match=re.escape("1 variant(s) failed their parity gate")):
            build_variants(variants_dir, ["int8"], gates={"int8": impossible})
        assert (variants_dir / "manifest.json").read_bytes() == before
        assert sorted(p.name for p in variants_dir.iterdir()) == files

    def test_unknown_name_and_tampered_dir(self, variants_dir: Path) -> None:
        from verifier_export.errors import ExportError, ManifestError
        from verifier_export.variants import build_variants

        with pytest.raises(ExportError, match=re.escape("unknown variant(s) ['fp16']")):
            build_variants(variants_dir, ["fp16"])
        (variants_dir / "config.json").write_text("{}", encoding="utf-8")
        with pytest.raises(ManifestError, match=re.escape("does not match its manifest (tampered or incomplete")):
            build_variants(variants_dir, ["int8"])

    def test_cli(self, variants_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        from verifier_export.variants import main

        args = ["--int8-max-prob-diff", "0.9", "--int8-max-logit-diff", "5", "--int8-min-argmax-agreement", "0"]
        assert main([str(variants_dir), "--variants", "int8", *args]) == 0
        out = capsys.readouterr().err
        assert "int8 (model.int8.onnx" in out and "PASS" in out
        manifest = json.loads((variants_dir / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["variants"]["int8"]["parity"]["max_prob_diff_gate"] == 0.9

    def test_export_command_adds_variants_to_an_existing_export_of_any_model(
        self, variants_dir: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``python -m export --output DIR --variants ...`` (no --model) builds into DIR's export, a local
        one here, and prints what ``python -m export.variants DIR`` prints."""
        from verifier_export.__main__ import main as export_main
        from verifier_export.variants import main as variants_main

        loose = ["--int8-max-prob-diff", "1", "--int8-max-logit-diff", "5", "--int8-min-argmax-agreement", "0"]

        def summary(err: str) -> list[str]:  # the summary lines (on stderr, issue 34), without progress lines
            return [line for line in err.splitlines() if not line.startswith(("export [", "verifier_export.variants ["))]

        assert export_main(["--output", str(variants_dir), "--variants", "int8", *loose]) == 0
        captured = capsys.readouterr()
        out = "\n".join(summary(captured.err))
        assert captured.out == "" and "int8 (model.int8.onnx" in out and "built" in out and "verified existing export" not in out
        assert variants_main([str(variants_dir), "--variants", "int8", *loose]) == 0
        assert "\n".join(summary(capsys.readouterr().err)) == out.replace(", built)", ", kept)")

    @pytest.mark.slow
    def test_a_kept_variant_is_judged_by_the_gate_asked_for_now(self, variants_dir: Path) -> None:
        """Regression (issue 34): ``python -m export.variants DIR --variants int8`` printed ``kept ... -> PASS``
        under the default gate because int8 had been recorded under a looser one (a fresh directory
        exits 3), and the tiny model's few-hundred-KB file showed as "0 MB"."""
        import subprocess
        import sys

        repo = Path(__file__).resolve().parent.parent

        def variants(*args: str) -> "subprocess.CompletedProcess[str]":
            return subprocess.run([sys.executable, "-m", "export.variants", str(variants_dir), "--variants", "int8", *args],
                                  cwd=repo, capture_output=True, text=True, timeout=300)

        loose = variants("--int8-max-prob-diff", "1", "--int8-max-logit-diff", "50", "--int8-min-argmax-agreement", "0")
        assert loose.returncode == 0 and loose.stdout == "", loose.stderr
        size = (variants_dir / "model.int8.onnx").stat().st_size
        assert size < 1_000_000 and f"int8 (model.int8.onnx, {size / 1e3:.0f} KB, built)" in loose.stderr
        recorded = json.loads((variants_dir / "manifest.json").read_text(encoding="utf-8"))["variants"]["int8"]["parity"]
        # the default int8 gate (0.5 logits, 0.05 probability) is what this run asks for
        assert recorded["max_abs_prob_diff"] > 0.05 or recorded["max_abs_logit_diff"] > 0.5, recorded
        strict = variants()
        assert strict.returncode == 3, strict.stderr
        assert f"int8 (model.int8.onnx, {size / 1e3:.0f} KB, kept)" in strict.stderr and "-> FAIL" in strict.stderr
        assert "looser gate" in strict.stderr and "-> PASS" not in strict.stderr
        again = variants("--int8-max-prob-diff", "1", "--int8-max-logit-diff", "50", "--int8-min-argmax-agreement", "0")
        assert again.returncode == 0 and ", kept): " in again.stderr and "-> PASS" in again.stderr, again.stderr


    @pytest.mark.slow
    def test_variants_shim_runs_as_a_module(self, variants_dir: Path) -> None:
        """bench/model.py runs ``python -m export.variants DIR --variants ...`` in a subprocess."""
        import os
        import subprocess
        import sys

        repo = Path(__file__).resolve().parent.parent
        proc = subprocess.run(
            [sys.executable, "-m", "verifier_export.variants", str(variants_dir), "--variants", "optimized"],
            cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert "optimized (model.optimized.onnx" in proc.stderr and "PASS" in proc.stderr
        missing = subprocess.run(
            [sys.executable, "-m", "verifier_export.variants", str(variants_dir / "absent")],
            cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True, timeout=300,
        )
        assert missing.returncode == 4 and missing.stderr.startswith("verifier_export.variants: error: model directory ")


# --------------------------------------------------------------------------- span-sliced attention


@pytest.mark.export
class TestSpanSlicedAttention:
    def test_same_logits_as_transformers_for_short_and_long_inputs(self, tiny_source_dir: Path) -> None:
        """The patched relative-attention bias must reproduce transformers' logits exactly enough
        (1e-5) below, at and beyond the position-bucket span (the tiny model has 64 buckets)."""
        torch = pytest.importorskip("torch")
        from transformers import AutoModelForSequenceClassification

        from verifier_export.fast_attention import span_sliced_attention

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

        from verifier_export.fast_attention import patched_bias, span_sliced_attention

        from verifier_export.fast_attention import additive_mask_forward

        original = deberta.DisentangledSelfAttention.disentangled_attention_bias
        original_forward = deberta.DisentangledSelfAttention.forward
        original_scale = deberta.scaled_size_sqrt
        with span_sliced_attention():
            assert deberta.DisentangledSelfAttention.disentangled_attention_bias is patched_bias
            assert deberta.DisentangledSelfAttention.forward is additive_mask_forward  # transformers 4.57 here
            assert deberta.scaled_size_sqrt is not original_scale
        assert deberta.DisentangledSelfAttention.disentangled_attention_bias is original
        assert deberta.DisentangledSelfAttention.forward is original_forward
        assert deberta.scaled_size_sqrt is original_scale

    def test_the_additive_mask_gives_masked_fills_logits_bit_for_bit(self, tiny_source_dir: Path) -> None:
        """Same span bias, transformers' forward (masked_fill) vs the additive mask: identical float32 logits,
        with padding rows and masked positions inside a row."""
        torch = pytest.importorskip("torch")
        from transformers import AutoModelForSequenceClassification
        from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

        from verifier_export.fast_attention import additive_mask_forward, span_sliced_attention

        model = AutoModelForSequenceClassification.from_pretrained(str(tiny_source_dir)).eval()
        original_forward = deberta.DisentangledSelfAttention.forward
        generator = torch.Generator().manual_seed(1)
        for batch, length in ((3, 5), (2, 40), (4, 17), (1, 300)):
            ids = torch.randint(5, model.config.vocab_size, (batch, length), generator=generator)
            mask = torch.ones_like(ids)
            mask[-1, length // 2 :] = 0
            mask[0, 1:3] = 0
            with torch.no_grad(), span_sliced_attention():
                additive = model(input_ids=ids, attention_mask=mask).logits
                deberta.DisentangledSelfAttention.forward = original_forward  # type: ignore[method-assign]
                try:
                    filled = model(input_ids=ids, attention_mask=mask).logits
                finally:
                    deberta.DisentangledSelfAttention.forward = additive_mask_forward  # type: ignore[method-assign]
            assert torch.equal(additive, filled), (batch, length)
        assert deberta.DisentangledSelfAttention.forward is original_forward

    def test_the_constant_scale_is_transformers_value_bit_for_bit(self) -> None:
        torch = pytest.importorskip("torch")
        from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

        from verifier_export.fast_attention import constant_scale

        for head_size in (8, 16, 32, 64, 96, 128):
            for scale_factor in (1, 2, 3):
                query = torch.zeros(2, 5, head_size)
                expected = deberta.scaled_size_sqrt(query, scale_factor)
                got = constant_scale(query, scale_factor)
                assert got.dtype == expected.dtype == torch.float32
                assert got.numpy().tobytes() == expected.numpy().tobytes(), (head_size, scale_factor)

    def test_the_exported_scale_is_a_constant_onnxruntime_fuses(self, tiny_model_dir: Path, tmp_path: Path) -> None:
        """With the scale a constant, onnxruntime folds the transposed keys' division into one FusedMatMul
        per layer, and no square root is left to compute at run time."""
        onnx = pytest.importorskip("onnx")
        from verifier.engine.manifest import read_manifest
        from verifier.engine.session import create_session, session_options

        assert read_manifest(tiny_model_dir).attention == "span"
        out = tmp_path / "optimized.onnx"
        create_session(tiny_model_dir / "model.onnx", session_options(optimized_model_filepath=out))
        ops = [node.op_type for node in onnx.load(str(out), load_external_data=False).graph.node]
        layers = json.loads((tiny_model_dir / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
        assert ops.count("FusedMatMul") == layers and "Sqrt" not in ops and "ConstantOfShape" not in ops
        # the attention mask is added to the scores (no float Where before any softmax)
        graph = onnx.load(str(out), load_external_data=False).graph
        producer = {output: node for node in graph.node for output in node.output}
        softmax_inputs = [producer[node.input[0]].op_type for node in graph.node if node.op_type == "Softmax"]
        assert softmax_inputs == ["Add"] * layers


# --------------------------------------------------------------------------- plumbing: results, subprocesses, checks


class TestBenchPlumbing:
    """bench's own rooms: typed results keep the JSON shape, one subprocess helper, the up-front check."""

    def test_worker_result_json_keeps_the_legacy_keys_and_round_trips(self) -> None:
        from bench.results import ColdStart, RssResult, WorkerResult

        result = WorkerResult(
            backend="onnx", variant=None, threads=2, pid=1, digest="d", process_started_wall=1.0,
            numpy_and_workloads_seconds=0.1,
            cold_start=ColdStart(import_seconds=0.1, load_seconds=1.0, first_pair_seconds=0.01,
                                 import_load_first_seconds=1.11, ready_wall=5.0),
            rss=RssResult(after_load_bytes=1, peak_after_load_bytes=2, peak_bytes=3),
            versions={"onnxruntime": "x"}, rss_probe={"b_seconds": 1.0, "d_seconds": 2.0},
        )
        data = json.loads(json.dumps(result.to_json()))
        assert list(data) == [
            "backend", "variant", "threads", "pid", "digest", "process_started_wall", "numpy_and_workloads_seconds",
            "cold_start", "rss", "versions", "rss_probe",
        ]
        assert "process_to_ready_seconds" not in data["cold_start"] and data["variant"] is None
        assert WorkerResult.from_json(data) == result

    def test_run_python_runs_this_interpreter_in_the_repo_and_reports_failure(self) -> None:
        from bench.proc import REPO_ROOT, python_env, run_python

        lines: list[str] = []
        out = run_python(["-c", "import os, sys; print(os.getcwd()); print(os.environ['OMP_NUM_THREADS'])"],
                         env=python_env(3), log=lines.append)
        assert out.stdout.split() == [str(REPO_ROOT), "3"] and lines == [f"  {REPO_ROOT}", "  3"]
        assert python_env()["PYTHONPATH"].split(os.pathsep)[0] == str(REPO_ROOT)
        with pytest.raises(RuntimeError, match=re.escape("python -c import sys; sys.exit(3) failed with exit status 3")):
            run_python(["-c", "import sys; sys.exit(3)"])

    def test_preflight_names_what_is_missing_in_one_line(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import bench.preflight as preflight
        from bench.__main__ import main

        monkeypatch.setattr(preflight, "missing_modules", lambda modules: [name for _, name in modules])
        assert main(["compare", "--models-root", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("python -m bench compare: missing psutil, sentence-transformers")
        assert "bash scripts/setup.sh export,test,bench" in err and "torch" in err
        assert main(["compare", "--no-torch", "--models-root", str(tmp_path)]) == 2
        assert "sentence-transformers" not in capsys.readouterr().err.split("(the bench extra)")[0]
        monkeypatch.setattr(preflight, "missing_modules", lambda modules: [])
        monkeypatch.setattr("verifier_export.testmodels.real_tokenizer_dir", _no_tokenizer)
        assert main(["build", "--models-root", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "python -m bench build: cannot build the benchmark model: no tokenizer" in err
        assert not (tmp_path / "bench-deberta-v3-base-random").exists()

    def test_worker_rejects_unknown_tasks(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        from bench.proc import THREAD_ENV_VARS
        from bench.worker import main

        for name in THREAD_ENV_VARS:
            monkeypatch.setenv(name, "2")
        args = ["--backend", "onnx", "--model-dir", str(tmp_path), "--out", str(tmp_path / "r.json")]
        assert main([*args, "--tasks", "latency"]) == 2
        assert not (tmp_path / "r.json").exists()


def _no_tokenizer() -> Path:
    raise FileNotFoundError("no tokenizer")


@pytest.mark.export
class TestBenchBackends:
    """The OnnxScorer backend through public options only, and the children's JSON as the runner merges it."""

    def test_onnx_backend_times_session_run_through_the_public_factory(self, tiny_model_dir: Path) -> None:
        from bench.backends import OnnxBackend

        pairs = workload_a().cases[0].single_pairs()
        backend = OnnxBackend(
            tiny_model_dir, variant=None, threads=1, max_batch_tokens=8192, max_batch_size=None,
            session_config_entries={"session.intra_op.allow_spinning": "0"}, batch_overhead_tokens=0,
        )
        assert backend.score(pairs).shape == (8, 3)
        counters = backend.counters()
        assert counters["onnxruntime_run_seconds"] > 0 and counters["batches"] >= 1
        backend.reset()
        assert backend.counters()["onnxruntime_run_seconds"] == 0.0 and backend.counters()["batches"] == 0
        few = OnnxBackend(tiny_model_dir, variant=None, threads=1, max_batch_tokens=8192, max_batch_size=None,
                          batch_overhead_tokens=1e5)
        few.score(pairs)
        assert few.counters()["batches"] == 1 <= counters["batches"]


    @pytest.mark.slow
    def test_worker_and_interleave_json_merge_into_the_run_shape(
        self, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from bench.interleave import main as interleave
        from bench.proc import THREAD_ENV_VARS
        from bench.results import InterleaveResult, WorkerResult
        from bench.runner import merge_backends
        from bench.worker import main as worker

        pytest.importorskip("psutil")
        for name in THREAD_ENV_VARS:
            monkeypatch.setenv(name, "1")
        common = ["--threads", "1", "--claims", "4", "--reps-schedules", "1"]
        out = tmp_path / "w.json"
        assert worker(["--backend", "onnx", "--model-dir", str(tiny_model_dir), "--out", str(out),
                       "--tasks", "rss", *common]) == 0
        rss = WorkerResult.from_json(json.loads(out.read_text(encoding="utf-8")))
        assert rss.cold_start is not None and rss.rss is not None and set(rss.rss_probe or {}) == {"b_seconds", "d_seconds"}
        out = tmp_path / "i.json"
        assert interleave(["--onnx-dir", str(tiny_model_dir), "--hf-dir", str(tmp_path), "--backends", "onnx",
                           "--out", str(out), "--probs-dir", str(tmp_path / "probs"), "--chunk-claims", "2",
                           "--reps-a", "1", "--reps-b", "1", "--reps-d", "1", *common]) == 0
        inter = InterleaveResult.from_json(json.loads(out.read_text(encoding="utf-8")))
        assert set(inter.latency) == {"a", "b", "d"} and inter.schedules is not None
        assert np.load(tmp_path / "probs" / "onnx.npy").shape == (len(workload_c(4).pairs()), 3)
        backends, second = merge_backends({"onnx": rss}, inter, None, [])
        row = backends["onnx"]
        assert list(row)[-3:] == ["latency", "throughput", "schedules"] and second == {"a": None, "b": None, "d": None}
        assert set(row["latency"]["a"]) == {"reps", "warmup", "seconds", "p50", "p95", "mean", "counters",
                                            "probabilities", "load_1m"}
        assert len(row["throughput"]["c"]["chunk_seconds"]) == 2 and set(row["schedules"]) == {
            "a/staged", "a/eager", "b/staged", "b/eager"}


    @pytest.mark.slow
    def test_tune_sweep_runs_every_setting_through_public_options(self, tiny_model_dir: Path) -> None:
        from bench.tune import run_tune_sweep, tune_settings

        lines: list[str] = []
        sweep = run_tune_sweep(tiny_model_dir, all_workloads(4), threads=1, tune_claims=2, reps_b=1, log=lines.append)
        # The tiny export has no variants: the row that needs ``optimized`` is skipped.
        assert [row.setting for row in sweep.rows] == [s for s in tune_settings() if "variant" not in s]
        assert len(lines) == len(sweep.rows) and sweep.claims == 2
        batches = {row.setting.get("batch_overhead_tokens"): row.counters["batches"] for row in sweep.rows}
        assert batches[0] > batches[4096]  # the planner's batch cost reaches the engine


# --------------------------------------------------------------------------- workload (e): realistic longer text


class TestRealisticWorkload:
    """Workload (e): encyclopedia-style passages of 1-3 sentences, one-sentence claims, the mix of (c), its own digest."""

    def test_every_case_takes_its_designed_path_with_the_mix_of_c(self) -> None:
        from bench.workloads import workload_e

        e = workload_e(60)
        assert check_paths(e) == []
        assert e.key == "e" and e.path_counts() == workload_c(60).path_counts()
        singles, pairs = e.stages()
        assert len(singles) == 60 * 8 and len(pairs) == sum(c.needs_pairs for c in e.cases) * 28
        assert len(set(e.pairs())) == len(e.pairs())
        half = mix_with_pair_share(0.5)
        from bench.workloads import workload_e as make

        assert make(40, mix=half).path_counts() == workload_c(40, mix=half).path_counts()

    def test_passages_are_one_to_three_sentences_and_claims_one(self) -> None:
        from verifier.decision.guards import has_negated_clause, split_segments

        from bench.workloads import workload_e

        for case in workload_e(100).cases:
            assert len(split_segments(case.claim)) == 1 and case.claim.endswith(".")
            assert case.claim[0].isupper()
            for passage in case.passages:
                assert 1 <= len(split_segments(passage.text)) <= 3, passage.text
                assert passage.text[0].isupper() and "{" not in passage.text
            for index in case.deciding:  # the deciding text carries no negation (docs/decision.md §4.4)
                assert not has_negated_clause(case.passages[index].text)
            assert " May " not in " ".join(p.text for p in case.passages)

    def test_own_digest_leaves_the_a_to_d_digest_alone(self) -> None:
        from bench.workloads import base_digest, checked_workloads, workload_e

        before = workload_digest(all_workloads(20))
        found = checked_workloads(20, None, before, claims_e=10)
        assert isinstance(found, dict) and sorted(found) == ["a", "b", "c", "d", "e"]
        assert base_digest(found) == before and workload_digest(all_workloads(20)) == before
        digest_e = workload_digest({"e": workload_e(10)})
        assert digest_e == workload_digest({"e": workload_e(10)}) != workload_digest({"e": workload_e(11)})
        assert isinstance(checked_workloads(20, None, before, claims_e=10, digest_e=digest_e), dict)
        assert checked_workloads(20, None, before, claims_e=10, digest_e="x") == (
            f"workload (e) digest {digest_e} != expected x"
        )
        assert sorted(checked_workloads(20, None, before)) == ["a", "b", "c", "d"]  # type: ignore[arg-type]

    def test_token_lengths_with_the_real_tokenizer(self) -> None:
        """Median ~80 and max ~220 DeBERTa-v3 tokens per pair (premise + claim), the design of (e)."""
        from verifier_export.testmodels import real_tokenizer_dir
        from verifier.engine.tokenization import encode_pairs, load_tokenizer

        from bench.workloads import workload_e

        try:
            directory = real_tokenizer_dir()
        except FileNotFoundError as exc:
            pytest.skip(str(exc))
        tokenizer = load_tokenizer(directory / "tokenizer.json", max_length=512)
        lengths = np.array([len(enc.ids) for enc in encode_pairs(tokenizer, workload_e(100).pairs())])
        assert 70 <= float(np.median(lengths)) <= 95, np.median(lengths)
        assert 180 <= int(lengths.max()) <= 240 and int(lengths.min()) >= 20, (lengths.min(), lengths.max())


# --------------------------------------------------------------------------- peers: sentence-transformers ONNX


def _st_onnx_or_skip() -> None:
    pytest.importorskip("sentence_transformers", reason="the sentence-transformers ONNX peers need sentence-transformers")
    pytest.importorskip("optimum.onnxruntime", reason="the sentence-transformers ONNX peers need optimum-onnx")


@pytest.fixture(scope="module")
def tiny_st_dir(tiny_source_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The peers' files for the tiny model, written by sentence-transformers itself (bench.backends.prepare_st_onnx)."""
    _st_onnx_or_skip()
    from bench.backends import prepare_st_onnx

    lines: list[str] = []
    return prepare_st_onnx(
        tiny_source_dir, tmp_path_factory.mktemp("tiny-st") / "st-onnx", quantization_config="avx2", log=lines.append
    )


@pytest.mark.export
class TestStOnnxPeers:
    """``st-onnx`` / ``st-onnx-int8``: sentence-transformers' CrossEncoder(backend="onnx") on its own exports."""

    def test_quantization_preset_and_file_names(self) -> None:
        from bench.backends import st_int8_file, st_quantization_config

        assert st_quantization_config() in ("arm64", "avx2", "avx512", "avx512_vnni")
        assert st_int8_file("avx2") == "onnx/model_qint8_avx2.onnx"

    def test_unknown_or_missing_directories_are_refused(self, tmp_path: Path) -> None:
        from bench.backends import StOnnxBackend, load_backend

        with pytest.raises(ValueError, match=re.escape("backend st-onnx needs --st-dir")):
            load_backend("st-onnx", onnx_dir=tmp_path, threads=1)
        _st_onnx_or_skip()
        with pytest.raises(ValueError, match=re.escape("python -m bench.backends prepare-st-onnx first")):
            StOnnxBackend(tmp_path, int8=True, threads=1, batch_size=32)

    @pytest.mark.slow
    def test_prepare_writes_both_files_once_and_the_peers_score_like_the_onnx_scorer(
        self, tiny_st_dir: Path, tiny_model_dir: Path, tiny_source_dir: Path
    ) -> None:
        from bench.backends import (
            OnnxBackend,
            StOnnxBackend,
            TorchBackend,
            load_backend,
            prepare_st_onnx,
            st_onnx_ready,
        )

        assert st_onnx_ready(tiny_st_dir, "avx2")
        assert not list(tiny_st_dir.glob("*.safetensors")) and not list(tiny_st_dir.parent.glob(".*partial*"))
        stamp = {p: p.stat().st_mtime_ns for p in (tiny_st_dir / "onnx").iterdir()}
        prepare_st_onnx(tiny_source_dir, tiny_st_dir, quantization_config="avx2", log=lambda line: None)
        assert {p: p.stat().st_mtime_ns for p in (tiny_st_dir / "onnx").iterdir()} == stamp  # kept, not redone

        case = workload_b().cases[0]
        pairs = case.single_pairs() + case.group_pairs()
        ours = OnnxBackend(tiny_model_dir, variant=None, threads=1, max_batch_tokens=8192, max_batch_size=None)
        reference = ours.score(pairs)
        fp32 = load_backend("st-onnx", onnx_dir=tiny_model_dir, st_dir=tiny_st_dir, threads=1)
        assert isinstance(fp32, StOnnxBackend) and fp32.name == "st-onnx"
        assert fp32.session.get_session_options().intra_op_num_threads == 1
        assert fp32.session.get_providers() == ["CPUExecutionProvider"]
        probs = fp32.score(pairs)
        assert probs.shape == (36, 3)
        # same model, same pairs, columns in (entailment, contradiction, neutral) order on both sides
        np.testing.assert_allclose(probs, reference, atol=1e-4)
        counters = fp32.counters()
        assert counters["batches"] >= 2 and counters["padding_overhead"] >= 1.0
        fp32.reset()
        assert fp32.counters()["batches"] == 0
        torch_side = TorchBackend(tiny_source_dir, 1, 32).score(pairs)
        np.testing.assert_allclose(probs, torch_side, atol=1e-4)

        int8 = StOnnxBackend(tiny_st_dir, int8=True, threads=1, batch_size=32, quantization_config="avx2")
        assert int8.name == "st-onnx-int8" and int8.versions["file"] == "onnx/model_qint8_avx2.onnx"
        small = int8.score(pairs)
        assert small.shape == (36, 3) and np.allclose(small.sum(axis=1), 1.0, atol=1e-5)
        assert (small.argmax(axis=1) == reference.argmax(axis=1)).mean() >= 0.5

    @pytest.mark.slow
    def test_interleave_times_the_peers_on_c_and_e_and_the_report_ratios_them(
        self, tiny_st_dir: Path, tiny_model_dir: Path, tiny_source_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        import bench.backends as backends_module
        from bench.facts import token_profile
        from bench.interleave import main as interleave
        from bench.model import BenchModel
        from bench.proc import THREAD_ENV_VARS
        from bench.report import compute_figures, render_markdown
        from bench.results import InterleaveResult
        from bench.runner import merge_backends
        from bench.workloads import checked_workloads

        for name in THREAD_ENV_VARS:
            monkeypatch.setenv(name, "1")
        monkeypatch.setattr(backends_module, "st_quantization_config", lambda: "avx2")
        workloads = checked_workloads(4, None, None, claims_e=4)
        assert isinstance(workloads, dict)
        digest_e = workload_digest({"e": workloads["e"]})
        out = tmp_path / "i.json"
        keys = "torch,st-onnx,st-onnx-int8,onnx"
        assert interleave([
            "--onnx-dir", str(tiny_model_dir), "--hf-dir", str(tiny_source_dir), "--st-dir", str(tiny_st_dir),
            "--backends", keys, "--out", str(out), "--probs-dir", str(tmp_path / "probs"), "--threads", "1",
            "--claims", "4", "--chunk-claims", "2", "--claims-e", "4", "--digest-e", digest_e, "--chunk-claims-e", "2",
            "--reps-a", "1", "--reps-b", "1", "--reps-d", "1", "--skip", "schedules",
        ]) == 0
        inter = InterleaveResult.from_json(json.loads(out.read_text(encoding="utf-8")))
        assert inter.digest == workload_digest(all_workloads(4)) and inter.digest_e == digest_e
        assert inter.throughput is not None and set(inter.throughput) == {"c", "e"}
        assert set(inter.throughput["e"]) == set(keys.split(",")) and set(inter.load_seconds or {}) == set(keys.split(","))
        assert (inter.versions or {})["st-onnx-int8"]["file"] == "onnx/model_qint8_avx2.onnx"
        e_probs = {key: np.load(tmp_path / "probs" / "e" / f"{key}.npy") for key in keys.split(",")}
        assert all(array.shape == (len(workloads["e"].pairs()), 3) for array in e_probs.values())
        np.testing.assert_allclose(e_probs["st-onnx"], e_probs["onnx"], atol=1e-4)
        assert np.load(tmp_path / "probs" / "st-onnx.npy").shape == (len(workload_c(4).pairs()), 3)

        backends, _ = merge_backends({}, inter, None, [])
        assert backends["st-onnx"]["backend"] == "st-onnx" and backends["st-onnx-int8"]["variant"] == "int8"
        assert set(backends["st-onnx"]["throughput"]) == {"c", "e"}
        model = BenchModel(tiny_model_dir.parent)
        assert model.onnx_dir == tiny_model_dir
        run = {
            "name": "tiny", "settings": {"threads": 1}, "quiet_check": {}, "import": {},
            "host": {"date_utc": "now", "cpu": {}, "versions": {}, "git": {}},
            "workload_digest": inter.digest, "workload_digest_e": digest_e,
            "workloads": token_profile(model, workloads), "numpy_before": {"ceiling_gflops": 100.0},
            "backends": backends,
        }
        figures = compute_figures(run)
        assert set(figures["ratios_vs_peers"]) == {"torch", "st-onnx", "st-onnx-int8"}
        for peer in ("torch", "st-onnx", "st-onnx-int8"):
            row = figures["ratios_vs_peers"][peer]["onnx"]
            assert {"c_pairs_per_s", "e_pairs_per_s", "a_p50_speedup", "d_p50_speedup"} <= set(row)
            assert len(row["e_chunk_ratios"]) == 2
        assert "e_pairs_per_s" in figures["ratios"]["onnx"] and "e" in figures["backends"]["st-onnx"]
        run["figures"] = figures
        markdown = render_markdown(run)
        assert "## Throughput, workload (e)" in markdown and "## Our backends against every peer" in markdown
        assert "| OnnxScorer fp32 | CrossEncoder ONNX int8 (sentence-transformers) |" in markdown
        assert "`onnx/model_qint8_avx2.onnx`" in markdown


class TestReportShape:
    """A run without (e) and without the peers renders as before: no new sections, the old ratio keys."""

    def test_old_shape_run_renders_without_new_sections(self) -> None:
        from bench.report import compute_figures, render_markdown

        def latency(p50: float) -> dict[str, object]:
            return {"p50": p50, "p95": p50 * 1.1, "counters": {}}

        def throughput(seconds: float) -> dict[str, object]:
            return {"median": seconds, "seconds": [seconds], "stage_seconds": [[seconds, 0.0]],
                    "chunk_seconds": [seconds / 2, seconds / 2], "counters": {"padding_overhead": 1.0}}

        work = {"title": "t", "claims": 1, "pairs": 8, "real_tokens": 80, "flops_minimal": 1e9, "flops_implemented": 1e9,
                "paths": {}, "stages": [{"max_tokens": 10, "truncated": 0}]}
        run = {
            "name": "old", "settings": {"threads": 2}, "quiet_check": {}, "import": {},
            "host": {"date_utc": "now", "cpu": {}, "versions": {}, "git": {}}, "workload_digest": "0" * 64,
            "workloads": {key: dict(work) for key in "abcd"}, "numpy_before": {"ceiling_gflops": 100.0},
            "backends": {
                "torch": {"backend": "torch", "variant": None,
                          "latency": {k: latency(1.0) for k in "abd"}, "throughput": {"c": throughput(10.0)}},
                "onnx": {"backend": "onnx", "variant": None,
                         "latency": {k: latency(0.5) for k in "abd"}, "throughput": {"c": throughput(4.0)}},
            },
        }
        figures = compute_figures(run)
        assert sorted(figures["ratios"]["onnx"]) == sorted([
            "c_pairs_per_s", "c_chunk_ratios", "c_chunk_ratio_median", "a_p50_speedup", "a_p95_speedup",
            "b_p50_speedup", "b_p95_speedup", "d_p50_speedup", "d_p95_speedup"])
        assert figures["ratios"]["onnx"]["c_pairs_per_s"] == pytest.approx(2.5)
        assert figures["ratios_vs_peers"]["torch"]["onnx"] == figures["ratios"]["onnx"]
        run["figures"] = figures
        markdown = render_markdown(run)
        assert "workload (e)" not in markdown and "(e) realistic" not in markdown
        assert "## Throughput, workload (c)" in markdown and "| **pairs/s ÷ CrossEncoder** | 1.00x | 2.50x |" in markdown


@pytest.mark.export
@pytest.mark.slow
class TestCompareEndToEnd:
    """``run_compare`` on the tiny model: peers prepared, (e) timed, JSON and markdown carry the new keys only."""

    def test_compare_with_peers_and_e_on_the_tiny_model(
        self, tiny_source_dir: Path, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _st_onnx_or_skip()
        pytest.importorskip("psutil")
        import bench.runner as runner
        from bench.runner import CompareSettings, run_compare

        root = tmp_path / "models" / "bench-deberta-v3-base-random"
        shutil.copytree(tiny_source_dir, root / "hf")
        shutil.copytree(tiny_model_dir, root / "onnx")
        monkeypatch.setattr(runner, "RESULTS_DIR", tmp_path / "results")
        settings = CompareSettings(
            name="tiny", threads=1, claims=4, reps_a=1, reps_b=1, reps_d=1, reps_schedules=1, chunk_claims=2,
            variants=(), variants_throughput=(), max_load=1e9, wait_seconds=0.0, models_root=tmp_path / "models",
            claims_e=4, chunk_claims_e=2,
        )
        lines: list[str] = []
        run, json_path, md_path = run_compare(settings, log=lines.append)
        assert (root / "st-onnx" / "onnx" / "model.onnx").is_file()  # under the git-ignored models tree
        assert sorted(run["backends"]) == ["onnx", "st-onnx", "st-onnx-int8", "torch"]
        assert run["workload_digest"] == workload_digest(all_workloads(4)) and len(run["workload_digest_e"]) == 64
        assert set(run["workloads"]) == {"a", "b", "c", "d", "e"} and set(run["agreement"]) == {"onnx", "st-onnx", "st-onnx-int8"}
        assert set(run["agreement_e"]) == {"onnx", "st-onnx", "st-onnx-int8"}
        assert set(run["backends"]["st-onnx"]["throughput"]) == {"c", "e"}
        assert set(run["figures"]["ratios_vs_peers"]) == {"torch", "st-onnx", "st-onnx-int8"}
        assert json.loads(json_path.read_text(encoding="utf-8"))["figures"]["ratios"]["onnx"]["c_pairs_per_s"] > 0
        markdown = md_path.read_text(encoding="utf-8")
        assert "## Throughput, workload (e)" in markdown and "## Our backends against every peer" in markdown


class TestPeersPreflight:
    def test_missing_optimum_is_one_line_naming_no_peers(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import bench.preflight as preflight
        from bench.__main__ import main

        root = tmp_path / "bench-deberta-v3-base-random"  # a built model as far as the check can tell
        (root / "hf").mkdir(parents=True)
        (root / "hf" / "config.json").write_text("{}", encoding="utf-8")
        (root / "hf" / "model.safetensors").write_bytes(b"")
        (root / "onnx").mkdir()
        (root / "onnx" / "manifest.json").write_text('{"variants": {"int8": {}, "optimized": {}}}', encoding="utf-8")
        monkeypatch.setattr(preflight, "missing_modules", lambda modules: [d for _, d in modules if d == "optimum-onnx"])
        assert main(["compare", "--models-root", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(
            "python -m bench compare: the sentence-transformers ONNX peers need optimum-onnx: install with bash scripts/setup.sh")
        assert err.rstrip().endswith("or pass --no-peers")


class TestProfile:
    """``bench.profile``: kernel time per operator type from onnxruntime's trace, warm-up runs left out."""

    def test_op_shares_sums_kernel_events_after_the_warmup_runs(self) -> None:
        from bench.profile import op_shares

        def node(ts: int, dur: int, op: str) -> dict[str, object]:
            return {"cat": "Node", "name": f"n{ts}_kernel_time", "ts": ts, "dur": dur, "args": {"op_name": op}}

        trace = [
            {"cat": "Session", "name": "model_run", "ts": 0, "dur": 100},  # warm-up: left out
            node(10, 50, "MatMul"),
            {"cat": "Session", "name": "model_run", "ts": 200, "dur": 100},
            node(210, 30, "MatMul"),
            node(250, 10, "Add"),
            {"cat": "Node", "name": "n250_fence_before", "ts": 250, "dur": 99, "args": {"op_name": "Add"}},
            {"cat": "Session", "name": "model_run", "ts": 400, "dur": 100},
            node(410, 20, "MatMul"),
        ]
        totals, runs = op_shares(trace, skip_runs=1)
        assert runs == 2 and totals == {"MatMul": 50.0, "Add": 10.0}
        assert op_shares(trace, skip_runs=3) == ({}, 0)

    @pytest.mark.export
    def test_profile_of_the_tiny_model_accounts_for_every_run(self, tiny_model_dir: Path) -> None:
        from bench.profile import profile_length

        result = profile_length(tiny_model_dir / "model.onnx", 16, max_batch_tokens=64, threads=1, runs=2, warmup=1)
        assert (result["rows"], result["runs"]) == (4, 2)
        shares = [figures["share"] for figures in result["ops"].values()]
        assert "MatMul" in result["ops"] and abs(sum(shares) - 1.0) < 1e-9
        assert 0 < result["node_ms_per_sequence"] <= result["wall_ms_per_sequence"] * 1.05
        # Regression (issue 50): the base model's FLOPs over the tiny model's time gave "23505 effective GFLOP/s"
        assert result["effective_gflops"] is None

    def test_a_model_of_another_shape_gets_no_gflops_and_a_note(self, tmp_path: Path) -> None:
        """Regression (issue 50): ``bench.profile`` on the smoke model printed the base model's FLOP count
        over a tiny model's time ("23505 effective GFLOP/s") without a word; the base shape keeps its figure."""
        import json

        from bench.profile import not_the_base_shape

        model = tmp_path / "model.onnx"
        (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 37}))
        note = not_the_base_shape(model)
        assert note is not None and note.startswith("not DeBERTa-v3-base's shape (hidden_size 32, num_hidden_layers 2, intermediate_size 37;")
        (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072}))
        assert not_the_base_shape(model) is None


class TestRssCurve:
    """``bench.rss_curve``: the same varied calls from the same seed; one process per memory setting."""

    def test_calls_are_reproducible_and_within_their_bounds(self) -> None:
        from bench.rss_curve import calls

        first, again = calls(30, seed=3), calls(30, seed=3)
        assert first == again and first != calls(30, seed=4)
        assert all(1 <= len(pairs) <= 32 for pairs in first)
        assert all(premise and hypothesis for pairs in first for premise, hypothesis in pairs)

    @pytest.mark.export
    def test_every_setting_runs_in_its_own_process_and_records_each_call(self, tiny_model_dir: Path, tmp_path: Path) -> None:
        pytest.importorskip("psutil")  # each child reads its RSS with psutil (the bench extra)
        from bench.rss_curve import SETTINGS, main

        out = tmp_path / "curve.json"
        assert main(["--model-dir", str(tiny_model_dir), "--calls", "3", "--threads", "1", "--out", str(out)]) == 0
        results = json.loads(out.read_text())["results"]
        assert [(r["arena"], r["memory_pattern"]) for r in results] == [tuple(setting) for setting in SETTINGS]
        for result in results:
            assert len(result["rss_bytes"]) == 4 and all(value > 0 for value in result["rss_bytes"])
            assert result["real_tokens"] > 0


def test_strict_cost_runs_both_policies_on_both_passages(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m bench.strict_cost`` measures the reference and the strict policy on an adversarial
    and an ordinary passage of the size asked (it asserts nothing about speed; neither does this)."""
    from bench.strict_cost import BLOCK, main, passage, prose

    assert len(passage(5_000)) == 5_000 and len(prose(5_000)) == 5_000
    assert passage(5_000)[: len(BLOCK)] != passage(5_000)[len(BLOCK) : 2 * len(BLOCK)]  # each copy differs
    main(["--size", "1500", "--rounds", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["adversarial", "prose"]
    assert all("reference" in line and "strict" in line and "ratio" in line for line in lines)

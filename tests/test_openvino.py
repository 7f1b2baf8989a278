"""The OpenVINO runtime and the ``bf16`` variant (issue: speed step 4, the CPU's matrix units).

What is checked, against values computed independently of the engine:

- the variant is recorded with both files it may run hashed, the runtime,
  the precision and what it was compiled for (this CPU, this OpenVINO);
- its probabilities are within its recorded parity bound of softmax(PyTorch
  golden logits), and bit-identical to OpenVINO's own compile of ``model.onnx``
  at bf16 (the ``openvino`` API called directly, not through the engine);
- a pair's scores do not depend on the other pairs of its batch;
- tampering with either file is refused; a compiled file made for another CPU
  falls back to compiling the graph, saying so, with the same numbers here;
- a CPU without bf16 is refused naming what it lacks; a missing extra names it;
- the runtime stays torch-free; the CLI and ``info`` name what runs.
"""

from __future__ import annotations

import json
import re
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from conftest import TINY_BF16_GATE, bf16_or_skip
from verifier.engine.golden import softmax
from verifier.engine.manifest import sha256_file
from verifier.engine.scorer import OnnxScorer
from verifier.types import ClaimVerificationError

if TYPE_CHECKING:
    from verifier.engine.ov_session import CpuCapabilities

ROOT = Path(__file__).resolve().parents[1]


def _golden(directory: Path) -> tuple[list[tuple[str, str]], np.ndarray]:
    golden = json.loads((directory / "golden.json").read_text(encoding="utf-8"))
    labels = golden["labels"]
    pairs = [(row["premise"], row["hypothesis"]) for row in golden["pairs"]]
    logits = np.array([row["logits"] for row in golden["pairs"]], dtype=np.float64)
    order = [labels.index(name) for name in ("entailment", "contradiction", "neutral")]
    return pairs, softmax(logits)[:, order]


def _openvino_reference(directory: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """(entailment, contradiction, neutral) from OpenVINO's own bf16 compile of model.onnx with float16
    weights, each pair alone (the openvino API directly, not the engine)."""
    import openvino
    from tokenizers import Tokenizer

    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.enable_truncation(manifest["max_length"], strategy="longest_first")
    core = openvino.Core()
    with tempfile.TemporaryDirectory() as folder:  # the variant stores its weights as float16 (docs/performance.md)
        openvino.save_model(core.read_model(str(directory / "model.onnx")), f"{folder}/m.xml", compress_to_fp16=True)
        compiled = core.compile_model(core.read_model(f"{folder}/m.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    rows = []
    for premise, hypothesis in pairs:
        encoding = tokenizer.encode(premise, hypothesis)
        ids = np.array([encoding.ids], dtype=np.int64)
        logits = compiled({"input_ids": ids, "attention_mask": np.ones_like(ids)})[0].astype(np.float64)
        rows.append(logits[0])
    labels = manifest["labels"]
    order = [labels.index(name) for name in ("entailment", "contradiction", "neutral")]
    return softmax(np.array(rows))[:, order]


def test_the_variant_records_both_files_its_runtime_and_what_it_was_compiled_for(tiny_bf16_dir: Path) -> None:
    from verifier.engine.ov_session import compiled_fingerprint, cpu_capabilities

    manifest = json.loads((tiny_bf16_dir / "manifest.json").read_text(encoding="utf-8"))
    record = manifest["variants"]["bf16"]
    assert record["file"] == "model.bf16.blob" and record["source_file"] == "model.onnx"
    assert record["runtime"] == "openvino" and record["precision"] == "bf16"
    assert record["compiled_for"] == compiled_fingerprint(cpu_capabilities())
    for name in ("model.bf16.blob", "model.onnx"):
        assert manifest["files"][name]["sha256"] == sha256_file(tiny_bf16_dir / name)
    gate = record["parity"]
    assert (gate["atol"], gate["max_prob_diff_gate"]) == (TINY_BF16_GATE["max_abs_logit_diff"], TINY_BF16_GATE["max_prob_diff"])
    assert gate["passed"] and gate["argmax_agreement"] == 1.0


def test_bf16_scores_are_openvinos_own_and_within_the_recorded_bound_of_pytorch(tiny_bf16_dir: Path) -> None:
    pairs, reference = _golden(tiny_bf16_dir)
    scorer = OnnxScorer(tiny_bf16_dir, variant="bf16")
    probabilities = scorer.score(pairs)
    assert scorer.providers == ("OpenVINO:CPU",)
    recorded = json.loads((tiny_bf16_dir / "manifest.json").read_text())["variants"]["bf16"]["parity"]
    assert np.abs(probabilities - reference).max() <= recorded["max_abs_prob_diff"] + 1e-9
    assert np.abs(probabilities - reference).max() > 1e-6  # bf16 really ran: float32 is within ~1e-6 of PyTorch
    np.testing.assert_array_equal(probabilities, _openvino_reference(tiny_bf16_dir, pairs))


def test_padding_none_gives_each_pair_its_alone_scores_whatever_the_call(tiny_bf16_dir: Path) -> None:
    """OpenVINO picks bf16 kernels by batch shape, so batched scores may move by ~1e-3 with the batch's
    other pairs (measured on the base shape, docs/model-directory.md); padding="none" runs each pair alone,
    so any call gives the bits of that pair scored by itself."""
    pairs, _ = _golden(tiny_bf16_dir)
    alone = np.concatenate([OnnxScorer(tiny_bf16_dir, variant="bf16").score([pair]) for pair in pairs])
    unpadded = OnnxScorer(tiny_bf16_dir, variant="bf16", padding="none")
    np.testing.assert_array_equal(unpadded.score(pairs), alone)
    np.testing.assert_array_equal(unpadded.score(pairs[::-1]), alone[::-1])
    batched = OnnxScorer(tiny_bf16_dir, variant="bf16").score(pairs)
    recorded = json.loads((tiny_bf16_dir / "manifest.json").read_text())["variants"]["bf16"]["parity"]
    assert np.abs(batched - alone).max() <= 2 * recorded["max_abs_prob_diff"]


def test_the_score_store_reuses_bf16_scores_only_unpadded(tiny_bf16_dir: Path, tmp_path: Path) -> None:
    pairs, _ = _golden(tiny_bf16_dir)
    batched = OnnxScorer(tiny_bf16_dir, variant="bf16", score_cache=tmp_path / "batched.sqlite")
    batched.score(pairs[:4])
    assert "bypassed" in str(batched.score_cache_status) and "runs on OpenVINO" in str(batched.score_cache_status)
    cold = OnnxScorer(tiny_bf16_dir, variant="bf16", padding="none", score_cache=tmp_path / "none.sqlite")
    first = cold.score(pairs)
    warm = OnnxScorer(tiny_bf16_dir, variant="bf16", padding="none", score_cache=tmp_path / "none.sqlite")
    np.testing.assert_array_equal(warm.score(pairs), first)
    assert warm.stats.store_hits == len(set(pairs)) and warm.stats.store_misses == 0


def test_the_runtime_golden_recheck_passes_under_the_recorded_gate(tiny_bf16_dir: Path) -> None:
    OnnxScorer(tiny_bf16_dir, variant="bf16", verify_golden=True).load()


@pytest.mark.parametrize("name", ["model.bf16.blob", "model.onnx"])
def test_a_tampered_file_is_refused(tiny_bf16_dir: Path, tmp_path: Path, name: str) -> None:
    directory = Path(shutil.copytree(tiny_bf16_dir, tmp_path / "m"))
    manifest = json.loads((directory / "manifest.json").read_text())
    if name == "model.onnx":  # the graph is read only when the compiled file does not fit: make it not fit
        manifest["variants"]["bf16"]["compiled_for"]["openvino"] = "0.0.0-elsewhere"
        (directory / "manifest.json").write_text(json.dumps(manifest))
    data = bytearray((directory / name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (directory / name).write_bytes(bytes(data))
    with pytest.raises(ClaimVerificationError, match=f"does not match its manifest.*{name}: sha256"):
        OnnxScorer(directory, variant="bf16").load()


def test_a_compiled_file_made_elsewhere_falls_back_to_the_graph_saying_so(
    tiny_bf16_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = Path(shutil.copytree(tiny_bf16_dir, tmp_path / "m"))
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["variants"]["bf16"]["compiled_for"]["cpu_flags"] = "amx_tile,amx_bf16"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    pairs, _ = _golden(directory)
    with caplog.at_level(logging.WARNING, logger="verifier.engine"):
        fallback = OnnxScorer(directory, variant="bf16").score(pairs)
    assert any("compiled for cpu_flags amx_tile,amx_bf16" in r.getMessage() and "compiling model.onnx" in r.getMessage()
               for r in caplog.records)
    np.testing.assert_array_equal(fallback, OnnxScorer(tiny_bf16_dir, variant="bf16").score(pairs))


def test_a_cpu_without_bf16_is_refused_naming_what_it_lacks() -> None:
    from verifier.engine.ov_session import CpuCapabilities, check_precision

    plain = CpuCapabilities(model_name="Old CPU", flags=("avx2",), openvino="2026.4", openvino_capabilities=("FP32", "INT8"))
    with pytest.raises(ClaimVerificationError, match=r"needs a CPU with AMX-BF16 or AVX512-BF16; this one \(Old CPU; "
                       r"OpenVINO capabilities FP32, INT8\) has neither: use the float32 model"):
        check_precision("bf16", plain)
    check_precision("f32", plain)
    with pytest.raises(ValueError, match="inference precision must be one of"):
        check_precision("fp8", plain)


def test_onnxruntime_providers_are_refused_for_an_openvino_variant(tiny_bf16_dir: Path) -> None:
    with pytest.raises(ClaimVerificationError, match=r"runs on OpenVINO's CPU plugin; execution providers \['CUDAExecutionProvider'\]"):
        OnnxScorer(tiny_bf16_dir, variant="bf16", providers=["CUDAExecutionProvider"]).load()


def test_without_openvino_the_error_names_the_extra(tiny_bf16_dir: Path) -> None:
    code = (
        "import sys; sys.modules['openvino'] = None\n"
        "from pathlib import Path\n"
        "from verifier.engine.scorer import OnnxScorer\n"
        "from verifier.types import ClaimVerificationError\n"
        f"try:\n    OnnxScorer(Path({str(tiny_bf16_dir)!r}), variant='bf16').load()\n"
        "except ClaimVerificationError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "this variant runs on OpenVINO, which is not installed: install the openvino extra" in out.stdout, out.stderr


def test_the_bf16_runtime_imports_neither_torch_nor_transformers(tiny_bf16_dir: Path) -> None:
    code = (
        "import sys\nfrom pathlib import Path\nfrom verifier.engine.scorer import OnnxScorer\n"
        f"OnnxScorer(Path({str(tiny_bf16_dir)!r}), variant='bf16').score([('a b', 'c')])\n"
        "print(sorted(m for m in ('torch', 'transformers', 'optimum') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_cli_verifies_with_the_bf16_variant(tiny_bf16_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    claim, evidence = "The launch is Tuesday.", "The launch is on Tuesday."
    argv = [sys.executable, "-m", "verifier", "verify", "--model-dir", str(tiny_bf16_dir), "--variant", "bf16",
            "--claim", claim, "--evidence", evidence, "--json"]
    out = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    scores = json.loads(out.stdout)["group_scores"][0]
    expected = _openvino_reference(tiny_bf16_dir, [(evidence, claim)])[0]
    assert (scores["entailment"], scores["contradiction"], scores["neutral"]) == tuple(expected)


def test_the_export_command_builds_bf16_under_the_gate_asked_for(tiny_model_dir: Path, tmp_path: Path) -> None:
    bf16_or_skip()
    directory = Path(shutil.copytree(tiny_model_dir, tmp_path / "m"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "export.variants", str(directory), "--variants", "bf16",
            "--bf16-max-prob-diff", "0.25", "--bf16-max-logit-diff", "2"]
    out = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "bf16 (model.bf16.blob" in out.stderr and "-> PASS" in out.stderr and out.stdout == ""  # messages on stderr
    strict = subprocess.run([*argv[:6], "--bf16-max-prob-diff", "1e-9", "--overwrite-variants"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert strict.returncode == 3, strict.stderr  # the parity gate's exit status
    assert re.search(r"bf16: max \|Δlogit\| [0-9.e-]+ > atol 2\.0|max \|Δprob\| [0-9.e-]+ > 1e-09", strict.stderr), strict.stderr


def _caps(flags: tuple[str, ...], openvino: "str | None" = "2026.4.1", bf16: bool = True) -> "CpuCapabilities":
    from verifier.engine.ov_session import CpuCapabilities

    return CpuCapabilities(model_name="test CPU", flags=flags, openvino=openvino,
                           openvino_capabilities=("BF16", "FP32", "INT8") if bf16 and openvino else ("FP32", "INT8"))


def test_the_fastest_variant_follows_the_measured_ranking_and_what_can_run(tiny_bf16_dir: Path, tiny_int8_dir: Path) -> None:
    from verifier.engine.choice import fastest_variant, runnable_variants
    from verifier.engine.manifest import Manifest

    both = Manifest.model_validate_json((tiny_bf16_dir / "manifest.json").read_bytes())
    int8 = Manifest.model_validate_json((tiny_int8_dir / "manifest.json").read_bytes())
    both = both.model_copy(update={"variants": {**both.variants, "int8": int8.variants["int8"]}})
    amx, avx512, plain = _caps(("amx_tile", "amx_bf16", "avx512_bf16")), _caps(("avx512_bf16",)), _caps(("avx2",), bf16=False)
    assert fastest_variant(both, amx)[0] == "bf16" and fastest_variant(both, avx512)[0] == "int8"
    with_ov_int8 = both.model_copy(update={"variants": {**both.variants, "ov-int8": both.variants["bf16"]}})
    assert fastest_variant(with_ov_int8, avx512)[0] == "ov-int8" and fastest_variant(with_ov_int8, amx)[0] == "bf16"
    only_ov_int8 = with_ov_int8.model_copy(update={"variants": {"ov-int8": both.variants["bf16"], "int8": int8.variants["int8"]}})
    assert fastest_variant(only_ov_int8, amx)[0] == "ov-int8"
    assert fastest_variant(both, plain)[0] == "int8"
    assert fastest_variant(both, _caps(("amx_bf16",), openvino=None)) == (  # bf16 recorded, OpenVINO missing
        "int8", "this CPU has bf16 units but OpenVINO is not installed (the openvino extra runs the bf16 and ov-int8 "
        "variants): without it dynamic int8 is fastest, then float32")  # regression: it said "no bf16 here"
    assert fastest_variant(int8, amx)[0] == "int8"
    assert fastest_variant(Manifest.model_validate_json((tiny_bf16_dir / "manifest.json").read_bytes()), plain) == (
        None, "no bf16 here: dynamic int8 is fastest (integer dot products), then float32; no faster variant is "
        "recorded (python -m export --output DIR --variants ...)")
    assert runnable_variants(both, plain) == {None: None, "bf16": "this CPU has neither AMX-BF16 nor AVX512-BF16", "int8": None}
    assert runnable_variants(both, _caps(("avx2",), openvino=None))["bf16"] == "OpenVINO is not installed (the openvino extra)"


def test_info_says_what_this_cpu_can_run(tiny_bf16_dir: Path) -> None:
    """Also issue 47: the tiny fixture's bf16 was recorded under the loosened TINY_BF16_GATE, and info called it
    the fastest *gated* variant; it now says the gate was loosened, against the exporter's default."""
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    out = subprocess.run([sys.executable, "-m", "verifier", "info", "--model-dir", str(tiny_bf16_dir)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    section = out.stdout[out.stdout.index("this CPU:"):]
    listed = section.splitlines()[2].split(":", 1)[1].strip().split(", ")
    assert set(listed) == flags & {"amx_tile", "amx_bf16", "amx_int8", "avx512_bf16", "avx512_vnni", "avx_vnni", "avx512f", "avx2"}
    assert "  bf16: runs here" in section and "  float32 (no variant): runs here" in section
    loosened = (f"fastest variant here: bf16, but its gate was loosened past the default (atol {TINY_BF16_GATE['max_abs_logit_diff']:g} "
                f"> default 0.25, prob gate {TINY_BF16_GATE['max_prob_diff']:g} > default 0.02), so it is not a gated choice (")
    assert loosened + "AVX512-BF16 without AMX" in section or loosened + "AMX" in section
    assert "fastest gated variant" not in section
    assert f"    gate loosened past the default (atol {TINY_BF16_GATE['max_abs_logit_diff']:g} > default 0.25" in out.stdout
    assert "runs on openvino at bf16; compiled for OpenVINO" in out.stdout


def test_the_ov_int8_variant_runs_its_compiled_file_and_is_refused_elsewhere(tiny_model_dir: Path, tmp_path: Path) -> None:
    """NNCF int8 on OpenVINO: gated like int8, recorded without a graph to fall back to (the quantized
    graph exists only in the compiled file), so a compiled file made elsewhere is refused, naming why."""
    bf16_or_skip()
    pytest.importorskip("nncf")
    from verifier_export.variants import VariantGate, build_variants

    directory = Path(shutil.copytree(tiny_model_dir, tmp_path / "m"))
    build_variants(directory, ["ov-int8"], gates={"ov-int8": VariantGate(max_abs_logit_diff=50.0, max_prob_diff=1.0, min_argmax_agreement=0.0)})
    manifest = json.loads((directory / "manifest.json").read_text())
    record = manifest["variants"]["ov-int8"]
    assert (record["file"], record["runtime"], record["source_file"]) == ("model.ov-int8.blob", "openvino", None)
    assert manifest["files"]["model.ov-int8.blob"]["sha256"] == sha256_file(directory / "model.ov-int8.blob")
    pairs, reference = _golden(directory)
    probabilities = OnnxScorer(directory, variant="ov-int8").score(pairs)
    assert np.abs(probabilities - reference).max() <= record["parity"]["max_abs_prob_diff"] + 1e-9
    assert np.abs(probabilities - OnnxScorer(directory).score(pairs)).max() > 1e-4  # int8 really ran
    record["compiled_for"]["openvino"] = "0.0.0-elsewhere"
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ClaimVerificationError, match=r"model.ov-int8.blob cannot be used here \(compiled for openvino 0.0.0-elsewhere"):
        OnnxScorer(directory, variant="ov-int8").load()


def test_the_runtime_imports_openvino_without_its_telemetry(tmp_path: Path) -> None:
    """Regression: ``import openvino`` (its model converter) forked a process that posted a usage event to an
    analytics server and wrote ``~/intel`` on every run of ``info`` or a bf16 variant; under the CLI the fork
    also printed a traceback. CI=true hides it (openvino_telemetry's own CI check), so it is unset here."""
    pytest.importorskip("openvino")  # the openvino extra: CI reruns this once it is installed
    code = (
        "import sys\n"
        "from verifier.engine.ov_session import openvino_version\n"
        "assert openvino_version()\n"
        "import openvino, openvino.tools.ovc.telemetry_utils as utils\n"
        "print('telemetry loaded:', 'openvino_telemetry' in sys.modules, 'converter uses:', utils.tm.__name__)\n"
        "import openvino_telemetry\n"  # the caller's own import still works afterwards
        "print('convert_model:', callable(openvino.convert_model))\n"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("CI", "TF_BUILD", "JENKINS_URL")}
    env["HOME"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "telemetry loaded: False converter uses: openvino.tools.ovc.telemetry_stub" in done.stdout
    assert "convert_model: True" in done.stdout
    assert not (tmp_path / "intel").exists()  # no client id, no usage counter
    assert "Traceback" not in done.stderr


def test_rescore_holds_openvino_records_to_their_own_engine(tiny_bf16_dir: Path, tmp_path: Path) -> None:
    """Issue 47 (adversarial hunt): genuine OpenVINO records failed check --rescore. bf16's golden layouts moved
    nothing (spread 0, so the tolerance was exact) while a verify batch moved a pair by 0.005: batched records are
    held to at least 2^-7; and one ov-int8 record stopped the whole check, its golden re-check demanding every
    argmax although its gate (recorded at export) accepted flipped ones."""
    from verifier import cli
    from verifier_export.variants import VariantGate, build_variants

    bf16_or_skip()
    directory = Path(shutil.copytree(tiny_bf16_dir, tmp_path / "model"))
    build_variants(directory, ["ov-int8"], gates={"ov-int8": VariantGate(max_abs_logit_diff=50.0, max_prob_diff=1.0, min_argmax_agreement=0.0)})
    examples = ROOT / "examples" / "claims.jsonl"
    outputs = []
    for variant in ("bf16", "ov-int8"):
        out = tmp_path / f"{variant}.jsonl"
        assert cli.main(["verify", str(examples), "-o", str(out), "-q", "--model-dir", str(directory), "--variant", variant]) == 0
        outputs.append(out.read_text(encoding="utf-8"))
    both = tmp_path / "both.jsonl"
    both.write_text("".join(outputs), encoding="utf-8")
    twice = tmp_path / "twice.jsonl"
    twice.write_text(examples.read_text(encoding="utf-8") * 2, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "verifier", "check", str(both), "--inputs", str(twice), "--rescore",
                           "--model-dir", str(directory)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "(the floor 2^-7: variant bf16 recorded a run-to-run spread of" in done.stderr or "x the run-to-run spread variant bf16" in done.stderr
    assert "variant ov-int8" in done.stderr

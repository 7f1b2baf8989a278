"""The int8 variant's recipe (verifier_export.variants.VariantOptions.quantize_embeddings): by default the word
embeddings are quantised too, and the variant is built again without them only when that file misses its gate;
the manifest says which recipe was recorded."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.export

LOOSE = dict(max_prob_diff=1.0, min_argmax_agreement=0.0)  # the tiny random model loses a lot to int8


def _copy(tiny_model_dir: Path, tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(tiny_model_dir, tmp_path / name))


def _embedding_dtypes(model: Path) -> set[int]:
    onnx = pytest.importorskip("onnx")
    graph = onnx.load(str(model)).graph
    return {init.data_type for init in graph.initializer if "word_embeddings" in init.name}


def _build(directory: Path, quantize_embeddings: object, atol: float) -> object:
    from verifier_export.variants import VariantGate, VariantOptions, build_variants

    return build_variants(
        directory, ["int8"], gates={"int8": VariantGate(max_abs_logit_diff=atol, **LOOSE)},  # type: ignore[arg-type]
        options=VariantOptions(quantize_embeddings=quantize_embeddings),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def recipes(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny export with int8 built each way explicitly (loose gate)."""
    root = tmp_path_factory.mktemp("recipes")
    built = {}
    for name, value in (("with", True), ("without", False)):
        directory = _copy(tiny_model_dir, root, name)
        _build(directory, value, 100.0)
        built[name] = directory
    return built


def test_the_default_recipe_quantises_the_embeddings(tiny_model_dir: Path, tmp_path: Path, recipes: dict[str, Path]) -> None:
    import onnx
    from verifier.engine.manifest import read_manifest, verify_files

    directory = _copy(tiny_model_dir, tmp_path, "auto")
    report = _build(directory, "auto", 100.0)
    manifest = read_manifest(directory)
    assert verify_files(directory, manifest) == []
    assert "word-embedding Gather quantised" in manifest.variants["int8"].description
    assert not any("missed the gate" in note for note in report.notes)  # type: ignore[attr-defined]
    float_type, int_types = onnx.TensorProto.FLOAT, {onnx.TensorProto.INT8, onnx.TensorProto.UINT8}
    assert _embedding_dtypes(directory / "model.int8.onnx") & int_types
    assert _embedding_dtypes(recipes["without"] / "model.int8.onnx") == {float_type}
    # the same bytes as the explicit recipe, and smaller than the float-embedding one by ~3/4 of the matrix
    assert (directory / "model.int8.onnx").read_bytes() == (recipes["with"] / "model.int8.onnx").read_bytes()
    size_with = (recipes["with"] / "model.int8.onnx").stat().st_size
    size_without = (recipes["without"] / "model.int8.onnx").stat().st_size
    embedding_bytes = 4 * _embedding_elements(recipes["without"] / "model.int8.onnx")
    assert size_without - size_with >= 0.7 * embedding_bytes
    assert "word-embedding" not in read_manifest(recipes["without"]).variants["int8"].description


def _embedding_elements(model: Path) -> int:
    onnx = pytest.importorskip("onnx")
    graph = onnx.load(str(model)).graph
    sizes = [int(__import__("numpy").prod(init.dims)) for init in graph.initializer if "word_embeddings" in init.name]
    assert len(sizes) == 1
    return sizes[0]


def _logit_error(directory: Path) -> float:
    from verifier.engine.manifest import read_manifest

    return float(read_manifest(directory).variants["int8"].parity.max_abs_logit_diff)


@pytest.fixture(scope="module")
def outlier_export(tiny_source_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with one word-embedding row at 50 (the others within ±0.8), exported: one
    per-tensor scale for the whole embedding matrix then leaves the ordinary rows a few int8 levels,
    the way an outlier row in a real vocabulary would."""
    import warnings

    torch = pytest.importorskip("torch")
    from transformers import AutoModelForSequenceClassification

    from verifier_export.pipeline import export_model

    root = tmp_path_factory.mktemp("outlier")
    source = Path(shutil.copytree(tiny_source_dir, root / "hf"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSequenceClassification.from_pretrained(source)
        with torch.no_grad():
            model.get_input_embeddings().weight[-1] = 50.0
        model.save_pretrained(source)
        report = export_model(str(source), output=root / "onnx")
    assert report.status == "exported"
    return report.output_dir


def test_auto_falls_back_when_the_embeddings_recipe_misses_the_gate(outlier_export: Path, tmp_path: Path) -> None:
    from verifier.engine.manifest import read_manifest

    errors = {}
    for name, value in (("with", True), ("without", False)):
        directory = _copy(outlier_export, tmp_path, name)
        _build(directory, value, 100.0)
        errors[name] = _logit_error(directory)
    assert errors["with"] > 2.0 > errors["without"]  # the outlier row is what the embedding recipe cannot carry
    directory = _copy(outlier_export, tmp_path, "auto")
    report = _build(directory, "auto", 2.0)
    record = read_manifest(directory).variants["int8"]
    assert "word-embedding" not in record.description
    assert record.parity.max_abs_logit_diff == pytest.approx(errors["without"])
    assert record.parity.atol == 2.0 and record.parity.passed
    assert any(re.search(r"int8: .*word-embedding Gather quantised.* missed the gate", note) for note in report.notes)  # type: ignore[attr-defined]
    assert (directory / "model.int8.onnx").read_bytes() == (tmp_path / "without" / "model.int8.onnx").read_bytes()
    assert not list(directory.glob(".*partial*"))


def test_when_both_recipes_miss_nothing_is_recorded_and_the_error_says_so(tiny_model_dir: Path, tmp_path: Path) -> None:
    from verifier_export.errors import ParityError

    directory = _copy(tiny_model_dir, tmp_path, "auto")
    before = (directory / "manifest.json").read_bytes()
    with pytest.raises(ParityError) as caught:
        _build(directory, "auto", 1e-12)
    assert "missed the gate" in caught.value.report and "word-embedding Gather quantised" in caught.value.report  # type: ignore[attr-defined]
    assert (directory / "manifest.json").read_bytes() == before
    assert not (directory / "model.int8.onnx").exists() and not list(directory.glob(".*partial*"))


def test_the_option_is_checked() -> None:
    from verifier_export.variants import VariantOptions

    with pytest.raises(ValueError, match="quantize_embeddings must be True, False or 'auto'"):
        VariantOptions(quantize_embeddings="sometimes")  # type: ignore[arg-type]
    assert [o.quantize_embeddings for o in VariantOptions().int8_recipes()] == [True, False]
    assert [o.quantize_embeddings for o in VariantOptions(quantize_embeddings=False).int8_recipes()] == [False]


def test_int8_logits_are_the_int8_graphs_exact_arithmetic_on_any_cpu(outlier_export: Path, tmp_path: Path) -> None:
    """onnx's reference evaluator (numpy, exact int32 sums) scores the int8 file as the int8 graph specifies.
    Without VNNI onnxruntime's u8s8 kernel saturates (before this, 6.0 logits apart on an AVX2 CPU); the
    engine's sessions must agree with the reference to float32 rounding whatever the CPU
    (docs/performance.md, "int8 on CPUs without VNNI")."""
    import numpy as np
    from onnx.reference import ReferenceEvaluator

    from verifier.engine.manifest import read_manifest
    from verifier.engine.session import create_session, session_options
    from verifier_export.variants.openvino_int8 import calibration_feeds

    directory = _copy(outlier_export, tmp_path, "without")
    _build(directory, False, 100.0)
    model = directory / "model.int8.onnx"
    reference = ReferenceEvaluator(str(model))
    session = create_session(model, session_options())
    feeds = calibration_feeds(directory, read_manifest(directory))  # one per golden pair, as the runtime tokenizes it
    assert len(feeds) >= 10
    worst = 0.0
    for feed in feeds:
        worst = max(worst, float(np.abs(session.run(None, feed)[0] - reference.run(None, feed)[0]).max()))
    # measured 0.11 on an AVX2-only CPU: this tiny model amplifies float32 rounding; saturation gave 6.0
    assert worst < 0.5

"""Tests of ``python -m export``: parity gate, manifest, atomicity, CLI, library API.

Every export here uses the seeded tiny models of :mod:`verifier_export.testmodels`;
the shared ones are exported once per session by ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest

pytest.importorskip("torch")

from verifier_export.__main__ import build_parser, main  # noqa: E402
from verifier_export.errors import ExportError, LabelError, ManifestError, ParityError  # noqa: E402
from verifier_export.manifest import verify_export_dir  # noqa: E402
from verifier_export.onnx import read_labels  # noqa: E402
from verifier_export.parity import GOLDEN_PAIRS, PairParity, ParityResult  # noqa: E402
from verifier_export.pipeline import OFFLINE_HINT, export_model  # noqa: E402
from verifier_export.recheck import verify_golden  # noqa: E402
from verifier.engine.manifest import NLI_LABELS, RANDOM_WEIGHTS_CONFIG_KEY, REQUIRED_FILES, read_manifest, sha256_file  # noqa: E402
from verifier.engine.tokenization import encode_pairs, load_tokenizer  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- helpers


def summary_of(stderr: str) -> str:
    """The exporter's summary and ``next:`` lines: its stderr without the progress lines (``export [ 5.0s] ...``)."""
    return "\n".join(line for line in stderr.splitlines() if not line.startswith("export [")) + "\n"


def run_export_cli(*args: str, cwd: Path = REPO, env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "verifier_export", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_one_error_line(stderr: str, pattern: str) -> None:
    """One ``export: error:`` line; a failed download adds exactly one ``next:`` line after it. Stage lines
    (``export [ 1.0s] ...``) are progress, printed once a run has taken a second (a loaded machine)."""
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("export [")]
    if len(lines) == 2 and lines[1].startswith("next: "):
        lines = lines[:1]
    assert len(lines) == 1, f"expected one error line, got: {stderr!r}"
    assert lines[0].startswith("export: error: ")
    assert re.search(pattern, lines[0]), lines[0]


def perturb_classifier_bias(path: Path, delta: float = 0.05) -> None:
    """Add ``delta`` to the classifier bias inside an exported ONNX file."""
    import onnx
    from onnx import numpy_helper

    proto = onnx.load(str(path))
    for initializer in proto.graph.initializer:
        if initializer.name == "classifier.bias":
            values = numpy_helper.to_array(initializer).copy() + np.float32(delta)
            initializer.CopyFrom(numpy_helper.from_array(values, initializer.name))
            break
    else:  # pragma: no cover - the exporter renamed the head
        raise AssertionError("classifier.bias not found in the ONNX graph")
    onnx.save(proto, str(path))


def listing(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


# ---------------------------------------------------------------- the good path


def test_tiny_export_passes_parity(tiny_model_dir: Path, tiny_source_dir: Path) -> None:
    manifest = verify_export_dir(tiny_model_dir)
    assert manifest.source == "local" and manifest.model == str(tiny_source_dir)
    assert manifest.random_weights is True, "seeded test models are flagged through config.json"
    assert set(REQUIRED_FILES) <= set(manifest.files)
    assert set(manifest.files) | {"manifest.json"} == set(listing(tiny_model_dir))
    assert manifest.labels == ("contradiction", "entailment", "neutral")
    assert manifest.inputs == ("input_ids", "attention_mask")
    assert manifest.pad_token_id == 0 and manifest.max_length == 512 and manifest.opset >= 14
    parity = manifest.parity
    assert parity.passed and parity.pairs == len(GOLDEN_PAIRS) >= 24
    assert parity.atol == 1e-4 and parity.max_abs_logit_diff <= 1e-4
    assert parity.argmax_agreement == 1.0 and parity.token_ids_identical
    for package in ("torch", "transformers", "optimum-onnx", "onnxruntime", "onnx"):
        assert manifest.versions[package] not in ("", "absent")
    for name, record in manifest.files.items():
        assert sha256_file(tiny_model_dir / name) == record.sha256


def test_onnx_graph_has_dynamic_batch_and_sequence_axes(tiny_model_dir: Path) -> None:
    import onnx

    proto = onnx.load(str(tiny_model_dir / "model.onnx"))
    for graph_input in proto.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        assert [bool(dim.dim_param) for dim in dims] == [True, True], graph_input.name
    assert [output.name for output in proto.graph.output] == ["logits"]


def test_golden_json_reproduces_independently(tiny_model_dir: Path, tiny_source_dir: Path) -> None:
    """golden.json re-checked without the exporter: transformers+torch and plain onnxruntime."""
    import onnxruntime as ort  # type: ignore[import-untyped]
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    golden = json.loads((tiny_model_dir / "golden.json").read_text(encoding="utf-8"))
    assert golden["labels"] == ["contradiction", "entailment", "neutral"]
    assert golden["max_length"] == 512 and golden["inputs"] == ["input_ids", "attention_mask"]
    pairs = golden["pairs"]
    assert [(p["premise"], p["hypothesis"]) for p in pairs] == [(g.premise, g.hypothesis) for g in GOLDEN_PAIRS]

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_source_dir))
    model = AutoModelForSequenceClassification.from_pretrained(str(tiny_source_dir)).eval()
    session = ort.InferenceSession(str(tiny_model_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    for pair in pairs:
        encoded = tokenizer(pair["premise"], pair["hypothesis"], truncation=True, max_length=512)
        assert encoded["input_ids"] == pair["input_ids"], pair["index"]
        ids = np.asarray([pair["input_ids"]], dtype=np.int64)
        with torch.no_grad():
            reference = model(input_ids=torch.from_numpy(ids), attention_mask=torch.ones_like(torch.from_numpy(ids)))
        np.testing.assert_allclose(reference.logits[0].numpy(), pair["logits"], atol=1e-5, rtol=0)
        onnx_logits = session.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        np.testing.assert_allclose(onnx_logits, pair["logits"], atol=1e-4, rtol=0)
    assert verify_golden(tiny_model_dir) <= 1e-4


def test_golden_set_covers_the_required_cases(tiny_model_dir: Path) -> None:
    categories = {pair.category for pair in GOLDEN_PAIRS}
    assert {"short", "non-ascii", "emoji", "whitespace", "long-premise", "long-hypothesis", "long-both"} <= categories
    assert any(not pair.premise.strip() for pair in GOLDEN_PAIRS), "an empty-looking whitespace pair"
    golden = json.loads((tiny_model_dir / "golden.json").read_text(encoding="utf-8"))
    lengths = {p["category"]: len(p["input_ids"]) for p in golden["pairs"]}
    for category in ("long-premise", "long-hypothesis", "long-both"):
        assert lengths[category] == 512, f"{category} should be truncated to max length"


def test_bert_export_uses_token_type_ids(tiny_bert_model_dir: Path) -> None:
    manifest = verify_export_dir(tiny_bert_model_dir)
    assert manifest.inputs == ("input_ids", "attention_mask", "token_type_ids")
    assert manifest.parity.passed and manifest.parity.token_ids_identical
    golden = json.loads((tiny_bert_model_dir / "golden.json").read_text(encoding="utf-8"))
    assert any(1 in pair["token_type_ids"] for pair in golden["pairs"])
    assert verify_golden(tiny_bert_model_dir) <= 1e-4


def test_reordered_labels_follow_id2label(tiny_reordered_model_dir: Path) -> None:
    manifest = verify_export_dir(tiny_reordered_model_dir)
    assert manifest.labels == ("entailment", "neutral", "contradiction")
    golden = json.loads((tiny_reordered_model_dir / "golden.json").read_text(encoding="utf-8"))
    assert golden["labels"] == ["entailment", "neutral", "contradiction"]




@pytest.mark.slow
def test_smoke_export_is_labelled_random(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--smoke builds the seeded tiny model and exports it, flagged as random weights everywhere."""
    target = tmp_path / "smoke"
    target.mkdir()  # an existing empty directory is filled, not refused
    assert main(["--smoke", "--output", str(target)]) == 0
    captured = capsys.readouterr()
    out = summary_of(captured.err)  # issue 34: messages on stderr, stdout for results only
    assert captured.out == "" and out.startswith("RANDOM WEIGHTS: seeded test model for plumbing checks and speed figures only")
    manifest = verify_export_dir(target)
    assert (manifest.source, manifest.random_weights, manifest.model) == ("smoke", True, "smoke/tiny-deberta-v2")
    assert manifest.parity.passed and manifest.requested_revision == "seed0"
    assert listing(tmp_path) == ["smoke"]

    assert main(["--smoke", "--output", str(target)]) == 0
    again = summary_of(capsys.readouterr().err)
    assert again.startswith("RANDOM WEIGHTS") and "nothing to do" in again

    # --variants builds gated extra ONNX files into the verified directory (loose int8 gate: random weights)
    loose = ["--int8-max-prob-diff", "1", "--int8-max-logit-diff", "1000", "--int8-min-argmax-agreement", "0"]
    assert main(["--smoke", "--output", str(target), "--variants", "optimized", "int8", *loose]) == 0
    capsys.readouterr()
    with_variants = verify_export_dir(target)
    assert sorted(with_variants.variants) == ["int8", "optimized"]
    assert {record.file for record in with_variants.variants.values()} <= set(with_variants.files)


# ---------------------------------------------------------------- tokenization


@pytest.mark.parametrize("max_length", [512, 100, 33])
def test_truncation_matches_transformers(tiny_model_dir: Path, tiny_source_dir: Path, max_length: int) -> None:
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(str(tiny_source_dir))
    runtime = load_tokenizer(tiny_model_dir / "tokenizer.json", max_length=max_length)
    texts = [(pair.premise, pair.hypothesis) for pair in GOLDEN_PAIRS]
    for encoding, (premise, hypothesis) in zip(encode_pairs(runtime, texts), texts):
        expected = reference(premise, hypothesis, truncation=True, max_length=max_length)
        assert encoding.ids == expected["input_ids"], (max_length, premise[:40])
        assert encoding.type_ids == expected["token_type_ids"]
        assert len(encoding.ids) <= max_length




@pytest.mark.slow
def test_spm_model_is_converted_to_tokenizer_json(tmp_path: Path) -> None:
    """A revision without tokenizer.json: exported via transformers' spm.model conversion."""
    from verifier_export.testmodels import build_tiny_model, real_tokenizer_dir

    real = real_tokenizer_dir()  # the repository's own copy: never skipped
    source = build_tiny_model(tmp_path / "hf", real_vocab=True, tokenizer_json=False)
    assert not (source / "tokenizer.json").exists()
    report = export_model(str(source), output=tmp_path / "onnx")
    assert report.tokenizer_json == "converted"
    assert report.manifest.parity.token_ids_identical and report.manifest.max_length == 512

    converted = load_tokenizer(tmp_path / "onnx" / "tokenizer.json", max_length=512)
    shipped = load_tokenizer(real / "tokenizer.json", max_length=512)
    texts = [(pair.premise, pair.hypothesis) for pair in GOLDEN_PAIRS]
    converted_ids = [e.ids for e in encode_pairs(converted, texts)]
    assert converted_ids == [e.ids for e in encode_pairs(shipped, texts)]
    assert max(len(ids) for ids in converted_ids) == 512
    assert 3 in {token for ids in converted_ids for token in ids}, "the fast tokenizer emits [UNK]"


# ---------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("id2label", "expected"),
    [
        ({"0": "contradiction", "1": "entailment", "2": "neutral"}, ("contradiction", "entailment", "neutral")),
        ({"0": "ENTAILMENT", "1": " Neutral ", "2": "Contradiction"}, ("entailment", "neutral", "contradiction")),
        ({2: "neutral", 0: "entailment", 1: "contradiction"}, ("entailment", "contradiction", "neutral")),
    ],
)
def test_read_labels_accepts_the_nli_set(id2label: dict[Any, str], expected: tuple[str, ...]) -> None:
    assert read_labels({"id2label": id2label}) == expected
    assert set(expected) == NLI_LABELS


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({}, "no id2label"),
        ({"id2label": {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"}}, "must be exactly contradiction"),
        ({"id2label": {"0": "entailment", "1": "not_entailment"}}, "must be exactly contradiction"),
        ({"id2label": {"0": "entailment", "1": "entailment", "2": "neutral"}}, "must be exactly contradiction"),
        (
            {"id2label": {"0": "contradiction", "1": "entailment", "2": "neutral", "3": "other"}},
            "must be exactly contradiction",
        ),
        ({"id2label": {"0": "contradiction", "2": "entailment", "3": "neutral"}}, r"keys must be 0\.\.2"),
        ({"id2label": {"a": "contradiction"}}, "keys must be integers"),
    ],
)
def test_read_labels_refuses_anything_else(config: dict[str, Any], message: str) -> None:
    with pytest.raises(LabelError, match=message):
        read_labels(config)


def test_wrong_labels_refused_and_nothing_written(tmp_path: Path) -> None:
    from verifier_export.testmodels import build_tiny_model

    source = build_tiny_model(tmp_path / "hf", label_order=("positive", "negative", "neutral"))
    out = tmp_path / "out"
    with pytest.raises(LabelError, match=re.escape("got ['positive', 'negative', 'neutral']")):
        export_model(str(source), output=out / "model")
    assert not out.exists(), "parent directories created for the export are removed again"


# ---------------------------------------------------------------- the gate fails closed


def test_parity_result_collects_every_failure_then_decides_once() -> None:
    def row(index: int, diff: float, argmax: tuple[int, int, int] = (0, 0, 0), ids: bool = True) -> PairParity:
        return PairParity(index, "short", 10, diff, diff / 2, 0.0, *argmax, ids_identical=ids, finite=True)

    rows = (row(0, 1e-6), row(1, 3e-4), row(2, 1e-6, argmax=(0, 1, 0)), row(3, 1e-6, ids=False), row(4, 5e-5))
    result = ParityResult(rows=rows, atol=1e-4, failures=tuple(f for r in rows for f in r.problems(1e-4)), golden={})
    assert not result.passed
    assert result.failures == (
        "pair 1 (short): single max |Δlogit| 0.0003 > atol 0.0001",
        "pair 1 (short): batched max |Δlogit| 0.00015 > atol 0.0001",
        "pair 2 (short): argmax torch 0, onnx single 1, onnx batch 0",
        "pair 3 (short): token ids differ from the transformers fast tokenizer",
    )
    assert [r.index for r in result.worst(4)] == [1, 2, 3, 4]
    report = result.report
    assert report.argmax_agreement == 0.8 and not report.token_ids_identical and not report.passed
    with pytest.raises(ParityError, match=re.escape("golden parity failed for 3 of 5 pairs")) as caught:
        result.raise_if_failed()
    assert "pair  category" in caught.value.report




@pytest.mark.slow
def test_perturbed_onnx_fails_the_gate(tiny_source_dir: Path, tmp_path: Path) -> None:
    """A perturbed model.onnx: ParityError naming the worst pairs, no manifest, no directory left."""
    target = tmp_path / "exports" / "model"
    with pytest.raises(ParityError) as caught:
        export_model(str(tiny_source_dir), output=target, onnx_hook=perturb_classifier_bias)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"golden parity failed for {len(GOLDEN_PAIRS)} of {len(GOLDEN_PAIRS)} pairs")
    assert re.search(r"max \|Δlogit\| 0\.05\d*, atol 0\.0001", message), message
    assert "pair  category" in caught.value.report and "> atol 0.0001" in caught.value.report
    assert not (tmp_path / "exports").exists()
    assert listing(tmp_path) == []


def test_cli_reports_parity_failure_with_worst_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import verifier_export.pipeline as pipeline

    def failing_export(*args: Any, **kwargs: Any) -> Any:
        raise ParityError("golden parity failed for 2 of 30 pairs (...)", report="pair  category\n   3  short")

    monkeypatch.setattr(pipeline, "export_model", failing_export)
    status = main(["--model", str(tmp_path), "--output", str(tmp_path / "m")])
    captured = capsys.readouterr()
    assert status == ParityError.exit_code == 3
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "pair  category",
        "   3  short",
        "export: error: golden parity failed for 2 of 30 pairs (...)",
    ]


# ---------------------------------------------------------------- manifest and re-runs


def test_second_run_is_a_verified_no_op(tiny_model_copy: Path, tiny_source_dir: Path) -> None:
    before = {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in tiny_model_copy.iterdir()}
    report = export_model(str(tiny_source_dir), output=tiny_model_copy)
    assert report.status == "verified" and report.parity is None
    assert report.verified_max_abs_logit_diff is not None and report.verified_max_abs_logit_diff <= 1e-4
    after = {path.name: (path.stat().st_mtime_ns, path.read_bytes()) for path in tiny_model_copy.iterdir()}
    assert after == before
    assert listing(tiny_model_copy.parent) == ["model"]


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "config.json", "golden.json"])
def test_tampered_file_fails_manifest_verification(tiny_model_copy: Path, tiny_source_dir: Path, name: str) -> None:
    path = tiny_model_copy / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ManifestError, match=re.escape(f"{name}: sha256")):
        verify_export_dir(tiny_model_copy)
    snapshot = {p.name: p.read_bytes() for p in tiny_model_copy.iterdir()}
    with pytest.raises(ManifestError, match="does not match its manifest"):
        export_model(str(tiny_source_dir), output=tiny_model_copy)
    assert {p.name: p.read_bytes() for p in tiny_model_copy.iterdir()} == snapshot, "reported, not overwritten"


def test_missing_or_malformed_manifest_is_refused(tiny_model_copy: Path, tiny_source_dir: Path) -> None:
    (tiny_model_copy / "golden.json").unlink()
    with pytest.raises(ManifestError, match="golden.json: missing"):
        verify_export_dir(tiny_model_copy)
    (tiny_model_copy / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ManifestError, match=re.escape("manifest.json is not a valid manifest (invalid JSON: ")):
        verify_export_dir(tiny_model_copy)
    (tiny_model_copy / "manifest.json").unlink()
    with pytest.raises(ExportError, match="has no manifest.json; refusing to overwrite"):
        export_model(str(tiny_source_dir), output=tiny_model_copy)


def test_golden_logits_must_reproduce(tiny_model_copy: Path) -> None:
    """A golden.json edited consistently with its manifest still fails the onnxruntime re-score."""
    from verifier_export.manifest import file_records, write_manifest

    golden_path = tiny_model_copy / "golden.json"
    golden = json.loads(golden_path.read_text(encoding="utf-8"))
    golden["pairs"][5]["logits"][1] += 0.01
    golden_path.write_text(json.dumps(golden, ensure_ascii=False), encoding="utf-8")
    manifest = read_manifest(tiny_model_copy)
    files = {**manifest.files, **file_records(tiny_model_copy, ["golden.json"])}
    write_manifest(tiny_model_copy, manifest.model_copy(update={"files": files}))
    verify_export_dir(tiny_model_copy)  # files match the (rewritten) manifest ...
    with pytest.raises(ManifestError, match=r"max \|Δlogit\| 0\.01 > atol 0\.0001 \(worst: golden pair 5\)"):
        verify_golden(tiny_model_copy)  # ... but the model does not reproduce golden.json


def test_golden_recheck_collects_every_failure(tiny_model_copy: Path, tiny_source_dir: Path) -> None:
    """One re-check of golden.json: every failure is listed, not just the first bad pair."""
    from verifier_export.manifest import file_records, write_manifest

    golden_path = tiny_model_copy / "golden.json"
    golden = json.loads(golden_path.read_text(encoding="utf-8"))
    golden["pairs"][5]["logits"][1] += 0.01
    golden["pairs"][7]["input_ids"][1] += 1
    golden["pairs"][9]["input_ids"][2] += 1
    golden_path.write_text(json.dumps(golden, ensure_ascii=False), encoding="utf-8")
    manifest = read_manifest(tiny_model_copy)
    files = {**manifest.files, **file_records(tiny_model_copy, ["golden.json"])}
    write_manifest(tiny_model_copy, manifest.model_copy(update={"files": files}))
    with pytest.raises(ManifestError) as caught:
        export_model(str(tiny_source_dir), output=tiny_model_copy)
    message = str(caught.value)
    assert "tokenizer.json no longer gives the recorded token ids for golden pairs [7, 9]" in message
    assert "max |Δlogit| 0.01 > atol 0.0001 (worst: golden pair 5)" in message
    assert message.endswith(f"; delete {tiny_model_copy} (or choose another --output) and export again")


def test_unloadable_onnx_is_a_manifest_error_not_a_traceback(tiny_model_copy: Path) -> None:
    from verifier_export.manifest import file_records, write_manifest

    (tiny_model_copy / "model.onnx").write_bytes(b"not an onnx file")
    manifest = read_manifest(tiny_model_copy)
    files = {**manifest.files, **file_records(tiny_model_copy, ["model.onnx"])}
    write_manifest(tiny_model_copy, manifest.model_copy(update={"files": files}))
    with pytest.raises(ManifestError, match=r"onnxruntime cannot load \S*model\.onnx: "):
        verify_golden(tiny_model_copy)


def test_existing_export_of_another_model_is_not_overwritten(tiny_model_copy: Path, tiny_bert_source_dir: Path) -> None:
    with pytest.raises(ExportError, match="already holds an export of"):
        export_model(str(tiny_bert_source_dir), output=tiny_model_copy)
    with pytest.raises(ExportError, match="holds a max length 512 export, not 64"):
        export_model(str(read_manifest(tiny_model_copy).model), output=tiny_model_copy, max_length=64)


# ---------------------------------------------------------------- argument errors (no export needed)


def test_parser_flags() -> None:
    parser = build_parser()
    flags = {option for action in parser._actions for option in action.option_strings}
    assert {"--model", "--revision", "--output", "--opset", "--max-length", "--atol", "--smoke"} <= flags
    assert not any("remote" in flag for flag in flags)
    args = parser.parse_args(["--model", "x", "--max-length", "128", "--atol", "1e-5"])
    assert (args.model, args.max_length, args.atol, args.revision) == ("x", 128, 1e-5, None)


@pytest.mark.parametrize(
    "argv",
    [["--atol", "0"], ["--atol", "nan"], ["--max-length", "4"], ["--opset", "7"], ["--smoke", "--model", "x"]],
)
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_hub_id_without_revision_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=re.escape("--revision is required with a hub id")):
        export_model("someone/some-nli-model", output=tmp_path / "m")
    assert listing(tmp_path) == []


# ---------------------------------------------------------------- CLI in a subprocess




@pytest.mark.slow
def test_cli_exports_a_local_directory(tiny_source_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "exported"
    proc = run_export_cli("--model", str(tiny_source_dir), "--output", str(target))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""  # issue 34: messages go to stderr
    assert f"-> {target}" in proc.stderr and "max |Δlogit|" in proc.stderr
    assert summary_of(proc.stderr).startswith("RANDOM WEIGHTS: seeded test model")
    manifest = verify_export_dir(target)
    assert manifest.source == "local" and manifest.parity.passed
    assert verify_golden(target) <= 1e-4

    again = run_export_cli("--model", str(tiny_source_dir), "--output", str(target))
    assert again.returncode == 0, again.stderr
    assert "verified existing export" in again.stderr and "nothing to do" in again.stderr


def test_default_output_dirs(tmp_path: Path) -> None:
    from verifier_export.pipeline import default_output_dir

    local = tmp_path / "my-nli"
    local.mkdir()
    assert default_output_dir(str(local), None, local=True) == Path("models/my-nli-local")
    assert default_output_dir(str(local), "abcdef0123456789", local=True) == Path("models/my-nli-abcdef012345")
    assert default_output_dir(
        "cross-encoder/nli-deberta-v3-base", "6c749ce3425cd33b46d187e45b92bbf96ee12ec7", local=False
    ) == Path("models/nli-deberta-v3-base-6c749ce3425c")


def test_cli_missing_directory(tmp_path: Path) -> None:
    proc = run_export_cli("--model", "./does/not/exist", "--output", str(tmp_path / "m"))
    assert proc.returncode == 1
    assert_one_error_line(proc.stderr, r"--model \./does/not/exist: model directory not found")
    assert listing(tmp_path) == []


def test_cli_not_a_model_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = run_export_cli("--model", str(tmp_path / "empty"), "--output", str(tmp_path / "m"))
    assert proc.returncode == 1
    assert_one_error_line(proc.stderr, r"not a Hugging Face model directory \(no config.json\)")
    assert listing(tmp_path) == ["empty"]


def test_cli_wrong_labels(tmp_path: Path) -> None:
    from verifier_export.testmodels import build_tiny_model

    source = build_tiny_model(tmp_path / "hf", label_order=("LABEL_0", "LABEL_1", "LABEL_2"))
    proc = run_export_cli("--model", str(source), "--output", str(tmp_path / "out" / "m"))
    assert proc.returncode == LabelError.exit_code == 5
    assert_one_error_line(proc.stderr, r"id2label must be exactly contradiction, entailment, neutral")
    assert listing(tmp_path) == ["hf"]


def test_cli_unwritable_output(tiny_source_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    proc = run_export_cli("--model", str(tiny_source_dir), "--output", str(blocker / "sub" / "m"))
    assert proc.returncode == 1
    assert_one_error_line(proc.stderr, r"cannot write to .*a-file/sub")
    assert listing(tmp_path) == ["a-file"]


def test_cli_tampered_directory(tiny_model_copy: Path, tiny_source_dir: Path) -> None:
    onnx_path = tiny_model_copy / "model.onnx"
    data = bytearray(onnx_path.read_bytes())
    data[-10] ^= 0xFF
    onnx_path.write_bytes(bytes(data))
    expected = read_manifest(tiny_model_copy).files["model.onnx"].sha256
    proc = run_export_cli("--model", str(tiny_source_dir), "--output", str(tiny_model_copy))
    assert proc.returncode == ManifestError.exit_code == 4
    assert proc.stderr == (
        f"export: error: model directory {tiny_model_copy} does not match its manifest (tampered or incomplete; "
        f"re-export it): model.onnx: sha256 {sha256_file(onnx_path)} != manifest {expected}; "
        f"delete {tiny_model_copy} (or choose another --output) and export again\n"
    )
    assert onnx_path.read_bytes() == bytes(data)


def _fake_hub_cache(hf_home: Path, repo_id: str, source: Path, commit: str) -> None:
    """Lay out ``source`` as a huggingface_hub cache entry of ``repo_id`` at ``commit`` (refs/main).

    The test-model marker is dropped from config.json, as a real hub model has none.
    """
    repo_dir = hf_home / "hub" / f"models--{repo_id.replace('/', '--')}"
    snapshot = Path(shutil.copytree(source, repo_dir / "snapshots" / commit))
    config = json.loads((snapshot / "config.json").read_text(encoding="utf-8"))
    del config[RANDOM_WEIGHTS_CONFIG_KEY]
    (snapshot / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(commit, encoding="utf-8")




@pytest.mark.slow
def test_cli_hub_id_from_offline_cache(tiny_source_dir: Path, tmp_path: Path) -> None:
    """Hub download honours HF_HOME and HF_HUB_OFFLINE, records the resolved commit, default output."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    _fake_hub_cache(tmp_path / "hf", "tiny-org/tiny-nli", tiny_source_dir, commit)
    work = tmp_path / "work"
    work.mkdir()
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}

    proc = run_export_cli("--model", "tiny-org/tiny-nli", "--revision", "main", cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    target = work / "models" / "tiny-nli-main"
    manifest = verify_export_dir(target)
    assert (manifest.source, manifest.model) == ("hub", "tiny-org/tiny-nli")
    assert (manifest.requested_revision, manifest.resolved_revision) == ("main", commit)
    assert manifest.random_weights is False and not summary_of(proc.stderr).startswith("RANDOM")

    unknown = run_export_cli("--model", "tiny-org/tiny-nli", "--revision", "f" * 40, cwd=work, env=env)
    assert unknown.returncode == 1
    assert_one_error_line(unknown.stderr, "HF_HUB_OFFLINE is set, so huggingface_hub only looked in its cache")
    assert unknown.stderr.splitlines()[0].endswith(f" {OFFLINE_HINT}")
    assert listing(work / "models") == ["tiny-nli-main"]


# ---------------------------------------------------------------- error advice (new-user trial)


def test_the_offline_hint_names_the_options_and_no_interpreter() -> None:
    """Regression (new-user trial): the hint said ``run python -m export --smoke``, which in a checkout
    whose .venv is not activated fails with "No module named 'torch'"; the next: line names the interpreter."""
    assert "--model DIR" in OFFLINE_HINT and "--smoke" in OFFLINE_HINT
    assert "python" not in OFFLINE_HINT


@pytest.mark.parametrize("module", ["torch", "optimum"])
def test_a_missing_exporter_library_is_named_before_any_download(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression (stop 43's new-user trial): in a venv without the export extra, python -m export first
    tried the hub (30 s of retries offline; with a network, the whole model) and only --smoke named torch."""
    monkeypatch.setitem(sys.modules, module, None)  # what Python does for an uninstalled module: import fails
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    for argv in (["--output", str(tmp_path / "m")], ["--smoke", "--output", str(tmp_path / "s")]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"export: error: No module named '{module}'; the exporter needs torch (pinned, CPU) and the export extra" in err
        assert "hub" not in err.split("; the exporter needs")[0] and "cache" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no staging, no cache


def test_ctrl_c_during_an_export_ends_with_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """Regression (stop 43's new-user trial): Ctrl-C during python -m export printed a ~100-line traceback
    ending in KeyboardInterrupt (the staging directory was removed, as now).

    The interrupt is sent once the export prints its first step (a fixed sleep landed in the imports on a
    slower CI machine). The status is 130, or death by SIGINT, which a shell reports as the same 130: CPython
    sometimes ends that way after the message when the interrupt lands inside an import."""
    import signal

    out = tmp_path / "models" / "smoke"
    env = {**os.environ, "PYTHONPATH": str(REPO), "CLAIM_VERIFIER_PROGRESS_AFTER": "1"}  # the suite's default is 600 s
    job = subprocess.Popen([sys.executable, "-m", "verifier_export", "--smoke", "--output", str(out)], cwd=REPO,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stderr is not None
        seen = [job.stderr.readline()]
        while seen[-1] and "building the seeded tiny random model" not in seen[-1]:
            seen.append(job.stderr.readline())
        assert seen[-1], "".join(seen)  # the export ended before its first step
        job.send_signal(signal.SIGINT)
        _, rest = job.communicate(timeout=120)
    finally:
        job.kill()
    stderr = "".join(seen) + rest
    assert job.returncode in (130, -signal.SIGINT), stderr[-2000:]
    assert stderr.rstrip().splitlines()[-1] == "export: interrupted" and "Traceback" not in stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == []  # nor its parents, nor a staging directory


def test_failed_hub_download_ends_with_offline_hint(tmp_path: Path) -> None:
    """Bug: a failed hub download (no network) gave no hint about --model DIR or --smoke. Regression
    (issue 34): under HF_HUB_OFFLINE=1 it said "downloading ... failed" (nothing was downloaded: the
    cache lacked it) and suggested HF_HUB_OFFLINE=1 with the command just run."""
    env = {"HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    revision = "0" * 40
    proc = run_export_cli("--model", "tiny-org/absent-nli", "--revision", revision, "--output", str(tmp_path / "m"), env=env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert_one_error_line(proc.stderr, "HF_HUB_OFFLINE is set, so huggingface_hub only looked in its cache ")
    assert proc.stderr.startswith(
        f"export: error: --model tiny-org/absent-nli: no local directory of that name, and HF_HUB_OFFLINE is set, "
        f"so huggingface_hub only looked in its cache ({tmp_path / 'hf' / 'hub'}), which does not hold revision {revision}: "
    )
    assert "downloading" not in proc.stderr
    error, advice = proc.stderr.splitlines()
    assert error.endswith(f" {OFFLINE_HINT}")
    try:  # the interpreter as the tool prints it: relative to the working directory when under it
        python = str(Path(sys.executable).relative_to(REPO))
    except ValueError:
        python = sys.executable
    run = f"{python} -m verifier_export"
    assert advice == (
        f"next: with a copy of the model folder: {run} --model /path/to/absent-nli --model-id tiny-org/absent-nli "
        f"--revision {revision}; with network: unset HF_HUB_OFFLINE and run {run} --model "
        f"tiny-org/absent-nli --revision {revision}; plumbing only (random weights): {run} --smoke"
    )
    assert listing(tmp_path) == []


def test_tampered_directory_says_what_to_do(tiny_model_copy: Path, tiny_source_dir: Path) -> None:
    """Bug: a tampered target was refused (exit 4) without saying to delete it or choose another --output."""
    config = tiny_model_copy / "config.json"
    config.write_bytes(config.read_bytes() + b" ")
    record = read_manifest(tiny_model_copy).files["config.json"]
    expected = (
        f"model directory {tiny_model_copy} does not match its manifest (tampered or incomplete; re-export it): "
        f"config.json: size {record.size + 1} != manifest {record.size}; "
        f"delete {tiny_model_copy} (or choose another --output) and export again"
    )
    with pytest.raises(ManifestError, match=f"^{re.escape(expected)}$"):
        export_model(str(tiny_source_dir), output=tiny_model_copy)


def test_golden_mismatch_says_what_to_do(tiny_model_copy: Path, tiny_source_dir: Path) -> None:
    """Bug: a target whose golden outputs no longer reproduce was refused without advice."""
    from verifier_export.manifest import file_records, write_manifest

    (tiny_model_copy / "model.onnx").write_bytes(b"not an onnx file")
    manifest = read_manifest(tiny_model_copy)
    write_manifest(tiny_model_copy, manifest.model_copy(update={"files": {**manifest.files, **file_records(tiny_model_copy, ["model.onnx"])}}))
    with pytest.raises(ManifestError) as caught:
        export_model(str(tiny_source_dir), output=tiny_model_copy)
    message = str(caught.value)
    assert f"onnxruntime cannot load {tiny_model_copy / 'model.onnx'}: " in message
    assert message.endswith(f"; delete {tiny_model_copy} (or choose another --output) and export again")


def test_directory_without_manifest_says_what_to_do(tmp_path: Path, tiny_source_dir: Path) -> None:
    """Bug: "exists, is not empty and has no manifest.json; refusing to overwrite" gave no advice."""
    target = tmp_path / "target"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    expected = (
        f"--output {target}: exists, is not empty and has no manifest.json; refusing to overwrite; "
        f"delete {target} (or choose another --output) and export again"
    )
    with pytest.raises(ExportError, match=f"^{re.escape(expected)}$"):
        export_model(str(tiny_source_dir), output=target)
    assert listing(target) == ["notes.txt"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{\n", "invalid JSON: EOF while parsing an object at line 2 column 0"),
        ('{"model": "x"}', "field source: required field is missing, and 9 more errors"),
        ("[]", "must be a JSON object"),
    ],
    ids=["invalid-json", "missing-fields", "not-an-object"],
)
def test_corrupt_target_manifest_is_one_clean_line(
    tiny_model_copy: Path, tiny_source_dir: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    """Bug: a corrupt manifest.json in the target printed pydantic's input_value dump and its errors.pydantic.dev link."""
    (tiny_model_copy / "manifest.json").write_text(content, encoding="utf-8")
    status = main(["--model", str(tiny_source_dir), "--output", str(tiny_model_copy)])
    captured = capsys.readouterr()
    assert status == ManifestError.exit_code == 4
    assert captured.out == ""
    assert captured.err == (
        f"export: error: {tiny_model_copy}/manifest.json is not a valid manifest ({problem}); "
        f"delete {tiny_model_copy} (or choose another --output) and export again\n"
    )
    assert (tiny_model_copy / "manifest.json").read_text(encoding="utf-8") == content


@pytest.mark.parametrize("module", ["verifier_export.pipeline", "verifier_export.existing", "verifier_export.source"])
def test_doctests(module: str) -> None:
    import doctest
    import importlib

    results = doctest.testmod(importlib.import_module(module))
    assert results.failed == 0 and results.attempted >= 1


# ---------------------------------------------------------------- library API and options


def test_public_api_is_lazy_and_has_no_test_support() -> None:
    """``import verifier_export`` is cheap (no torch, onnxruntime, transformers) and lists only the exporter's API."""
    code = (
        "import sys, verifier_export as export\n"
        "heavy = sorted(m for m in ('torch', 'onnxruntime', 'transformers', 'optimum', 'verifier_export.testmodels') "
        "if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "print(' '.join(export.__all__))\n"
        "from verifier_export import build_variants, export_model, DownloadError, ExportError\n"
        "assert issubclass(DownloadError, ExportError) and callable(export_model) and callable(build_variants)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    names = set(proc.stdout.split())
    assert {"export_model", "export_smoke", "build_variants", "ExportReport", "VariantsReport"} <= names
    assert {"ExportError", "DownloadError", "ParityError", "ManifestError", "LabelError"} <= names
    assert not {"build_tiny_model", "build_deberta_v3_base_random", "real_tokenizer_dir"} & names


def test_pipeline_imports_test_models_only_inside_export_smoke() -> None:
    import ast

    tree = ast.parse((REPO / "verifier_export" / "pipeline.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and "testmodels" in node.module:
            assert any(
                isinstance(fn, ast.FunctionDef) and fn.name == "export_smoke" and node in list(ast.walk(fn))
                for fn in tree.body
            ), f"line {node.lineno}: testmodels imported outside export_smoke"


def test_failed_download_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    from verifier_export.errors import DownloadError

    def offline(**kwargs: Any) -> str:
        raise OSError("no network\n here")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(DownloadError) as caught:
        export_model("someone/some-nli-model", revision="main", output=tmp_path / "m")
    assert str(caught.value) == (
        "--model someone/some-nli-model: no local directory of that name, and downloading revision main "
        f"from the Hugging Face hub failed: no network here {OFFLINE_HINT}"
    )
    assert caught.value.exit_code == 1 and listing(tmp_path) == []


def test_hub_revision_rule() -> None:
    from verifier_export.source import hub_revision, plan_source
    from verifier.types import DEFAULT_MODEL, DEFAULT_REVISION

    assert plan_source(DEFAULT_MODEL, None) == ("hub", DEFAULT_REVISION)
    assert plan_source("someone/nli", "v1") == ("hub", "v1")
    assert plan_source(str(REPO), None) == ("local", None)
    with pytest.raises(ExportError, match=re.escape("--model someone/nli: --revision is required with a hub id (pin a commit hash)")):
        hub_revision("someone/nli", None)
    with pytest.raises(ExportError, match=re.escape(  # a bare name may be a local folder that is not there
            "--model nli-base: --revision is required with a hub id (pin a commit hash) (and there is no local directory")):
        hub_revision("nli-base", None)
    with pytest.raises(ExportError, match="model directory not found"):
        plan_source("./no/such/dir", None)




@pytest.mark.slow
def test_span_attention_export_passes_the_same_gate(tiny_source_dir: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    """Span-sliced relative attention is the default where it applies (DeBERTa-v2/v3 with shared keys); the
    stock PyTorch gate still decides, and the manifest records which attention the graph computes."""
    span = read_manifest(tiny_model_dir)  # exported with the default
    assert span.attention == "span" and span.parity.passed and span.parity.max_abs_logit_diff <= 1e-4
    report = export_model(str(tiny_source_dir), output=tmp_path / "stock", attention="stock")
    stock = report.manifest
    assert report.status == "exported" and stock.attention == "stock" and report.attention_note == ""
    assert stock.files["model.onnx"].sha256 != span.files["model.onnx"].sha256, "a different graph"
    assert verify_golden(tmp_path / "stock") <= 1e-4 and verify_golden(tiny_model_dir) <= 1e-4
    from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta

    from verifier_export.fast_attention import patched_bias

    assert deberta.DisentangledSelfAttention.disentangled_attention_bias is not patched_bias, "restored"
    with pytest.raises(ExportError, match="--attention fast: must be one of stock, span"):
        export_model(str(tiny_source_dir), output=tmp_path / "other", attention="fast")  # type: ignore[arg-type]


def test_span_does_not_apply_to_other_architectures(tiny_bert_model_dir: Path) -> None:
    assert read_manifest(tiny_bert_model_dir).attention == "stock"


@pytest.mark.slow
def test_a_span_graph_that_misses_the_gate_falls_back_to_stock(tiny_source_dir: Path, tmp_path: Path) -> None:
    """If the span-sliced graph fails the parity gate, the stock graph is exported and gated instead."""
    seen: list[int] = []

    def perturb_the_first_graph(path: Path) -> None:
        seen.append(1)
        if len(seen) == 1:
            perturb_classifier_bias(path, delta=0.5)

    report = export_model(str(tiny_source_dir), output=tmp_path / "m", onnx_hook=perturb_the_first_graph)
    assert len(seen) == 2 and report.manifest.attention == "stock" and report.manifest.parity.passed
    assert report.attention_note.startswith("span-sliced attention missed the parity gate (")
    assert report.summary_lines()[-1] == f"note: {report.attention_note}"


def test_attention_flag(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    assert parser.parse_args([]).attention is None  # the default (span where it applies) unless asked
    assert parser.parse_args(["--attention", "span"]).attention == "span"
    with pytest.raises(SystemExit) as caught:
        main(["--attention", "fast"])
    assert caught.value.code == 2 and "invalid choice" in capsys.readouterr().err

"""Model-directory integrity: the holes an adversarial user found, each with the regression that names it.

Every test tampers with a private copy of the exported tiny model
(``tiny_model_copy``) and checks that loading refuses it, or that what runs
is exactly what was verified.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verifier import ClaimVerificationError, OnnxScorer
from verifier.engine.manifest import MANIFEST_NAME, Manifest, check_file_name, read_manifest
from verifier.engine.model_directory import ModelDirectory
from verifier.engine.session import create_session

PAIRS = [("The launch is Tuesday.", "The launch is on Tuesday."), ("a", "b")]


def _manifest(model_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((model_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    return data


def _write_manifest(model_dir: Path, data: dict[str, Any]) -> None:
    (model_dir / MANIFEST_NAME).write_text(json.dumps(data), encoding="utf-8")


def _record(model_dir: Path, name: str) -> None:
    """Record ``name``'s current sha256 and size in the manifest (what an editor would do)."""
    data = _manifest(model_dir)
    payload = (model_dir / name).read_bytes()
    data["files"][name] = {"sha256": hashlib.sha256(payload).hexdigest(), "size": len(payload)}
    _write_manifest(model_dir, data)


class TestManifestMustListWhatIsRead:
    def test_deleting_the_config_record_and_reordering_labels_is_refused(self, tiny_model_copy: Path) -> None:
        """Regression: removing config.json from `files` and swapping labels loaded silently with
        entailment and contradiction swapped."""
        data = _manifest(tiny_model_copy)
        del data["files"]["config.json"]
        data["labels"] = [data["labels"][1], data["labels"][0], data["labels"][2]]
        _write_manifest(tiny_model_copy, data)
        with pytest.raises(ClaimVerificationError, match=re.escape("does not record config.json: refusing files")):
            OnnxScorer(tiny_model_copy).load()

    def test_an_unlisted_edited_tokenizer_is_refused(self, tiny_model_copy: Path) -> None:
        """Regression: an edited tokenizer.json without a manifest record was loaded unverified."""
        data = _manifest(tiny_model_copy)
        del data["files"]["tokenizer.json"]
        _write_manifest(tiny_model_copy, data)
        tokenizer = json.loads((tiny_model_copy / "tokenizer.json").read_text(encoding="utf-8"))
        tokenizer["truncation"] = None
        (tiny_model_copy / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
        with pytest.raises(ClaimVerificationError, match=re.escape("does not record tokenizer.json")):
            OnnxScorer(tiny_model_copy).load()

    def test_an_unlisted_golden_file_is_refused(self, tiny_model_copy: Path) -> None:
        data = _manifest(tiny_model_copy)
        del data["files"]["golden.json"]
        _write_manifest(tiny_model_copy, data)
        with pytest.raises(ClaimVerificationError, match=re.escape("does not record golden.json")):
            OnnxScorer(tiny_model_copy).load()

    def test_a_failed_parity_gate_is_refused(self, tiny_model_copy: Path) -> None:
        data = _manifest(tiny_model_copy)
        data["parity"]["passed"] = False
        _write_manifest(tiny_model_copy, data)
        with pytest.raises(ClaimVerificationError, match=re.escape("records a failed parity gate for model.onnx")):
            OnnxScorer(tiny_model_copy).load()

    @pytest.mark.parametrize(
        ("edit", "said"),
        [
            ({"max_abs_logit_diff": 3.0}, "max |Δlogit| 3 > atol 0.0001"),
            ({"argmax_agreement": 0.0}, "argmax agreement 0.0% < 100%"),
            ({"token_ids_identical": False}, "the token ids were not identical"),
        ],
    )
    def test_a_passed_verdict_over_failing_figures_is_refused(
        self, tiny_model_copy: Path, edit: dict[str, object], said: str
    ) -> None:
        """Regression: only the "passed" flag was read; figures that miss the recorded gate loaded (adversarial run)."""
        data = _manifest(tiny_model_copy)
        assert data["parity"]["passed"] is True and data["parity"]["atol"] == 1e-4
        data["parity"].update(edit)
        _write_manifest(tiny_model_copy, data)
        with pytest.raises(ClaimVerificationError, match=re.escape(f"(it says passed, but {said})")):
            OnnxScorer(tiny_model_copy).load()

    def test_nan_in_a_parity_report_is_refused(self, tiny_model_copy: Path) -> None:
        """Regression: a NaN max |Δlogit| in the parity report validated."""
        text = (tiny_model_copy / MANIFEST_NAME).read_text(encoding="utf-8")
        data = json.loads(text)
        data["parity"]["max_abs_logit_diff"] = float("nan")
        (tiny_model_copy / MANIFEST_NAME).write_text(json.dumps(data), encoding="utf-8")  # json writes NaN
        with pytest.raises(ClaimVerificationError, match=r"is not a valid manifest: .*max_abs_logit_diff"):
            OnnxScorer(tiny_model_copy).load()


    @pytest.mark.parametrize(
        ("where", "value"),
        [(("format_version",), True), (("format_version",), 1.0), (("random_weights",), 0),
         (("random_weights",), "false"), (("max_length",), "512"), (("parity", "passed"), "true"),
         (("parity", "passed"), 1), (("files", "model.onnx", "size"), "SIZE"), (("pad_token_id",), 0.0)],
    )
    def test_a_value_of_another_json_type_is_refused_not_coerced(
        self, tiny_model_copy: Path, where: tuple[str, ...], value: Any
    ) -> None:
        """Regression (stop 41's adversarial read): the manifest was parsed in pydantic's lax mode, so
        ``"format_version": true``, ``"passed": "true"`` or a size written as a string loaded as the
        exporter's values. Each is refused on every surface that reads a manifest."""
        data = _manifest(tiny_model_copy)
        assert OnnxScorer(tiny_model_copy).load() is not None  # as written, it loads
        *parents, key = where
        node = data
        for name in parents:
            node = node[name]
        node[key] = str(node[key]) if value == "SIZE" else value
        _write_manifest(tiny_model_copy, data)
        field = ".".join(where)
        with pytest.raises(ClaimVerificationError, match=rf"is not a valid manifest: .*{re.escape(where[-1])}"):
            OnnxScorer(tiny_model_copy).load()
        with pytest.raises(Exception, match=re.escape(key)):
            read_manifest(tiny_model_copy)
        from verifier.engine.identity import read_manifest_if_present

        with pytest.raises(ClaimVerificationError, match=rf"field {re.escape(field)}"):
            read_manifest_if_present(tiny_model_copy)


    @pytest.mark.parametrize("version", [True, 1.0, "1", 2])
    def test_a_golden_file_of_another_format_version_is_refused(self, tiny_model_copy: Path, version: Any) -> None:
        """Regression: golden.json's ``format_version`` was compared with ``!=``, so ``true`` and ``1.0`` read as 1."""
        from verifier.engine.golden import GoldenFormatError, parse_golden

        document = json.loads((tiny_model_copy / "golden.json").read_text(encoding="utf-8"))
        assert document["format_version"] == 1 and len(parse_golden(json.dumps(document)).pairs) == len(document["pairs"])
        document["format_version"] = version
        with pytest.raises(GoldenFormatError, match="not a format-1 golden.json object"):
            parse_golden(json.dumps(document))


class TestPathsStayInside:
    @pytest.mark.parametrize("name", ["/etc/passwd", "../model.onnx", "sub/../../x.onnx", "./model.onnx", "a\\b.onnx", ""])
    def test_names_that_could_leave_the_directory_are_refused(self, name: str) -> None:
        with pytest.raises(ValueError):
            check_file_name(name)

    @pytest.mark.parametrize("field", ["model_file", "files", "variants"])
    def test_a_manifest_with_an_outside_path_does_not_parse(self, tiny_model_copy: Path, field: str) -> None:
        """Regression: `model_file`, `files` keys and variant files could be absolute or contain '..'."""
        outside = str(tiny_model_copy.parent / "elsewhere.onnx")
        data = _manifest(tiny_model_copy)
        if field == "model_file":
            data["model_file"] = outside
        elif field == "files":
            data["files"]["../elsewhere.onnx"] = data["files"]["model.onnx"]
        else:
            data["variants"] = {"evil": {"file": "../elsewhere.onnx", "description": "x", "parity": data["parity"]}}
        _write_manifest(tiny_model_copy, data)
        with pytest.raises(ClaimVerificationError, match="is not a valid manifest: .*must be relative to the model directory"):
            OnnxScorer(tiny_model_copy).load()

    def test_a_symlink_that_resolves_outside_is_refused(self, tiny_model_copy: Path, tmp_path: Path) -> None:
        """Regression: a recorded file could be a symlink to a file outside the directory."""
        outside = tmp_path / "outside.onnx"
        (tiny_model_copy / "model.onnx").rename(outside)
        os.symlink(outside, tiny_model_copy / "model.onnx")
        with pytest.raises(ClaimVerificationError, match=r"model\.onnx resolves to .*outside the model directory"):
            OnnxScorer(tiny_model_copy).load()

    def test_a_symlink_inside_the_directory_is_allowed(self, tiny_model_copy: Path) -> None:
        (tiny_model_copy / "model.onnx").rename(tiny_model_copy / "real.onnx")
        os.symlink("real.onnx", tiny_model_copy / "model.onnx")
        assert OnnxScorer(tiny_model_copy).score(PAIRS).shape == (2, 3)

    def test_a_manifest_that_resolves_outside_is_refused(self, tiny_model_copy: Path, tmp_path: Path) -> None:
        """Regression (trust on every surface, item 18): manifest.json as a symlink to a file outside the
        directory loaded and verified, though every file's real path must lie inside. Whoever can place a
        link there could point the manifest at digests of their choosing."""
        outside = tmp_path / "elsewhere" / MANIFEST_NAME
        outside.parent.mkdir()
        (tiny_model_copy / MANIFEST_NAME).rename(outside)
        os.symlink(outside, tiny_model_copy / MANIFEST_NAME)
        expected = f"{MANIFEST_NAME} resolves to {outside}, outside the model directory {tiny_model_copy}"
        with pytest.raises(ClaimVerificationError, match=re.escape(expected)):
            ModelDirectory.open(tiny_model_copy)
        with pytest.raises(ClaimVerificationError, match=re.escape(expected)):
            OnnxScorer(tiny_model_copy).load()
        with pytest.raises(ValueError, match=re.escape(expected)):
            read_manifest(tiny_model_copy)
        # A manifest linked to a file inside the directory is its own file, and loads.
        (tiny_model_copy / MANIFEST_NAME).unlink()
        outside.rename(tiny_model_copy / "manifest.real.json")
        os.symlink("manifest.real.json", tiny_model_copy / MANIFEST_NAME)
        assert ModelDirectory.open(tiny_model_copy).manifest.model

    def test_a_repeated_key_in_the_manifest_is_refused(self, tiny_model_copy: Path) -> None:
        """Regression (item 4): a manifest that repeats a key was read as its last value."""
        text = (tiny_model_copy / MANIFEST_NAME).read_text(encoding="utf-8").rstrip()
        assert text.endswith("}")
        (tiny_model_copy / MANIFEST_NAME).write_text(text[:-1] + ', "model": "someone/else"}', encoding="utf-8")
        with pytest.raises(ClaimVerificationError, match="duplicate key 'model' in a JSON object"):
            ModelDirectory.open(tiny_model_copy)


class TestWhatRunsIsWhatWasVerified:
    def test_a_swap_after_verification_does_not_change_what_runs(self, tiny_model_copy: Path, tiny_bert_model_dir: Path) -> None:
        """Regression (time of check / time of use): the model file was hashed, then onnxruntime
        reopened it by path, so a concurrent swap ran an unverified model. Now onnxruntime reads
        the very file that was hashed (through its open descriptor): replacing the path after the
        check changes nothing that runs."""
        expected = OnnxScorer(tiny_model_copy).score(PAIRS)
        recorded = read_manifest(tiny_model_copy).files["model.onnx"].sha256
        seen: list[str] = []

        def swap_then_create(model: Any, options: Any, *, providers: Any, where: str) -> Any:
            # the attacker wins every race: another model is renamed over the path right after the check
            other = tiny_model_copy / "other.onnx"
            other.write_bytes((tiny_bert_model_dir / "model.onnx").read_bytes())
            os.replace(other, tiny_model_copy / "model.onnx")
            data = model if isinstance(model, bytes) else Path(model).read_bytes()
            seen.append(hashlib.sha256(data).hexdigest())
            return create_session(model, options, providers=providers, where=where)

        got = OnnxScorer(tiny_model_copy, session_factory=swap_then_create).score(PAIRS)
        assert seen == [recorded]
        np.testing.assert_array_equal(got, expected)

    def test_an_in_place_write_during_the_load_is_refused(self, tiny_model_copy: Path) -> None:
        """A write into the hashed file itself while onnxruntime loads it: the load is refused."""

        def write_then_create(model: Any, options: Any, *, providers: Any, where: str) -> Any:
            session = create_session(model, options, providers=providers, where=where)
            with open(tiny_model_copy / "model.onnx", "r+b") as handle:
                handle.seek(100)
                byte = handle.read(1)
                handle.seek(100)
                handle.write(bytes([byte[0] ^ 0xFF]))
            return session

        with pytest.raises(ClaimVerificationError, match=re.escape("model.onnx was modified while it was loaded")):
            OnnxScorer(tiny_model_copy, session_factory=write_then_create).load()

    def test_only_the_files_a_run_reads_are_hashed(self, tiny_model_copy: Path) -> None:
        """A corrupt file the chosen variant never reads does not block loading; verify_all reports it."""
        (tiny_model_copy / "model.other.onnx").write_bytes(b"not a model")
        _record(tiny_model_copy, "model.other.onnx")
        with open(tiny_model_copy / "model.other.onnx", "ab") as handle:
            handle.write(b"!")
        directory = ModelDirectory.open(tiny_model_copy)
        assert OnnxScorer(tiny_model_copy).score(PAIRS).shape == (2, 3)
        assert directory.verify_all() == ["model.other.onnx: size 12 != manifest 11"]

    def test_a_directory_path_that_is_a_file_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "file"
        path.write_text("x", encoding="utf-8")
        with pytest.raises(ClaimVerificationError, match=re.escape(f"model directory {path} is not a directory")):
            OnnxScorer(path).load()

    def test_a_manifest_that_is_a_directory_is_refused(self, tmp_path: Path) -> None:
        (tmp_path / MANIFEST_NAME).mkdir()
        expected = f"{tmp_path / MANIFEST_NAME} is a directory, not a regular file; re-export the directory"
        with pytest.raises(ClaimVerificationError, match=re.escape(expected)):
            OnnxScorer(tmp_path).load()


def test_manifest_model_refuses_outside_names_directly() -> None:
    with pytest.raises(ValueError, match="must be relative"):
        Manifest.model_validate(
            {
                "model": "m", "source": "local", "model_file": "/abs.onnx", "files": {}, "labels": [],
                "max_length": 8, "opset": 17, "inputs": [], "pad_token_id": 0, "versions": {},
                "parity": {"passed": True, "pairs": 1, "max_abs_logit_diff": 0.0, "max_abs_prob_diff": 0.0,
                           "argmax_agreement": 1.0, "token_ids_identical": True},
                "created_at": "now",
            }
        )


@pytest.mark.parametrize("name", ["tokenizer.json", "model.onnx", "config.json", MANIFEST_NAME])
def test_a_fifo_in_place_of_a_file_is_refused_at_once(tiny_model_copy: Path, name: str) -> None:
    """Regression (adversarial run): opening a FIFO blocked until a writer came, so a load hung forever
    (and ignored the first SIGTERM). Now the open never blocks and fstat refuses it."""
    import subprocess
    import sys

    (tiny_model_copy / name).unlink()
    os.mkfifo(tiny_model_copy / name)
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from verifier import OnnxScorer; OnnxScorer(sys.argv[1]).load()", str(tiny_model_copy)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1
    said = proc.stderr.strip().splitlines()[-1]
    if name == MANIFEST_NAME:
        assert said.endswith(f"{MANIFEST_NAME} is a FIFO, not a regular file; re-export the directory"), said
    else:
        assert said.endswith(f"{name}: not a regular file"), said


@pytest.mark.parametrize(("field", "value"), [("max_length", 16), ("pad_token_id", 3)])
def test_editing_the_truncation_or_padding_in_the_manifest_is_refused(tiny_model_copy: Path, field: str, value: int) -> None:
    """Regression (adversarial run): ``max_length`` 512 -> 16 in manifest.json changed 6 of 41 statuses and 36
    score sets, unnoticed (no file hash covers the manifest). The hashed golden.json records both settings."""
    golden = json.loads((tiny_model_copy / "golden.json").read_text(encoding="utf-8"))
    data = _manifest(tiny_model_copy)
    assert data[field] == golden[field] != value
    data[field] = value
    _write_manifest(tiny_model_copy, data)
    with pytest.raises(ClaimVerificationError, match=re.escape(
        f"{MANIFEST_NAME} records {field} {value} but golden.json {golden[field]} (the export's hashed record)"
    )):
        OnnxScorer(tiny_model_copy).load()

"""No output of a command may be a file the command reads (issue 49, item 2).

Regression: ``verify -o KEY --sign-key KEY`` replaced the only copy of the
private key with result JSON (exit 0), and ``-o DIR/model.onnx --model-dir
DIR`` replaced the model file; the same rule already refused INPUT and the
score store's key, but did not know the other files a command reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from verifier import ClaimVerifier, ScriptedScorer, cli
from verifier.engine.manifest import MANIFEST_NAME

ROW = {
    "id": "r1", "claim": "The deployment date is May 4.",
    "evidence": [{"reference": "m1", "memory_id": str(UUID(int=1)), "text": "The deployment date is May 4."}],
}


class Refused:
    """``make_verifier`` that records being called: a refused command builds no verifier."""

    def __init__(self) -> None:
        self.built = 0

    def __call__(self, config: Any, runtime: Any) -> ClaimVerifier:
        self.built += 1
        return ClaimVerifier(config, scorer=ScriptedScorer({}, default=(0.05, 0.05)), runtime=runtime)


def _input(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, int]:
    capsys.readouterr()  # keygen's lines
    make = Refused()
    code = cli.main(list(argv), make_verifier=make)
    return code, capsys.readouterr().err, make.built


def _keygen(tmp_path: Path) -> Path:
    pytest.importorskip("cryptography")  # the sign extra
    assert cli.main(["keygen", "--out", str(tmp_path / "signing.key")]) == 0
    return tmp_path / "signing.key"


@pytest.mark.parametrize("option", ["-o", "--row-map"])
def test_output_naming_the_sign_key_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path, option: str
) -> None:
    """Bug: -o (or --row-map) naming the --sign-key file replaced the private key with results, exit 0."""
    key = _keygen(tmp_path)
    before = key.read_bytes()
    code, err, built = _run(capsys, "verify", str(_input(tmp_path)), option, str(key), "--sign-key", str(key), "-q")
    assert (code, built) == (2, 0)
    assert err == f"error: {option} {key} is the --sign-key file; it would be replaced, write to another file\n"
    assert key.read_bytes() == before


def test_output_hard_linked_to_the_sign_key_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Bug: the same file through a hard link (another name, the same inode) was not recognised either."""
    key = _keygen(tmp_path)
    link = tmp_path / "results.jsonl"
    os.link(key, link)
    before = key.read_bytes()
    code, err, built = _run(capsys, "verify", str(_input(tmp_path)), "-o", str(link), "--sign-key", str(key), "-q")
    assert (code, built) == (2, 0)
    assert err == f"error: -o {link} is the --sign-key file; it would be replaced, write to another file\n"
    assert key.read_bytes() == before


def test_output_naming_a_model_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Bug: -o DIR/model.onnx --model-dir DIR replaced the model file with results, exit 0."""
    model_dir = manifest_only_model_dir
    (model_dir / "model.onnx").write_bytes(b"x")  # the one file the manifest lists
    manifest = (model_dir / MANIFEST_NAME).read_bytes()
    for name in ("model.onnx", MANIFEST_NAME):
        target = model_dir / name
        code, err, built = _run(capsys, "verify", str(_input(tmp_path)), "-o", str(target), "--model-dir", str(model_dir), "-q")
        assert (code, built) == (2, 0)
        assert err == f"error: -o {target} is the model directory's {name}; it would be replaced, write to another file\n"
    assert (model_dir / "model.onnx").read_bytes() == b"x"
    assert (model_dir / MANIFEST_NAME).read_bytes() == manifest


def test_a_model_file_is_refused_in_the_default_model_directory_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Without --model-dir the directory the command resolves ($CLAIM_VERIFIER_MODEL_DIR here) is guarded."""
    target = manifest_only_model_dir / MANIFEST_NAME
    code, err, _ = _run(capsys, "verify", str(_input(tmp_path)), "--row-map", str(target), "-q")
    assert code == 2
    assert err == f"error: --row-map {target} is the model directory's {MANIFEST_NAME}; it would be replaced, write to another file\n"


def test_the_default_store_key_may_not_be_the_sign_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Bug: --score-cache S --sign-key S.key made the store read the private signing key as its HMAC key."""
    key = _keygen(tmp_path)
    code, err, built = _run(
        capsys, "verify", str(_input(tmp_path)), "--score-cache", str(tmp_path / "signing"), "--sign-key", str(key), "-q",
    )
    assert (code, built) == (2, 0)
    assert err.startswith(f"error: the --sign-key file {key}: it is the store's key")


def test_assay_register_may_not_replace_the_labelled_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Bug: assay LABELLED --register LABELLED replaced the labelled claims with the registration."""
    labelled = tmp_path / "cohort.jsonl"
    labelled.write_text(json.dumps({**ROW, "label": "supported"}) + "\n", encoding="utf-8")
    before = labelled.read_bytes()
    code, err, built = _run(capsys, "assay", str(labelled), "--register", str(labelled), "-q")
    assert (code, built) == (2, 0)
    assert err == f"error: --register {labelled} is the LABELLED file; it would be replaced, write to another file\n"
    assert labelled.read_bytes() == before


def test_assay_report_may_not_replace_the_labelled_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, manifest_only_model_dir: Path
) -> None:
    """Bug: assay DIR/results.jsonl -o DIR replaced the labelled claims with the report's results.jsonl, exit 0."""
    report = tmp_path / "report"
    report.mkdir()
    labelled = report / "results.jsonl"
    labelled.write_text(json.dumps({**ROW, "label": "supported"}) + "\n", encoding="utf-8")
    before = labelled.read_bytes()
    code, err, built = _run(capsys, "assay", str(labelled), "-o", str(report), "-q")
    assert (code, built) == (2, 0)
    assert err == f"error: -o {labelled} is the LABELLED file; it would be replaced, write to another file\n"
    assert labelled.read_bytes() == before


def test_serve_store_key_may_not_be_the_sign_key(tmp_path: Path, manifest_only_model_dir: Path) -> None:
    """Bug: serve --score-cache S --sign-key S.key served with the private signing key as the store's HMAC key.

    A subprocess with a timeout: before the fix the server started and ran until killed.
    """
    pytest.importorskip("uvicorn")  # the server extra
    key = _keygen(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "verifier", "serve", "--port", "0", "--score-cache", str(tmp_path / "signing"),
         "--sign-key", str(key)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "CLAIM_VERIFIER_MODEL_DIR": str(manifest_only_model_dir)},
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: the --sign-key file {key}: it is the store's key")

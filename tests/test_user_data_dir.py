"""The model I exported is found from any working directory.

Regression: the default model directory was ``models/<name>-<rev12>``
relative to the current directory only, so ``ClaimVerifier()`` and
``python -m verifier verify`` outside the checkout could not find the export.
Now the exporter also records a default-location export in the per-user data
directory (``platformdirs.user_data_dir("onnx-claim-verifier")``, overridden
by ``$CLAIM_VERIFIER_DATA_DIR``, which ``tests/conftest.py`` sets per test),
and the lookup is ``--model-dir`` → ``$CLAIM_VERIFIER_MODEL_DIR`` →
``./models/<name>-<rev12>`` → that record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from uuid import UUID

import pytest

from verifier import DEFAULT_MODEL, DEFAULT_REVISION, ClaimEvidence, ClaimVerifier
from verifier.options import (
    DATA_DIR_ENV,
    MODEL_DIR_ENV,
    POINTER_FORMAT,
    RuntimeOptions,
    pointer_path,
    recorded_model_dir,
    user_data_dir,
)
from verifier.types import ClaimVerificationError

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = Path("models") / f"nli-deberta-v3-base-{DEFAULT_REVISION[:12]}"
EVIDENCE = [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The launch is Tuesday.")]


def _point(model_dir: Path, model: str = DEFAULT_MODEL, revision: str = DEFAULT_REVISION) -> Path:
    path = pointer_path(model, revision)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": POINTER_FORMAT, "model": model, "revision": revision,
                                "model_dir": str(model_dir), "recorded_at": "2026-12-01T00:00:00+00:00"}))
    return path


def test_the_data_directory_is_overridable_and_isolated_per_test(_own_user_data_dir: Path) -> None:
    assert os.environ[DATA_DIR_ENV] == str(_own_user_data_dir)
    assert user_data_dir() == _own_user_data_dir
    assert pointer_path(DEFAULT_MODEL, DEFAULT_REVISION) == (
        _own_user_data_dir / "models" / f"nli-deberta-v3-base-{DEFAULT_REVISION[:12]}.json"
    )


def test_the_default_without_the_override_is_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv(DATA_DIR_ENV)
    assert user_data_dir() == Path(platformdirs.user_data_dir("onnx-claim-verifier", appauthor=False))


def test_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    recorded = tmp_path / "elsewhere" / "export"
    recorded.mkdir(parents=True)
    options = RuntimeOptions()
    # nothing anywhere: the local default (missing; the first model call says how to create it)
    assert options.resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) == DEFAULT_DIR
    _point(recorded)
    assert recorded_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) == recorded
    assert options.resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) == recorded  # 4. this user's record
    (tmp_path / DEFAULT_DIR).mkdir(parents=True)
    assert options.resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) == DEFAULT_DIR  # 3. ./models/ first
    monkeypatch.setenv(MODEL_DIR_ENV, "from-env")
    assert options.resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) == Path("from-env")  # 2.
    assert RuntimeOptions(model_dir=Path("given")).resolve_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) == Path("given")


def test_a_record_of_another_model_or_a_broken_one_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    pointer = _point(tmp_path, model="other-org/nli-deberta-v3-base")  # same file name, another model
    assert pointer == pointer_path(DEFAULT_MODEL, DEFAULT_REVISION)
    assert recorded_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) is None
    pointer.write_text("{not json")
    assert recorded_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) is None
    _point(Path("relative/dir"))
    assert recorded_model_dir(DEFAULT_MODEL, DEFAULT_REVISION) is None


def test_missing_default_names_every_place_looked_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    env = {k: v for k, v in os.environ.items() if k != MODEL_DIR_ENV}
    proc = subprocess.run([sys.executable, "-m", "verifier", "info"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**env, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 1
    assert proc.stderr.rstrip("\n").endswith(
        f"; looked in ${MODEL_DIR_ENV} (not set), {tmp_path / DEFAULT_DIR} (absent) and this user's record "
        f"{pointer_path(DEFAULT_MODEL, DEFAULT_REVISION)} (absent)"
    )


def test_the_library_says_what_a_relative_directory_was_resolved_against(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    verifier = ClaimVerifier(runtime=RuntimeOptions(model_dir=Path("exports/mine")))
    with pytest.raises(ClaimVerificationError) as caught:
        verifier.verify_sync("The launch is Tuesday.", EVIDENCE)
    assert str(caught.value).endswith(
        f" (model directory exports/mine is relative to the working directory {tmp_path}: {tmp_path / 'exports/mine'})"
    )


def test_the_library_names_every_place_the_default_lookup_looked_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like the command line (regression: the library named only the relative default directory)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    verifier = ClaimVerifier()
    with pytest.raises(ClaimVerificationError) as caught:
        verifier.verify_sync("The launch is Tuesday.", EVIDENCE)
    assert str(caught.value).endswith(
        f"; looked in ${MODEL_DIR_ENV} (not set), {tmp_path / DEFAULT_DIR} (absent) and this user's record "
        f"{pointer_path(DEFAULT_MODEL, DEFAULT_REVISION)} (absent)"
    )
    assert re.match(rf"model directory {re.escape(str(DEFAULT_DIR))} does not exist; ", str(caught.value))


def test_an_explicit_missing_directory_is_not_blamed_on_the_lookup(tmp_path: Path) -> None:
    """Only the default lookup lists where it looked; a directory the caller named is just missing."""
    verifier = ClaimVerifier(runtime=RuntimeOptions(model_dir=tmp_path / "nowhere"))
    with pytest.raises(ClaimVerificationError) as caught:
        verifier.verify_sync("The launch is Tuesday.", EVIDENCE)
    assert str(caught.value).startswith(f"model directory {tmp_path / 'nowhere'} does not exist; ")
    assert "looked in" not in str(caught.value) and "relative to the working directory" not in str(caught.value)


@pytest.mark.export
def test_an_export_to_the_default_location_is_found_from_anywhere(
    tiny_source_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from verifier_export.pipeline import export_model

    checkout, elsewhere = tmp_path / "checkout", tmp_path / "elsewhere"
    checkout.mkdir()
    elsewhere.mkdir()
    copy = Path(shutil.copytree(tiny_source_dir, tmp_path / "copied" / "nli-deberta-v3-base"))
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    monkeypatch.chdir(checkout)
    report = export_model(str(copy), model_id=DEFAULT_MODEL, revision=DEFAULT_REVISION)
    exported = checkout / DEFAULT_DIR
    assert report.pointer == pointer_path(DEFAULT_MODEL, DEFAULT_REVISION)
    assert report.summary_lines()[-1] == (
        f"recorded for this user: {report.pointer} -> {exported} (found from any working directory)"
    )
    record = json.loads(report.pointer.read_text())
    assert {key: record[key] for key in ("format", "model", "revision", "model_dir")} == {
        "format": POINTER_FORMAT, "model": DEFAULT_MODEL, "revision": DEFAULT_REVISION, "model_dir": str(exported),
    }
    # a re-run (verified, nothing to do) records it too, e.g. for exports made before the record existed
    report.pointer.unlink()
    again = export_model(str(copy), model_id=DEFAULT_MODEL, revision=DEFAULT_REVISION)
    assert again.status == "verified" and again.pointer is not None and again.pointer.is_file()

    monkeypatch.chdir(elsewhere)
    result = ClaimVerifier().verify_sync("The launch is Tuesday.", EVIDENCE)
    assert (result.model, result.requested_revision, result.model_called) == (DEFAULT_MODEL, DEFAULT_REVISION, True)
    rows = elsewhere / "claims.jsonl"
    rows.write_text(json.dumps({"claim": "x y", "evidence": [{"reference": "m1", "memory_id": str(UUID(int=2)), "text": "x y"}]}) + "\n")
    verify = subprocess.run([sys.executable, "-m", "verifier", "verify", str(rows), "-q"], cwd=elsewhere,
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert verify.returncode == 0, verify.stderr
    assert json.loads(verify.stdout)["model"] == DEFAULT_MODEL

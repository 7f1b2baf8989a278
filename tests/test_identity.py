"""The library resolves the model directory and identity as the command line does, and fails early.

Regressions: ``$CLAIM_VERIFIER_MODEL_DIR`` worked for the CLI but not for
``ClaimVerifier()`` (which demanded the default model id at the first call),
and a directory that could not serve the configured model failed only at the
first model call.
"""

from __future__ import annotations

import re
from pathlib import Path
from uuid import UUID

import pytest

from verifier import ClaimEvidence, ClaimVerificationConfig, ClaimVerificationError, ClaimVerifier, RuntimeOptions
from verifier.engine.manifest import read_manifest
from verifier.options import MODEL_DIR_ENV

EVIDENCE = [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The launch is Tuesday.")]


def test_the_environment_directory_names_the_model(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_DIR_ENV, str(tiny_model_dir))
    manifest = read_manifest(tiny_model_dir)
    verifier = ClaimVerifier()
    assert (verifier.config.model, verifier.config.revision) == (manifest.model, manifest.revision)
    assert verifier.runtime.model_dir == tiny_model_dir
    result = verifier.verify_sync("The launch is Tuesday.", EVIDENCE)
    assert (result.model, result.requested_revision, result.model_called) == (manifest.model, manifest.revision, True)


def test_other_decision_fields_are_kept(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_DIR_ENV, str(tiny_model_dir))
    verifier = ClaimVerifier(ClaimVerificationConfig(entailment_threshold=0.9, max_group_size=1))
    assert verifier.config.model == read_manifest(tiny_model_dir).model
    assert (verifier.config.entailment_threshold, verifier.config.max_group_size) == (0.9, 1)


def test_a_named_model_that_the_directory_does_not_hold_fails_at_construction(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_DIR_ENV, str(tiny_model_dir))
    manifest = read_manifest(tiny_model_dir)
    with pytest.raises(ClaimVerificationError, match=re.escape(f"holds {manifest.model!r} at revision {manifest.revision!r}, but the configuration names 'org/other' at 'r1'")):
        ClaimVerifier(ClaimVerificationConfig(model="org/other", revision="r1"))


def test_a_named_model_that_the_directory_holds_is_accepted(tiny_model_dir: Path) -> None:
    manifest = read_manifest(tiny_model_dir)
    config = ClaimVerificationConfig(model=manifest.model, revision=manifest.revision)
    verifier = ClaimVerifier(config, runtime=RuntimeOptions(model_dir=tiny_model_dir))
    assert verifier.verify_sync("The launch is Tuesday.", EVIDENCE).model == manifest.model


def test_an_unreadable_manifest_fails_at_construction(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(ClaimVerificationError, match=re.escape(f"{tmp_path / 'manifest.json'} is not a valid manifest: invalid JSON")):
        ClaimVerifier(runtime=RuntimeOptions(model_dir=tmp_path))


def test_a_missing_directory_still_serves_work_that_needs_no_model(tmp_path: Path) -> None:
    verifier = ClaimVerifier(runtime=RuntimeOptions(model_dir=tmp_path / "missing"))
    assert verifier.verify_sync("There are four concerns.", EVIDENCE, requires_complete_set=True).status.value == "incomplete"
    assert verifier.verify_sync("The launch is Tuesday.", []).status.value == "insufficient"
    with pytest.raises(ClaimVerificationError, match="does not exist"):
        verifier.verify_sync("The launch is Tuesday.", EVIDENCE)


def test_relative_directories_name_what_they_were_resolved_against(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: errors about relative paths did not show the directory they were resolved against."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m").write_text("x", encoding="utf-8")
    with pytest.raises(ClaimVerificationError, match=re.escape(f"model directory m (relative to {tmp_path}) is not a directory")):
        ClaimVerifier(runtime=RuntimeOptions(model_dir=Path("m")))

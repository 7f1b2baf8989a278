"""A real model copied onto an offline server: exported under its hub identity, to the default location.

Regression: ``python -m export --model /path/to/copied/model`` wrote
``models/<dir>-local`` and recorded the machine-local path as the model id,
so ``ClaimVerifier()`` and ``verify`` without ``--model-dir`` could never use
it. Now ``--model-id`` (with ``--revision``) names the copy; what can be
checked offline is checked, and the manifest records how the identity was
established. The copies here are the seeded tiny model (the identity rules
do not depend on the weights).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from verifier import DEFAULT_MODEL, DEFAULT_REVISION, ClaimEvidence, ClaimVerifier  # noqa: E402
from verifier.engine.manifest import read_manifest  # noqa: E402
from verifier_export.errors import ExportError  # noqa: E402
from verifier_export.existing import made_by  # noqa: E402
from verifier_export.identity import establish  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "verifier_export", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.slow
def test_a_copied_folder_becomes_the_default_model(tiny_source_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(tiny_source_dir, tmp_path / "copied" / "nli-deberta-v3-base"))
    work = tmp_path / "server"
    work.mkdir()
    proc = _run("--model", str(copy), "--model-id", DEFAULT_MODEL, "--revision", DEFAULT_REVISION, cwd=work)
    assert proc.returncode == 0, proc.stderr
    target = work / "models" / f"nli-deberta-v3-base-{DEFAULT_REVISION[:12]}"
    manifest = read_manifest(target)
    assert (manifest.model, manifest.requested_revision, manifest.resolved_revision) == (DEFAULT_MODEL, DEFAULT_REVISION, None)
    assert manifest.identity is not None and manifest.identity.established_by == "stated"
    config = (copy / "config.json").read_bytes()
    assert manifest.identity.source_files["config.json"].sha256 == hashlib.sha256(config).hexdigest()
    # the last line names the command that uses it: no --model-dir, it is the default location;
    # no examples/claims.jsonl here (not a checkout), so a one-off claim
    suggested = proc.stderr.splitlines()[-1]  # issue 34: messages on stderr
    assert suggested.endswith("-m verifier verify --claim 'The launch is on Tuesday.' --evidence 'The launch moved to Wednesday.'")
    ran = subprocess.run(shlex.split(suggested.removeprefix("next: ")), cwd=work, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and "The launch is on Tuesday." in ran.stdout, ran.stderr

    # ClaimVerifier() with no argument, from that directory, uses it
    here = Path.cwd()
    try:
        os.chdir(work)
        verifier = ClaimVerifier()
        result = verifier.verify_sync("The launch is Tuesday.", [ClaimEvidence(reference="m1", memory_id="00000000-0000-0000-0000-000000000001", text="The launch is Tuesday.")])
    finally:
        os.chdir(here)
    assert (result.model, result.requested_revision, result.model_called) == (DEFAULT_MODEL, DEFAULT_REVISION, True)
    # Issue 26: an identity the user only stated was never resolved, so no result claims a resolved revision,
    # and `info` says how the identity was established.
    assert result.resolved_revision is None
    info = subprocess.run([sys.executable, "-m", "verifier", "info"], cwd=work, capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    assert f"identity            {DEFAULT_MODEL}@{DEFAULT_REVISION}: stated (the user's word; no commit was checked);" in info.stdout
    assert "resolved revision   none resolved (results record none)" in info.stdout

    # and so does the command line, without --model-dir
    rows = work / "claims.jsonl"
    rows.write_text(json.dumps({"claim": "x y", "evidence": [{"reference": "m1", "memory_id": "00000000-0000-0000-0000-000000000002", "text": "x y"}]}) + "\n")
    verify = subprocess.run([sys.executable, "-m", "verifier", "verify", str(rows), "-q"], cwd=work, capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stderr
    assert json.loads(verify.stdout)["model"] == DEFAULT_MODEL


def test_a_plain_folder_needs_a_revision(tiny_source_dir: Path) -> None:
    with pytest.raises(ExportError, match="--revision is required for a plain folder"):
        establish(tiny_source_dir, DEFAULT_MODEL, None)


def _snapshot(tmp_path: Path, source: Path, repo: str) -> Path:
    repo_dir = tmp_path / "hub" / f"models--{repo.replace('/', '--')}"
    snapshot = Path(shutil.copytree(source, repo_dir / "snapshots" / COMMIT))
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(COMMIT, encoding="utf-8")
    return snapshot


def test_a_cache_snapshot_is_checked_against_its_path(tiny_source_dir: Path, tmp_path: Path) -> None:
    snapshot = _snapshot(tmp_path, tiny_source_dir, "org/tiny-nli")
    found = establish(snapshot, "org/tiny-nli", None)
    assert (found.revision, found.resolved, found.record.established_by) == (COMMIT, COMMIT, "hf-cache-snapshot")
    assert establish(snapshot, "org/tiny-nli", "main").resolved == COMMIT  # a ref naming that commit
    with pytest.raises(ExportError, match="a cache snapshot of org/tiny-nli, not org/other"):
        establish(snapshot, "org/other", None)
    with pytest.raises(ExportError, match=f"the cache snapshot is commit {COMMIT}, not --revision {'f' * 40}"):
        establish(snapshot, "org/tiny-nli", "f" * 40)


@pytest.mark.slow
def test_a_hub_id_read_offline_from_the_cache_is_not_recorded_as_a_download(tiny_source_dir: Path, tmp_path: Path) -> None:
    """Regression: with ``HF_HUB_OFFLINE=1`` huggingface_hub reads its cache and asks the hub nothing, yet the
    manifest said ``hub-download`` ("downloaded from the Hugging Face hub"); the same bytes given as the
    snapshot folder said ``hf-cache-snapshot``. One set of bytes, one provenance."""
    _snapshot(tmp_path / "home", tiny_source_dir, "org/tiny-nli")
    out = tmp_path / "out"
    env = {**os.environ, "HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "verifier_export", "--model", "org/tiny-nli", "--revision", COMMIT, "--output", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    manifest = read_manifest(out)
    assert (manifest.source, manifest.resolved_revision) == ("hub", COMMIT)
    assert manifest.identity is not None and manifest.identity.established_by == "hf-cache-snapshot"
    assert manifest.identity.detail.startswith("HF_HUB_OFFLINE: huggingface_hub read org/tiny-nli at ")
    assert "nothing downloaded" in manifest.identity.detail
    assert made_by(manifest) == "a hub id read offline from the Hugging Face cache (HF_HUB_OFFLINE; commit read from its path)"


def test_local_dir_metadata_is_checked_against_the_files(tiny_source_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(tiny_source_dir, tmp_path / "local"))
    weights = next(name for name in ("model.safetensors", "pytorch_model.bin") if (copy / name).exists())
    meta = copy / ".cache" / "huggingface" / "download"
    meta.mkdir(parents=True)
    digest = hashlib.sha256((copy / weights).read_bytes()).hexdigest()
    (meta / f"{weights}.metadata").write_text(f"{COMMIT}\n{digest}\n1700000000.0\n", encoding="utf-8")
    (meta / "config.json.metadata").write_text(f"{COMMIT}\nabc123\n1700000000.0\n", encoding="utf-8")
    found = establish(copy, "org/tiny-nli", COMMIT)
    assert (found.resolved, found.record.established_by) == (COMMIT, "hf-local-dir-metadata")
    assert weights in found.record.detail
    (meta / f"{weights}.metadata").write_text(f"{COMMIT}\n{'0' * 64}\n1700000000.0\n", encoding="utf-8")
    with pytest.raises(ExportError, match=f"{weights} has sha256 {digest}, but the hub recorded {'0' * 64}"):
        establish(copy, "org/tiny-nli", COMMIT)
    with pytest.raises(ExportError, match=f"downloaded at commit {COMMIT}, not --revision {'f' * 40}"):
        establish(copy, "org/tiny-nli", "f" * 40)


def test_model_id_needs_a_local_folder(tmp_path: Path) -> None:
    proc = _run("--model", "org/hub-model", "--revision", COMMIT, "--model-id", "org/x", "--output", str(tmp_path / "m"), cwd=tmp_path)
    assert proc.returncode == 1
    assert "--model-id org/x: names the hub id of a local copy" in proc.stderr

"""Re-running the exporter over a directory that verifies is a no-op, whatever route made it.

Regression: after ``python -m export --model <copied folder> --model-id
cross-encoder/nli-deberta-v3-base --revision <commit>``, the README's first
command (``python -m export``, also with ``HF_HUB_OFFLINE=1`` or
``--variants optimized int8``) exited 1 with "already holds an export of
cross-encoder/nli-deberta-v3-base@6c749ce…, not
cross-encoder/nli-deberta-v3-base@6c749ce…" -- the same identity named twice
as different, because the route (``local`` against ``hub``) was compared
instead of the identity. A real difference is named as one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from verifier import DEFAULT_MODEL, DEFAULT_REVISION  # noqa: E402
from verifier.engine.manifest import read_manifest  # noqa: E402
from verifier_export.errors import ExportError  # noqa: E402
from verifier_export.pipeline import export_model  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
DEFAULT_DIR = f"nli-deberta-v3-base-{DEFAULT_REVISION[:12]}"


def _export_cli(*args: str, cwd: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "CLAIM_VERIFIER_DATA_DIR": str(data_dir)}
    env.pop("CLAIM_VERIFIER_MODEL_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "verifier_export", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def copied_export(tiny_source_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory whose ``models/`` holds the default model, exported from a copied folder."""
    work = tmp_path_factory.mktemp("server")
    copy = Path(shutil.copytree(tiny_source_dir, work / "copied" / "nli-deberta-v3-base"))
    report = export_model(
        str(copy), model_id=DEFAULT_MODEL, revision=DEFAULT_REVISION, output=work / "models" / DEFAULT_DIR
    )
    assert report.status == "exported"
    return work


def test_the_readme_commands_rerun_over_a_copied_folder_export_are_no_ops(
    copied_export: Path, tmp_path: Path
) -> None:
    target = copied_export / "models" / DEFAULT_DIR
    before = {path.name: path.stat().st_mtime_ns for path in target.iterdir()}
    # the tiny random model's int8 misses the default gate; a wider one lets it through (the gate is not the subject)
    loose = ("--int8-max-logit-diff", "10", "--int8-max-prob-diff", "1", "--int8-min-argmax-agreement", "0")
    for args in ((), ("--variants", "optimized", "int8", *loose)):
        proc = _export_cli(*args, cwd=copied_export, data_dir=tmp_path / "data")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""  # issue 34: messages on stderr
        verified = next(line for line in proc.stderr.splitlines() if line.startswith("verified existing export"))
        assert verified.startswith(
            f"verified existing export models/{DEFAULT_DIR} ({DEFAULT_MODEL}@{DEFAULT_REVISION}, "
            "from a copied folder, identity stated with --model-id (unchecked)): files match "
        )
        assert verified.endswith("; nothing to do")
        assert proc.stderr.splitlines()[-1].endswith("-m verifier verify --claim 'The launch is on Tuesday.' --evidence 'The launch moved to Wednesday.'")
    # the first run changed nothing; the second added only the variants
    after = {path.name: path.stat().st_mtime_ns for path in target.iterdir()}
    assert {name: after[name] for name in before if name != "manifest.json"} == {
        name: stamp for name, stamp in before.items() if name != "manifest.json"
    }
    assert set(after) - set(before) == {"model.optimized.onnx", "model.int8.onnx"}


def test_the_hub_route_over_a_copied_folder_export_is_verified_in_process(copied_export: Path) -> None:
    target = copied_export / "models" / DEFAULT_DIR
    report = export_model(DEFAULT_MODEL, output=target)
    assert (report.status, report.manifest.model, report.manifest.requested_revision) == (
        "verified", DEFAULT_MODEL, DEFAULT_REVISION
    )


def test_a_cache_snapshot_export_is_found_done_by_the_hub_route(tiny_source_dir: Path, tmp_path: Path) -> None:
    snapshot = Path(shutil.copytree(tiny_source_dir, tmp_path / "hub" / "models--org--tiny-nli" / "snapshots" / COMMIT))
    target = tmp_path / "models" / "tiny-nli"
    first = export_model(str(snapshot), model_id="org/tiny-nli", output=target)
    assert (first.status, first.manifest.identity and first.manifest.identity.established_by) == (
        "exported", "hf-cache-snapshot"
    )
    again = export_model("org/tiny-nli", revision=COMMIT, output=target)
    assert again.status == "verified"
    line = again.summary_lines()[1]
    assert f"(org/tiny-nli@{COMMIT}, from a Hugging Face cache snapshot (repository and commit read from its path))" in line


def test_a_real_difference_is_named(copied_export: Path) -> None:
    target = copied_export / "models" / DEFAULT_DIR
    held = f"already holds an export of {DEFAULT_MODEL}@{DEFAULT_REVISION} (from a copied folder, identity stated with --model-id (unchecked))"
    with pytest.raises(ExportError) as other_revision:
        export_model(DEFAULT_MODEL, revision="f" * 40, output=target)
    assert str(other_revision.value) == (
        f"--output {target}: {held}, which differs from this request in revision: it holds {DEFAULT_REVISION}, "
        f"this run asks for {'f' * 40}; choose another --output"
    )
    with pytest.raises(ExportError) as other_model:
        export_model("org/other-nli", revision=DEFAULT_REVISION, output=target)
    assert str(other_model.value) == (
        f"--output {target}: {held}, which differs from this request in model: it holds {DEFAULT_MODEL}, "
        "this run asks for org/other-nli; choose another --output"
    )
    assert read_manifest(target).model == DEFAULT_MODEL


def test_a_smoke_export_is_not_the_real_model(tmp_path: Path) -> None:
    from verifier_export.existing import identity_differences
    from verifier_export.pipeline import SMOKE_MODEL

    from verifier.engine.manifest import Manifest

    smoke = Manifest.model_construct(model=SMOKE_MODEL, source="smoke", requested_revision="seed0",
                                     resolved_revision=None, identity=None)
    assert identity_differences(smoke, model=SMOKE_MODEL, kind="smoke", revision="seed0") == []
    assert identity_differences(smoke, model=DEFAULT_MODEL, kind="hub", revision=DEFAULT_REVISION) == [
        f"model: it holds {SMOKE_MODEL}, this run asks for {DEFAULT_MODEL}",
        f"revision: it holds seed0, this run asks for {DEFAULT_REVISION}",
        "source: it holds the seeded smoke model (random weights), this run asks for a hub export",
    ]

"""Writing and verifying ``manifest.json``, and publishing an export atomically.

An export is written into a staging directory beside the target
(``.<name>.partial-XXXXXX``) and renamed into place only after the parity gate
passed and ``manifest.json`` was written last, so the target either does not
exist or is a complete, verified export. On any failure the staging directory
(and any parent directories this run created) are removed.

The manifest schema itself lives in :mod:`verifier.manifest`, shared with the
runtime.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import secrets
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Iterator, Sequence

from pydantic import ValidationError

from verifier.manifest import (
    MANIFEST_NAME,
    NLI_LABELS,
    FileRecord,
    Manifest,
    read_manifest,
    sha256_file,
    verify_files,
)

from .errors import ExportError, ManifestError

__all__ = [
    "REQUIRED_FILES",
    "VERSIONED_PACKAGES",
    "collect_versions",
    "file_records",
    "write_manifest",
    "verify_export_dir",
    "staging_dir",
    "publish",
    "utc_now",
]

#: Files every export directory has and its manifest records (DESIGN.md).
REQUIRED_FILES: tuple[str, ...] = ("model.onnx", "tokenizer.json", "config.json", "golden.json")

#: Distributions whose versions the manifest records (PyPI names).
VERSIONED_PACKAGES: tuple[str, ...] = (
    "torch",
    "transformers",
    "optimum-onnx",
    "optimum",
    "onnxruntime",
    "onnx",
    "tokenizers",
    "huggingface-hub",
)


def collect_versions(packages: Sequence[str] = VERSIONED_PACKAGES) -> dict[str, str]:
    """Installed versions of ``packages`` plus ``python`` (missing ones are recorded as ``"absent"``)."""
    versions = {"python": sys.version.split()[0]}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def utc_now() -> str:
    """The current UTC time as ISO 8601 with seconds (``2026-11-29T10:00:00+00:00``)."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def file_records(directory: Path, names: Sequence[str]) -> dict[str, FileRecord]:
    """sha256 and size of each named file of ``directory``.

    Raises:
        ExportError: a named file is missing.
    """
    records: dict[str, FileRecord] = {}
    for name in names:
        path = Path(directory) / name
        if not path.is_file():
            raise ExportError(f"{path}: expected export file is missing")
        records[name] = FileRecord(sha256=sha256_file(path), size=path.stat().st_size)
    return records


def write_manifest(directory: Path, manifest: Manifest) -> Path:
    """Write ``manifest.json`` (indented JSON, written to a temp file then renamed).

    Returns:
        The manifest path.
    """
    path = Path(directory) / MANIFEST_NAME
    temporary = path.with_name(MANIFEST_NAME + ".tmp")
    temporary.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
    return path


def verify_export_dir(directory: Path) -> Manifest:
    """Check an export directory against its manifest (files, labels, parity verdict).

    Args:
        directory: an exported model directory.

    Returns:
        The parsed :class:`~verifier.manifest.Manifest`.

    Raises:
        ManifestError: no or malformed ``manifest.json``; a required file is not
            recorded; a recorded file is missing or differs in size or sha256;
            the label set is not exactly contradiction/entailment/neutral; or
            the recorded parity did not pass.
    """
    directory = Path(directory)
    try:
        manifest = read_manifest(directory)
    except FileNotFoundError as exc:
        raise ManifestError(f"{directory}: no {MANIFEST_NAME} (not a finished export)") from exc
    except (OSError, ValueError, ValidationError) as exc:
        reason = " ".join(str(exc).split())
        raise ManifestError(f"{directory / MANIFEST_NAME}: malformed: {reason}") from exc
    unrecorded = [name for name in (*REQUIRED_FILES, manifest.model_file) if name not in manifest.files]
    if unrecorded:
        raise ManifestError(f"{directory / MANIFEST_NAME}: does not record {', '.join(sorted(set(unrecorded)))}")
    problems = verify_files(directory, manifest)
    if problems:
        raise ManifestError(f"{directory}: files do not match {MANIFEST_NAME}: {'; '.join(problems)}")
    if len(manifest.labels) != len(NLI_LABELS) or set(manifest.labels) != NLI_LABELS:
        raise ManifestError(f"{directory / MANIFEST_NAME}: labels {list(manifest.labels)} are not the NLI set")
    if not manifest.parity.passed:
        raise ManifestError(f"{directory / MANIFEST_NAME}: records a failed parity gate")
    return manifest


def _missing_ancestors(path: Path) -> list[Path]:
    """Ancestors of ``path`` that do not exist yet, nearest first."""
    missing: list[Path] = []
    current = path.parent
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    return missing


@contextlib.contextmanager
def staging_dir(target: Path) -> Iterator[Path]:
    """Create a staging directory beside ``target``; remove it (and parents this created) on failure.

    On normal exit the staging directory is removed if it still exists (it
    does not once :func:`publish` renamed it); parents created for it stay.

    Raises:
        ExportError: the parent of ``target`` cannot be created or written.
    """
    target = Path(target)
    created = _missing_ancestors(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = _make_staging(target)
    except OSError as exc:
        _remove_empty(created)
        reason = exc.strerror or " ".join(str(exc).split())
        raise ExportError(f"--output {target}: cannot write to {target.parent}: {reason}") from exc
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise
    shutil.rmtree(staging, ignore_errors=True)


def _make_staging(target: Path) -> Path:
    # Not tempfile.mkdtemp: its 0700 mode would survive the rename into place;
    # mkdir applies the umask like any other directory.
    for _ in range(100):
        staging = target.parent / f".{target.name}.partial-{secrets.token_hex(6)}"
        try:
            staging.mkdir()
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        return staging
    raise FileExistsError(f"could not create a staging directory beside {target}")  # pragma: no cover


def _remove_empty(directories: list[Path]) -> None:
    for directory in directories:  # nearest first
        try:
            directory.rmdir()
        except OSError:
            return


def publish(staging: Path, target: Path) -> Path:
    """Move a finished staging directory into place as ``target`` (one rename).

    ``target`` must not exist, or be an empty directory.

    Raises:
        ExportError: the rename failed (e.g. ``target`` appeared meanwhile).
    """
    target = Path(target)
    try:
        os.replace(staging, target)
    except OSError as exc:
        reason = exc.strerror or " ".join(str(exc).split())
        raise ExportError(f"--output {target}: could not move the export into place: {reason}") from exc
    return target

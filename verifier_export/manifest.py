"""Writing and verifying ``manifest.json``, and publishing an export atomically.

:func:`verify_export_dir` checks an existing directory with the runtime's own
code (:meth:`verifier.engine.model_directory.ModelDirectory.open`) plus the checks
only an exporter makes. An export is written into a staging directory beside the target
(``.<name>.partial-XXXXXX``) and renamed into place only after the parity gate
passed and ``manifest.json`` was written last, so the target either does not
exist or is a complete, verified export. On any failure the staging directory
(and any parent directories this run created) are removed.

The manifest schema itself lives in :mod:`verifier.engine.manifest`, shared with the
runtime; the directory format is docs/model-directory.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Iterator, Sequence

from pydantic import ValidationError

from verifier.engine.manifest import (
    MANIFEST_NAME,
    REQUIRED_FILES,
    FileRecord,
    Manifest,
    sha256_file,
)
from verifier.engine.model_directory import ModelDirectory
from verifier.options import POINTER_FORMAT, pointer_path
from verifier.types import ClaimVerificationError
from verifier.validation import describe_validation_error

from .errors import ExportError, ManifestError

__all__ = [
    "VERSIONED_PACKAGES",
    "collect_versions",
    "file_records",
    "write_manifest",
    "manifest_problem",
    "open_export_dir",
    "verify_export_dir",
    "staging_dir",
    "publish",
    "utc_now",
    "record_default",
]

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


#: The runtime's words for a directory whose files differ from its manifest
#: (:meth:`verifier.engine.model_directory.ModelDirectory.read_verified`).
_TAMPERED = "model directory {directory} does not match its manifest (tampered or incomplete; re-export it)"


def manifest_problem(exc: ValidationError) -> str:
    """A pydantic error on ``manifest.json`` in a few words, without pydantic's input dump or link.

    ``field X: message, and N more errors`` (wording of
    :func:`verifier.validation.describe_validation_error`).
    """
    where, message, count = describe_validation_error(exc)
    text = f"field {where}: {message}" if where else message
    if count > 1:
        text += f", and {count - 1} more error{'s' if count > 2 else ''}"
    return text


def _manifest_error(directory: Path, exc: ClaimVerificationError) -> ManifestError:
    """The runtime's refusal as a :class:`ManifestError`: its message, except that an unparsable
    manifest is worded in one line (:func:`manifest_problem`) instead of pydantic's dump."""
    path = directory / MANIFEST_NAME
    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        return ManifestError(f"{path} is not a valid manifest ({manifest_problem(cause)})")
    if isinstance(cause, OSError):
        return ManifestError(f"{path} cannot be read ({cause.strerror or cause})")
    return ManifestError(" ".join(str(exc).split()))


def open_export_dir(directory: Path) -> ModelDirectory:
    """Open an export directory as the runtime does, plus the exporter's own checks.

    The runtime's checks (:meth:`verifier.engine.model_directory.ModelDirectory.open`):
    the manifest parses and names only plain relative files; it records the
    files the runtime reads; the labels are exactly
    contradiction/entailment/neutral and agree with the hashed
    ``config.json``; the recorded parity gate passed. Then the exporter's:
    every recorded file matches its sha256 and size
    (:meth:`~verifier.engine.model_directory.ModelDirectory.verify_all`, not only the
    files a run reads), and every file of :data:`verifier.engine.manifest.REQUIRED_FILES`
    is recorded.

    Raises:
        ManifestError: any check failed (the runtime's message, on one line).
    """
    directory = Path(directory)
    try:
        opened = ModelDirectory.open(directory, kind=None)
    except ClaimVerificationError as exc:
        raise _manifest_error(directory, exc) from exc
    problems = opened.verify_all()
    if problems:
        raise ManifestError(f"{_TAMPERED.format(directory=directory)}: {'; '.join(problems)}")
    unrecorded = [name for name in REQUIRED_FILES if name not in opened.manifest.files]
    if unrecorded:
        raise ManifestError(f"{directory / MANIFEST_NAME}: does not record {', '.join(sorted(unrecorded))}")
    return opened


def verify_export_dir(directory: Path) -> Manifest:
    """Check an export directory against its manifest (:func:`open_export_dir`); return the manifest.

    Args:
        directory: an exported model directory.

    Returns:
        The verified :class:`~verifier.engine.manifest.Manifest`.

    Raises:
        ManifestError: as :func:`open_export_dir`.
    """
    return open_export_dir(directory).manifest


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


def record_default(model: str, revision: str, directory: Path) -> Path:
    """Record ``directory`` as this user's export of ``model`` at ``revision``; return the pointer file.

    The pointer (:func:`verifier.options.pointer_path`, under
    ``$CLAIM_VERIFIER_DATA_DIR`` or ``platformdirs.user_data_dir("onnx-claim-verifier")``)
    is what lets ``ClaimVerifier()`` and ``python -m verifier`` find the
    default export from any working directory
    (:meth:`verifier.options.RuntimeOptions.resolve_model_dir`). Written to a
    temporary file, then renamed.

    Raises:
        OSError: the data directory cannot be created or written.
    """
    path = pointer_path(model, revision)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "format": POINTER_FORMAT,
        "model": model,
        "revision": revision,
        "model_dir": str(Path(directory).resolve()),
        "recorded_at": utc_now(),
    }
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        temporary.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    return path

"""What the exporter does with a target directory that already exists.

:func:`check_target` is step 2 of :func:`verifier_export.pipeline.export_model`: an
absent or empty target is free to export into; a directory holding an export
is verified -- its files against the manifest with the runtime's own checks
(:func:`verifier_export.manifest.verify_export_dir`), then its golden outputs
re-scored with onnxruntime (:func:`verifier_export.recheck.verify_golden`) -- and must
hold the requested model, revision, opset and max length. Nothing here ever
writes: anything else is refused, and a broken or foreign directory's refusal
ends with :func:`redo_advice`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.engine.manifest import MANIFEST_NAME, Manifest

from .errors import ExportError, ManifestError
from .manifest import verify_export_dir
from .recheck import verify_golden
from .source import SourceKind

__all__ = ["ExistingExport", "holds_export", "check_target", "redo_advice"]


@dataclass(frozen=True)
class ExistingExport:
    """A target that already holds a good export of the requested model.

    Attributes:
        manifest: its verified manifest.
        max_abs_logit_diff: the largest |Δlogit| of onnxruntime against the
            recorded golden logits.
    """

    manifest: Manifest
    max_abs_logit_diff: float


def redo_advice(target: Path) -> str:
    """What to do about a target directory this tool refuses to touch.

    Example:
        >>> redo_advice(Path("models/m"))
        'delete models/m (or choose another --output) and export again'
    """
    return f"delete {target} (or choose another --output) and export again"


def holds_export(target: Path) -> bool:
    """Whether ``target`` is a directory with a ``manifest.json`` (a finished export, good or not)."""
    return (Path(target) / MANIFEST_NAME).is_file()


def _same_model(recorded: str, requested: str, *, local: bool) -> bool:
    if recorded == requested:
        return True
    if not local:
        return False
    try:
        return Path(recorded).expanduser().resolve() == Path(requested).expanduser().resolve()
    except OSError:  # pragma: no cover - unresolvable path
        return False


def check_target(
    target: Path,
    *,
    model: str,
    kind: SourceKind,
    revision: Optional[str],
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
) -> Optional[ExistingExport]:
    """Verify what is at ``target``; ``None`` when there is nothing (or an empty directory).

    Raises:
        ExportError: ``target`` is a file, a non-empty directory without a
            manifest, or an export of another model, revision, opset or max length.
        ManifestError: its manifest is unreadable or invalid, its files do not
            match it, or its golden outputs no longer reproduce (the message
            ends with :func:`redo_advice`).
    """
    if not target.exists() and not target.is_symlink():
        return None
    if not target.is_dir():
        raise ExportError(f"--output {target}: exists and is not a directory")
    if not (target / MANIFEST_NAME).exists():
        if any(target.iterdir()):
            raise ExportError(
                f"--output {target}: exists, is not empty and has no {MANIFEST_NAME}; refusing to overwrite; "
                f"{redo_advice(target)}"
            )
        return None
    try:
        manifest = verify_export_dir(target)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; {redo_advice(target)}") from exc
    wanted = f"{model}@{revision or 'unpinned'}"
    held = f"{manifest.model}@{manifest.requested_revision or 'unpinned'}"
    if (
        manifest.source != kind
        or not _same_model(manifest.model, model, local=kind == "local")
        or manifest.requested_revision != revision
    ):
        raise ExportError(f"--output {target}: already holds an export of {held}, not {wanted}; choose another --output")
    if opset is not None and manifest.opset != opset:
        raise ExportError(f"--output {target}: holds an opset {manifest.opset} export, not {opset}")
    if max_length is not None and manifest.max_length != max_length:
        raise ExportError(f"--output {target}: holds a max length {manifest.max_length} export, not {max_length}")
    try:
        max_diff = verify_golden(target, onnx_file=manifest.model_file, atol=atol, manifest=manifest)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; {redo_advice(target)}") from exc
    return ExistingExport(manifest=manifest, max_abs_logit_diff=max_diff)

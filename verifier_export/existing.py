"""What the exporter does with a target directory that already exists.

:func:`check_target` is step 2 of :func:`verifier_export.pipeline.export_model`: an
absent or empty target is free to export into; a directory holding an export
is verified -- its files against the manifest with the runtime's own checks
(:func:`verifier_export.manifest.verify_export_dir`), then its golden outputs
re-scored with onnxruntime (:func:`verifier_export.recheck.verify_golden`) -- and must
hold the requested model, revision, opset and max length. Nothing here ever
writes: anything else is refused, and a broken or foreign directory's refusal
ends with :func:`redo_advice`.

*The same model* means the same identity, whatever route made the directory:
a directory exported from the hub, from a Hugging Face cache, or from a copied
folder named with ``--model-id`` holds ``ORG/NAME`` at a revision, and a later
``python -m export`` for that model and revision (by any route) finds it done.
What differs is named (:func:`identity_differences`): the model id, the
revision, or smoke (random weights) against a real model.
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

__all__ = ["ExistingExport", "holds_export", "check_target", "redo_advice", "identity_differences", "made_by"]


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


def _held_revision(manifest: Manifest) -> str:
    requested = manifest.requested_revision or "unpinned"
    resolved = manifest.resolved_revision
    return requested if resolved is None or resolved == requested else f"{requested} (commit {resolved})"


def made_by(manifest: Manifest) -> str:
    """How the directory's identity was established, in words (for summaries and refusals).

    Example:
        >>> from verifier.engine.manifest import Manifest
        >>> made_by(Manifest.model_construct(source="hub", identity=None))
        'downloaded from the Hugging Face hub'
    """
    identity = manifest.identity
    if manifest.source == "smoke":
        return "the seeded smoke model (random weights)"
    if manifest.source == "hub":
        if identity is not None and identity.established_by == "hf-cache-snapshot":
            return "a hub id read offline from the Hugging Face cache (HF_HUB_OFFLINE; commit read from its path)"
        return "downloaded from the Hugging Face hub"
    if identity is None:
        return "from a local folder"
    return {
        "hf-cache-snapshot": "from a Hugging Face cache snapshot (repository and commit read from its path)",
        "hf-local-dir-metadata": "from a --local-dir download (commit and LFS sha256s checked)",
        "stated": "from a copied folder, identity stated with --model-id (unchecked)",
        "hub-download": "downloaded from the Hugging Face hub",
    }.get(identity.established_by, f"from a local folder ({identity.established_by})")


def identity_differences(manifest: Manifest, *, model: str, kind: SourceKind, revision: Optional[str]) -> list[str]:
    """What differs between the export in a directory and the one requested (empty: the same export).

    The route that made the directory (hub download, cache, copied folder
    with ``--model-id``) is not a difference: the same model id at the same
    revision is the same export. Smoke (random weights) against a real
    model is.

    Args:
        manifest: the directory's verified manifest.
        model: the requested model id (or local folder, for a local export without ``--model-id``).
        kind: the requested route: ``"hub"``, ``"local"`` or ``"smoke"``.
        revision: the requested revision (``None``: unpinned local export).

    Example:
        >>> from verifier.engine.manifest import Manifest
        >>> held = Manifest.model_construct(model="org/a", source="hub", requested_revision="r1",
        ...                                 resolved_revision=None, identity=None)
        >>> identity_differences(held, model="org/b", kind="hub", revision="r1")
        ['model: it holds org/a, this run asks for org/b']
    """
    differences: list[str] = []
    local_paths = kind == "local" and manifest.source == "local"
    if not _same_model(manifest.model, model, local=local_paths):
        differences.append(f"model: it holds {manifest.model}, this run asks for {model}")
    recorded = {manifest.requested_revision, manifest.resolved_revision} - {None}
    same_revision = revision in recorded if revision is not None else manifest.requested_revision is None
    if not same_revision:
        differences.append(f"revision: it holds {_held_revision(manifest)}, this run asks for {revision or 'unpinned'}")
    if (manifest.source == "smoke") != (kind == "smoke"):
        wanted = "the smoke model (random weights)" if kind == "smoke" else f"a {kind} export"
        differences.append(f"source: it holds {made_by(manifest)}, this run asks for {wanted}")
    return differences


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
    differences = identity_differences(manifest, model=model, kind=kind, revision=revision)
    if differences:
        held = f"{manifest.model}@{manifest.requested_revision or 'unpinned'}"
        raise ExportError(
            f"--output {target}: already holds an export of {held} ({made_by(manifest)}), which differs from "
            f"this request in {'; '.join(differences)}; choose another --output"
        )
    if opset is not None and manifest.opset != opset:
        raise ExportError(f"--output {target}: holds an opset {manifest.opset} export, not {opset}")
    if max_length is not None and manifest.max_length != max_length:
        raise ExportError(f"--output {target}: holds a max length {manifest.max_length} export, not {max_length}")
    try:
        max_diff = verify_golden(target, onnx_file=manifest.model_file, atol=atol, manifest=manifest)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; {redo_advice(target)}") from exc
    return ExistingExport(manifest=manifest, max_abs_logit_diff=max_diff)

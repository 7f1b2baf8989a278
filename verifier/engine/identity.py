"""Which model directory a verifier uses, and which model identity its results name.

The library (:class:`verifier.ClaimVerifier`) and the command line resolve
both the same way, here:

1. The directory is ``RuntimeOptions.model_dir``, else
   ``$CLAIM_VERIFIER_MODEL_DIR``, else ``models/<name>-<revision[:12]>`` for
   the configured model (relative to the working directory) when it exists,
   else the export recorded for this user in the per-user data directory
   (:meth:`verifier.options.RuntimeOptions.resolve_model_dir`).
2. If that directory has a manifest and the caller did not name a model or
   revision (``ClaimVerificationConfig`` fields left at their defaults, or
   ``--model``/``--revision`` not given), the configuration's ``model`` and
   ``revision`` become the manifest's (:attr:`verifier.engine.manifest.Manifest.revision`),
   so results name the model that actually runs.
3. If the caller did name them, the manifest must agree (model equal; the
   revision one of its requested revision, resolved commit or
   ``Manifest.revision``), checked now, before any work:
   :class:`~verifier.types.ClaimVerificationError` otherwise.
4. Without a manifest nothing is decided yet: work that needs no model
   (``requires_complete_set``, no evidence) still runs, and the first model
   call fails with the message saying how to create the directory.

The files themselves are verified when the model loads
(:meth:`verifier.engine.model_directory.ModelDirectory.open`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

from .manifest import MANIFEST_NAME, Manifest, kind_of, manifest_bytes, parse_manifest
from ..messages import describe_validation_error
from ..options import RuntimeOptions, describe_lookup
from ..types import ClaimVerificationConfig, ClaimVerificationError

__all__ = ["Resolved", "read_manifest_if_present", "resolve", "where"]


def where(path: Path) -> str:
    """``path``, plus the directory a relative path was resolved against (for messages).

    Example:
        >>> where(Path("/abs/models"))
        '/abs/models'
    """
    return str(path) if path.is_absolute() else f"{path} (relative to {Path.cwd()})"


def read_manifest_if_present(model_dir: Path) -> Optional[Manifest]:
    """The directory's manifest, or ``None`` when it has none.

    Raises:
        ClaimVerificationError: ``model_dir`` is a file, or the manifest is not
            a regular file, cannot be read, or is not a valid manifest (the
            message names the field, without pydantic's dump).
    """
    if model_dir.exists() and not model_dir.is_dir():
        raise ClaimVerificationError(f"model directory {where(model_dir)} is not a directory")
    path = model_dir / MANIFEST_NAME
    if not os.path.lexists(path):
        return None
    if not path.is_file():
        raise ClaimVerificationError(f"{where(path)} is {kind_of(path)}, not a regular file; re-export the model directory")
    try:
        return parse_manifest(manifest_bytes(model_dir))
    except ValidationError as exc:
        field, message, _ = describe_validation_error(exc)
        detail = f"field {field}: {message}" if field else message
        raise ClaimVerificationError(f"{where(path)} is not a valid manifest: {detail}") from exc
    except ValueError as exc:  # outside the directory, or a repeated key
        raise ClaimVerificationError(f"{where(path)} is not a valid manifest: {exc}") from exc
    except OSError as exc:
        raise ClaimVerificationError(f"cannot read {where(path)}: {exc.strerror or exc}") from exc


@dataclass(frozen=True)
class Resolved:
    """What :func:`resolve` decided.

    Attributes:
        config: the decision configuration, ``model``/``revision`` filled in
            from the manifest when the caller left them unset.
        runtime: the runtime options with ``model_dir`` pinned to the directory.
        manifest: the directory's manifest (``None`` when it has none yet).
        lookup: where the default lookup looked (:func:`verifier.options.describe_lookup`) when
            ``runtime`` named no directory and the one chosen does not exist; else ``""``.
    """

    config: ClaimVerificationConfig
    runtime: RuntimeOptions
    manifest: Optional[Manifest]
    lookup: str = ""


def resolve(config: Optional[ClaimVerificationConfig], runtime: RuntimeOptions) -> Resolved:
    """Resolve the model directory and the identity results will name (see the module docstring).

    Args:
        config: the caller's configuration; ``None``, or one whose ``model``
            and ``revision`` were not set explicitly, takes the manifest's.
        runtime: the runtime options (``model_dir``, or the environment).

    Raises:
        ClaimVerificationError: the manifest is unreadable, or names another
            model or revision than the caller asked for.
    """
    base = config if config is not None else ClaimVerificationConfig()
    explicit = config is not None and bool({"model", "revision"} & config.model_fields_set)
    model_dir = runtime.resolve_model_dir(base.model, base.revision)
    manifest = read_manifest_if_present(model_dir)
    pinned = runtime.model_copy(update={"model_dir": model_dir})
    if manifest is None:
        looked = runtime.model_dir is None and not model_dir.exists()
        return Resolved(base, pinned, None, describe_lookup(base.model, base.revision) if looked else "")
    if not explicit:
        named = ClaimVerificationConfig.model_validate(
            {**base.model_dump(), "model": manifest.model, "revision": manifest.revision}
        )
        return Resolved(named, pinned, manifest)
    recorded = {manifest.requested_revision, manifest.resolved_revision, manifest.revision} - {None}
    if manifest.model != base.model or base.revision not in recorded:
        raise ClaimVerificationError(
            f"model directory {where(model_dir)} holds {manifest.model!r} at revision {manifest.revision!r}, "
            f"but the configuration names {base.model!r} at {base.revision!r}; configure "
            f"ClaimVerificationConfig(model={manifest.model!r}, revision={manifest.revision!r}), leave model "
            f"and revision unset to use the directory's, or point model_dir at an export of {base.model!r}"
        )
    return Resolved(base, pinned, manifest)

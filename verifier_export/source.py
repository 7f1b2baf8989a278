"""Where the model to export comes from: ``--model``/``--revision`` resolved to a local directory.

* :func:`plan_source` decides, without touching the network, whether
  ``--model`` is a local directory or a hub id, and applies the one revision
  rule (:func:`hub_revision`): ``--revision`` is required with a hub id,
  except that the default model defaults to its pinned revision.
* :func:`resolve_source` then turns the plan into a local Hugging Face
  directory: a local path as is, a hub id through
  ``huggingface_hub.snapshot_download`` at exactly the pinned revision (its
  cache, ``HF_HOME`` and ``HF_HUB_OFFLINE`` honoured) with the resolved commit
  recorded. A failed download raises :class:`~verifier_export.errors.DownloadError`.

huggingface_hub is imported inside functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from verifier.engine.manifest import IdentityRecord
from verifier.types import DEFAULT_MODEL, DEFAULT_REVISION

from .errors import DownloadError, ExportError, one_line
from .identity import source_file_records

__all__ = [
    "HUB_ALLOW_PATTERNS",
    "SourceKind",
    "hub_offline",
    "ModelSource",
    "looks_like_hub_id",
    "hub_revision",
    "plan_source",
    "resolve_source",
]

#: Files fetched from the hub: configs, tokenizer files and safetensors weights
#: (``pytorch_model.bin`` is fetched only when a revision has no safetensors).
HUB_ALLOW_PATTERNS: tuple[str, ...] = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "spm.model",
    "sentencepiece.bpe.model",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
)

#: ``"hub"`` (downloaded), ``"local"`` (a directory on disk) or ``"smoke"`` (the seeded test model).
SourceKind = Literal["hub", "local", "smoke"]

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
# A hub repo id: "name" or "org/name" (huggingface_hub's validate_repo_id rules, simplified).
_HUB_ID_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]*/)?[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class ModelSource:
    """Where the model to export lives.

    Attributes:
        model: the hub id, or the local directory as given on the command line.
        path: local directory holding ``config.json``, weights and tokenizer files.
        kind: ``"hub"``, ``"local"`` or ``"smoke"``.
        requested_revision: ``--revision`` as given (``None`` for a local
            directory without one).
        resolved_revision: the 40-hex commit the files came from, when known
            (a hub snapshot, or a local directory inside a hub cache).
        identity: how the identity was established (recorded in the manifest;
            ``None`` for the seeded test model).
    """

    model: str
    path: Path
    kind: SourceKind
    requested_revision: Optional[str]
    resolved_revision: Optional[str]
    identity: Optional[IdentityRecord] = None


def looks_like_hub_id(model: str) -> bool:
    """Whether ``model`` is shaped like a hub repo id (``org/name`` or ``name``) and is no existing path."""
    if Path(model).expanduser().exists():
        return False
    return bool(_HUB_ID_RE.match(model)) and ".." not in model


def hub_revision(
    model: str,
    revision: Optional[str],
    *,
    default_model: str = DEFAULT_MODEL,
    default_revision: str = DEFAULT_REVISION,
) -> str:
    """The revision to download a hub id at: ``revision``, or the pinned one for the default model.

    Raises:
        ExportError: ``revision`` is ``None`` and ``model`` is not ``default_model``.

    Example:
        >>> hub_revision("someone/nli", "abc123")
        'abc123'
        >>> hub_revision(DEFAULT_MODEL, None) == DEFAULT_REVISION
        True
    """
    if revision is not None:
        return revision
    if model != default_model:
        # a name without "org/" is as likely a local folder that is not here (new-user trial: the message spoke only of hubs)
        local = "" if "/" in model else " (and there is no local directory of that name here)"
        raise ExportError(f"--model {model}: --revision is required with a hub id (pin a commit hash){local}")
    return default_revision


def plan_source(
    model: str,
    revision: Optional[str],
    *,
    default_model: str = DEFAULT_MODEL,
    default_revision: str = DEFAULT_REVISION,
) -> tuple[Literal["local", "hub"], Optional[str]]:
    """Classify ``--model`` and settle its revision, without downloading anything.

    Returns:
        ``("local", revision)`` for an existing path (the revision is recorded
        as given, possibly ``None``), or ``("hub", pinned)`` for a hub id with
        the revision of :func:`hub_revision`.

    Raises:
        ExportError: ``model`` is neither an existing path nor shaped like a hub
            id, or a hub id lacks ``--revision``.
    """
    if Path(model).expanduser().exists():
        return "local", revision
    if not looks_like_hub_id(model):
        raise ExportError(f"--model {model}: model directory not found")
    return "hub", hub_revision(model, revision, default_model=default_model, default_revision=default_revision)


def resolve_source(
    model: str,
    revision: Optional[str],
    *,
    default_model: str = DEFAULT_MODEL,
    default_revision: str = DEFAULT_REVISION,
) -> ModelSource:
    """Resolve ``--model``/``--revision`` to a local directory.

    An existing path is a local directory. Otherwise a string shaped like a
    hub id is downloaded with ``huggingface_hub.snapshot_download`` at the
    revision of :func:`plan_source`; only :data:`HUB_ALLOW_PATTERNS` are
    fetched, plus ``pytorch_model.bin`` when the snapshot has no safetensors.

    Args:
        model: hub id or local directory.
        revision: commit, tag or branch; recorded as the requested revision.
        default_model: the contract's default model id.
        default_revision: its pinned revision.

    Returns:
        The resolved :class:`ModelSource`.

    Raises:
        ExportError: the path is missing or not a Hugging Face model directory,
            or a hub id lacks ``--revision``.
        DownloadError: the download failed (offline without a cached snapshot,
            unknown repo or revision).
    """
    kind, revision = plan_source(model, revision, default_model=default_model, default_revision=default_revision)
    if kind == "local":
        local = Path(model).expanduser()
        if not local.is_dir():
            raise ExportError(f"--model {model}: not a directory")
        path = local.resolve()
        if not (path / "config.json").is_file():
            raise ExportError(f"--model {model}: not a Hugging Face model directory (no config.json)")
        resolved = path.name if path.parent.name == "snapshots" and _COMMIT_RE.match(path.name) else None
        return ModelSource(model=model, path=path, kind="local", requested_revision=revision, resolved_revision=resolved)
    assert revision is not None  # plan_source pins every hub id
    snapshot = _snapshot_download(model, revision, HUB_ALLOW_PATTERNS)
    if not (snapshot / "model.safetensors").is_file():
        snapshot = _snapshot_download(model, revision, ("pytorch_model.bin",))
    if not (snapshot / "config.json").is_file():
        raise ExportError(f"{model}@{revision}: the snapshot has no config.json ({snapshot})")
    resolved_commit = snapshot.name if _COMMIT_RE.match(snapshot.name) else None
    if _COMMIT_RE.match(revision) and resolved_commit is not None and resolved_commit != revision:
        raise ExportError(f"{model}@{revision}: the hub resolved a different commit {resolved_commit}")
    if _hub_offline():  # huggingface_hub read its cache and asked the hub nothing: say so
        record = IdentityRecord(
            claimed_model=model,
            claimed_revision=revision,
            established_by="hf-cache-snapshot",
            detail=(
                f"HF_HUB_OFFLINE: huggingface_hub read {model} at {revision} from its local cache, nothing "
                f"downloaded; Hugging Face cache snapshot at commit {resolved_commit or 'not recorded'} "
                "(repository and commit read from the path)"
            ),
            source_files=source_file_records(snapshot),
        )
    else:
        record = IdentityRecord(
            claimed_model=model,
            claimed_revision=revision,
            established_by="hub-download",
            detail=f"huggingface_hub snapshot_download of {model} at {revision}: commit {resolved_commit or 'not recorded'}",
            source_files=source_file_records(snapshot),
        )
    return ModelSource(
        model=model, path=snapshot, kind="hub", requested_revision=revision, resolved_revision=resolved_commit,
        identity=record,
    )


def _hub_offline() -> bool:
    """huggingface_hub's offline mode (``HF_HUB_OFFLINE``, read by the library when it is imported)."""
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - huggingface-hub is a runtime dependency
        return False
    return bool(constants.HF_HUB_OFFLINE)


def _cache_dir() -> str:
    """huggingface_hub's cache directory (``HF_HUB_CACHE``, else under ``HF_HOME``)."""
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - huggingface-hub is a runtime dependency
        return "the Hugging Face cache"
    return str(constants.HF_HUB_CACHE)


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is in force (huggingface_hub reads only its cache)."""
    return _hub_offline()


def _snapshot_download(model: str, revision: str, patterns: tuple[str, ...]) -> Path:
    """``huggingface_hub.snapshot_download`` of ``patterns`` at ``revision``.

    Raises:
        DownloadError: huggingface_hub failed (any of its many exception types).
    """
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - huggingface-hub is a runtime dependency
        raise ExportError("huggingface-hub is required to download hub models") from exc
    try:
        path = snapshot_download(repo_id=model, revision=revision, allow_patterns=list(patterns))
    except Exception as exc:  # huggingface_hub raises many types (HTTP, offline, validation)
        if _hub_offline():  # nothing was downloaded or tried: the cache lacks it (issue 34)
            raise DownloadError(
                f"--model {model}: no local directory of that name, and HF_HUB_OFFLINE is set, so huggingface_hub "
                f"only looked in its cache ({_cache_dir()}), which does not hold revision {revision}: {one_line(exc)}"
            ) from exc
        raise DownloadError(
            f"--model {model}: no local directory of that name, and downloading revision {revision} "
            f"from the Hugging Face hub failed: {one_line(exc)}"
        ) from exc
    return Path(path)

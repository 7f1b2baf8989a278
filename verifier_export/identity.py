"""The identity of a local copy of a hub model: what the user states, and what can be checked offline.

``python -m export --model DIR --model-id ORG/NAME [--revision COMMIT]``
exports a copied model folder under its hub identity, so the export lands in
the default location for that model (``models/<name>-<revision[:12]>``) and
``ClaimVerifier()`` and ``verify`` use it without ``--model-dir``. What is
checked depends on what the folder is (:func:`establish`):

* **a Hugging Face cache snapshot** (``.../models--ORG--NAME/snapshots/<commit>/``):
  the repository in the path must be ``--model-id`` and the commit in the
  path must be ``--revision`` (a commit, or a ref whose ``refs/<ref>`` file
  names that commit); without ``--revision`` the commit is taken from the path;
* **a ``huggingface-cli download --local-dir`` folder** (with
  ``.cache/huggingface/download/*.metadata``): every file's recorded commit
  must be ``--revision`` (or becomes it), and each LFS file's sha256 (its
  recorded etag) must match the file;
* **any other folder**: nothing can be checked offline; ``--revision`` is
  required and the identity is recorded as *stated*.

In every case the manifest records the claimed identity, how it was
established, and the sha256 of the folder's config, weights and tokenizer
files (:class:`verifier.engine.manifest.IdentityRecord`), so an auditor can compare
them with the digests the hub publishes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.engine.manifest import FileRecord, IdentityRecord, sha256_file

from .errors import ExportError

__all__ = ["SOURCE_FILES", "Established", "establish", "unnamed_local", "source_file_records"]

#: Files of a source folder whose digests the identity record keeps (when present).
SOURCE_FILES: tuple[str, ...] = (
    "config.json",
    "model.safetensors",
    "pytorch_model.bin",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "spm.model",
)

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CACHE_REPO = re.compile(r"^models--(.+)$")


@dataclass(frozen=True)
class Established:
    """The outcome of :func:`establish`.

    Attributes:
        revision: the revision the export records as requested.
        resolved: the commit the files are known to come from (``None`` when only stated).
        record: the identity record for the manifest.
    """

    revision: str
    resolved: Optional[str]
    record: IdentityRecord


def source_file_records(path: Path) -> dict[str, FileRecord]:
    """sha256 and size of each of :data:`SOURCE_FILES` present in ``path``."""
    return {
        name: FileRecord(sha256=sha256_file(path / name), size=(path / name).stat().st_size)
        for name in SOURCE_FILES
        if (path / name).is_file()
    }


def _cache_snapshot(path: Path) -> Optional[tuple[str, str, Path]]:
    """``(repo id, commit, repo folder)`` when ``path`` is ``models--ORG--NAME/snapshots/<commit>``."""
    if path.parent.name != "snapshots" or not _COMMIT.match(path.name):
        return None
    found = _CACHE_REPO.match(path.parent.parent.name)
    if found is None:
        return None
    return found.group(1).replace("--", "/"), path.name, path.parent.parent


def _local_dir_metadata(path: Path) -> dict[str, tuple[str, str]]:
    """``{file: (commit, etag)}`` from ``path/.cache/huggingface/download/*.metadata``."""
    root = path / ".cache" / "huggingface" / "download"
    found: dict[str, tuple[str, str]] = {}
    if not root.is_dir():
        return found
    for meta in sorted(root.rglob("*.metadata")):
        lines = meta.read_text(encoding="utf-8").splitlines()
        if len(lines) >= 2:
            found[meta.relative_to(root).as_posix()[: -len(".metadata")]] = (lines[0].strip(), lines[1].strip().strip('"'))
    return found


def establish(path: Path, model_id: str, revision: Optional[str]) -> Established:
    """Check what can be checked of a local copy's claimed identity (see the module docstring).

    Args:
        path: the local Hugging Face model folder (resolved).
        model_id: the hub id the user says it is (``--model-id``).
        revision: the revision the user says it is at (``--revision``), if given.

    Raises:
        ExportError: the folder contradicts the claim (another repository or
            commit in its cache path or metadata, an LFS file whose sha256 is
            not its recorded one), or nothing can be checked and ``--revision``
            is missing.
    """
    files = source_file_records(path)
    snapshot = _cache_snapshot(path)
    if snapshot is not None:
        repo, commit, repo_dir = snapshot
        if repo != model_id:
            raise ExportError(f"--model {path}: a cache snapshot of {repo}, not {model_id} (--model-id)")
        if revision is not None and revision != commit:
            ref = repo_dir / "refs" / revision
            named = ref.read_text(encoding="utf-8").strip() if ref.is_file() else None
            if named != commit:
                raise ExportError(
                    f"--model {path}: the cache snapshot is commit {commit}, not --revision {revision}"
                )
        chosen = revision if revision is not None else commit
        detail = f"Hugging Face cache snapshot of {repo} at commit {commit} (repository and commit read from the path)"
        return Established(chosen, commit, IdentityRecord(
            claimed_model=model_id, claimed_revision=chosen, established_by="hf-cache-snapshot",
            detail=detail, source_files=files,
        ))
    metadata = _local_dir_metadata(path)
    if metadata:
        commits = {commit for commit, _ in metadata.values()}
        if len(commits) != 1:
            raise ExportError(f"--model {path}: its download metadata names several commits: {sorted(commits)}")
        (commit,) = commits
        if revision is not None and revision != commit:
            raise ExportError(f"--model {path}: downloaded at commit {commit}, not --revision {revision}")
        checked = []
        for name, (_, etag) in sorted(metadata.items()):
            if _SHA256.match(etag) and (path / name).is_file():
                digest = files[name].sha256 if name in files else sha256_file(path / name)
                if digest != etag:
                    raise ExportError(f"--model {path}: {name} has sha256 {digest}, but the hub recorded {etag}")
                checked.append(name)
        chosen = revision if revision is not None else commit
        detail = (
            f"huggingface_hub --local-dir download metadata: commit {commit}; sha256 of "
            f"{', '.join(checked) or 'no LFS file'} matched the recorded etags"
        )
        return Established(chosen, commit, IdentityRecord(
            claimed_model=model_id, claimed_revision=chosen, established_by="hf-local-dir-metadata",
            detail=detail, source_files=files,
        ))
    if revision is None:
        raise ExportError(
            f"--model-id {model_id}: --revision is required for a plain folder (the commit your copy was taken at); "
            "nothing in it records one"
        )
    detail = (
        "stated by the user; a plain folder carries no hub metadata, so the identity is unchecked "
        "(compare source_files with the digests the hub publishes for that revision)"
    )
    return Established(revision, None, IdentityRecord(
        claimed_model=model_id, claimed_revision=revision, established_by="stated", detail=detail, source_files=files,
    ))


def unnamed_local(path: Path, model: str, revision: Optional[str], resolved: Optional[str]) -> IdentityRecord:
    """The identity record of a local folder exported without ``--model-id``: it is named by its path."""
    where = f"local folder {path}" + (f" (commit {resolved} from its cache path)" if resolved else "")
    return IdentityRecord(
        claimed_model=model,
        claimed_revision=revision,
        established_by="hf-cache-snapshot" if resolved else "stated",
        detail=f"{where}; give --model-id to name the hub model it is a copy of",
        source_files=source_file_records(path),
    )

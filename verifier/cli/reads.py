"""The files a command reads besides its input, so that no output of it may be one of them.

An output (``-o``, ``--row-map``, an ``assay`` report file, ``--register``,
``--score-cache`` and its key) that is the same file as one of these (the same
inode, through symlinks and hard links) would replace a private key, a model
file or an API key with results: :func:`verifier.cli.output.check_output_paths`
and :func:`verifier.cli.output.refuse_overlaps` refuse it (exit 2) before any work.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional

from ..engine.manifest import MANIFEST_NAME
from ..options import RuntimeOptions
from ..types import DEFAULT_MODEL, DEFAULT_REVISION
from .common import load_manifest
from .errors import Failure

__all__ = ["Read", "model_dir_reads", "key_reads", "command_reads"]

#: One file a command reads: how messages name it ("the --sign-key file") and its path.
Read = tuple[str, Path]


def model_dir_reads(model_dir: Path) -> list[Read]:
    """The model directory's manifest and every file it lists (variants and their sources too).

    An unreadable manifest lists only itself: the command stops on it later with its own message.
    """
    reads: list[Read] = [(f"the model directory's {MANIFEST_NAME}", model_dir / MANIFEST_NAME)]
    try:
        manifest = load_manifest(model_dir)
    except Failure:
        return reads
    if manifest is None:
        return reads
    names = set(manifest.files) | {manifest.model_file}
    for variant in manifest.variants.values():
        names.add(variant.file)
        if variant.source_file is not None:
            names.add(variant.source_file)
    reads.extend((f"the model directory's {name}", model_dir / name) for name in sorted(names))
    return reads


#: argparse destination -> the option that names a key (or other secret) file a command reads.
_KEY_OPTIONS = {
    "sign_key": "--sign-key",
    "public_key": "--public-key",
    "api_key_file": "--api-key-file",
    "registration": "--registration",
    "inputs": "--inputs",
}


def key_reads(args: argparse.Namespace) -> list[Read]:
    """The files named by the command's ``--sign-key``, ``--public-key``, ``--api-key-file``,
    ``--registration`` and ``--inputs`` (those it has and were given)."""
    reads: list[Read] = []
    for name, option in _KEY_OPTIONS.items():
        value: Optional[object] = getattr(args, name, None)
        if value is not None and str(value) != "-":
            reads.append((f"the {option} file", Path(str(value))))
    return reads


def command_reads(args: argparse.Namespace) -> list[Read]:
    """Every file the command reads besides INPUT and the score store: its keys (:func:`key_reads`) and, when it
    has ``--model-dir``, the model directory it resolves to (given, else the default) with its files."""
    reads = key_reads(args)
    if hasattr(args, "model_dir"):
        given = getattr(args, "model_dir", None)
        model_dir = RuntimeOptions(model_dir=Path(given) if given is not None else None).resolve_model_dir(
            getattr(args, "model", None) or DEFAULT_MODEL, getattr(args, "revision", None) or DEFAULT_REVISION
        )
        reads.extend(model_dir_reads(model_dir))
    return reads

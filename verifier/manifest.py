"""The ``manifest.json`` of an exported model directory (format: docs/model-directory.md).

Written by ``python -m export`` only after the golden parity gate passed;
read and enforced by :mod:`verifier.engine`. A directory without a valid
manifest, or whose files no longer match their recorded sha256 and size, is
never loadable.

This module is shared by the exporter and the runtime, so it imports nothing
heavy (no onnxruntime, no torch).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MANIFEST_NAME",
    "MANIFEST_FORMAT_VERSION",
    "CONFIG_NAME",
    "TOKENIZER_NAME",
    "RANDOM_WEIGHTS_CONFIG_KEY",
    "REQUIRED_FILES",
    "NLI_LABELS",
    "FileRecord",
    "ParityReport",
    "VariantRecord",
    "Manifest",
    "sha256_file",
    "read_manifest",
    "verify_files",
]

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT_VERSION: Literal[1] = 1
#: The Hugging Face config of the exported model (its ``id2label`` is the label order).
CONFIG_NAME = "config.json"
#: The runtime tokenizer (Hugging Face ``tokenizers`` format).
TOKENIZER_NAME = "tokenizer.json"
#: ``config.json`` key the seeded test-model builders set (``export/testmodels.py``): its
#: presence marks a random-weights model, whatever the manifest says.
RANDOM_WEIGHTS_CONFIG_KEY = "claim_verifier_random_weights"
#: Files every export directory has and its manifest records (docs/model-directory.md).
REQUIRED_FILES: tuple[str, ...] = ("model.onnx", TOKENIZER_NAME, CONFIG_NAME, "golden.json")
#: The exact label set a three-label NLI cross-encoder must have (any index order).
NLI_LABELS = frozenset({"contradiction", "entailment", "neutral"})

_FROZEN = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())


class FileRecord(BaseModel):
    """sha256 (lower-case hex) and size in bytes of one file of the model directory."""

    model_config = _FROZEN

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int = Field(ge=0)


class ParityReport(BaseModel):
    """Golden-output parity of an ONNX file against the PyTorch float32 logits.

    ``max_abs_logit_diff`` is the largest |Δlogit| over every golden pair,
    scored singly and in one padded batch; ``max_abs_prob_diff`` the same after
    softmax; ``argmax_agreement`` the fraction of pairs whose argmax agrees
    (1.0 required for the float32 model); ``token_ids_identical`` whether the
    exported ``tokenizer.json`` reproduced the transformers fast tokenizer's ids.
    """

    model_config = _FROZEN

    passed: bool
    pairs: int = Field(ge=1)
    atol: Optional[float] = None
    max_prob_diff_gate: Optional[float] = None
    max_abs_logit_diff: float
    max_abs_prob_diff: float
    argmax_agreement: float = Field(ge=0.0, le=1.0)
    token_ids_identical: bool


class VariantRecord(BaseModel):
    """An extra ONNX variant (e.g. offline-optimised or dynamic int8) in the directory."""

    model_config = _FROZEN

    file: str
    description: str
    parity: ParityReport


class Manifest(BaseModel):
    """Self-description of one exported model directory.

    ``labels`` is ``id2label`` in index order (logit column ``i`` is
    ``labels[i]``). ``inputs`` are the ONNX graph's input names in graph order.
    ``random_weights`` marks smoke/test models whose decisions mean nothing.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    format_version: Literal[1] = MANIFEST_FORMAT_VERSION
    model: str
    requested_revision: Optional[str] = None
    resolved_revision: Optional[str] = None
    source: Literal["hub", "local", "smoke"]
    random_weights: bool = False
    model_file: str = "model.onnx"
    files: dict[str, FileRecord]
    labels: tuple[str, ...]
    max_length: int = Field(ge=8)
    opset: int
    inputs: tuple[str, ...]
    pad_token_id: int = Field(ge=0)
    versions: dict[str, str]
    parity: ParityReport
    variants: dict[str, VariantRecord] = Field(default_factory=dict)
    created_at: str

    @property
    def revision(self) -> str:
        """The revision a decision configuration names for this directory.

        The requested revision, else the resolved commit, else — for a local
        export that records neither — ``"sha256:"`` plus the sha256 of the
        model file, so an audit record still pins exactly what ran.
        """
        if self.requested_revision:
            return self.requested_revision
        if self.resolved_revision:
            return self.resolved_revision
        record = self.files.get(self.model_file)
        return f"sha256:{record.sha256}" if record is not None else "unpinned"


def sha256_file(path: Path, *, chunk_size: int = 1 << 20) -> str:
    """Return the lower-case hex sha256 of a file, read in ``chunk_size``-byte chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(model_dir: Path) -> Manifest:
    """Parse ``model_dir/manifest.json``.

    Raises:
        FileNotFoundError: no manifest in ``model_dir``.
        pydantic.ValidationError: the manifest is malformed.
    """
    return Manifest.model_validate_json((Path(model_dir) / MANIFEST_NAME).read_bytes())


def verify_files(model_dir: Path, manifest: Manifest) -> list[str]:
    """Check every file recorded in the manifest; return readable problems (empty when all match)."""
    problems: list[str] = []
    for name, record in sorted(manifest.files.items()):
        path = Path(model_dir) / name
        if not path.is_file():
            problems.append(f"{name}: missing")
            continue
        size = path.stat().st_size
        if size != record.size:
            problems.append(f"{name}: size {size} != manifest {record.size}")
            continue
        digest = sha256_file(path)
        if digest != record.sha256:
            problems.append(f"{name}: sha256 {digest} != manifest {record.sha256}")
    return problems

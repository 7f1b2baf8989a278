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
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal, Optional

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_validator,
    model_serializer,
)

from .kinds import GroundingRecord, ModelKind

from ..strictjson import DuplicateKeyError
from ..strictjson import loads as strict_loads

__all__ = [
    "MANIFEST_NAME",
    "MANIFEST_FORMAT_VERSION",
    "CONFIG_NAME",
    "TOKENIZER_NAME",
    "RANDOM_WEIGHTS_CONFIG_KEY",
    "REQUIRED_FILES",
    "NLI_LABELS",
    "GroundingRecord",
    "FileRecord",
    "ParityReport",
    "VariantRecord",
    "IdentityRecord",
    "Manifest",
    "sha256_file",
    "check_file_name",
    "resolve_inside",
    "kind_of",
    "manifest_bytes",
    "parse_manifest",
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


def check_file_name(name: str) -> str:
    """Return ``name`` if it is a plain relative path inside a model directory.

    Refused: empty names, absolute paths, ``..`` or ``.`` components,
    backslashes, NUL and other control characters. (Symlinks are checked when
    a file is opened: :func:`resolve_inside`.)

    Raises:
        ValueError: the name could point outside the directory.
    """
    if not name or any(ord(char) < 32 for char in name) or "\\" in name:
        raise ValueError(f"file name {name!r} is not a plain relative path")
    if PurePosixPath(name).is_absolute() or any(part in ("..", ".", "") for part in name.split("/")):
        raise ValueError(f"file name {name!r} must be relative to the model directory, without '..'")
    return name


_FileName = Annotated[str, AfterValidator(check_file_name)]


def resolve_inside(model_dir: "str | os.PathLike[str]", name: str) -> Path:
    """The real path of ``model_dir/name``, refusing anything that resolves outside ``model_dir``.

    Symlinks are followed (in the name and in the directory itself); the result
    must lie inside the real path of ``model_dir``.

    Raises:
        ValueError: ``name`` is not a plain relative name (:func:`check_file_name`)
            or resolves outside the directory.
    """
    check_file_name(name)
    root = Path(os.path.realpath(model_dir))
    target = Path(os.path.realpath(root / name))
    if target != root and root not in target.parents:
        raise ValueError(f"{name} resolves to {target}, outside the model directory {root}")
    return target


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
    atol: Optional[float] = Field(default=None, gt=0.0, allow_inf_nan=False)
    max_prob_diff_gate: Optional[float] = Field(default=None, gt=0.0, allow_inf_nan=False)
    max_abs_logit_diff: float = Field(ge=0.0, allow_inf_nan=False)
    max_abs_prob_diff: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    argmax_agreement: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    token_ids_identical: bool
    #: The largest |Δprobability| between a golden pair scored alone and in the other padded batch
    #: layouts the exporter tries: the file's own run-to-run spread, which ``check --rescore`` holds a
    #: batched record of a non-float32 engine to (docs/audit.md). ``None`` in manifests written before it.
    run_prob_spread: Optional[float] = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)


class VariantRecord(BaseModel):
    """An extra variant (offline-optimised, dynamic int8, OpenVINO bf16) in the directory.

    Attributes:
        file: the file the runtime loads: an ONNX graph for onnxruntime variants, or
            OpenVINO's exported compiled model for ``runtime="openvino"``.
        description: how it was made, in words.
        parity: its golden parity report against the PyTorch float32 logits.
        runtime: the kernel library that runs it (``"onnxruntime"`` unless recorded).
        precision: OpenVINO's inference precision (``"bf16"``); ``None`` for onnxruntime.
        source_file: for ``runtime="openvino"``: the ONNX graph (hashed like every
            file) the runtime compiles when ``file`` cannot be used on this CPU.
        compiled_for: for ``runtime="openvino"``: the OpenVINO version and CPU
            capabilities ``file`` was compiled for
            (:func:`verifier.engine.ov_session.compiled_fingerprint`).
    """

    model_config = _FROZEN

    file: _FileName
    description: str
    parity: ParityReport
    runtime: Literal["onnxruntime", "openvino"] = "onnxruntime"
    precision: Optional[Literal["bf16", "f32"]] = None
    source_file: Optional[_FileName] = None
    compiled_for: Optional[dict[str, str]] = None


class IdentityRecord(BaseModel):
    """Which model and revision the exported weights are, as claimed, and how that was established.

    Attributes:
        claimed_model: the hub id the export names (``Manifest.model``).
        claimed_revision: the revision it names (``Manifest.requested_revision``).
        established_by: ``"hub-download"`` (downloaded at that revision by
            huggingface_hub, commit recorded), ``"hf-cache-snapshot"`` (a local
            copy inside a Hugging Face cache, or a hub id read from that cache with
            ``HF_HUB_OFFLINE=1``: repo and commit read from its path),
            ``"hf-local-dir-metadata"`` (a ``--local-dir`` download: the commit and
            LFS sha256s in its ``.cache/huggingface`` metadata checked against the
            files), or ``"stated"`` (a plain folder: the user's word only; the
            source files' digests are recorded so anyone can compare them with
            the hub's).
        detail: what was checked, in words.
        source_files: sha256 and size of the source directory's config, weights
            and tokenizer files, as exported.
    """

    model_config = _FROZEN

    claimed_model: str
    claimed_revision: Optional[str] = None
    established_by: Literal["hub-download", "hf-cache-snapshot", "hf-local-dir-metadata", "stated"]
    detail: str
    source_files: dict[_FileName, FileRecord] = Field(default_factory=dict)


class Manifest(BaseModel):
    """Self-description of one exported model directory.

    ``labels`` is ``id2label`` in index order (logit column ``i`` is
    ``labels[i]``). ``inputs`` are the ONNX graph's input names in graph order.
    ``random_weights`` marks smoke/test models whose decisions mean nothing.
    ``attention`` is how the exported graph computes attention (``span``:
    span-sliced relative attention; ``None`` in manifests written before it
    was recorded). ``kind`` is the model kind (:mod:`verifier.engine.kinds`):
    ``"nli"`` (the default, and every manifest written before kinds existed) or
    ``"grounding"``, whose ``grounding`` record says how a (document, claim) pair
    is read. An NLI manifest is written without either field, byte for byte as before.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    format_version: Literal[1] = MANIFEST_FORMAT_VERSION
    model: str
    requested_revision: Optional[str] = None
    resolved_revision: Optional[str] = None
    source: Literal["hub", "local", "smoke"]
    random_weights: bool = False
    model_file: _FileName = "model.onnx"
    files: dict[_FileName, FileRecord]
    labels: tuple[str, ...]
    max_length: int = Field(ge=8)
    opset: int
    inputs: tuple[str, ...]
    pad_token_id: int = Field(ge=0)
    versions: dict[str, str]
    parity: ParityReport
    variants: dict[str, VariantRecord] = Field(default_factory=dict)
    identity: Optional[IdentityRecord] = None
    attention: Optional[Literal["stock", "span"]] = None
    created_at: str
    kind: ModelKind = "nli"
    grounding: Optional[GroundingRecord] = None

    @model_serializer(mode="wrap")
    def _nli_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # An NLI manifest keeps its earlier bytes, so older readers (which refuse unknown fields) still read it.
        data: dict[str, object] = handler(self)
        if self.kind == "nli" and self.grounding is None:
            data.pop("kind", None)
            data.pop("grounding", None)
        return data

    @model_validator(mode="after")
    def _grounding_needs_its_kind(self) -> "Manifest":
        if (self.kind == "grounding") != (self.grounding is not None):
            raise ValueError("a grounding manifest needs its grounding record, and only a grounding manifest has one")
        return self

    @field_validator("format_version", mode="before")
    @classmethod
    def _an_integer(cls, value: object) -> object:
        # Literal[1] compares by ==, so JSON true and 1.0 would pass for format 1
        if type(value) is not int:
            raise ValueError(f"format_version must be the integer {MANIFEST_FORMAT_VERSION}")
        return value

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


#: Flags to open a model directory's file for reading: never blocking, so a FIFO put where a file
#: belongs is refused at once (``fstat``: not a regular file) instead of waiting for a writer forever.
READ_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def kind_of(path: "str | os.PathLike[str]") -> str:
    """What ``path`` is, in words for a message ("a FIFO", "a directory", "a broken symbolic link", ...)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    for test, words in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                        (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):  # fmt: skip
        if test(mode):
            return words
    return "not a regular file"


def read_regular(path: "str | os.PathLike[str]") -> bytes:
    """The bytes of ``path``, which must be a regular file (checked on the open descriptor).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: it is not a regular file (a FIFO, device, socket or directory).
        OSError: it cannot be read.
    """
    fd = os.open(path, READ_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
        return handle.read()


def manifest_bytes(model_dir: "str | os.PathLike[str]") -> bytes:
    """The bytes of ``model_dir/manifest.json``, which must resolve inside ``model_dir`` and repeat no JSON key.

    A manifest symlinked from elsewhere is refused like any other file that
    resolves outside the directory (:func:`resolve_inside`); an object that
    repeats a key is refused rather than read as its last value
    (:mod:`verifier.strictjson`).

    Raises:
        FileNotFoundError: no manifest in ``model_dir``.
        ValueError: the manifest resolves outside the directory, is not a regular file, or repeats a key.
        OSError: it cannot be read.
    """
    data = read_regular(resolve_inside(model_dir, MANIFEST_NAME))
    try:
        strict_loads(data)
    except DuplicateKeyError as exc:
        raise ValueError(f"{MANIFEST_NAME}: {exc}") from None
    except (ValueError, RecursionError):
        pass  # not JSON: the manifest's own parser words that
    return data


def parse_manifest(data: "bytes | str") -> Manifest:
    """A :class:`Manifest` from its JSON text, every value of its written JSON type.

    Strict (pydantic's strict mode): the exporter writes ``true``, ``12``, ``"..."``,
    so ``"true"``, ``1``, ``"12"`` for a boolean or a size are refused, not coerced
    (docs/model-directory.md).

    Raises:
        pydantic.ValidationError: malformed, or a value of another JSON type.
    """
    return Manifest.model_validate_json(data, strict=True)


def read_manifest(model_dir: Path) -> Manifest:
    """Parse ``model_dir/manifest.json`` (:func:`manifest_bytes`: inside the directory, no repeated key;
    :func:`parse_manifest`: strict).

    Raises:
        FileNotFoundError: no manifest in ``model_dir``.
        ValueError: the manifest resolves outside the directory or repeats a key;
            pydantic.ValidationError: the manifest is malformed.
    """
    return parse_manifest(manifest_bytes(model_dir))


def verify_files(model_dir: Path, manifest: Manifest) -> list[str]:
    """Check every file recorded in the manifest; return readable problems (empty when all match).

    A name that resolves outside ``model_dir`` (through a symlink) is a problem too.
    """
    problems: list[str] = []
    for name, record in sorted(manifest.files.items()):
        try:
            path = resolve_inside(model_dir, name)
        except ValueError as exc:
            problems.append(str(exc))
            continue
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

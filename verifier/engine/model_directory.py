"""Opening an exported model directory: the manifest, verified, and what it says to load.

:meth:`ModelDirectory.open` is the one place a model directory is checked
before use (the engine at load, the exporter when it re-verifies an existing
export, the variant builder): the manifest itself resolves inside the
directory (symlinks followed) and parses, repeating no key; every name in it is a
plain relative path; it lists every file the runtime reads (the chosen
variant's model file, ``tokenizer.json``, ``config.json``, ``golden.json``);
it names the model and revision the caller expects; the label set is
exactly contradiction / entailment / neutral, in the order of the hashed
``config.json``'s ``id2label``; the chosen variant passed its parity gate.

Files are verified *as they are read*: :meth:`ModelDirectory.read_verified`
reads a file's bytes once, checks size and sha256 against the manifest, and
returns those bytes, so what is used is exactly what was verified (the
engine hands the model's verified bytes to onnxruntime, never its path).
Only the files a run reads are hashed; :meth:`ModelDirectory.verify_all`
hashes every recorded file. What this does and does not protect against is
in docs/security.md; the format is in docs/model-directory.md.

No onnxruntime here: the engine builds the session from what this returns.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, Union

import numpy as np
from pydantic import ValidationError

from .directory_checks import (
    check_kind,
    check_config_labels,
    check_golden_settings,
    check_identity,
    check_labels,
    model_file_of,
    parse_config,
)
from .verified_buffer import checked_buffer
from .golden import GOLDEN_NAME, Golden, GoldenFormatError, parse_golden
from .manifest import (
    CONFIG_NAME,
    MANIFEST_NAME,
    RANDOM_WEIGHTS_CONFIG_KEY,
    READ_FLAGS,
    TOKENIZER_NAME,
    FileRecord,
    Manifest,
    ParityReport,
    VariantRecord,
    kind_of,
    manifest_bytes,
    parse_manifest,
    resolve_inside,
    verify_files,
)
from ..messages import one_line
from ..types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Tokenizer  # type: ignore[import-untyped,unused-ignore]

__all__ = ["OUTPUT_LABELS", "ModelDirectory", "create_hint"]

#: Column order of every scorer's output: probabilities are always reported as
#: (entailment, contradiction, neutral) (docs/decision.md).
OUTPUT_LABELS: tuple[str, str, str] = ("entailment", "contradiction", "neutral")


def _permutation(manifest: Manifest) -> np.ndarray:
    """int64 column order to :data:`OUTPUT_LABELS` (NLI); a grounding model's columns stay as recorded."""
    if manifest.grounding is not None:
        return np.arange(len(manifest.labels), dtype=np.int64)
    return np.array([manifest.labels.index(label) for label in OUTPUT_LABELS], dtype=np.int64)


def create_hint(expected_model: Optional[str], expected_revision: Optional[str], model_dir: Path) -> str:
    """How to create a model directory, for 'missing' errors."""
    from ..messages import SMOKE_DIR, export_command
    from ..options import default_model_dir
    from ..types import DEFAULT_MODEL, DEFAULT_REVISION

    model = expected_model or "<hub id>"
    revision = expected_revision or "<revision>"
    export = export_command()
    if expected_model and expected_revision and model_dir == default_model_dir(expected_model, expected_revision):
        # the default location: an export without --output lands there and records this user's
        # copy, which ClaimVerifier() then finds from any working directory; one with --output does not
        named = "" if (expected_model, expected_revision) == (DEFAULT_MODEL, DEFAULT_REVISION) else f" --model {model} --revision {revision}"
        create = f"create it once with `{export}{named}` (it also records this user's copy, found from any directory)"
    else:
        create = f"create it with `{export} --model {model} --revision {revision} --output {model_dir}`"
    hint = f"{create}, or load an existing export with ClaimVerifier.from_model_dir(<dir>) / $CLAIM_VERIFIER_MODEL_DIR"
    if (SMOKE_DIR / MANIFEST_NAME).is_file() and model_dir.resolve() != SMOKE_DIR.resolve():
        # `export --smoke` already ran in this directory: name what it wrote instead of asking for it again
        return (
            f"{hint}; the random-weights smoke export is here: ClaimVerifier.from_model_dir({str(SMOKE_DIR)!r}) "
            f"(plumbing only: meaningless decisions)"
        )
    return f"{hint} (offline: `{export} --smoke` writes a random-weights plumbing model)"


def parity_misses(parity: "ParityReport", *, float32: bool) -> list[str]:
    """How a recorded parity report's own figures miss its recorded gate (empty: they meet it).

    The gate (docs/model-directory.md): identical token ids, max |Δlogit| within
    ``atol`` and max |Δprob| within ``max_prob_diff_gate`` where recorded, and
    for the float32 model every argmax equal. A report saying ``passed`` over
    figures that miss it was edited, and is refused like a failed one.
    """
    found = []
    if not parity.token_ids_identical:
        found.append("the token ids were not identical")
    if parity.atol is not None and not parity.max_abs_logit_diff <= parity.atol:
        found.append(f"max |Δlogit| {parity.max_abs_logit_diff:.3g} > atol {parity.atol:g}")
    if parity.max_prob_diff_gate is not None and not parity.max_abs_prob_diff <= parity.max_prob_diff_gate:
        found.append(f"max |Δprob| {parity.max_abs_prob_diff:.3g} > {parity.max_prob_diff_gate:g}")
    if float32 and parity.argmax_agreement != 1.0:
        found.append(f"argmax agreement {parity.argmax_agreement:.1%} < 100%")
    return found


@dataclass(frozen=True)
class ModelDirectory:
    """A verified exported model directory and the variant chosen from it.

    Attributes:
        path: the directory.
        manifest: its verified manifest.
        variant: the chosen variant (``None``: the manifest's float32 ``model_file``).
        model_file: the ONNX file of that variant, relative to ``path``.
        permutation: int64 (3,): model logit column of each of :data:`OUTPUT_LABELS`.
        random_weights: a seeded test model whose outputs mean nothing (manifest
            flag, or the test-model builders' marker in ``config.json``).
        config: the parsed, verified ``config.json``.
        manifest_sha256: sha256 of ``manifest.json`` as read here (it binds every file: the engine identity).
    """

    path: Path
    manifest: Manifest
    variant: Optional[str]
    model_file: str
    permutation: np.ndarray
    random_weights: bool
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    manifest_sha256: str = ""

    @property
    def model_path(self) -> Path:
        """``path / model_file`` (for messages; the model is loaded from its verified bytes)."""
        return self.path / self.model_file

    @property
    def parity(self) -> ParityReport:
        """The parity report of the chosen variant (the export's own for ``None``)."""
        if self.variant is None:
            return self.manifest.parity
        return self.manifest.variants[self.variant].parity

    @classmethod
    def open(
        cls,
        path: "str | os.PathLike[str]",
        variant: Optional[str] = None,
        *,
        expected_model: Optional[str] = None,
        expected_revision: Optional[str] = None,
        kind: Optional[str] = "nli",
    ) -> "ModelDirectory":
        """Read and verify ``path`` for ``variant`` (the model file itself is hashed when read).

        Args:
            path: an exported model directory.
            variant: a variant recorded in the manifest (``None``: ``model_file``).
            expected_model: when given, the manifest's ``model`` must equal it.
            expected_revision: when given, it must be the manifest's requested
                revision, resolved commit or :attr:`Manifest.revision`.
            kind: ``"nli"`` or ``"grounding"`` (:mod:`verifier.engine.kinds`): another kind is refused; ``None``: either.

        Raises:
            ClaimVerificationError: the directory or its manifest is missing or unreadable; a name in it
                is not a plain relative path; it does not list a file the runtime reads; it holds another
                kind, model or revision; the label set is wrong; the variant is unknown or failed its gate;
                ``config.json`` does not match its record or its id2label disagrees with the manifest.
                Each message names the directory and says how to fix it.
        """
        model_dir = Path(path)
        hint = create_hint(expected_model, expected_revision, model_dir)
        if not model_dir.is_dir():
            what = "is not a directory" if model_dir.exists() else "does not exist"
            raise ClaimVerificationError(f"model directory {model_dir} {what}; {hint}")
        manifest_path = model_dir / MANIFEST_NAME
        if not os.path.lexists(manifest_path):
            raise ClaimVerificationError(
                f"model directory {model_dir} has no {MANIFEST_NAME} (not an export, or the export "
                f"did not pass its parity gate); {hint}"
            )
        if not manifest_path.is_file():
            raise ClaimVerificationError(f"{manifest_path} is {kind_of(manifest_path)}, not a regular file; re-export the directory")
        try:
            resolve_inside(model_dir, MANIFEST_NAME)
        except ValueError as exc:
            raise ClaimVerificationError(
                f"model directory {model_dir} does not match its manifest (tampered or incomplete; re-export it): "
                f"{exc}; a manifest must be the directory's own file, not a link to one elsewhere"
            ) from None
        try:
            manifest = parse_manifest(raw := manifest_bytes(model_dir))
        except (ValidationError, ValueError, OSError) as exc:
            raise ClaimVerificationError(f"{manifest_path} is not a valid manifest: {one_line(exc)}") from exc
        check_kind(model_dir, manifest, kind)
        check_identity(model_dir, manifest, expected_model, expected_revision)
        check_labels(model_dir, manifest)
        model_file = model_file_of(model_dir, manifest, variant)
        unlisted = [name for name in (TOKENIZER_NAME, CONFIG_NAME, GOLDEN_NAME) if name not in manifest.files]
        if unlisted:
            raise ClaimVerificationError(
                f"{manifest_path} does not record {', '.join(unlisted)}: refusing files the runtime "
                f"would read unverified; re-export the directory"
            )
        parity = manifest.parity if variant is None else manifest.variants[variant].parity
        missed = parity_misses(parity, float32=variant is None)
        if not parity.passed or missed:
            verdict = f" (it says passed, but {'; '.join(missed)})" if parity.passed else ""
            raise ClaimVerificationError(
                f"{manifest_path} records a failed parity gate for {model_file}{verdict}; re-export the directory"
            )
        directory = cls(
            path=model_dir,
            manifest=manifest,
            variant=variant,
            model_file=model_file,
            permutation=_permutation(manifest),
            random_weights=manifest.random_weights,
        )
        config = parse_config(directory.read_verified(CONFIG_NAME), model_dir / CONFIG_NAME)
        check_config_labels(model_dir, manifest, config)
        check_golden_settings(model_dir, manifest, directory.read_golden())
        return cls(
            path=model_dir,
            manifest=manifest,
            variant=variant,
            model_file=model_file,
            permutation=directory.permutation,
            random_weights=manifest.random_weights or bool(config.get(RANDOM_WEIGHTS_CONFIG_KEY, False)),
            config=config,
            manifest_sha256=hashlib.sha256(raw).hexdigest(),
        )

    def read_verified(self, name: str) -> bytes:
        """The bytes of the recorded file ``name``, read once and checked against the manifest.

        The file must resolve inside the directory (symlinks included), be a
        regular file of the recorded size, and its bytes must have the
        recorded sha256. The returned bytes are the ones that were hashed.

        Raises:
            ClaimVerificationError: ``name`` is not recorded, resolves outside the
                directory, is missing or not a regular file, or its size or
                sha256 differs from the manifest.
        """
        record, real, tampered = self._locate(name)
        try:
            with os.fdopen(os.open(real, READ_FLAGS), "rb") as handle:  # a FIFO does not block the open
                info = os.fstat(handle.fileno())
                if not _is_regular(info.st_mode):
                    raise ClaimVerificationError(f"{tampered}: {name}: not a regular file")
                os.set_blocking(handle.fileno(), True)
                if info.st_size != record.size:
                    raise ClaimVerificationError(f"{tampered}: {name}: size {info.st_size} != manifest {record.size}")
                data = handle.read(record.size + 1)
        except FileNotFoundError:
            raise ClaimVerificationError(f"{tampered}: {name}: missing") from None
        except OSError as exc:
            raise ClaimVerificationError(f"cannot read {self.path / name}: {exc.strerror or exc}") from exc
        if len(data) != record.size:
            raise ClaimVerificationError(f"{tampered}: {name}: size {len(data)} != manifest {record.size}")
        digest = hashlib.sha256(data).hexdigest()
        if digest != record.sha256:
            raise ClaimVerificationError(f"{tampered}: {name}: sha256 {digest} != manifest {record.sha256}")
        return data

    def _locate(self, name: str) -> "tuple[FileRecord, Path, str]":
        """The manifest record of ``name``, its real path inside the directory, and the 'tampered' prefix.

        Raises:
            ClaimVerificationError: ``name`` is not recorded, or resolves outside the directory.
        """
        record = self.manifest.files.get(name)
        if record is None:
            raise ClaimVerificationError(f"{name} is not recorded in {self.path / MANIFEST_NAME}; re-export the directory")
        tampered = f"model directory {self.path} does not match its manifest (tampered or incomplete; re-export it)"
        try:
            return record, resolve_inside(self.path, name), tampered
        except ValueError as exc:
            raise ClaimVerificationError(f"{tampered}: {exc}") from None

    def verified_model(self) -> "contextlib.AbstractContextManager[Union[str, bytes]]":
        """The chosen variant's model file, for onnxruntime to load (:meth:`verified_file` of :attr:`model_file`)."""
        return self.verified_file(self.model_file)

    @property
    def variant_record(self) -> Optional[VariantRecord]:
        """The manifest's record of the chosen variant (``None`` for the export's own ``model_file``)."""
        return None if self.variant is None else self.manifest.variants[self.variant]

    def verified_buffer(self, name: str) -> "contextlib.AbstractContextManager[np.ndarray]":
        """The recorded file ``name`` read once into private memory (uint8, shape (size,)) and hashed
        there, for a runtime that keeps pointing into what it loads (an imported OpenVINO compiled
        model): the bytes that run are the bytes hashed. The digest is checked when the block ends,
        before anything built in it is used (:func:`verifier.engine.verified_buffer.checked_buffer`).

        Raises:
            ClaimVerificationError: missing, not a regular file, another size or sha256 than the
                manifest's, or unreadable.
        """
        record, real, tampered = self._locate(name)
        return checked_buffer(
            lambda: _open_recorded(self.path, name, record, real, tampered), record.size, record.sha256, where=f"{tampered}: {name}"
        )

    @contextlib.contextmanager
    def verified_file(self, name: str) -> Iterator[Union[str, bytes]]:
        """The recorded file ``name``, hashed through an open descriptor, for a runtime to load.

        The file is opened once; its size and sha256 are checked through that
        descriptor. Where the OS names open descriptors (``/proc/self/fd/N`` on
        Linux) that name is yielded, so onnxruntime reads exactly the inode that
        is hashed — a file renamed over it afterwards is never seen — without
        a second in-memory copy of the model (loading from bytes costs about
        one more model size of memory). The hash runs beside onnxruntime's load
        and is checked when the block ends, before anything built in it is
        used: a mismatch raises instead of returning. When the block ends, the descriptor's
        size and modification time must be as they were, and its change time
        too unless only its link count changed (it was unlinked or renamed
        over), so an in-place write during the load is refused. Elsewhere the
        verified bytes are yielded.

        Raises:
            ClaimVerificationError: as :meth:`read_verified`, or the file changed
                while it was being loaded.
        """
        record, real, tampered = self._locate(name)
        fd = _open_recorded(self.path, name, record, real, tampered)
        try:
            before = os.fstat(fd)
            proc = f"/proc/self/fd/{fd}"
            by_name = os.path.exists(proc)
            digest = hashlib.sha256()
            chunks: list[bytes] = []

            def read_and_hash() -> None:
                offset = 0
                while block := os.pread(fd, 1 << 22, offset):
                    digest.update(block)  # releases the GIL: runs beside onnxruntime's own read
                    offset += len(block)
                    if not by_name:
                        chunks.append(block)

            def check_digest() -> None:
                if digest.hexdigest() != record.sha256:
                    raise ClaimVerificationError(
                        f"{tampered}: {name}: sha256 {digest.hexdigest()} != manifest {record.sha256}"
                    )

            if by_name:
                # onnxruntime parses the file while it is hashed; nothing it built is returned
                # unless the digest matches when the block ends.
                hashing = threading.Thread(target=read_and_hash, name="claim-verifier-hash", daemon=True)
                hashing.start()
                try:
                    yield proc
                except BaseException:
                    hashing.join()
                    check_digest()  # a file that does not match is the reason the load failed, if it is one
                    raise
                hashing.join()
                check_digest()
            else:
                read_and_hash()
                check_digest()
                yield b"".join(chunks)
            after = os.fstat(fd)
            written = (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns)
            # the change time also moves when the file is merely unlinked or renamed over (its link count
            # changes; the content read is still the verified inode's), else it means a write or a touch-up
            retouched = after.st_ctime_ns != before.st_ctime_ns and after.st_nlink == before.st_nlink
            if written or retouched:
                raise ClaimVerificationError(
                    f"{self.path / name} was modified while it was loaded; refusing a model that may not be the verified one"
                )
        finally:
            os.close(fd)

    def read_golden(self) -> Golden:
        """The verified ``golden.json``, parsed.

        Raises:
            ClaimVerificationError: not verified (see :meth:`read_verified`) or malformed.
        """
        data = self.read_verified(GOLDEN_NAME)
        try:
            return parse_golden(data)
        except GoldenFormatError as exc:
            raise ClaimVerificationError(f"{self.path / GOLDEN_NAME}: {exc}") from exc

    def verify_all(self) -> list[str]:
        """Hash every recorded file (not only what a run reads); return readable problems."""
        return verify_files(self.path, self.manifest)

    def load_tokenizer(self) -> "Tokenizer":
        """The verified ``tokenizer.json`` with the runtime settings (:func:`verifier.engine.tokenization.load_tokenizer`).

        Raises:
            ClaimVerificationError: the file is not verified or cannot be parsed.
        """
        from .tokenization import tokenizer_from_json

        data = self.read_verified(TOKENIZER_NAME)
        try:
            return tokenizer_from_json(data.decode("utf-8"), max_length=self.manifest.max_length)
        except Exception as exc:  # tokenizers raises plain Exception on parse errors
            raise ClaimVerificationError(f"cannot load tokenizer {self.path / TOKENIZER_NAME}: {one_line(exc)}") from exc


def _open_recorded(path: Path, name: str, record: FileRecord, real: Path, tampered: str) -> int:
    """A descriptor open on ``real`` (file ``name`` of directory ``path``), checked to be a regular
    file of the recorded size; the caller closes it. ``tampered`` names a tampered directory."""
    try:
        fd = os.open(real, READ_FLAGS)  # a FIFO does not block the open (refused below)
    except FileNotFoundError:
        raise ClaimVerificationError(f"{tampered}: {name}: missing") from None
    except OSError as exc:
        raise ClaimVerificationError(f"cannot read {path / name}: {exc.strerror or exc}") from exc
    try:
        before = os.fstat(fd)
        if not _is_regular(before.st_mode):
            raise ClaimVerificationError(f"{tampered}: {name}: not a regular file")
        os.set_blocking(fd, True)
        if before.st_size != record.size:
            raise ClaimVerificationError(f"{tampered}: {name}: size {before.st_size} != manifest {record.size}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)

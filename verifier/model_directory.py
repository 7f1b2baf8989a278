"""Opening an exported model directory: the manifest, verified, and what it says to load.

:meth:`ModelDirectory.open` is the one place a model directory is checked
before use (the engine at load, the exporter when it re-verifies an existing
export, the variant builder): the manifest parses; it names the model and
revision the caller expects; the label set is exactly contradiction /
entailment / neutral; the chosen variant's file is recorded; every recorded
file matches its sha256 and size; and the label order agrees with the
hashed ``config.json``. The result carries the verified manifest, the
variant's file, the label permutation to (entailment, contradiction,
neutral) and the random-weights flag. The format is described in
docs/model-directory.md.

No onnxruntime here: the engine builds the session from what this returns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np
from pydantic import ValidationError

from .manifest import (
    CONFIG_NAME,
    MANIFEST_NAME,
    NLI_LABELS,
    RANDOM_WEIGHTS_CONFIG_KEY,
    TOKENIZER_NAME,
    Manifest,
    ParityReport,
    read_manifest,
    verify_files,
)
from .types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tokenizers import Tokenizer  # type: ignore[import-untyped,unused-ignore]

__all__ = ["OUTPUT_LABELS", "ModelDirectory", "create_hint"]

#: Column order of every scorer's output: probabilities are always reported as
#: (entailment, contradiction, neutral) (docs/decision.md).
OUTPUT_LABELS: tuple[str, str, str] = ("entailment", "contradiction", "neutral")


def create_hint(expected_model: Optional[str], expected_revision: Optional[str], model_dir: Path) -> str:
    """How to create a model directory, for 'missing' errors."""
    model = expected_model or "<hub id>"
    revision = expected_revision or "<revision>"
    return (
        f"create it with `python -m export --model {model} --revision {revision} --output {model_dir}`, "
        f"or load an existing export with ClaimVerifier.from_model_dir(<dir>) / $CLAIM_VERIFIER_MODEL_DIR "
        f"(offline: `python -m export --smoke` writes a random-weights plumbing model)"
    )


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
    """

    path: Path
    manifest: Manifest
    variant: Optional[str]
    model_file: str
    permutation: np.ndarray
    random_weights: bool

    @property
    def model_path(self) -> Path:
        """Absolute-or-relative path of :attr:`model_file`."""
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
    ) -> "ModelDirectory":
        """Read and verify ``path`` for ``variant``.

        Args:
            path: an exported model directory.
            variant: a variant recorded in the manifest (``None``: ``model_file``).
            expected_model: when given, the manifest's ``model`` must equal it.
            expected_revision: when given, it must be the manifest's requested
                revision, resolved commit or :attr:`Manifest.revision`.

        Raises:
            ClaimVerificationError: the directory or its manifest is missing or
                unreadable; it holds another model or revision; the label set
                is wrong; the variant is unknown or its file unrecorded; a file
                does not match its sha256 or size; ``config.json``'s id2label
                disagrees with the manifest. Each message names the directory
                and says how to fix it.
        """
        model_dir = Path(path)
        hint = create_hint(expected_model, expected_revision, model_dir)
        if not model_dir.is_dir():
            raise ClaimVerificationError(f"model directory {model_dir} does not exist; {hint}")
        if not (model_dir / MANIFEST_NAME).is_file():
            raise ClaimVerificationError(
                f"model directory {model_dir} has no {MANIFEST_NAME} (not an export, or the export "
                f"did not pass its parity gate); {hint}"
            )
        try:
            manifest = read_manifest(model_dir)
        except (ValidationError, ValueError, OSError) as exc:
            raise ClaimVerificationError(f"{model_dir / MANIFEST_NAME} is not a valid manifest: {exc}") from exc
        _check_identity(model_dir, manifest, expected_model, expected_revision)
        _check_labels(model_dir, manifest)
        model_file = _model_file(model_dir, manifest, variant)
        problems = verify_files(model_dir, manifest)
        if problems:
            raise ClaimVerificationError(
                f"model directory {model_dir} does not match its manifest "
                f"(tampered or incomplete; re-export it): " + "; ".join(problems)
            )
        random_weights = _check_config(model_dir, manifest)
        permutation = np.array([manifest.labels.index(label) for label in OUTPUT_LABELS], dtype=np.int64)
        return cls(
            path=model_dir,
            manifest=manifest,
            variant=variant,
            model_file=model_file,
            permutation=permutation,
            random_weights=random_weights,
        )

    def load_tokenizer(self) -> "Tokenizer":
        """The directory's ``tokenizer.json`` with the runtime settings (:func:`verifier.tokenization.load_tokenizer`).

        Raises:
            ClaimVerificationError: the file is missing or cannot be parsed.
        """
        from .tokenization import load_tokenizer

        path = self.path / TOKENIZER_NAME
        try:
            return load_tokenizer(path, max_length=self.manifest.max_length)
        except FileNotFoundError as exc:
            raise ClaimVerificationError(f"{TOKENIZER_NAME} missing from {self.path}; re-export it") from exc
        except Exception as exc:  # tokenizers raises plain Exception on parse errors
            raise ClaimVerificationError(f"cannot load tokenizer {path}: {exc}") from exc


def _check_identity(
    model_dir: Path, manifest: Manifest, expected_model: Optional[str], expected_revision: Optional[str]
) -> None:
    if expected_model is not None and manifest.model != expected_model:
        raise ClaimVerificationError(
            f"model directory {model_dir} holds {manifest.model!r}, but {expected_model!r} "
            f"was requested; export the requested model or configure model={manifest.model!r}"
        )
    recorded = {manifest.requested_revision, manifest.resolved_revision, manifest.revision} - {None}
    if expected_revision is not None and expected_revision not in recorded:
        raise ClaimVerificationError(
            f"model directory {model_dir} holds {manifest.model!r} at revision "
            f"{manifest.revision!r} (commit {manifest.resolved_revision!r}), but revision "
            f"{expected_revision!r} was requested; configure "
            f"ClaimVerificationConfig(model={manifest.model!r}, revision={manifest.revision!r}) "
            f"or use ClaimVerifier.from_model_dir({str(model_dir)!r})"
        )


def _check_labels(model_dir: Path, manifest: Manifest) -> None:
    labels = manifest.labels
    if len(labels) != len(NLI_LABELS) or set(labels) != NLI_LABELS:
        raise ClaimVerificationError(
            f"model in {model_dir} has labels {list(labels)}; a three-label NLI model with exactly "
            f"{sorted(NLI_LABELS)} (any order) is required"
        )


def _model_file(model_dir: Path, manifest: Manifest, variant: Optional[str]) -> str:
    if variant is None:
        name = manifest.model_file
    else:
        record = manifest.variants.get(variant)
        if record is None:
            raise ClaimVerificationError(
                f"variant {variant!r} is not in {model_dir / MANIFEST_NAME}; "
                f"available: {sorted(manifest.variants) or 'none'}"
            )
        name = record.file
    if name not in manifest.files:
        raise ClaimVerificationError(
            f"{name} is not recorded in {model_dir / MANIFEST_NAME}: refusing an unverified model file"
        )
    return name


def _check_config(model_dir: Path, manifest: Manifest) -> bool:
    """Cross-check the manifest against the sha256-verified ``config.json``.

    The label order the engine permutes by must be ``id2label`` of the config
    the parity gate ran, so an edited ``manifest.json`` cannot swap entailment
    and contradiction. Returns whether the model has random weights (manifest
    flag or the test-model builders' config marker).

    Raises:
        ClaimVerificationError: unreadable config, or labels that differ.
    """
    if CONFIG_NAME not in manifest.files:
        return manifest.random_weights
    path = model_dir / CONFIG_NAME
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        id2label = {int(key): str(value).strip().lower() for key, value in config["id2label"].items()}
        labels = tuple(id2label[index] for index in range(len(id2label)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ClaimVerificationError(f"cannot read id2label from {path}: {exc}") from exc
    if labels != tuple(manifest.labels):
        raise ClaimVerificationError(
            f"{model_dir / MANIFEST_NAME} records labels {list(manifest.labels)} but {path} has "
            f"id2label {list(labels)}; the directory was edited after export — re-export it"
        )
    return manifest.random_weights or bool(config.get(RANDOM_WEIGHTS_CONFIG_KEY, False))

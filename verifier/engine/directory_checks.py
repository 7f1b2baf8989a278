"""The consistency checks :meth:`verifier.engine.model_directory.ModelDirectory.open` runs on a
model directory's manifest, config and golden file (docs/model-directory.md): identity, labels,
the file of the chosen variant, and the settings the golden logits were recorded with.
Each raises :class:`~verifier.types.ClaimVerificationError` naming the file and what differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .golden import GOLDEN_NAME, Golden
from .kinds import GROUNDING_LABELS, describe_kind
from .manifest import CONFIG_NAME, MANIFEST_NAME, NLI_LABELS, Manifest
from ..strictjson import loads as strict_loads
from ..types import ClaimVerificationError

__all__ = ["check_kind", "check_identity", "check_labels", "model_file_of", "parse_config", "check_golden_settings", "check_config_labels"]


def check_identity(
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


def check_kind(model_dir: Path, manifest: Manifest, expected_kind: Optional[str]) -> None:
    """The directory must hold the kind of model the caller scores with (docs/grounding.md); ``None``: any kind.

    Raises:
        ClaimVerificationError: another kind, naming both.
    """
    if expected_kind is not None and manifest.kind != expected_kind:
        wanted = "ClaimVerifier and verify need" if expected_kind == "nli" else "GroundingChecker and ground need"
        raise ClaimVerificationError(
            f"model directory {model_dir} holds {describe_kind(manifest.kind)} ({manifest.model}), but "
            f"{describe_kind(expected_kind)} is expected here: {wanted} {describe_kind(expected_kind)}"
        )


def check_labels(model_dir: Path, manifest: Manifest) -> None:
    labels = manifest.labels
    if manifest.grounding is not None:
        column = manifest.grounding.support_column
        wanted = GROUNDING_LABELS if column == 1 else GROUNDING_LABELS[::-1]
        if tuple(labels) != wanted:
            raise ClaimVerificationError(
                f"grounding model in {model_dir} has labels {list(labels)}; with support column {column} "
                f"they must be {list(wanted)}"
            )
        return
    if len(labels) != len(NLI_LABELS) or set(labels) != NLI_LABELS:
        raise ClaimVerificationError(
            f"model in {model_dir} has labels {list(labels)}; a three-label NLI model with exactly "
            f"{sorted(NLI_LABELS)} (any order) is required"
        )


#: The variants ``python -m export.variants`` builds (verifier_export.variants.gates.VARIANT_NAMES) and
#: the extra each needs beyond ``export``.
_BUILDABLE = {"optimized": None, "int8": None, "bf16": "openvino", "ov-int8": "openvino"}
#: The gates a random-weights test model needs for each lossy variant (its logits are scaled far from
#: zero, so it misses the default gates; docs/model-directory.md, README "The model directory").
_RANDOM_MODEL_GATES = {
    "int8": " --int8-max-logit-diff 1 --int8-max-prob-diff 0.3",
    "bf16": " --bf16-max-logit-diff 2 --bf16-max-prob-diff 0.25",
    "ov-int8": " --int8-max-logit-diff 50 --int8-max-prob-diff 1 --int8-min-argmax-agreement 0",
}


def _build_hint(model_dir: Path, variant: str, random_weights: bool = False) -> str:
    """How to add a variant the exporter knows to ``model_dir`` ("" for a name it does not build); for a
    random-weights test model, with the loosened gate it needs."""
    if variant not in _BUILDABLE:
        return ""
    from ..messages import install_hint, variants_command

    extra = _BUILDABLE[variant]
    needs = f", with the {extra} extra ({install_hint(extra)})" if extra else ""
    gates = _RANDOM_MODEL_GATES.get(variant, "") if random_weights else ""
    loosened = " (a random-weights test model misses the default gate: these flags loosen it)" if gates else ""
    return f"; build it with `{variants_command(model_dir)} --variants {variant}{gates}`{loosened}{needs}"


def model_file_of(model_dir: Path, manifest: Manifest, variant: Optional[str]) -> str:
    if variant is None:
        name = manifest.model_file
    else:
        record = manifest.variants.get(variant)
        if record is None:
            raise ClaimVerificationError(
                f"variant {variant!r} is not in {model_dir / MANIFEST_NAME}; "
                f"available: {', '.join(sorted(manifest.variants)) or 'none'}"
                + _build_hint(model_dir, variant, manifest.random_weights)
            )
        name = record.file
        if record.source_file is not None and record.source_file not in manifest.files:
            raise ClaimVerificationError(
                f"{record.source_file} (the graph of variant {variant!r}) is not recorded in "
                f"{model_dir / MANIFEST_NAME}: refusing an unverified model file"
            )
    if name not in manifest.files:
        raise ClaimVerificationError(
            f"{name} is not recorded in {model_dir / MANIFEST_NAME}: refusing an unverified model file"
        )
    return name


def parse_config(data: bytes, path: Path) -> dict[str, Any]:
    try:
        config = strict_loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ClaimVerificationError(f"cannot read id2label from {path}: {exc}") from exc
    if not isinstance(config, dict):
        raise ClaimVerificationError(f"cannot read id2label from {path}: not a JSON object")
    return config


def check_golden_settings(model_dir: Path, manifest: Manifest, golden: Golden) -> None:
    """The settings the runtime tokenizes and pads by must be the ones the hashed ``golden.json`` was made
    with, so an edited ``manifest.json`` cannot change truncation (``max_length``) or padding
    (``pad_token_id``) and with them the scores, unnoticed.

    Raises:
        ClaimVerificationError: a recorded setting differs (each is named).
    """
    pairs: dict[str, tuple[object, object]] = {
        "max_length": (manifest.max_length, golden.max_length), "pad_token_id": (manifest.pad_token_id, golden.pad_token_id)}
    if manifest.grounding is not None:  # how a pair is read and scored is the hashed golden file's (docs/grounding.md)
        pairs["labels"] = (list(manifest.labels), list(golden.labels))
        recorded = manifest.grounding.model_dump(mode="json")
        if golden.grounding is None:
            raise ClaimVerificationError(f"model directory {model_dir}: {GOLDEN_NAME} records no grounding record; re-export it")
        differ_all = [f"grounding.{key} {recorded.get(key)!r} but {GOLDEN_NAME} {golden.grounding.get(key)!r}"
                      for key in sorted(set(recorded) | set(golden.grounding)) if recorded.get(key) != golden.grounding.get(key)]
        if differ_all:  # every part, None included: a part the export left empty must stay empty
            raise ClaimVerificationError(
                f"model directory {model_dir} does not match its manifest (tampered or incomplete; re-export it): "
                f"{MANIFEST_NAME} records {'; '.join(differ_all)} (the export's hashed record)")
    differ = [
        f"{name} {ours} but {GOLDEN_NAME} {theirs}"
        for name, (ours, theirs) in pairs.items()
        if theirs is not None and theirs != ours  # None: a golden.json written before it recorded them
    ]
    if differ:
        raise ClaimVerificationError(
            f"model directory {model_dir} does not match its manifest (tampered or incomplete; re-export it): "
            f"{MANIFEST_NAME} records {'; '.join(differ)} (the export's hashed record)"
        )


def check_config_labels(model_dir: Path, manifest: Manifest, config: dict[str, Any]) -> None:
    """The label order the engine permutes by must be ``id2label`` of the hashed config the
    parity gate ran, so an edited ``manifest.json`` cannot swap entailment and contradiction.

    Raises:
        ClaimVerificationError: no readable id2label, or labels that differ.
    """
    path = model_dir / CONFIG_NAME
    if manifest.grounding is not None:
        return  # a checkpoint's own names (LABEL_0/LABEL_1, or none for a T5): the order is golden.json's, checked at open
    try:
        id2label = {int(key): str(value).strip().lower() for key, value in config["id2label"].items()}
        labels = tuple(id2label[index] for index in range(len(id2label)))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ClaimVerificationError(f"cannot read id2label from {path}: {exc}") from exc
    if labels != tuple(manifest.labels):
        raise ClaimVerificationError(
            f"{model_dir / MANIFEST_NAME} records labels {list(manifest.labels)} but {path} has "
            f"id2label {list(labels)}; the directory was edited after export — re-export it"
        )

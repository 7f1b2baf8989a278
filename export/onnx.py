"""Source resolution and the optimum-onnx export step of ``python -m export``.

* :func:`resolve_source` turns ``--model``/``--revision`` into a local
  Hugging Face directory: a local path as is, a hub id through
  ``huggingface_hub.snapshot_download`` at exactly the pinned revision (its
  cache, ``HF_HOME`` and ``HF_HUB_OFFLINE`` honoured) with the resolved commit
  recorded.
* :func:`read_labels` reads ``id2label`` and refuses anything but exactly
  contradiction/entailment/neutral.
* :func:`write_tokenizer_json` copies ``tokenizer.json`` or converts
  ``spm.model`` with transformers' fast-tokenizer conversion.
* :func:`export_onnx` exports ``model.onnx`` with optimum-onnx
  (``text-classification``, dynamic batch and sequence axes).

``trust_remote_code`` is never enabled. torch, transformers, optimum and
huggingface_hub are imported inside functions.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

from verifier.manifest import NLI_LABELS

from .errors import ExportError, LabelError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "HUB_ALLOW_PATTERNS",
    "ModelSource",
    "looks_like_hub_id",
    "resolve_source",
    "read_config",
    "read_labels",
    "default_max_length",
    "write_tokenizer_json",
    "load_reference_tokenizer",
    "load_torch_model",
    "export_onnx",
    "onnx_graph_info",
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

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
# A hub repo id: "name" or "org/name" (huggingface_hub's validate_repo_id rules, simplified).
_HUB_ID_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9_.-]*/)?[A-Za-z0-9][A-Za-z0-9_.-]*$")
# tokenizer model_max_length above this is transformers' "no limit" sentinel (VERY_LARGE_INTEGER).
_UNBOUNDED_MODEL_MAX_LENGTH = 1_000_000


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
    """

    model: str
    path: Path
    kind: Literal["hub", "local", "smoke"]
    requested_revision: Optional[str]
    resolved_revision: Optional[str]


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def looks_like_hub_id(model: str) -> bool:
    """Whether ``model`` is shaped like a hub repo id (``org/name`` or ``name``) and is no existing path."""
    if Path(model).expanduser().exists():
        return False
    return bool(_HUB_ID_RE.match(model)) and ".." not in model


def resolve_source(model: str, revision: Optional[str], *, default_model: str, default_revision: str) -> ModelSource:
    """Resolve ``--model``/``--revision`` to a local directory.

    An existing path is a local directory. Otherwise a string shaped like a
    hub id is downloaded with ``huggingface_hub.snapshot_download`` at
    ``revision`` (required, except that ``default_model`` defaults to
    ``default_revision``); only :data:`HUB_ALLOW_PATTERNS` are fetched, plus
    ``pytorch_model.bin`` when the snapshot has no safetensors.

    Args:
        model: hub id or local directory.
        revision: commit, tag or branch; recorded as the requested revision.
        default_model: the contract's default model id.
        default_revision: its pinned revision.

    Returns:
        The resolved :class:`ModelSource`.

    Raises:
        ExportError: the path is missing or not a Hugging Face model directory,
            a hub id lacks ``--revision``, or the download failed (offline
            without a cached snapshot, unknown repo or revision).
    """
    local = Path(model).expanduser()
    if local.exists():
        if not local.is_dir():
            raise ExportError(f"--model {model}: not a directory")
        path = local.resolve()
        if not (path / "config.json").is_file():
            raise ExportError(f"--model {model}: not a Hugging Face model directory (no config.json)")
        resolved = path.name if path.parent.name == "snapshots" and _COMMIT_RE.match(path.name) else None
        return ModelSource(model=model, path=path, kind="local", requested_revision=revision, resolved_revision=resolved)
    if not looks_like_hub_id(model):
        raise ExportError(f"--model {model}: model directory not found")
    if revision is None:
        if model != default_model:
            raise ExportError(f"--model {model}: --revision is required with a hub id (pin a commit hash)")
        revision = default_revision
    snapshot = _snapshot_download(model, revision, HUB_ALLOW_PATTERNS)
    if not (snapshot / "model.safetensors").is_file():
        snapshot = _snapshot_download(model, revision, ("pytorch_model.bin",))
    if not (snapshot / "config.json").is_file():
        raise ExportError(f"{model}@{revision}: the snapshot has no config.json ({snapshot})")
    resolved_commit = snapshot.name if _COMMIT_RE.match(snapshot.name) else None
    if _COMMIT_RE.match(revision) and resolved_commit is not None and resolved_commit != revision:
        raise ExportError(f"{model}@{revision}: the hub resolved a different commit {resolved_commit}")
    return ModelSource(
        model=model, path=snapshot, kind="hub", requested_revision=revision, resolved_revision=resolved_commit
    )


def _snapshot_download(model: str, revision: str, patterns: tuple[str, ...]) -> Path:
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:  # pragma: no cover - huggingface-hub is a runtime dependency
        raise ExportError("huggingface-hub is required to download hub models") from exc
    try:
        path = snapshot_download(repo_id=model, revision=revision, allow_patterns=list(patterns))
    except Exception as exc:  # huggingface_hub raises many types (HTTP, offline, validation)
        raise ExportError(
            f"--model {model}: no local directory of that name, and downloading revision {revision} "
            f"from the Hugging Face hub failed: {_one_line(exc)}"
        ) from exc
    return Path(path)


def read_config(model_dir: Path) -> dict[str, Any]:
    """Read ``config.json`` of a Hugging Face model directory as a dict.

    Raises:
        ExportError: the file is missing or not a JSON object.
    """
    path = Path(model_dir) / "config.json"
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ExportError(f"{path}: missing") from exc
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path}: unreadable: {_one_line(exc)}") from exc
    if not isinstance(payload, dict):
        raise ExportError(f"{path}: not a JSON object")
    return payload


def read_labels(config: dict[str, Any], *, where: str = "config.json") -> tuple[str, ...]:
    """Return ``id2label`` in index order, lower-cased and stripped.

    Args:
        config: a parsed ``config.json``.
        where: file name used in error messages.

    Returns:
        The three labels in logit-column order, e.g.
        ``("contradiction", "entailment", "neutral")``.

    Raises:
        LabelError: ``id2label`` is missing, its keys are not ``0..n-1``, or its
            values are not exactly {contradiction, entailment, neutral}
            (case-insensitive, any order).
    """
    raw = config.get("id2label")
    if not isinstance(raw, dict) or not raw:
        raise LabelError(f"{where}: no id2label; a three-label NLI model needs contradiction, entailment, neutral")
    try:
        by_index = {int(key): value for key, value in raw.items()}
    except (TypeError, ValueError) as exc:
        raise LabelError(f"{where}: id2label keys must be integers, got {sorted(map(str, raw))}") from exc
    if sorted(by_index) != list(range(len(by_index))):
        raise LabelError(f"{where}: id2label keys must be 0..{len(by_index) - 1}, got {sorted(by_index)}")
    labels = tuple(str(by_index[index]).strip().lower() for index in range(len(by_index)))
    if len(labels) != len(NLI_LABELS) or set(labels) != NLI_LABELS:
        shown = [str(by_index[index]) for index in range(len(by_index))]
        raise LabelError(
            f"{where}: id2label must be exactly contradiction, entailment, neutral "
            f"(any order, case-insensitive); got {shown}"
        )
    return labels


def default_max_length(tokenizer: "PreTrainedTokenizerBase", config: dict[str, Any]) -> int:
    """The default ``--max-length``: the tokenizer's ``model_max_length``.

    When that is transformers' "unbounded" sentinel, fall back to
    ``max_position_embeddings`` (512 when absent).
    """
    value = int(getattr(tokenizer, "model_max_length", 0) or 0)
    if 0 < value < _UNBOUNDED_MODEL_MAX_LENGTH:
        return value
    positions = config.get("max_position_embeddings")
    return int(positions) if isinstance(positions, int) and positions > 0 else 512


def load_reference_tokenizer(model_dir: Path) -> "PreTrainedTokenizerBase":
    """Load the transformers *fast* tokenizer of a model directory (the parity reference).

    Raises:
        ExportError: transformers cannot build a fast tokenizer for the directory.
    """
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), use_fast=True, trust_remote_code=False)
    except Exception as exc:  # transformers raises OSError, ValueError, ImportError, ...
        raise ExportError(f"{model_dir}: could not load a fast tokenizer: {_one_line(exc)}") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ExportError(f"{model_dir}: transformers has no fast tokenizer for this model (needed for tokenizer.json)")
    return tokenizer


def write_tokenizer_json(
    model_dir: Path, destination: Path, tokenizer: Optional["PreTrainedTokenizerBase"] = None
) -> Literal["copied", "converted"]:
    """Write the runtime's ``tokenizer.json``.

    Copied byte for byte when the directory has one; otherwise converted from
    ``spm.model`` (or whatever slow-tokenizer files it has) by transformers'
    fast-tokenizer conversion and saved with padding and truncation cleared
    (the runtime sets both, see :mod:`verifier.tokenization`).

    Args:
        model_dir: the source Hugging Face directory.
        destination: path of the ``tokenizer.json`` to write.
        tokenizer: the already loaded fast tokenizer of ``model_dir`` (loaded
            when omitted).

    Returns:
        ``"copied"`` or ``"converted"``.

    Raises:
        ExportError: no fast tokenizer could be built.
    """
    source = Path(model_dir) / "tokenizer.json"
    if source.is_file():
        shutil.copyfile(source, destination)
        return "copied"
    if tokenizer is None:
        tokenizer = load_reference_tokenizer(model_dir)
    from tokenizers import Tokenizer  # type: ignore[import-untyped]

    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    backend.no_padding()
    backend.no_truncation()
    backend.save(str(destination))
    return "converted"


def load_torch_model(model_dir: Path) -> "PreTrainedModel":
    """Load the PyTorch sequence classifier in float32, eval mode, no remote code.

    Raises:
        ExportError: transformers cannot load the weights or the architecture.
    """
    import torch
    from transformers import AutoModelForSequenceClassification

    try:
        model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), trust_remote_code=False)
    except Exception as exc:  # OSError (missing/corrupt weights), ValueError (unknown architecture), ...
        raise ExportError(f"{model_dir}: could not load the PyTorch model: {_one_line(exc)}") from exc
    model = model.to(torch.float32).eval()
    return model


def export_onnx(model: "PreTrainedModel", output: Path, *, opset: Optional[int]) -> Path:
    """Export ``model`` to ``output`` (a ``.onnx`` path) with optimum-onnx.

    Task ``text-classification``; inputs ``input_ids``, ``attention_mask`` and,
    for models with ``type_vocab_size > 0``, ``token_type_ids``, all int64 of
    shape (batch_size, sequence_length) with both axes dynamic; output
    ``logits`` float32 of shape (batch_size, num_labels). optimum's own
    validation is skipped: the golden parity gate is the check.

    Args:
        model: a loaded PyTorch sequence classifier.
        output: where ``model.onnx`` goes; a scratch directory beside it is
            used and removed.
        opset: ONNX opset (``None`` = optimum's default for the architecture).

    Returns:
        ``output``.

    Raises:
        ExportError: optimum or torch failed to export.
    """
    try:
        from optimum.exporters.onnx import onnx_export_from_model  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ImportError("python -m export needs the 'export' extra (optimum-onnx)") from exc

    output = Path(output)
    scratch = output.parent / ".onnx-export"
    try:
        onnx_export_from_model(
            model,
            output=scratch,
            task="text-classification",
            opset=opset,
            do_validation=False,
            no_post_process=True,
            device="cpu",
        )
        produced = scratch / "model.onnx"
        if not produced.is_file():
            raise ExportError(f"optimum-onnx produced no model.onnx in {scratch}")
        if any(path.name.startswith("model.onnx_data") for path in scratch.iterdir()):
            raise ExportError("the model needs ONNX external data (> 2 GB); not supported")
        shutil.move(str(produced), str(output))
    except ExportError:
        raise
    except Exception as exc:  # torch.onnx / optimum raise many types
        raise ExportError(f"ONNX export failed: {_one_line(exc)}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return output


def onnx_graph_info(path: Path) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """Read input names, output names (graph order) and the default-domain opset of an ONNX file.

    Raises:
        ExportError: the file is not a readable ONNX model.
    """
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError, OSError, ...
        raise ExportError(f"{path}: not a readable ONNX model: {_one_line(exc)}") from exc
    initializers = {init.name for init in proto.graph.initializer}
    inputs = tuple(item.name for item in proto.graph.input if item.name not in initializers)
    outputs = tuple(item.name for item in proto.graph.output)
    opsets = [entry.version for entry in proto.opset_import if entry.domain in ("", "ai.onnx")]
    if not opsets:
        raise ExportError(f"{path}: no default-domain opset")
    return inputs, outputs, int(opsets[0])

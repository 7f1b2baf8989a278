"""Turning a Hugging Face model directory into ``model.onnx`` and its companion files.

* :func:`read_config` and :func:`read_labels` read ``config.json`` and refuse
  any ``id2label`` but exactly contradiction/entailment/neutral.
* :func:`write_tokenizer_json` copies ``tokenizer.json`` or converts
  ``spm.model`` with transformers' fast-tokenizer conversion.
* :func:`load_reference_tokenizer` and :func:`load_torch_model` load the
  parity gate's references (fast tokenizer, float32 PyTorch classifier).
* :func:`export_onnx` exports ``model.onnx`` with optimum-onnx
  (``text-classification``, dynamic batch and sequence axes), with the stock
  transformers attention or, on request, DeBERTa's span-sliced relative
  attention (:mod:`verifier_export.fast_attention`).

Where the source directory comes from is :mod:`verifier_export.source`.
``trust_remote_code`` is never enabled. torch, transformers and optimum are
imported inside functions.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Optional

from verifier.engine.manifest import NLI_LABELS

from .errors import ExportError, LabelError, one_line

if TYPE_CHECKING:  # pragma: no cover - typing only
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "Attention",
    "ATTENTIONS",
    "read_config",
    "read_labels",
    "default_max_length",
    "MIN_EXPORT_MAX_LENGTH",
    "resolve_max_length",
    "write_tokenizer_json",
    "load_reference_tokenizer",
    "load_torch_model",
    "check_attention",
    "export_onnx",
    "onnx_graph_info",
]

#: How the exported graph computes attention: ``"stock"`` (transformers' own code)
#: or ``"span"`` (:func:`verifier_export.fast_attention.span_sliced_attention`, DeBERTa-v2/v3 only;
#: other architectures export as stock).
Attention = Literal["stock", "span"]
#: The accepted :data:`Attention` values.
ATTENTIONS: tuple[Attention, ...] = ("stock", "span")

# tokenizer model_max_length above this is transformers' "no limit" sentinel (VERY_LARGE_INTEGER).
_UNBOUNDED_MODEL_MAX_LENGTH = 1_000_000


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
        raise ExportError(f"{path}: unreadable: {one_line(exc)}") from exc
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
        hint = ("; a two-label grounding checker exports with --kind grounding --template TEXT --support-label N "
                "(docs/grounding.md)") if len(labels) == 2 else ""
        raise LabelError(
            f"{where}: id2label must be exactly contradiction, entailment, neutral "
            f"(any order, case-insensitive); got {shown}{hint}"
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


#: Smallest ``--max-length`` (the manifest's lower bound).
MIN_EXPORT_MAX_LENGTH = 8


def resolve_max_length(requested: Optional[int], default: int, config: dict[str, Any], where: Path) -> int:
    """``requested`` (else ``default``), checked against the manifest's lower bound and, for a model with
    absolute position embeddings, its ``max_position_embeddings``.

    Raises:
        ExportError: below :data:`MIN_EXPORT_MAX_LENGTH`, or beyond the model's positions.
    """
    max_length = requested if requested is not None else default
    if max_length < MIN_EXPORT_MAX_LENGTH:
        raise ExportError(f"{where}: max length {max_length} is below {MIN_EXPORT_MAX_LENGTH}")
    positions = config.get("max_position_embeddings")
    absolute_positions = bool(config.get("position_biased_input", True))
    if absolute_positions and isinstance(positions, int) and max_length > positions:
        raise ExportError(
            f"--max-length {max_length}: exceeds the model's max_position_embeddings {positions} "
            "(absolute position embeddings)"
        )
    return max_length


def load_reference_tokenizer(model_dir: Path) -> "PreTrainedTokenizerBase":
    """Load the transformers *fast* tokenizer of a model directory (the parity reference).

    Raises:
        ExportError: transformers cannot build a fast tokenizer for the directory.
    """
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), use_fast=True, trust_remote_code=False)
    except Exception as exc:  # transformers raises OSError, ValueError, ImportError, ...
        raise ExportError(f"{model_dir}: could not load a fast tokenizer: {one_line(exc)}") from exc
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
    (the runtime sets both, see :mod:`verifier.engine.tokenization`).

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
        raise ExportError(f"{model_dir}: could not load the PyTorch model: {one_line(exc)}") from exc
    model = model.to(torch.float32).eval()
    return model


def check_attention(attention: str) -> Attention:
    """``attention`` when it is one of :data:`ATTENTIONS`.

    Raises:
        ExportError: any other value.
    """
    if attention == "stock":
        return "stock"
    if attention == "span":
        return "span"
    raise ExportError(f"--attention {attention}: must be one of {', '.join(ATTENTIONS)}")


@contextlib.contextmanager
def _attention_context(attention: Attention) -> Iterator[None]:
    """While tracing: nothing for ``"stock"``; span-sliced DeBERTa attention for ``"span"``."""
    if attention == "stock":
        yield
        return
    import torch

    from .fast_attention import span_sliced_attention

    with span_sliced_attention(), warnings.catch_warnings():
        # patched_bias branches on the query and key lengths, which are equal in
        # self-attention: the trace records the branch every input takes (and the
        # parity gate checks the graph), so torch's warning about it is noise.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        yield


def export_onnx(
    model: "PreTrainedModel", output: Path, *, opset: Optional[int], attention: Attention = "stock"
) -> Path:
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
        attention: ``"stock"`` (default) or ``"span"``: trace DeBERTa-v2/v3 with
            :func:`verifier_export.fast_attention.span_sliced_attention` active, so the
            graph computes the relative-attention bias over only the buckets a
            sequence can use. Only the trace is affected: ``model`` itself is
            unchanged afterwards, so the parity gate still compares the graph
            with the stock PyTorch model.

    Returns:
        ``output``.

    Raises:
        ExportError: optimum or torch failed to export, or an unknown ``attention``.
    """
    attention = check_attention(attention)
    try:
        from optimum.exporters.onnx import onnx_export_from_model  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ImportError("python -m export needs the 'export' extra (optimum-onnx)") from exc

    output = Path(output)
    scratch = output.parent / ".onnx-export"
    try:
        with _attention_context(attention):
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
        raise ExportError(f"ONNX export failed: {one_line(exc)}") from exc
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
        raise ExportError(f"{path}: not a readable ONNX model: {one_line(exc)}") from exc
    initializers = {init.name for init in proto.graph.initializer}
    inputs = tuple(item.name for item in proto.graph.input if item.name not in initializers)
    outputs = tuple(item.name for item in proto.graph.output)
    opsets = [entry.version for entry in proto.opset_import if entry.domain in ("", "ai.onnx")]
    if not opsets:
        raise ExportError(f"{path}: no default-domain opset")
    return inputs, outputs, int(opsets[0])

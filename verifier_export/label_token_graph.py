"""One ONNX graph for a T5 grounding checker: the encoder plus one decoder step, label-token logits out.

MiniCheck-Flan-T5 (``lytang/MiniCheck-Flan-T5-Large``; reference code
``Liyan06/MiniCheck``, ``minicheck/inference.py``) scores a (document, claim)
pair by encoding ``"predict: " + document + "</s>" + claim``, running the
decoder for one step from ``decoder_input_ids`` = zeros, and taking the softmax
over the logits of tokens 3 and 209 at that step: index 1 is the probability
that the document supports the claim. No generation loop and no key/value
cache are needed, so the whole computation is one graph:

* inputs ``input_ids`` and ``attention_mask``: int64, shape
  ``(batch, sequence)``, both axes dynamic (padding: ``attention_mask`` 0);
* output ``logits``: float32, shape ``(batch, 2)`` =
  ``lm_logits[:, 0, label_token_ids]`` of ``T5ForConditionalGeneration`` run
  with ``decoder_input_ids = [[decoder_start_token_id]]`` per row. The softmax
  is left to the runtime, as for the sequence classifiers' ``logits``.

:func:`reference_label_logits` computes the same numbers with plain
transformers (the parity gate's reference). :func:`export_label_token_graph`
uses torch's TorchScript exporter (``torch.onnx.export(..., dynamo=False)``
with ``dynamic_axes``): torch 2.13's default dynamo exporter needs onnxscript,
which the ``export`` extra does not install. A model whose weights exceed 2 GB
(Flan-T5-Large is ~3 GB in float32) is written with ONNX external data in a
single file ``<graph name>.data`` beside the graph (``model.onnx.data`` for
``model.onnx``). torch, transformers, onnx and onnxruntime are imported inside
the functions.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from .errors import ExportError, one_line

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    import torch

__all__ = [
    "DEFAULT_LABEL_TOKEN_IDS",
    "DEFAULT_OPSET",
    "INPUT_NAMES",
    "OUTPUT_NAME",
    "export_label_token_graph",
    "reference_label_logits",
]

#: MiniCheck-Flan-T5's label tokens (unsupported, supported): ``logits[:, [3, 209]]``.
DEFAULT_LABEL_TOKEN_IDS: tuple[int, int] = (3, 209)
#: The opset used when none is given.
DEFAULT_OPSET = 17
#: The graph's inputs, in order.
INPUT_NAMES: tuple[str, str] = ("input_ids", "attention_mask")
#: The graph's one output.
OUTPUT_NAME = "logits"

# protobuf's limit on one serialised ModelProto; larger weights go to external data.
_PROTOBUF_LIMIT_BYTES = 2**31
# Room left under the limit for the graph itself (nodes, shapes, names).
_GRAPH_HEADROOM_BYTES = 64 * 2**20


def _label_ids(label_token_ids: tuple[int, int], vocab_size: int) -> tuple[int, int]:
    ids = tuple(int(token) for token in label_token_ids)
    if len(ids) != 2 or len(set(ids)) != 2:
        raise ExportError(f"label_token_ids must be two distinct token ids, got {label_token_ids!r}")
    for token in ids:
        if not 0 <= token < vocab_size:
            raise ExportError(f"label token id {token} is outside the model's vocabulary (size {vocab_size})")
    return ids[0], ids[1]


def _label_head(torch_model: Any, label_token_ids: tuple[int, int], decoder_start_token_id: int) -> "torch.nn.Module":
    """Wrap ``torch_model`` as ``(input_ids, attention_mask) -> (batch, 2)`` label-token logits."""
    import torch

    class LabelTokenHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = torch_model
            self.register_buffer("label_ids", torch.tensor(label_token_ids, dtype=torch.long), persistent=False)

        def forward(self, input_ids: "torch.Tensor", attention_mask: "torch.Tensor") -> "torch.Tensor":
            # One start token per row, shaped from input_ids so the batch axis stays dynamic.
            start = torch.zeros_like(input_ids[:, :1]) + decoder_start_token_id
            output = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                decoder_input_ids=start,
                use_cache=False,
                return_dict=True,
            )
            return output.logits[:, 0, :].index_select(-1, self.label_ids)

    return LabelTokenHead().eval()


def reference_label_logits(
    torch_model: Any,
    input_ids: Any,
    attention_mask: Any,
    label_token_ids: tuple[int, int] = DEFAULT_LABEL_TOKEN_IDS,
    decoder_start_token_id: int = 0,
) -> "np.ndarray":
    """The label-token logits of a T5 grounding checker, computed with plain transformers.

    Runs ``torch_model(input_ids, attention_mask, decoder_input_ids=[[start]] *
    batch)`` (as MiniCheck's ``inference.py`` does) and returns
    ``logits[:, 0, label_token_ids]``.

    Args:
        torch_model: a ``T5ForConditionalGeneration`` (put in eval mode here).
        input_ids: int token ids, shape ``(batch, sequence)`` (numpy array,
            torch tensor or nested lists).
        attention_mask: 1 for tokens, 0 for padding, same shape.
        label_token_ids: the (unsupported, supported) token ids.
        decoder_start_token_id: the decoder's first token (T5: 0, ``<pad>``).

    Returns:
        float32 array of shape ``(batch, 2)``.
    """
    import numpy as np
    import torch

    ids = torch.as_tensor(np.asarray(input_ids), dtype=torch.long)
    mask = torch.as_tensor(np.asarray(attention_mask), dtype=torch.long)
    start = torch.full((ids.shape[0], 1), int(decoder_start_token_id), dtype=torch.long)
    torch_model.eval()
    with torch.no_grad():
        logits = torch_model(
            input_ids=ids, attention_mask=mask, decoder_input_ids=start, use_cache=False, return_dict=True
        ).logits
    chosen = logits[:, 0, list(label_token_ids)]
    return np.asarray(chosen.to(torch.float32).numpy(), dtype=np.float32)


def _weight_bytes(torch_model: Any) -> int:
    tensors = {id(t): t for t in list(torch_model.parameters()) + list(torch_model.buffers())}
    return sum(int(t.numel()) * int(t.element_size()) for t in tensors.values())


def _check_graph(path: Path, vocab_size: int) -> None:
    """Open ``path`` in onnxruntime and run a padded batch of 3 (a batch and length unlike the trace's)."""
    import numpy as np
    import onnxruntime as ort  # type: ignore[import-untyped]

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = tuple(entry.name for entry in session.get_inputs())
    outputs = tuple(entry.name for entry in session.get_outputs())
    if inputs != INPUT_NAMES or outputs != (OUTPUT_NAME,):
        raise ExportError(
            f"{path.name}: inputs {inputs}, outputs {outputs}; expected {INPUT_NAMES}, ({OUTPUT_NAME!r},)"
        )
    ids = (np.arange(15, dtype=np.int64).reshape(3, 5) % max(vocab_size - 3, 1)) + 3
    mask = np.ones_like(ids)
    mask[1, 3:] = 0
    ids[1, 3:] = 0
    (result,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
    if result.shape != (3, 2) or result.dtype != np.float32 or not np.isfinite(result).all():
        finite = bool(np.isfinite(result).all())
        raise ExportError(f"{path.name}: logits {result.dtype} {result.shape} (finite: {finite}), not float32 (3, 2)")


def export_label_token_graph(
    torch_model: Any,
    output: Path,
    *,
    label_token_ids: tuple[int, int] = DEFAULT_LABEL_TOKEN_IDS,
    decoder_start_token_id: int = 0,
    opset: Optional[int] = None,
) -> Path:
    """Export a T5 grounding checker as one graph: encoder, one decoder step, label-token logits.

    The graph takes ``input_ids`` and ``attention_mask`` (int64, ``(batch,
    sequence)``, both dynamic) and returns ``logits`` (float32, ``(batch,
    2)``) = ``lm_logits[:, 0, label_token_ids]`` with
    ``decoder_input_ids = [[decoder_start_token_id]]`` per row; see
    :func:`reference_label_logits` for the same numbers in PyTorch. The export
    is traced with torch's TorchScript exporter (``dynamo=False``,
    ``dynamic_axes``), then opened in onnxruntime and run on a padded batch of
    3 as a smoke check (parity is the caller's gate).

    When the model's weights exceed 2 GB (real Flan-T5-Large in float32), the
    weights go to ONNX external data in one file, ``output.name + ".data"``
    (``model.onnx.data``) beside ``output``; the runtime must then load the
    graph from its path in that directory (not from bytes), so onnxruntime
    finds the data file.

    Args:
        torch_model: a loaded float32 ``T5ForConditionalGeneration`` (put in eval mode).
        output: the ``.onnx`` path to write (its directory must exist; a
            scratch directory beside it is used and removed).
        label_token_ids: the (unsupported, supported) token ids (MiniCheck: 3, 209).
        decoder_start_token_id: the decoder's first token (T5: 0).
        opset: ONNX opset (``None``: :data:`DEFAULT_OPSET`).

    Returns:
        ``output``.

    Raises:
        ExportError: bad label token ids, the trace or export failed, or the
            written graph does not load and run in onnxruntime (one-line message).
    """
    import torch

    output = Path(output)
    vocab_size = int(getattr(torch_model.config, "vocab_size", 0))
    label_ids = _label_ids(label_token_ids, vocab_size)
    opset_version = DEFAULT_OPSET if opset is None else int(opset)
    large = _weight_bytes(torch_model) > _PROTOBUF_LIMIT_BYTES - _GRAPH_HEADROOM_BYTES
    data_name = output.name + ".data"
    scratch = output.parent / f".{output.name}.label-token-export"
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        scratch.mkdir(parents=True)
        traced = scratch / output.name
        torch_model.eval()
        head = _label_head(torch_model, label_ids, int(decoder_start_token_id))
        sample_ids = torch.tensor([[5, 6, 7, 8, 9, 1, 0], [10, 11, 12, 13, 1, 0, 0]], dtype=torch.long) % vocab_size
        sample_mask = (torch.arange(7).unsqueeze(0) < torch.tensor([[6], [5]])).long()
        with torch.no_grad(), warnings.catch_warnings():
            # The trace's one Python branch on a tensor is T5's decoder causal mask
            # (``sequence_length != 1``), and the decoder length here is always 1.
            warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
            warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX", category=DeprecationWarning)
            torch.onnx.export(
                head,
                (sample_ids, sample_mask),
                str(traced),
                input_names=list(INPUT_NAMES),
                output_names=[OUTPUT_NAME],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "sequence"},
                    "attention_mask": {0: "batch", 1: "sequence"},
                    OUTPUT_NAME: {0: "batch"},
                },
                opset_version=opset_version,
                do_constant_folding=True,
                dynamo=False,
            )
        if not traced.is_file():
            raise ExportError(f"torch.onnx.export wrote no {traced.name}")
        for stale in (output, output.parent / data_name):
            stale.unlink(missing_ok=True)
        if large:
            import onnx

            proto = onnx.load(str(traced), load_external_data=True)
            onnx.save_model(
                proto,
                str(output),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=data_name,
                size_threshold=1024,
            )
        else:
            shutil.move(str(traced), str(output))
        _check_graph(output, vocab_size)
    except Exception as exc:  # torch.onnx, onnx and onnxruntime raise many types
        for partial in (output, output.parent / data_name):
            partial.unlink(missing_ok=True)
        if isinstance(exc, ExportError):
            raise
        raise ExportError(f"label-token graph export of {output.name} failed: {one_line(exc)}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return output

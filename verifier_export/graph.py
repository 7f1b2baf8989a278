"""The ONNX graph behind the golden parity gate: span-sliced attention where it applies, else stock.

:func:`export_gated` exports ``model.onnx`` and runs the parity gate
(:func:`verifier_export.parity.run_parity`). With ``attention="span"`` (the
default of ``python -m export``) a DeBERTa-v2/v3 model with shared relative
attention keys is traced with
:func:`verifier_export.fast_attention.span_sliced_attention`, whose graph
computes the relative-position bias over only the buckets a sequence can use
(the same numbers; faster, see bench/RESULTS.md). Any other architecture is
exported stock. If the span graph misses the gate, the stock graph is
exported and gated instead, and the result says so. The attention that was
exported is recorded in the manifest (``Manifest.attention``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from .errors import ExportError
from .onnx import Attention, export_onnx, onnx_graph_info
from .parity import ParityResult

__all__ = ["GatedGraph", "span_applies", "export_gated"]


@dataclass(frozen=True)
class GatedGraph:
    """What :func:`export_gated` produced.

    Attributes:
        path: the exported ``model.onnx`` (it passed the gate).
        attention: the attention the graph computes (``"span"`` or ``"stock"``).
        parity: the passing gate's result.
        inputs, opset: the graph's input names and opset.
        note: why the requested attention was not used (empty when it was).
    """

    path: Path
    attention: Attention
    parity: ParityResult
    inputs: tuple[str, ...]
    opset: int
    note: str = ""


def span_applies(config: dict[str, Any]) -> bool:
    """Whether span-sliced attention changes this model's graph: DeBERTa-v2/v3 with relative
    attention, shared attention keys and c2p or p2c position attention (its ``config.json``)."""
    kinds = config.get("pos_att_type") or []
    if isinstance(kinds, str):
        kinds = [part.strip() for part in kinds.split("|")]
    return (
        config.get("model_type") == "deberta-v2"
        and bool(config.get("relative_attention"))
        and bool(config.get("share_att_key"))
        and bool({"c2p", "p2c"} & set(kinds))
    )


def export_gated(
    torch_model: Any,
    path: Path,
    *,
    config: dict[str, Any],
    attention: Attention,
    opset: Optional[int],
    gate: Callable[[Path, Sequence[str]], ParityResult],
    onnx_hook: Optional[Callable[[Path], None]] = None,
    progress: Optional[Callable[[str], None]] = None,
) -> GatedGraph:
    """Export ``model.onnx`` with ``attention`` where it applies and gate it; fall back to stock once.

    Args:
        torch_model: the float32 PyTorch classifier.
        path: where ``model.onnx`` goes.
        config: the source's ``config.json`` (decides whether span applies).
        attention: ``"span"`` (where it applies) or ``"stock"``.
        opset: ONNX opset (``None``: optimum's).
        gate: ``gate(onnx_path, inputs) -> ParityResult`` (a :func:`run_parity` call).
        onnx_hook: called with each exported file before its gate (tests perturb it).
        progress: called with a line as each export starts.

    Raises:
        ParityError: the stock graph misses the gate (after a span fallback too).
        ExportError: the graph has no ``logits`` output, or the export failed.
    """
    wanted: Attention = "span" if attention == "span" and span_applies(config) else "stock"
    note = ""
    while True:
        if progress is not None:
            progress(f"exporting {path.name} with {wanted} attention (optimum-onnx, opset {opset or 'default'})")
        onnx_path = export_onnx(torch_model, path, opset=opset, attention=wanted)
        if onnx_hook is not None:
            onnx_hook(onnx_path)
        inputs, outputs, graph_opset = onnx_graph_info(onnx_path)
        if "logits" not in outputs:
            raise ExportError(f"{onnx_path}: the graph has no 'logits' output (outputs: {list(outputs)})")
        parity = gate(onnx_path, inputs)
        if parity.passed or wanted == "stock":
            parity.raise_if_failed()
            return GatedGraph(onnx_path, wanted, parity, tuple(inputs), graph_opset, note)
        note = (
            f"span-sliced attention missed the parity gate ({parity.failures[0]}); "
            "exported the stock attention instead"
        )
        wanted = "stock"


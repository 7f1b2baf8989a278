"""Which gated variant of a model directory runs fastest on this CPU, and which can run here at all.

The ranking is measured, not derived: per-batch times of DeBERTa-v3-base (16 x 96
tokens, interleaved in one process) on the CPU kinds this project runs on, in
docs/performance.md (its section on each CPU kind, from "Which variant on which CPU" on):

- AVX512-BF16 without AMX: OpenVINO NNCF int8 (``ov-int8``) clearly ahead of bf16,
  onnxruntime dynamic int8 slightly ahead -> ``ov-int8``, ``int8``, ``bf16``;
- AMX: bf16 on the tiles as fast as ``ov-int8`` (whose quantise and bias steps eat
  its faster int8 matmuls) with a quarter of its error, dynamic int8 well behind ->
  ``bf16``, ``ov-int8``, ``int8``;
- otherwise: ``int8`` (VNNI or AVX2 integer dot products), then float32; on an AVX2-only CPU
  OpenVINO float32 and NNCF int8 at float32 precision were no faster than onnxruntime float32.

``optimized`` is float32 re-arranged (the same arithmetic, a faster load), so it
ranks with float32. :func:`runnable_variants` says why a recorded variant cannot
run here (OpenVINO missing, no bf16 in this CPU).
"""

from __future__ import annotations

from typing import Optional

from .manifest import Manifest, ParityReport
from .ov_session import CpuCapabilities

__all__ = ["DEFAULT_GATE_BOUNDS", "runnable_variants", "fastest_variant", "loosened_gate"]

#: The exporter's default gate of each variant it builds: (max |Δlogit|, max |Δprob| or ``None``, smallest
#: argmax agreement) against the PyTorch golden logits. ``verifier_export.variants.DEFAULT_GATES`` is made
#: from these (docs/model-directory.md, "Variants"); ``info`` says when a recorded gate was looser.
DEFAULT_GATE_BOUNDS: dict[str, tuple[float, Optional[float], float]] = {
    "optimized": (1e-4, None, 1.0),
    "int8": (0.5, 0.05, 1.0),
    "bf16": (0.25, 0.02, 1.0),
    "ov-int8": (0.5, 0.05, 1.0),
}


def loosened_gate(name: str, parity: ParityReport) -> list[str]:
    """How variant ``name``'s recorded gate (or result) is looser than its default gate (empty: it is not,
    or ``name`` has no default). ``--int8-max-logit-diff 50`` on the smoke model records atol 50."""
    bounds = DEFAULT_GATE_BOUNDS.get(name)
    if bounds is None:
        return []
    atol, prob, agreement = bounds
    found = []
    if parity.atol is None or parity.atol > atol:
        found.append(f"atol {'none' if parity.atol is None else f'{parity.atol:g}'} > default {atol:g}")
    if prob is not None and (parity.max_prob_diff_gate is None or parity.max_prob_diff_gate > prob):
        gate = parity.max_prob_diff_gate
        found.append(f"prob gate {'none' if gate is None else f'{gate:g}'} > default {prob:g}")
    if parity.argmax_agreement < agreement:
        found.append(f"argmax agreement {parity.argmax_agreement:.0%} < default {agreement:.0%}")
    return found


def runnable_variants(manifest: Manifest, capabilities: CpuCapabilities) -> dict[Optional[str], Optional[str]]:
    """Every gated variant of ``manifest`` (``None``: the float32 ``model_file``) -> why it cannot run here (``None``: it can)."""
    result: dict[Optional[str], Optional[str]] = {None: None if manifest.parity.passed else "its parity gate failed"}
    for name, record in sorted(manifest.variants.items()):
        why: Optional[str] = None
        if not record.parity.passed:
            why = "its parity gate failed"
        elif record.runtime == "openvino":
            if capabilities.openvino is None:
                why = "OpenVINO is not installed (the openvino extra)"
            elif record.precision == "bf16" and not capabilities.bf16:
                why = "this CPU has neither AMX-BF16 nor AVX512-BF16"
        result[name] = why
    return result


def fastest_variant(manifest: Manifest, capabilities: CpuCapabilities) -> tuple[Optional[str], str]:
    """The gated variant expected to run fastest here (``None``: the float32 model) and why, in words.

    The order is the module docstring's, from measurements in docs/performance.md.
    """
    usable = {name for name, why in runnable_variants(manifest, capabilities).items() if why is None}
    if capabilities.openvino is None and {"amx_bf16", "avx512_bf16"} & set(capabilities.flags):
        order, reason = ["int8"], (
            "this CPU has bf16 units but OpenVINO is not installed (the openvino extra runs the bf16 and "
            "ov-int8 variants): without it dynamic int8 is fastest, then float32"
        )
    elif "amx_bf16" in capabilities.flags:
        order, reason = ["bf16", "ov-int8", "int8"], (
            "AMX: bf16 on the tiles 4.6x float32, ov-int8 as fast with 4x its error, dynamic int8 2.6x"
        )
    elif capabilities.bf16:
        order, reason = ["ov-int8", "int8", "bf16"], (
            "AVX512-BF16 without AMX: ov-int8 1.5x bf16, dynamic int8 1.1x bf16, bf16 2.4x float32 "
            "(bf16 has the smallest error of the three)"
        )
    else:
        order, reason = ["int8"], "no bf16 here: dynamic int8 is fastest (integer dot products), then float32"
    for name in order:
        if name in usable:
            return name, reason
    if "optimized" in usable:
        return "optimized", reason + "; no faster variant is recorded: the optimized float32 graph loads fastest"
    return None, reason + "; no faster variant is recorded (python -m export --output DIR --variants ...)"

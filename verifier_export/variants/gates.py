"""What a variant is, the gate it must pass, and the reports :func:`~verifier_export.variants.build_variants` returns.

A :class:`VariantGate` judges a :class:`~verifier.engine.golden.GoldenComparison`
(the variant's logits against the PyTorch float32 golden logits, from
:func:`verifier_export.recheck.compare_golden`) through
:meth:`~verifier.engine.golden.GoldenComparison.failures`, the same collector the
runtime's golden re-check uses: every failure is listed before anyone decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping, Optional, Union

from verifier.engine.choice import DEFAULT_GATE_BOUNDS
from verifier.engine.golden import GoldenComparison
from verifier.engine.manifest import Manifest, ParityReport

__all__ = [
    "VariantName",
    "VARIANT_NAMES",
    "DEFAULT_VARIANT_NAMES",
    "VARIANT_FILES",
    "VARIANT_RUNTIMES",
    "VariantGate",
    "DEFAULT_GATES",
    "VariantOptions",
    "VariantResult",
    "VariantsReport",
]

VariantName = Literal["optimized", "int8", "bf16", "ov-int8"]
#: Variants this package can build, in build order.
VARIANT_NAMES: tuple[VariantName, ...] = ("optimized", "int8", "bf16", "ov-int8")
#: What ``python -m export.variants DIR`` builds without ``--variants`` (``bf16`` and ``ov-int8`` need
#: the ``openvino`` extra and a CPU with AMX-BF16 or AVX512-BF16, so they are built only when asked for).
DEFAULT_VARIANT_NAMES: tuple[VariantName, ...] = ("optimized", "int8")
#: File name of each variant inside the model directory. ``bf16`` is OpenVINO's exported compiled
#: model (``CompiledModel.export_model``), not an ONNX graph.
VARIANT_FILES: Mapping[str, str] = {
    "optimized": "model.optimized.onnx", "int8": "model.int8.onnx", "bf16": "model.bf16.blob", "ov-int8": "model.ov-int8.blob",
}
#: The kernel library that runs each variant (recorded as ``VariantRecord.runtime``).
VARIANT_RUNTIMES: Mapping[str, Literal["onnxruntime", "openvino"]] = {
    "optimized": "onnxruntime", "int8": "onnxruntime", "bf16": "openvino", "ov-int8": "openvino",
}


@dataclass(frozen=True)
class VariantGate:
    """The parity gate a variant must pass against the PyTorch float32 golden logits.

    Attributes:
        max_abs_logit_diff: largest allowed |Δlogit| over every golden pair, alone
            and batched (``None``: not gated). Recorded as the report's ``atol``,
            which the runtime's ``verify_golden`` re-checks.
        max_prob_diff: largest allowed |Δprobability| after softmax (``None``: not
            gated). Recorded as ``max_prob_diff_gate``.
        min_argmax_agreement: smallest allowed fraction of golden pairs whose argmax
            is the same in PyTorch, the variant alone and the variant batched.
            (The runtime's ``verify_golden`` always requires 1.0.)

    Raises:
        ValueError: a bound that is negative, not finite, or an agreement outside [0, 1].
    """

    max_abs_logit_diff: Optional[float] = None
    max_prob_diff: Optional[float] = None
    min_argmax_agreement: float = 1.0

    def __post_init__(self) -> None:
        for name in ("max_abs_logit_diff", "max_prob_diff"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number or None, got {value!r}")
        if not 0.0 <= self.min_argmax_agreement <= 1.0:
            raise ValueError(f"min_argmax_agreement must be in [0, 1], got {self.min_argmax_agreement!r}")

    def failures(self, comparison: GoldenComparison) -> list[str]:
        """Every way ``comparison`` misses this gate (empty when it passes): changed token
        ids, non-finite logits, and each bound (:meth:`verifier.engine.golden.GoldenComparison.failures`)."""
        return comparison.failures(
            atol=self.max_abs_logit_diff,
            max_prob_diff=self.max_prob_diff,
            min_argmax_agreement=self.min_argmax_agreement,
        )

    def judge_recorded(self, parity: ParityReport) -> list[str]:
        """Every way a variant's *recorded* parity misses this gate (empty when it passes).

        A kept variant's file and ``golden.json`` verified against the manifest, so its recorded
        figures are what a new golden run would measure; judging them by the gate asked for now
        keeps a variant recorded under a looser gate from passing a tighter one (issue 34).
        """
        found: list[str] = []
        if not parity.token_ids_identical:
            found.append("tokenizer.json did not give the recorded token ids")
        if self.max_abs_logit_diff is not None and not parity.max_abs_logit_diff <= self.max_abs_logit_diff:
            found.append(f"max |Δlogit| {parity.max_abs_logit_diff:.3g} > atol {self.max_abs_logit_diff:g}")
        if self.max_prob_diff is not None and not parity.max_abs_prob_diff <= self.max_prob_diff:
            found.append(f"max |Δprob| {parity.max_abs_prob_diff:.3g} > {self.max_prob_diff:g}")
        if not parity.argmax_agreement >= self.min_argmax_agreement:
            found.append(f"argmax agreement {parity.argmax_agreement:.1%} < {self.min_argmax_agreement:.1%}")
        return found

    def report(self, comparison: GoldenComparison) -> ParityReport:
        """The manifest's parity report of ``comparison`` judged by this gate (verdict and gate recorded)."""
        return comparison.parity_report(
            passed=not self.failures(comparison), atol=self.max_abs_logit_diff, max_prob_diff_gate=self.max_prob_diff
        )


#: Default gates. ``optimized`` is the same float32 arithmetic re-arranged: it
#: must meet the float32 export gate (1e-4 logits, every argmax). ``int8``
#: starts at 0.05 in probability and 0.5 in logits with every argmax equal;
#: tighten or loosen them from the *real* model's report. ``bf16`` (8 mantissa
#: bits in the MatMuls, float32 accumulation, softmax and LayerNorm) starts at
#: 0.02 in probability and 0.25 in logits, every argmax equal; the seeded tiny
#: test model, whose logits are scaled far from zero, misses it (docs/model-directory.md).
#: ``ov-int8`` (NNCF int8 on OpenVINO) has int8's gate.
#: (The numbers live beside the runtime, :data:`verifier.engine.choice.DEFAULT_GATE_BOUNDS`, so that ``info``
#: can say when a recorded gate was looser.)
DEFAULT_GATES: Mapping[str, VariantGate] = {
    name: VariantGate(max_abs_logit_diff=atol, max_prob_diff=prob, min_argmax_agreement=agreement)
    for name, (atol, prob, agreement) in DEFAULT_GATE_BOUNDS.items()
}


@dataclass(frozen=True)
class VariantOptions:
    """How the variants are made.

    Attributes:
        optimization_level: onnxruntime level for ``optimized``: ``"basic"``,
            ``"extended"`` (default, portable) or ``"all"`` (hardware-specific).
        int8_per_channel: per-output-channel weight scales for ``int8`` (more
            accurate, same speed).
        int8_weight_type: ``"qint8"`` (default; u8 x s8 kernels, VNNI on x86) or ``"quint8"``.
        quantize_embeddings: also quantise the word-embedding Gather in ``int8``
            (embedding rows dequantised at run time): ``True``, ``False``, or
            ``"auto"`` (default): build it with the embeddings quantised and,
            only if that file misses the gate, again without; the manifest's
            description and the report say which. With the embeddings, DeBERTa-v3-base's
            int8 file is 201 MB instead of 497 MB (sentence-transformers' own
            int8 export, which quantises them too: 244 MB) at the same speed
            (interleaved, workloads (c) and (e), within 1.5 %: bench/RESULTS.md).
    """

    optimization_level: Literal["basic", "extended", "all"] = "extended"
    int8_per_channel: bool = True
    int8_weight_type: Literal["qint8", "quint8"] = "qint8"
    quantize_embeddings: Union[bool, Literal["auto"]] = "auto"

    def __post_init__(self) -> None:
        if self.quantize_embeddings not in (True, False, "auto"):
            raise ValueError(f"quantize_embeddings must be True, False or 'auto', got {self.quantize_embeddings!r}")

    def int8_recipes(self) -> "tuple[VariantOptions, ...]":
        """The ``int8`` recipes to try, in order (``"auto"``: embeddings quantised, then not)."""
        from dataclasses import replace

        if self.quantize_embeddings == "auto":
            return (replace(self, quantize_embeddings=True), replace(self, quantize_embeddings=False))
        return (self,)

    def describe(self, name: str) -> str:
        """The manifest description of variant ``name`` made with these options."""
        import onnxruntime

        if name == "optimized":
            return (
                f"float32, onnxruntime {onnxruntime.__version__} offline graph optimisation "
                f"(level {self.optimization_level}) of model.onnx"
            )
        if name == "ov-int8":
            import nncf

            from verifier.engine.ov_session import openvino_version

            return (
                f"int8 (NNCF {nncf.__version__} post-training quantisation of model.onnx, transformer preset, "
                f"calibrated on the golden pairs; the rest bf16) compiled by OpenVINO {openvino_version()}'s CPU "
                "plugin; valid for the CPU and OpenVINO it was compiled for only"
            )
        if name == "bf16":
            from verifier.engine.ov_session import openvino_version

            return (
                f"bf16 (OpenVINO {openvino_version()} CPU plugin, inference precision bf16: MatMuls on AMX or "
                "AVX512-BF16) compiled model of model.onnx; compiled again from model.onnx on another CPU or OpenVINO"
            )
        embeddings = {True: ", word-embedding Gather quantised", False: "", "auto": ", word-embedding Gather quantised if gated"}[
            self.quantize_embeddings
        ]
        scales = "per-channel" if self.int8_per_channel else "per-tensor"
        return (
            f"dynamic int8 (onnxruntime {onnxruntime.__version__} quantize_dynamic: MatMul weights "
            f"{self.int8_weight_type} {scales}, constant-B MatMuls only{embeddings}) of model.onnx "
            "with its constant subgraphs folded in float32 first"
        )


def file_size(size: int) -> str:
    """``size`` bytes for a summary line: ``497 MB``, or ``327 KB`` under 1 MB (it showed as "0 MB").

    Example:
        >>> file_size(327_412), file_size(497_000_000)
        ('327 KB', '497 MB')
    """
    return f"{size / 1e6:.0f} MB" if size >= 1_000_000 else f"{size / 1e3:.0f} KB"


@dataclass(frozen=True)
class VariantResult:
    """One variant after :func:`~verifier_export.variants.build_variants`.

    Attributes:
        name: ``"optimized"``, ``"int8"`` or ``"bf16"``.
        file: file name in the model directory.
        status: ``"built"`` (new or rebuilt), ``"kept"`` (already recorded and
            verified, left alone; with ``failures`` when its recorded parity misses the gate
            asked for now, issue 34) or ``"failed"`` (gate missed; not recorded).
        parity: the parity report against the PyTorch golden logits.
        gate: the gate applied.
        failures: how the gate was missed (empty when it passed).
        size: file size in bytes.
        seconds: time to build and check it.
    """

    name: str
    file: str
    status: Literal["built", "kept", "failed"]
    parity: ParityReport
    gate: VariantGate
    failures: tuple[str, ...] = ()
    size: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for the CLI."""
        p = self.parity
        verdict = "PASS" if not self.failures else "FAIL: " + "; ".join(self.failures)
        return (
            f"{self.name} ({self.file}, {file_size(self.size)}, {self.status}): max |Δlogit| "
            f"{p.max_abs_logit_diff:.3g}, max |Δprob| {p.max_abs_prob_diff:.3g}, argmax agreement "
            f"{p.argmax_agreement:.1%} over {p.pairs} golden pairs -> {verdict}"
        )


@dataclass(frozen=True)
class VariantsReport:
    """What :func:`~verifier_export.variants.build_variants` did."""

    model_dir: Path
    results: tuple[VariantResult, ...]
    manifest: Manifest
    random_weights: bool = False
    notes: tuple[str, ...] = field(default=())

    def summary_lines(self) -> list[str]:
        """Readable summary, random-weights warning first."""
        lines = []
        if self.random_weights:
            lines.append(
                "RANDOM WEIGHTS: these parity figures say nothing about a variant's quality; judge it on the "
                "real model's golden report"
            )
        lines.extend(result.summary() for result in self.results)
        lines.extend(self.notes)
        return lines

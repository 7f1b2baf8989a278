"""What one export run did: :class:`ExportReport` and its summary lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from verifier.engine.manifest import Manifest

from .existing import made_by
from .parity import ParityResult

__all__ = ["ExportReport"]


@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_model` did.

    Attributes:
        status: ``"exported"`` (a new directory was written) or ``"verified"``
            (an existing good directory was checked and left alone).
        output_dir: the model directory.
        manifest: its manifest.
        parity: the gate's full result (``None`` when verified).
        tokenizer_json: ``"copied"`` or ``"converted"`` (``None`` when verified).
        verified_max_abs_logit_diff: when verified, the largest |Δlogit| of
            onnxruntime against the recorded golden logits.
        seconds: wall time of the call.
        attention_note: why span-sliced attention was not used although asked
            for (it missed the gate), else empty.
        pointer: the per-user pointer file that records this default-location
            export (:func:`verifier_export.manifest.record_default`), else ``None``.
        pointer_note: why the pointer could not be written, else empty.
    """

    status: Literal["exported", "verified"]
    output_dir: Path
    manifest: Manifest
    parity: Optional[ParityResult]
    tokenizer_json: Optional[Literal["copied", "converted"]]
    verified_max_abs_logit_diff: Optional[float]
    seconds: float
    attention_note: str = ""
    pointer: Optional[Path] = None
    pointer_note: str = ""

    def summary_lines(self) -> list[str]:
        """Human-readable summary, one fact per line (random weights flagged first)."""
        manifest = self.manifest
        lines: list[str] = []
        if manifest.random_weights:
            lines.append(
                "RANDOM WEIGHTS: seeded test model for plumbing checks and speed figures only; "
                "its outputs mean nothing"
            )
        revision = manifest.resolved_revision or manifest.requested_revision or "unpinned"
        if self.status == "verified":
            lines.append(
                f"verified existing export {self.output_dir} ({manifest.model}@{revision}, {made_by(manifest)}): "
                f"files match "
                f"{len(manifest.files)} manifest records, golden max |Δlogit| "
                f"{self.verified_max_abs_logit_diff:.3g}; nothing to do"
            )
            return lines + self._pointer_lines()
        parity = manifest.parity
        lines.append(f"exported {manifest.model}@{revision} ({manifest.source}) -> {self.output_dir}")
        lines.append(
            f"parity: {parity.pairs} golden pairs, single and batched: max |Δlogit| "
            f"{parity.max_abs_logit_diff:.3g} <= atol {parity.atol:g}, argmax agreement "
            f"{parity.argmax_agreement:.0%}, token ids identical: {parity.token_ids_identical}"
        )
        lines.append(
            f"labels {', '.join(manifest.labels)}; inputs {', '.join(manifest.inputs)}; "
            f"opset {manifest.opset}; max length {manifest.max_length}; tokenizer.json {self.tokenizer_json}; "
            f"attention {manifest.attention or 'stock'}; {self.seconds:.1f} s"
        )
        if self.attention_note:
            lines.append(f"note: {self.attention_note}")
        return lines + self._pointer_lines()

    def _pointer_lines(self) -> list[str]:
        if self.pointer is not None:
            return [f"recorded for this user: {self.pointer} -> {self.output_dir.resolve()} "
                    "(found from any working directory)"]
        return [f"note: {self.pointer_note}"] if self.pointer_note else []

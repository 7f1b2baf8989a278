"""Human-readable text of the command line: a result (``verify --claim``), a manifest (``info``), the run summary.

JSON output is never rendered here: ``verify`` writes each result's
``model_dump_json()`` unchanged, and ``info --json`` the manifest's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from ..engine.choice import loosened_gate
from ..engine.manifest import Manifest
from ..engine.ov_session import CPU_FLAGS, CpuCapabilities
from ..messages import printable
from ..types import ClaimEvidence, ClaimVerification, ClaimVerificationStatus

__all__ = ["RunSummary", "format_result", "format_manifest", "format_engines", "format_summary", "identity_summary"]

_STATUS_ORDER = tuple(ClaimVerificationStatus)


@dataclass
class RunSummary:
    """What a ``verify INPUT`` run did: its results, wall time, and the verifier's stats."""

    results: list[ClaimVerification] = field(default_factory=list)
    elapsed: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)


def _fmt_probs(entailment: Optional[float], contradiction: Optional[float], neutral: Optional[float]) -> str:
    if entailment is None or contradiction is None or neutral is None:
        return f"{'-':>10}  {'-':>13}  {'-':>7}"
    return f"{entailment:>10.3f}  {contradiction:>13.3f}  {neutral:>7.3f}"


def format_result(result: ClaimVerification, evidence: Sequence[ClaimEvidence]) -> str:
    """A human-readable report of one result (used by the one-off ``--claim`` mode)."""
    refs = {e.memory_id: e.reference for e in evidence}

    def names(ids: Sequence[uuid.UUID]) -> str:
        return "+".join(refs.get(memory_id, str(memory_id)) for memory_id in ids)

    lines = [f"claim:   {result.claim}", f"status:  {result.status.value}"]
    if result.supporting_group:
        lines.append(f"supported by:  {names(result.supporting_group)}  ({result.supporting_basis})")
    if result.refuting_group:
        lines.append(f"refuted by:    {names(result.refuting_group)}  ({result.refuting_basis})")
    if evidence:
        lines.append("evidence:")
        width = max(4, max(len(e.reference) for e in evidence))
        for e in evidence:
            first, *rest = e.text.splitlines() or [""]
            lines.append(f"  {e.reference:<{width}} {first}")
            lines += [f"  {'':<{width}} {line}" for line in rest]
    if result.group_scores:
        width = max(5, max(len("+".join(score.references)) for score in result.group_scores))
        lines.append(f"groups scored:\n  {'group':<{width}}  entailment  contradiction  neutral")
        for score in result.group_scores:
            marks = []
            if score.memory_ids == result.supporting_group and result.supporting_basis == "model_entailment":
                marks.append("supports")
            if score.memory_ids == result.refuting_group:
                marks.append("refutes")
            mark = f"  <- {', '.join(marks)}" if marks else ""
            probs = _fmt_probs(score.entailment, score.contradiction, score.neutral)
            lines.append(f"  {'+'.join(score.references):<{width}}  {probs}{mark}")
    if result.localized_assessments:
        lines.append("localized rechecks (kept segments per passage):")
        for assessment in result.localized_assessments:
            kept = "; ".join(
                f"{ref} {','.join(map(str, numbers)) or 'none'}"
                for ref, numbers in zip(assessment.references, assessment.included_segment_numbers)
            )
            if assessment.model_called:
                probs = _fmt_probs(assessment.entailment, assessment.contradiction, assessment.neutral).strip()
                detail = f"scored: entailment/contradiction/neutral {' / '.join(probs.split())}"
            else:
                detail = "no model call (nothing kept)"
            lines.append(f"  {'+'.join(assessment.references)}: segments {kept}; {detail}")
    lines.append(f"limitations:  {', '.join(result.limitations) if result.limitations else 'none'}")
    resolved = f" (resolved {result.resolved_revision})" if result.resolved_revision else ""
    lines.append(f"model:   {result.model} @ {result.requested_revision}{resolved}")
    lines.append(f"result_sha256: {result.result_sha256}")
    return printable("\n".join(lines))  # the claim and passages are the user's: no terminal controls


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def identity_summary(manifest: Manifest) -> str:
    """How the directory's model identity was established, in a few words (``info`` and ``verify``'s summary).

    ``stated`` means the user's word only (a plain folder exported with
    ``--model-id``): nothing checked which commit the files came from.
    """
    record = manifest.identity
    if record is None:
        text = f"{manifest.model}: not recorded ({manifest.source} export)"
    else:
        claimed = f"{record.claimed_model}@{record.claimed_revision}" if record.claimed_revision else record.claimed_model
        how = "stated (the user's word; no commit was checked)" if record.established_by == "stated" else record.established_by
        text = f"{claimed}: {how}"
    return text + ("; RANDOM WEIGHTS (smoke/test model)" if manifest.random_weights else "")


def format_manifest(model_dir: Path, manifest: Manifest) -> str:
    """The manifest in readable form (``info``)."""
    lines = []
    if manifest.random_weights:
        lines.append("WARNING: random weights (smoke/test model): its decisions are meaningless")
    rows = [
        ("model directory", str(model_dir)),
        ("model", manifest.model),
        ("requested revision", manifest.requested_revision or "-"),
        ("resolved revision", manifest.resolved_revision or "none resolved (results record none)"),
        ("identity", identity_summary(manifest)),
        ("source", manifest.source),
        ("random weights", "yes" if manifest.random_weights else "no"),
        ("model file", manifest.model_file),
        ("labels", ", ".join(f"{index}={label}" for index, label in enumerate(manifest.labels))),
        ("inputs", ", ".join(manifest.inputs)),
        ("max length", f"{manifest.max_length} tokens"),
        ("opset", str(manifest.opset)),
        ("pad token id", str(manifest.pad_token_id)),
        ("created", manifest.created_at),
    ]
    if manifest.grounding is not None:  # the second model kind (docs/grounding.md)
        rows[1:1] = [("kind", f"grounding ({manifest.grounding.architecture}; support column "
                               f"{manifest.grounding.support_column}; use GroundingChecker or ground)"),
                     ("template", repr(manifest.grounding.template))]
    width = max(len(name) for name, _ in rows)
    lines += [f"{name:<{width}}  {value}" for name, value in rows]

    def parity(report: Any, indent: str) -> list[str]:
        gates = []
        if report.atol is not None:
            gates.append(f"atol {report.atol:g}")
        if report.max_prob_diff_gate is not None:
            gates.append(f"prob gate {report.max_prob_diff_gate:g}")
        return [
            f"{indent}{'PASSED' if report.passed else 'FAILED'} over {report.pairs} golden pairs"
            + (f" ({', '.join(gates)})" if gates else ""),
            f"{indent}max |logit diff| {report.max_abs_logit_diff:.3g}, max |prob diff| {report.max_abs_prob_diff:.3g}",
            f"{indent}argmax agreement {report.argmax_agreement:.1%}, "
            f"token ids identical: {'yes' if report.token_ids_identical else 'NO'}",
        ]

    lines.append("parity (onnxruntime vs PyTorch):")
    lines += parity(manifest.parity, "  ")
    lines.append("files:")
    name_width = max((len(name) for name in manifest.files), default=4)
    for name, record in sorted(manifest.files.items()):
        lines.append(f"  {name:<{name_width}}  {_size(record.size):>10}  sha256 {record.sha256}")
    if manifest.variants:
        lines.append("variants:")
        for name, variant in sorted(manifest.variants.items()):
            lines.append(f"  {name}: {variant.file} ({variant.description})")
            if variant.runtime != "onnxruntime":
                made = variant.compiled_for or {}
                lines.append(
                    f"    runs on {variant.runtime} at {variant.precision or 'its default precision'}; compiled for "
                    f"OpenVINO {made.get('openvino', '?')}, CPU flags {made.get('cpu_flags') or 'none'}; "
                    f"graph {variant.source_file or 'none'}"
                )
            lines += parity(variant.parity, "    ")
            loose = loosened_gate(name, variant.parity)
            if loose:
                lines.append(f"    gate loosened past the default ({', '.join(loose)}): not gated for real use")
    if manifest.versions:
        lines.append("versions:  " + ", ".join(f"{k} {v}" for k, v in sorted(manifest.versions.items())))
    return "\n".join(lines)


def format_cpu(manifest: Optional[Manifest], capabilities: CpuCapabilities) -> str:
    """What this CPU offers and, with a ``manifest``, which of its variants run here and which is
    expected fastest (``info``; without a model directory only the CPU's own lines)."""
    from ..engine.choice import fastest_variant, runnable_variants

    flags = ", ".join(capabilities.flags) or "none of " + ", ".join(CPU_FLAGS)
    openvino = (
        f"OpenVINO {capabilities.openvino} (CPU plugin: {', '.join(capabilities.openvino_capabilities) or '?'})"
        if capabilities.openvino else "OpenVINO not installed (the openvino extra runs the bf16 variant)"
    )
    lines = [
        "this CPU:",
        f"  {capabilities.model_name or 'unknown model'}; matrix units: {capabilities.matrix_units}",
        f"  flags: {flags}",
        f"  {openvino}",
    ]
    if manifest is None:
        return "\n".join(lines)
    for name, why in runnable_variants(manifest, capabilities).items():
        lines.append(f"  {name or 'float32 (no variant)'}: {'runs here' if why is None else 'cannot run here: ' + why}")
    best, reason = fastest_variant(manifest, capabilities)
    loose = loosened_gate(best, manifest.variants[best].parity) if best is not None else []
    if loose:
        lines.append(f"  fastest variant here: {best}, but its gate was loosened past the default ({', '.join(loose)}), "
                     f"so it is not a gated choice ({reason}; docs/performance.md)")
    else:
        lines.append(f"  fastest gated variant here: {best or 'float32 (no variant)'} ({reason}; docs/performance.md)")
    return "\n".join(lines)


def format_engines(model_dir: Path, manifest: Manifest, options: Any) -> str:
    """The engine identity each entry of the directory gives with ``options`` (``info``; docs/audit.md,
    "Engine identity"): what a record scored by it names."""
    from ..engine.engine_identity import identity_for_options
    from ..types import ClaimVerificationError

    lines = [f"engines (padding {options.padding}, optimisation level {options.graph_optimization_level}; "
             "a record names the one that scored it):"]
    for variant in (None, *sorted(manifest.variants)):
        try:
            identity = identity_for_options(model_dir, options.model_copy(update={"variant": variant}))
        except ClaimVerificationError as exc:
            lines.append(f"  {variant or 'float32 export'}: cannot be named here: {exc}")
            continue
        lines.append(f"  {variant or 'float32 export'}: engine {identity.digest} ({identity.precision} on "
                     f"{identity.runtime} {identity.runtime_version})")
    return "\n".join(lines)


def format_summary(run: RunSummary, *, skipped: int) -> str:
    """The stderr summary table: counts per status, total, skipped rows, claims/s, model work, elapsed."""
    counts = {status: 0 for status in _STATUS_ORDER}
    for result in run.results:
        counts[result.status] += 1
    total = len(run.results)
    rate = total / run.elapsed if run.elapsed > 0 else float("inf")
    rows: list[tuple[str, str]] = [(status.value, str(counts[status])) for status in _STATUS_ORDER]
    rows.append(("total", str(total)))
    if skipped:
        rows.append(("skipped (invalid)", str(skipped)))
    rows.append(("claims/s", f"{rate:.1f}" if rate != float("inf") else "-"))
    # With a score store the scorer answers from the store first: its calls and pairs are not model work.
    bypassed = str(run.stats.get("score_cache", "")).startswith("bypassed")  # every pair ran; nothing stored
    stored = "score_cache" in run.stats and not bypassed
    rows.append(("scorer calls" if stored else "model calls", str(run.stats.get("model_calls", "-"))))
    rows.append(("pairs asked" if stored else "pairs scored", str(run.stats.get("pairs_scored", "-"))))
    if "padding_overhead" in run.stats:
        ran_nothing = stored and int(run.stats.get("store_misses", 0) or 0) == 0  # every pair came from the store
        rows.append(("padding overhead", "-" if ran_nothing else f"{float(run.stats['padding_overhead']):.2f}x"))
    if stored:
        rows.append(("store hits", str(run.stats.get("store_hits", 0))))
        rows.append(("store misses", str(run.stats.get("store_misses", 0))))
        rows.append(("store rejected", str(run.stats.get("store_rejected", 0))))
    rows.append(("elapsed", f"{run.elapsed:.2f} s"))
    width = max(len(name) for name, _ in rows)
    value_width = max(len(value) for _, value in rows)
    lines = [f"{'status':<{width}}  {'count':>{value_width}}"]
    lines += [f"{name:<{width}}  {value:>{value_width}}" for name, value in rows]
    if "identity" in run.stats:
        lines.append(f"model identity: {run.stats['identity']}")
    if run.stats.get("engine"):
        lines.append(f"engine: {run.stats['engine']}")
    if bypassed:
        lines.append(f"score store: {run.stats['score_cache']} (the model ran every pair)")
    elif stored:
        lines.append(f"score store: {run.stats['score_cache']} (the model ran only the store misses)")
        hits = int(run.stats.get("store_hits", 0) or 0)
        lines.append(f"scores from the store: {hits} distinct pair{'' if hits == 1 else 's'} (stored by an earlier run, "
                     "or earlier in this one; not run by the model again)")
    return "\n".join(lines)

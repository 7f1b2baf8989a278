"""Building the variants: write each file, gate it against ``golden.json``, record them all or none.

Writes are atomic: a variant is written to a hidden temporary file in the
directory, gated, renamed into place, and ``manifest.json`` is rewritten last
(temporary file + ``os.replace``). A reader sees the old manifest or the new
one. Do not run two builds on one directory at once.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from verifier.engine.manifest import (
    FileRecord,
    Manifest,
    ParityReport,
    VariantRecord,
    sha256_file,
)
from verifier.engine.session import create_session, session_options

from ..errors import ExportError, ParityError
from ..manifest import open_export_dir, verify_export_dir, write_manifest
from ..recheck import compare_golden
from .gates import (
    DEFAULT_GATES,
    DEFAULT_VARIANT_NAMES,
    VARIANT_FILES,
    VARIANT_NAMES,
    VARIANT_RUNTIMES,
    VariantGate,
    VariantOptions,
    VariantResult,
    VariantsReport,
)

__all__ = ["variant_parity", "build_variants"]


def variant_parity(model_dir: Path, onnx_file: str, *, manifest: Optional[Manifest] = None) -> ParityReport:
    """Score ``golden.json`` with ``onnx_file`` (alone and batched) against the PyTorch float32 logits.

    Args:
        model_dir: an exported model directory.
        onnx_file: the ONNX file (relative to ``model_dir``) to check.
        manifest: the directory's verified manifest (verified here when ``None``).

    Returns:
        A :class:`~verifier.engine.manifest.ParityReport` with ``passed=True`` and no
        gate fields; :class:`~verifier_export.variants.VariantGate` judges it in
        :func:`build_variants`.

    Raises:
        ManifestError: ``golden.json`` missing or malformed.
        ExportError: onnxruntime cannot load or run the file.
    """
    model_dir = Path(model_dir)
    manifest = manifest if manifest is not None else verify_export_dir(model_dir)
    comparison, _ = compare_golden(model_dir, onnx_file, manifest)
    return comparison.parity_report(passed=True)


def _write_optimized(source: Path, target: Path, level: str) -> None:
    settings = session_options(graph_optimization_level=level, optimized_model_filepath=target)
    create_session(source, settings, where=str(source), error=ExportError)  # writes ``target`` as it loads
    if not target.is_file():
        raise ExportError(f"onnxruntime did not write the optimised model {target}")


def _write_int8(source: Path, target: Path, options: VariantOptions) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if options.quantize_embeddings not in (True, False):
        raise ExportError(f"an int8 recipe needs quantize_embeddings True or False, got {options.quantize_embeddings!r}")
    op_types = ["MatMul", "Gather"] if options.quantize_embeddings else ["MatMul"]
    weight_type = QuantType.QInt8 if options.int8_weight_type == "qint8" else QuantType.QUInt8
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs a pre-processing advisory on the root logger
    try:
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".int8-folded-") as scratch:
            # Constant subgraphs (DeBERTa's relative-position projections) are folded in float32 first:
            # left quantised, each session would fold them through the int8 kernels at load, which
            # saturate on CPUs without VNNI (docs/performance.md, "int8 on CPUs without VNNI").
            folded = Path(scratch) / "folded.onnx"
            _write_optimized(source, folded, "basic")
            quantize_dynamic(
                folded,
                target,
                op_types_to_quantize=op_types,
                per_channel=options.int8_per_channel,
                weight_type=weight_type,
                extra_options={"MatMulConstBOnly": True},
            )
    finally:
        root.setLevel(level)


def _write_bf16(source: Path, target: Path) -> None:
    from verifier.engine.ov_session import compile_onnx, export_compiled

    session = compile_onnx(source, precision="bf16", where=str(source))
    with open(target, "wb") as handle:
        handle.write(export_compiled(session))


def _write_ov_int8(source: Path, target: Path) -> None:
    from verifier.engine.manifest import read_manifest
    from verifier.engine.ov_session import export_compiled

    from .openvino_int8 import quantize_int8

    session = quantize_int8(source, source.parent, read_manifest(source.parent))
    with open(target, "wb") as handle:
        handle.write(export_compiled(session))


def _gate_session(name: str, temporary: Path) -> Optional[object]:
    """The session the gate scores ``temporary`` with: what the runtime will run (``None``: onnxruntime's)."""
    if VARIANT_RUNTIMES[name] != "openvino":
        return None
    from verifier.engine.ov_session import import_compiled

    try:
        return import_compiled(temporary, precision="bf16", where=str(temporary))
    except Exception as exc:  # ClaimVerificationError from the engine: the export's own error type here
        raise ExportError(f"gating variant {name!r}: {exc}") from exc


def _record_fields(name: str, manifest: Manifest) -> dict[str, object]:
    """The manifest fields of variant ``name`` beyond file, description and parity."""
    if VARIANT_RUNTIMES[name] != "openvino":
        return {}
    from verifier.engine.ov_session import compiled_fingerprint, cpu_capabilities

    return {
        "runtime": "openvino", "precision": "bf16",
        # ov-int8's quantized graph exists only in the compiled file: nothing to compile elsewhere
        "source_file": manifest.model_file if name == "bf16" else None,
        "compiled_for": compiled_fingerprint(cpu_capabilities()),
    }


def _build_file(name: str, source: Path, target: Path, options: VariantOptions) -> None:
    try:
        if name == "optimized":
            _write_optimized(source, target, options.optimization_level)
        elif name == "bf16":
            _write_bf16(source, target)
        elif name == "ov-int8":
            _write_ov_int8(source, target)
        else:
            _write_int8(source, target, options)
    except Exception as exc:  # onnxruntime / onnx / OpenVINO raise assorted Exception subclasses
        detail = str(exc) if isinstance(exc, ExportError) else f"{type(exc).__name__}: {exc}"
        if name == "bf16" and "If operation with dynamic rank" in detail:
            detail += (
                " (DeBERTa's stock graph has a dynamic-rank If that OpenVINO's CPU plugin cannot compile: "
                "export with --attention span, the default)"
            )
        raise ExportError(f"building variant {name!r} from {source} failed: {detail}") from exc


def _kept(model_dir: Path, manifest: Manifest, name: str, gate: VariantGate, started: float) -> Optional[VariantResult]:
    """The recorded ``name`` as a ``"kept"`` result, when it is recorded (its file was verified with the rest),
    judged by the gate asked for now: with ``failures`` when its recorded parity misses that gate (issue 34: a
    variant recorded under a looser gate printed PASS under a tighter one)."""
    record = manifest.variants.get(name)
    if record is None or record.file not in manifest.files:
        return None
    failures = gate.judge_recorded(record.parity)
    if failures:
        failures = [*failures, "recorded earlier under a looser gate and left recorded; --overwrite-variants rebuilds it"]
    return VariantResult(
        name=name, file=record.file, status="kept", parity=record.parity, gate=gate,
        failures=tuple(failures), size=(model_dir / record.file).stat().st_size, seconds=time.perf_counter() - started,
    )


def _record(
    model_dir: Path, manifest: Manifest, source: Path, built: Sequence[tuple[VariantResult, Path]],
    options: Mapping[str, VariantOptions],
) -> Manifest:
    """Move the built files into place and rewrite the manifest with them (last)."""
    files = dict(manifest.files)
    variants = dict(manifest.variants)
    for result, temporary in built:
        final = model_dir / result.file
        os.replace(temporary, final)
        shutil.copymode(source, final)  # mkstemp made it 0600; match model.onnx
        files[result.file] = FileRecord(sha256=sha256_file(final), size=final.stat().st_size)
        variants[result.name] = VariantRecord.model_validate({
            "file": result.file, "description": options[result.name].describe(result.name), "parity": result.parity,
            **_record_fields(result.name, manifest),
        })
    updated = Manifest.model_validate({**manifest.model_dump(), "files": files, "variants": variants})
    write_manifest(model_dir, updated)
    return updated


def build_variants(
    model_dir: Path,
    names: Sequence[str] = DEFAULT_VARIANT_NAMES,
    *,
    gates: Optional[Mapping[str, VariantGate]] = None,
    options: VariantOptions = VariantOptions(),
    overwrite: bool = False,
    progress: Optional[Callable[[str], None]] = None,
) -> VariantsReport:
    """Build ONNX variants into an exported model directory and record them in its manifest.

    Args:
        model_dir: a directory written by ``python -m export`` (it must verify,
            :func:`verifier_export.manifest.open_export_dir`).
        names: variants to build, from :data:`~verifier_export.variants.VARIANT_NAMES`.
        gates: per-variant gates overriding :data:`~verifier_export.variants.DEFAULT_GATES`.
        options: how the variants are made. With ``quantize_embeddings="auto"`` (the
            default) ``int8`` is built with the word embeddings quantised and, only if
            that file misses its gate, built and gated again without them; the report's
            notes say so and the manifest's description names the recipe recorded.
        overwrite: rebuild a variant that is already recorded (default: keep a
            recorded variant whose file still verifies; its recorded parity stands).
        progress: called with a line as each step starts (default silent).

    Returns:
        A :class:`~verifier_export.variants.VariantsReport` (``manifest`` is the rewritten manifest).

    Raises:
        ExportError: an unknown variant name, or onnxruntime / quantisation failed.
        ManifestError: ``model_dir`` does not verify against its manifest.
        ParityError: a variant missed its gate. It is not recorded and its
            temporary file is removed; variants that passed are recorded all the
            same (the message lists every failure and what was recorded).

    Example:
        >>> report = build_variants(Path("models/tiny"), ["int8"])  # doctest: +SKIP
        >>> report.manifest.variants["int8"].file  # doctest: +SKIP
        'model.int8.onnx'
    """
    model_dir = Path(model_dir)
    unknown = [name for name in names if name not in VARIANT_NAMES]
    if unknown or not names:
        raise ExportError(f"unknown variant(s) {unknown or list(names)}; choose from {list(VARIANT_NAMES)}")
    wanted = [name for name in VARIANT_NAMES if name in names]
    gate_of = {**DEFAULT_GATES, **(gates or {})}
    say = progress if progress is not None else (lambda message: None)
    say(f"checking {model_dir} against its manifest before adding {', '.join(wanted)}")
    opened = open_export_dir(model_dir)
    manifest = opened.manifest
    source = opened.model_path

    results: list[VariantResult] = []
    built: list[tuple[VariantResult, Path]] = []  # (result, its temporary file)
    recipe_of: dict[str, VariantOptions] = {}  # the options each built variant was made with
    notes: list[str] = []
    staged: list[Path] = []
    try:
        for name in wanted:
            started = time.perf_counter()
            gate = gate_of[name]
            kept = None if overwrite else _kept(model_dir, manifest, name, gate, started)
            if kept is not None:
                results.append(kept)
                continue
            file = VARIANT_FILES[name]
            recipes = options.int8_recipes() if name == "int8" else (options,)
            for attempt, recipe in enumerate(recipes, start=1):
                handle, temporary_name = tempfile.mkstemp(prefix=f".{file}.partial-", dir=model_dir)
                os.close(handle)
                temporary = Path(temporary_name)
                staged.append(temporary)
                say(f"building {name} ({file}) from {source.name}" + (f": {recipe.describe(name)}" if len(recipes) > 1 else ""))
                _build_file(name, source, temporary, recipe)
                say(f"gating {name} against the PyTorch golden logits")
                comparison, _ = compare_golden(model_dir, temporary.name, manifest, session=_gate_session(name, temporary))
                failures = gate.failures(comparison)
                result = VariantResult(
                    name=name, file=file, status="failed" if failures else "built", parity=gate.report(comparison),
                    gate=gate, failures=tuple(failures), size=temporary.stat().st_size,
                    seconds=time.perf_counter() - started,
                )
                if failures and attempt < len(recipes):
                    notes.append(f"{name}: {recipe.describe(name)} missed the gate ({'; '.join(failures)}); trying the next recipe")
                    temporary.unlink(missing_ok=True)
                    continue
                recipe_of[name] = recipe
                results.append(result)
                built.append((result, temporary))
                break
        passed = [(result, temporary) for result, temporary in built if not result.failures]
        updated = _record(model_dir, manifest, source, passed, recipe_of) if passed else manifest
        failed = [result for result in results if result.failures]
        if failed:
            recorded = f"; recorded anyway: {', '.join(r.name for r, _ in passed)}" if passed else ""
            raise ParityError(
                f"{len(failed)} variant(s) failed their parity gate against the PyTorch golden logits: "
                + "; ".join(f"{r.name}: {', '.join(r.failures)}" for r in failed)
                + recorded,
                report="\n".join([*(result.summary() for result in results), *notes]),
            )
    finally:
        for temporary in staged:
            temporary.unlink(missing_ok=True)
    if opened.random_weights:
        notes.append("(random-weights model: use these variants for speed figures only)")
    return VariantsReport(
        model_dir=model_dir, results=tuple(results), manifest=updated, random_weights=opened.random_weights,
        notes=tuple(notes),
    )

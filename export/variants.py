"""Extra ONNX variants of an exported model directory, each behind its own parity gate.

Usage::

    python -m export.variants models/nli-deberta-v3-base-6c749ce3425c                # optimized + int8
    python -m export.variants DIR --variants int8 --int8-max-prob-diff 0.02
    python -m export.variants DIR --variants int8 --int8-min-argmax-agreement 0.9  # (random models only)

Variants (written beside ``model.onnx``, recorded in ``manifest.variants`` and
``manifest.files``; the runtime picks one by name, ``OnnxScorer(dir,
variant="int8")`` or ``RuntimeOptions(variant="int8")``):

* ``optimized`` -> ``model.optimized.onnx``: the float32 graph after
  onnxruntime's offline graph optimisation (level ``extended`` by default:
  constant folding -- including DeBERTa's relative-position projections --
  and the transformer fusions: LayerNorm, SkipLayerNorm, Gelu, BiasGelu, ...),
  saved so a session skips that work at load. ``extended`` is the portable
  level; ``all`` adds hardware-specific layout changes and is only safe on the
  CPU that wrote the file.
* ``int8`` -> ``model.int8.onnx``: dynamic int8 quantisation
  (``onnxruntime.quantization.quantize_dynamic``): MatMul weights to signed
  int8 (per output channel by default), activations quantised at run time,
  only MatMuls with a constant weight (``MatMulConstBOnly``: the attention
  score and context matmuls stay float32). Optionally the word-embedding
  Gather too (``quantize_embeddings``), which shrinks the file ~4x.

Each variant's parity report compares it with the **PyTorch float32 logits**
recorded in ``golden.json`` at export (no torch needed here): every golden
pair alone and all pairs in one padded batch, giving max |Δlogit|, max
|Δprobability| after softmax and argmax agreement. A :class:`VariantGate`
(user-settable) decides; the gate is recorded in the report (``atol``,
``max_prob_diff_gate``). The whole call collects every variant's result and
decides once: if any requested variant fails its gate nothing is recorded and
:class:`~export.errors.ParityError` lists every failure.

int8 agreement is a property of the *real* model's weights: judge it on the
real model's golden report. A random-weights model (``bench/``) has logits
near zero, so its argmax flips under any perturbation and its int8 report
says nothing about quality.

Writes are atomic: a variant is written to a hidden temporary file in the
directory, gated, renamed into place, and ``manifest.json`` is rewritten last
(temporary file + ``os.replace``). A reader sees the old manifest or the new
one. Do not run two builds on one directory at once.

Exceptions::

    ExportError      unknown variant name, bad gate, onnxruntime or quantisation failure (exit 1)
    ├── ParityError  a variant failed its gate; nothing recorded (exit 3)
    └── ManifestError the directory does not verify against its manifest (exit 4)
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Mapping, Optional, Sequence

import numpy as np

from verifier.manifest import FileRecord, Manifest, ParityReport, VariantRecord, sha256_file, verify_files
from verifier.tokenization import encode_pairs, load_tokenizer, pad_encodings

from .errors import ExportError, ManifestError, ParityError, report_error
from .manifest import verify_export_dir, write_manifest

__all__ = [
    "VARIANT_NAMES",
    "VARIANT_FILES",
    "VariantName",
    "VariantGate",
    "DEFAULT_GATES",
    "VariantOptions",
    "VariantResult",
    "VariantsReport",
    "build_variants",
    "variant_parity",
    "add_variant_arguments",
    "variant_settings",
    "build_parser",
    "main",
]

VariantName = Literal["optimized", "int8"]
#: Variants this module can build, in build order.
VARIANT_NAMES: tuple[VariantName, ...] = ("optimized", "int8")
#: File name of each variant inside the model directory.
VARIANT_FILES: Mapping[str, str] = {"optimized": "model.optimized.onnx", "int8": "model.int8.onnx"}
_GOLDEN_NAME = "golden.json"


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

    def failures(self, report: ParityReport) -> list[str]:
        """Every way ``report`` misses this gate (empty when it passes)."""
        found: list[str] = []
        if not report.token_ids_identical:
            found.append("runtime token ids differ from golden.json")
        if self.max_abs_logit_diff is not None and not report.max_abs_logit_diff <= self.max_abs_logit_diff:
            found.append(f"max |Δlogit| {report.max_abs_logit_diff:.3g} > {self.max_abs_logit_diff:g}")
        if self.max_prob_diff is not None and not report.max_abs_prob_diff <= self.max_prob_diff:
            found.append(f"max |Δprob| {report.max_abs_prob_diff:.3g} > {self.max_prob_diff:g}")
        if not report.argmax_agreement >= self.min_argmax_agreement:
            found.append(f"argmax agreement {report.argmax_agreement:.1%} < {self.min_argmax_agreement:.1%}")
        return found


#: Default gates. ``optimized`` is the same float32 arithmetic re-arranged: it
#: must meet the float32 export gate (1e-4 logits, every argmax). ``int8``
#: starts at 0.05 in probability and 0.5 in logits with every argmax equal;
#: tighten or loosen them from the *real* model's report.
DEFAULT_GATES: Mapping[str, VariantGate] = {
    "optimized": VariantGate(max_abs_logit_diff=1e-4, max_prob_diff=None, min_argmax_agreement=1.0),
    "int8": VariantGate(max_abs_logit_diff=0.5, max_prob_diff=0.05, min_argmax_agreement=1.0),
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
            (file ~4x smaller; embedding rows dequantised at run time).
    """

    optimization_level: Literal["basic", "extended", "all"] = "extended"
    int8_per_channel: bool = True
    int8_weight_type: Literal["qint8", "quint8"] = "qint8"
    quantize_embeddings: bool = False

    def describe(self, name: str) -> str:
        """The manifest description of variant ``name`` made with these options."""
        import onnxruntime

        if name == "optimized":
            return (
                f"float32, onnxruntime {onnxruntime.__version__} offline graph optimisation "
                f"(level {self.optimization_level}) of model.onnx"
            )
        embeddings = ", word-embedding Gather quantised" if self.quantize_embeddings else ""
        scales = "per-channel" if self.int8_per_channel else "per-tensor"
        return (
            f"dynamic int8 (onnxruntime {onnxruntime.__version__} quantize_dynamic: MatMul weights "
            f"{self.int8_weight_type} {scales}, constant-B MatMuls only{embeddings}) of model.onnx"
        )


@dataclass(frozen=True)
class VariantResult:
    """One variant after :func:`build_variants`.

    Attributes:
        name: ``"optimized"`` or ``"int8"``.
        file: file name in the model directory.
        status: ``"built"`` (new or rebuilt), ``"kept"`` (already recorded and
            verified, left alone) or ``"failed"`` (gate missed; not recorded).
        parity: the parity report against the PyTorch golden logits.
        gate: the gate applied.
        failures: how the gate was missed (empty unless failed).
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
            f"{self.name} ({self.file}, {self.size / 1e6:.0f} MB, {self.status}): max |Δlogit| "
            f"{p.max_abs_logit_diff:.3g}, max |Δprob| {p.max_abs_prob_diff:.3g}, argmax agreement "
            f"{p.argmax_agreement:.1%} over {p.pairs} golden pairs -> {verdict}"
        )


@dataclass(frozen=True)
class VariantsReport:
    """What :func:`build_variants` did."""

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
                "RANDOM WEIGHTS: these parity figures say nothing about int8 quality; judge int8 on the "
                "real model's golden report"
            )
        lines.extend(result.summary() for result in self.results)
        lines.extend(self.notes)
        return lines


# --------------------------------------------------------------------------- parity


@dataclass(frozen=True)
class _Golden:
    pairs: list[tuple[str, str]]
    logits: np.ndarray  # float64 (n, k), columns in manifest label order
    input_ids: list[Optional[list[int]]]


def _read_golden(model_dir: Path, manifest: Manifest) -> _Golden:
    path = model_dir / _GOLDEN_NAME
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        labels = [str(label) for label in data["labels"]]
        pairs = [(str(item["premise"]), str(item["hypothesis"])) for item in data["pairs"]]
        logits = np.asarray([item["logits"] for item in data["pairs"]], dtype=np.float64)
        ids = [list(map(int, item["input_ids"])) if item.get("input_ids") is not None else None for item in data["pairs"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ManifestError(f"{path}: missing or malformed: {' '.join(str(exc).split())}") from exc
    if sorted(labels) != sorted(manifest.labels) or logits.shape != (len(pairs), len(labels)) or not pairs:
        raise ManifestError(f"{path}: labels {labels} or logits shape {logits.shape} do not fit the manifest")
    columns = [labels.index(label) for label in manifest.labels]
    return _Golden(pairs=pairs, logits=logits[:, columns], input_ids=ids)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exps = np.exp(shifted)
    result: np.ndarray = exps / exps.sum(axis=1, keepdims=True)
    return result


def variant_parity(model_dir: Path, onnx_file: str, *, manifest: Optional[Manifest] = None) -> ParityReport:
    """Score ``golden.json`` with ``onnx_file`` (alone and batched) against the PyTorch float32 logits.

    Args:
        model_dir: an exported model directory.
        onnx_file: the ONNX file (relative to ``model_dir``) to check.
        manifest: the directory's manifest (read when ``None``).

    Returns:
        A :class:`~verifier.manifest.ParityReport` with ``passed=True`` and no
        gate fields; :func:`build_variants` fills in the verdict and gate.

    Raises:
        ManifestError: ``golden.json`` missing or malformed.
        ExportError: onnxruntime cannot load or run the file.
    """
    import onnxruntime as ort

    model_dir = Path(model_dir)
    manifest = manifest if manifest is not None else verify_export_dir(model_dir)
    golden = _read_golden(model_dir, manifest)
    tokenizer = load_tokenizer(model_dir / "tokenizer.json", max_length=manifest.max_length)
    encodings = encode_pairs(tokenizer, golden.pairs)
    ids_identical = all(
        recorded is None or list(encoding.ids) == recorded for encoding, recorded in zip(encodings, golden.input_ids)
    )
    with_types = "token_type_ids" in manifest.inputs
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(model_dir / onnx_file), sess_options=options, providers=["CPUExecutionProvider"])
        names = [node.name for node in session.get_inputs()]

        def run(batch: Sequence[Any]) -> np.ndarray:
            arrays = pad_encodings(batch, pad_token_id=manifest.pad_token_id, with_token_type_ids=with_types)
            return np.asarray(session.run(["logits"], {name: arrays[name] for name in names})[0], dtype=np.float64)

        batched = run(encodings)
        single = np.concatenate([run([encoding]) for encoding in encodings], axis=0)
    except Exception as exc:  # onnxruntime raises its own Exception subclasses
        raise ExportError(f"{model_dir / onnx_file}: onnxruntime failed on the golden pairs: {exc}") from exc
    reference = golden.logits
    finite = bool(np.isfinite(batched).all() and np.isfinite(single).all())
    if not finite:
        raise ExportError(f"{model_dir / onnx_file}: non-finite logits on the golden pairs")
    logit_diff = max(float(np.abs(single - reference).max()), float(np.abs(batched - reference).max()))
    ref_probs = _softmax(reference)
    prob_diff = max(
        float(np.abs(_softmax(single) - ref_probs).max()), float(np.abs(_softmax(batched) - ref_probs).max())
    )
    target = reference.argmax(axis=1)
    agree = (single.argmax(axis=1) == target) & (batched.argmax(axis=1) == target)
    return ParityReport(
        passed=True,
        pairs=len(golden.pairs),
        max_abs_logit_diff=logit_diff,
        max_abs_prob_diff=prob_diff,
        argmax_agreement=float(agree.mean()),
        token_ids_identical=ids_identical,
    )


# --------------------------------------------------------------------------- building


def _write_optimized(source: Path, target: Path, options: VariantOptions) -> None:
    import onnxruntime as ort

    levels = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    session_options = ort.SessionOptions()
    session_options.graph_optimization_level = levels[options.optimization_level]
    session_options.optimized_model_filepath = str(target)
    session_options.log_severity_level = 3
    ort.InferenceSession(str(source), sess_options=session_options, providers=["CPUExecutionProvider"])
    if not target.is_file():
        raise ExportError(f"onnxruntime did not write the optimised model {target}")


def _write_int8(source: Path, target: Path, options: VariantOptions) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    op_types = ["MatMul", "Gather"] if options.quantize_embeddings else ["MatMul"]
    weight_type = QuantType.QInt8 if options.int8_weight_type == "qint8" else QuantType.QUInt8
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs a pre-processing advisory on the root logger
    try:
        quantize_dynamic(
            source,
            target,
            op_types_to_quantize=op_types,
            per_channel=options.int8_per_channel,
            weight_type=weight_type,
            extra_options={"MatMulConstBOnly": True},
        )
    finally:
        root.setLevel(level)


def _build_file(name: str, source: Path, target: Path, options: VariantOptions) -> None:
    try:
        if name == "optimized":
            _write_optimized(source, target, options)
        else:
            _write_int8(source, target, options)
    except ExportError:
        raise
    except Exception as exc:  # onnxruntime / onnx raise assorted Exception subclasses
        raise ExportError(f"building variant {name!r} from {source} failed: {type(exc).__name__}: {exc}") from exc


def _existing_ok(model_dir: Path, manifest: Manifest, name: str) -> bool:
    """Whether ``name`` is recorded and its file matches the manifest."""
    record = manifest.variants.get(name)
    if record is None or record.file not in manifest.files:
        return False
    only = manifest.model_copy(update={"files": {record.file: manifest.files[record.file]}})
    return not verify_files(model_dir, only)


def build_variants(
    model_dir: Path,
    names: Sequence[str] = VARIANT_NAMES,
    *,
    gates: Optional[Mapping[str, VariantGate]] = None,
    options: VariantOptions = VariantOptions(),
    overwrite: bool = False,
) -> VariantsReport:
    """Build ONNX variants into an exported model directory and record them in its manifest.

    Args:
        model_dir: a directory written by ``python -m export`` (it must verify).
        names: variants to build, from :data:`VARIANT_NAMES`.
        gates: per-variant gates overriding :data:`DEFAULT_GATES`.
        options: how the variants are made.
        overwrite: rebuild a variant that is already recorded (default: keep a
            recorded variant whose file still verifies; its recorded parity stands).

    Returns:
        A :class:`VariantsReport` (``manifest`` is the rewritten manifest).

    Raises:
        ExportError: an unknown variant name, or onnxruntime / quantisation failed.
        ManifestError: ``model_dir`` does not verify against its manifest.
        ParityError: a variant missed its gate; nothing was recorded, temporary
            files were removed, the message lists every failure.

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
    manifest = verify_export_dir(model_dir)
    source = model_dir / manifest.model_file

    results: list[VariantResult] = []
    staged: list[tuple[Path, Path]] = []  # (temporary file, final path)
    try:
        for name in wanted:
            started = time.perf_counter()
            file = VARIANT_FILES[name]
            gate = gate_of[name]
            if not overwrite and _existing_ok(model_dir, manifest, name):
                record = manifest.variants[name]
                results.append(
                    VariantResult(
                        name=name, file=record.file, status="kept", parity=record.parity, gate=gate,
                        size=(model_dir / record.file).stat().st_size, seconds=time.perf_counter() - started,
                    )
                )
                continue
            handle, temporary_name = tempfile.mkstemp(prefix=f".{file}.partial-", dir=model_dir)
            os.close(handle)
            temporary = Path(temporary_name)
            staged.append((temporary, model_dir / file))
            _build_file(name, source, temporary, options)
            measured = variant_parity(model_dir, temporary.name, manifest=manifest)
            failures = gate.failures(measured)
            parity = measured.model_copy(
                update={
                    "passed": not failures,
                    "atol": gate.max_abs_logit_diff,
                    "max_prob_diff_gate": gate.max_prob_diff,
                }
            )
            results.append(
                VariantResult(
                    name=name, file=file, status="failed" if failures else "built", parity=parity, gate=gate,
                    failures=tuple(failures), size=temporary.stat().st_size, seconds=time.perf_counter() - started,
                )
            )
        failed = [result for result in results if result.failures]
        if failed:
            raise ParityError(
                f"{len(failed)} variant(s) failed their parity gate against the PyTorch golden logits: "
                + "; ".join(f"{r.name}: {', '.join(r.failures)}" for r in failed),
                report="\n".join(result.summary() for result in results),
            )
        updated = manifest
        built = [result for result in results if result.status == "built"]
        files = dict(manifest.files)
        variants = dict(manifest.variants)
        for result in built:
            temporary, final = next((tmp, dst) for tmp, dst in staged if dst.name == result.file)
            os.replace(temporary, final)
            shutil.copymode(source, final)  # mkstemp made it 0600; match model.onnx
            files[result.file] = FileRecord(sha256=sha256_file(final), size=final.stat().st_size)
            variants[result.name] = VariantRecord(
                file=result.file, description=options.describe(result.name), parity=result.parity
            )
        if built:
            updated = Manifest.model_validate({**manifest.model_dump(), "files": files, "variants": variants})
            write_manifest(model_dir, updated)
    finally:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
    notes: tuple[str, ...] = ()
    if manifest.random_weights:
        notes = ("(random-weights model: use these variants for speed figures only)",)
    return VariantsReport(
        model_dir=model_dir, results=tuple(results), manifest=updated, random_weights=manifest.random_weights, notes=notes
    )


# --------------------------------------------------------------------------- command line


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from exc
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive finite number")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from exc
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1]")
    return value


def add_variant_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the variant flags (group ``variants``) to ``parser``; shared with ``python -m export``."""
    group = parser.add_argument_group("variants")
    group.add_argument(
        "--variants", nargs="+", choices=VARIANT_NAMES, default=None, metavar="NAME",
        help=f"extra ONNX variants to build, gated against the PyTorch golden logits ({', '.join(VARIANT_NAMES)})",
    )
    group.add_argument(
        "--optimization-level", choices=("basic", "extended", "all"), default="extended",
        help="onnxruntime level of the 'optimized' variant (default: extended, portable)",
    )
    group.add_argument("--int8-per-tensor", action="store_true", help="int8: one scale per weight matrix")
    group.add_argument("--int8-quantize-embeddings", action="store_true", help="int8: also quantise the word embeddings")
    group.add_argument("--int8-max-prob-diff", type=_positive, default=None, help="int8 gate: max |Δprob| (default 0.05)")
    group.add_argument("--int8-max-logit-diff", type=_positive, default=None, help="int8 gate: max |Δlogit| (default 0.5)")
    group.add_argument(
        "--int8-min-argmax-agreement", type=_fraction, default=None, help="int8 gate: min argmax agreement (default 1.0)"
    )
    group.add_argument("--overwrite-variants", action="store_true", help="rebuild variants already recorded")


def variant_settings(args: argparse.Namespace) -> tuple[dict[str, VariantGate], VariantOptions]:
    """Gates and options from the flags of :func:`add_variant_arguments`."""
    base = DEFAULT_GATES["int8"]
    int8 = replace(
        base,
        max_prob_diff=args.int8_max_prob_diff if args.int8_max_prob_diff is not None else base.max_prob_diff,
        max_abs_logit_diff=args.int8_max_logit_diff if args.int8_max_logit_diff is not None else base.max_abs_logit_diff,
        min_argmax_agreement=(
            args.int8_min_argmax_agreement if args.int8_min_argmax_agreement is not None else base.min_argmax_agreement
        ),
    )
    options = VariantOptions(
        optimization_level=args.optimization_level,
        int8_per_channel=not args.int8_per_tensor,
        quantize_embeddings=args.int8_quantize_embeddings,
    )
    return {"int8": int8}, options


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m export.variants`` parser."""
    parser = argparse.ArgumentParser(
        prog="python -m export.variants",
        description="Build gated ONNX variants (offline-optimised float32, dynamic int8) into an exported model directory.",
    )
    parser.add_argument("model_dir", type=Path, help="directory written by python -m export")
    add_variant_arguments(parser)
    return parser


def run_from_args(model_dir: Path, names: Sequence[str], args: argparse.Namespace, prog: str) -> int:
    """Build ``names`` into ``model_dir`` with the flags of :func:`add_variant_arguments`; print the
    summary, or one ``<prog>: error:`` line; return the exit status (shared by both CLIs)."""
    gates, options = variant_settings(args)
    try:
        report = build_variants(model_dir, names, gates=gates, options=options, overwrite=args.overwrite_variants)
    except ExportError as exc:
        return report_error(exc, prog)
    for line in report.summary_lines():
        print(line)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``python -m export.variants``; return the exit status (0, or the error's ``exit_code``)."""
    args = build_parser().parse_args(argv)
    return run_from_args(args.model_dir, args.variants or VARIANT_NAMES, args, "export.variants")

if __name__ == "__main__":
    sys.exit(main())

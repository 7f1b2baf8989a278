"""The export pipeline: ``python -m export`` as a library call.

:func:`export_model` (and :func:`export_smoke`) run, in order:

1. resolve ``--model`` (a local directory is checked at once) and the target
   directory (``--output`` or ``models/<name>-<revision[:12]>``);
2. if the target already holds an export: verify it (files against the
   manifest, golden outputs re-scored with onnxruntime) and return
   ``status="verified"`` without redoing work, or refuse when it does not
   verify or holds another model -- never overwrite it; a refusal of a
   broken or foreign directory ends with :func:`redo_advice`;
3. in a staging directory beside the target: download a hub revision, check
   the labels, write ``tokenizer.json`` and ``config.json``, export
   ``model.onnx``, run the golden parity gate, write ``golden.json`` and,
   last, ``manifest.json``;
4. rename the staging directory into place. Any failure removes it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Optional

from pydantic import ValidationError

from verifier.manifest import MANIFEST_NAME, Manifest, read_manifest
from verifier.options import default_model_dir
from verifier.types import DEFAULT_MODEL, DEFAULT_REVISION

from .errors import ExportError, ManifestError
from .manifest import (
    REQUIRED_FILES,
    collect_versions,
    file_records,
    publish,
    staging_dir,
    utc_now,
    verify_export_dir,
    write_manifest,
)
from .onnx import (
    ModelSource,
    default_max_length,
    export_onnx,
    load_reference_tokenizer,
    load_torch_model,
    looks_like_hub_id,
    onnx_graph_info,
    read_config,
    read_labels,
    resolve_source,
    write_tokenizer_json,
)
from .parity import DEFAULT_ATOL, GOLDEN_NAME, ParityResult, run_parity, verify_golden
from .testmodels import RANDOM_WEIGHTS_CONFIG_KEY

__all__ = [
    "SMOKE_MODEL",
    "MIN_MAX_LENGTH",
    "OFFLINE_HINT",
    "OnnxHook",
    "ExportReport",
    "export_model",
    "export_smoke",
    "default_output_dir",
    "redo_advice",
]

#: Model id recorded in the manifest of a ``--smoke`` export.
SMOKE_MODEL = "smoke/tiny-deberta-v2"
#: Smallest ``--max-length`` (the manifest's lower bound).
MIN_MAX_LENGTH = 8
#: Extra tokenizer files copied into the export when the source has them, so
#: ``AutoTokenizer.from_pretrained(<export dir>)`` works for independent checks.
_OPTIONAL_FILES: tuple[str, ...] = ("tokenizer_config.json", "special_tokens_map.json")

#: Appended to a failed hub download: the two ways to export without the network.
OFFLINE_HINT = (
    "(offline? export a local Hugging Face directory with --model /path/to/dir, "
    "or run python -m export --smoke for a random-weights plumbing model)"
)
#: Marks :func:`export.onnx.resolve_source`'s message for a failed hub download.
_DOWNLOAD_FAILED = "from the Hugging Face hub failed"

#: pydantic error types on ``manifest.json`` worded for users; others keep pydantic's message.
_MANIFEST_WORDS: dict[str, str] = {
    "missing": "required field is missing",
    "model_type": "must be a JSON object",
    "dict_type": "must be a JSON object",
    "extra_forbidden": "unknown field",
}

#: Called with the freshly exported ``model.onnx`` before the parity gate
#: (tests use it to perturb the file and watch the gate fail).
OnnxHook = Callable[[Path], None]


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
    """

    status: Literal["exported", "verified"]
    output_dir: Path
    manifest: Manifest
    parity: Optional[ParityResult]
    tokenizer_json: Optional[Literal["copied", "converted"]]
    verified_max_abs_logit_diff: Optional[float]
    seconds: float

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
                f"verified existing export {self.output_dir} ({manifest.model}@{revision}): files match "
                f"{len(manifest.files)} manifest records, golden max |Δlogit| "
                f"{self.verified_max_abs_logit_diff:.3g}; nothing to do"
            )
            return lines
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
            f"{self.seconds:.1f} s"
        )
        return lines


def default_output_dir(model: str, revision: Optional[str], *, local: bool) -> Path:
    """The default ``--output``.

    Hub ids: ``models/<name>-<revision[:12]>``
    (:func:`verifier.options.default_model_dir`). Local directories:
    ``models/<dirname>-<revision[:12]>`` with ``--revision``, else
    ``models/<dirname>-local``.
    """
    if local:
        name = Path(model).expanduser().resolve().name or "model"
        return default_model_dir(name, revision) if revision else Path("models") / f"{name}-local"
    if revision is None:  # pragma: no cover - callers resolve the revision first
        raise ExportError(f"--model {model}: a revision is needed for the default output directory")
    return default_model_dir(model, revision)


def redo_advice(target: Path) -> str:
    """What to do about a target directory this tool refuses to touch.

    Example:
        >>> redo_advice(Path("models/m"))
        'delete models/m (or choose another --output) and export again'
    """
    return f"delete {target} (or choose another --output) and export again"


def _manifest_problem(exc: ValidationError) -> str:
    """A pydantic error on ``manifest.json`` in a few words, without pydantic's input dump or link."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    if first.get("type") == "json_invalid":
        detail = (first.get("ctx") or {}).get("error")
        text = f"invalid JSON: {detail}" if detail else "invalid JSON"
    else:
        message = _MANIFEST_WORDS.get(str(first.get("type")), str(first.get("msg")))
        where = ".".join(str(part) for part in first.get("loc", ()))
        text = f"field {where}: {message}" if where else message
    if len(errors) > 1:
        text += f", and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''}"
    return text


def _read_target_manifest(target: Path) -> None:
    """Refuse a target whose ``manifest.json`` cannot be read or parsed, in one line with advice."""
    path = target / MANIFEST_NAME
    try:
        read_manifest(target)
    except ValidationError as exc:
        raise ManifestError(f"{path} is not a valid manifest ({_manifest_problem(exc)}); {redo_advice(target)}") from exc
    except OSError as exc:
        raise ManifestError(f"{path} cannot be read ({exc.strerror or exc}); {redo_advice(target)}") from exc


def _resolve_hub(model: str, revision: str) -> ModelSource:
    """:func:`export.onnx.resolve_source` for a hub id; a failed download ends with :data:`OFFLINE_HINT`."""
    try:
        return resolve_source(model, revision, default_model=DEFAULT_MODEL, default_revision=DEFAULT_REVISION)
    except ExportError as exc:
        if _DOWNLOAD_FAILED not in str(exc):
            raise
        raise ExportError(f"{exc} {OFFLINE_HINT}") from exc


def _check_arguments(opset: Optional[int], max_length: Optional[int], atol: float) -> None:
    if not (isinstance(atol, (int, float)) and 0.0 < float(atol) < float("inf")):
        raise ExportError(f"--atol {atol}: must be a positive finite number")
    if opset is not None and not 11 <= opset <= 30:
        raise ExportError(f"--opset {opset}: must be between 11 and 30")
    if max_length is not None and max_length < MIN_MAX_LENGTH:
        raise ExportError(f"--max-length {max_length}: must be at least {MIN_MAX_LENGTH}")


def _same_model(recorded: str, requested: str, *, local: bool) -> bool:
    if recorded == requested:
        return True
    if not local:
        return False
    try:
        return Path(recorded).expanduser().resolve() == Path(requested).expanduser().resolve()
    except OSError:  # pragma: no cover - unresolvable path
        return False


def _existing_export(
    target: Path,
    *,
    model: str,
    kind: Literal["hub", "local", "smoke"],
    revision: Optional[str],
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
) -> Optional[tuple[Manifest, float]]:
    """Verify what is at ``target``; ``None`` when there is nothing (or an empty directory)."""
    if not target.exists() and not target.is_symlink():
        return None
    if not target.is_dir():
        raise ExportError(f"--output {target}: exists and is not a directory")
    if not (target / MANIFEST_NAME).exists():
        if any(target.iterdir()):
            raise ExportError(
                f"--output {target}: exists, is not empty and has no {MANIFEST_NAME}; refusing to overwrite; "
                f"{redo_advice(target)}"
            )
        return None
    _read_target_manifest(target)
    try:
        manifest = verify_export_dir(target)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; {redo_advice(target)}") from exc
    wanted = f"{model}@{revision or 'unpinned'}"
    held = f"{manifest.model}@{manifest.requested_revision or 'unpinned'}"
    if (
        manifest.source != kind
        or not _same_model(manifest.model, model, local=kind == "local")
        or manifest.requested_revision != revision
    ):
        raise ExportError(f"--output {target}: already holds an export of {held}, not {wanted}; choose another --output")
    if opset is not None and manifest.opset != opset:
        raise ExportError(f"--output {target}: holds an opset {manifest.opset} export, not {opset}")
    if max_length is not None and manifest.max_length != max_length:
        raise ExportError(f"--output {target}: holds a max length {manifest.max_length} export, not {max_length}")
    try:
        max_diff = verify_golden(target, onnx_file=manifest.model_file, atol=atol)
    except ManifestError as exc:
        raise ManifestError(f"{exc}; {redo_advice(target)}") from exc
    return manifest, max_diff


def _resolve_max_length(requested: Optional[int], tokenizer: Any, config: dict[str, Any], where: Path) -> int:
    max_length = requested if requested is not None else default_max_length(tokenizer, config)
    if max_length < MIN_MAX_LENGTH:
        raise ExportError(f"{where}: max length {max_length} is below {MIN_MAX_LENGTH}")
    positions = config.get("max_position_embeddings")
    absolute_positions = bool(config.get("position_biased_input", True))
    if absolute_positions and isinstance(positions, int) and max_length > positions:
        raise ExportError(
            f"--max-length {max_length}: exceeds the model's max_position_embeddings {positions} "
            "(absolute position embeddings)"
        )
    return max_length


def _build(
    source: ModelSource,
    staging: Path,
    *,
    random_weights: bool,
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
    onnx_hook: Optional[OnnxHook],
) -> tuple[Manifest, ParityResult, Literal["copied", "converted"]]:
    """Write a complete export (manifest last) into ``staging``."""
    config_path = source.path / "config.json"
    config = read_config(source.path)
    labels = read_labels(config, where=str(config_path))
    random_weights = random_weights or config.get(RANDOM_WEIGHTS_CONFIG_KEY) is True

    reference_tokenizer = load_reference_tokenizer(source.path)
    tokenizer_mode = write_tokenizer_json(source.path, staging / "tokenizer.json", reference_tokenizer)
    shutil.copyfile(config_path, staging / "config.json")
    optional = [name for name in _OPTIONAL_FILES if (source.path / name).is_file()]
    for name in optional:
        shutil.copyfile(source.path / name, staging / name)

    resolved_max_length = _resolve_max_length(max_length, reference_tokenizer, config, config_path)
    pad_token_id = reference_tokenizer.pad_token_id
    if pad_token_id is None:
        pad_token_id = config.get("pad_token_id")
    if not isinstance(pad_token_id, int) or pad_token_id < 0:
        raise ExportError(f"{source.path}: the tokenizer has no pad token and config.json no pad_token_id")

    torch_model = load_torch_model(source.path)
    onnx_path = export_onnx(torch_model, staging / "model.onnx", opset=opset)
    if onnx_hook is not None:
        onnx_hook(onnx_path)
    inputs, outputs, graph_opset = onnx_graph_info(onnx_path)
    if "logits" not in outputs:
        raise ExportError(f"{onnx_path}: the graph has no 'logits' output (outputs: {list(outputs)})")

    parity = run_parity(
        torch_model=torch_model,
        reference_tokenizer=reference_tokenizer,
        onnx_path=onnx_path,
        tokenizer_json=staging / "tokenizer.json",
        labels=labels,
        inputs=inputs,
        max_length=resolved_max_length,
        pad_token_id=pad_token_id,
        atol=atol,
    )
    parity.raise_if_failed()

    (staging / GOLDEN_NAME).write_text(
        json.dumps(parity.golden, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    manifest = Manifest(
        model=source.model,
        requested_revision=source.requested_revision,
        resolved_revision=source.resolved_revision,
        source=source.kind,
        random_weights=random_weights,
        model_file="model.onnx",
        files=file_records(staging, [*REQUIRED_FILES, *optional]),
        labels=labels,
        max_length=resolved_max_length,
        opset=graph_opset,
        inputs=inputs,
        pad_token_id=pad_token_id,
        versions=collect_versions(),
        parity=parity.report,
        created_at=utc_now(),
    )
    write_manifest(staging, manifest)
    return manifest, parity, tokenizer_mode


def _run(
    *,
    model: str,
    kind: Literal["hub", "local", "smoke"],
    revision: Optional[str],
    target: Path,
    resolve: Callable[[], ModelSource],
    random_weights: bool,
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
    onnx_hook: Optional[OnnxHook],
) -> ExportReport:
    started = time.perf_counter()
    existing = _existing_export(
        target, model=model, kind=kind, revision=revision, opset=opset, max_length=max_length, atol=atol
    )
    if existing is not None:
        manifest, max_diff = existing
        return ExportReport(
            status="verified",
            output_dir=target,
            manifest=manifest,
            parity=None,
            tokenizer_json=None,
            verified_max_abs_logit_diff=max_diff,
            seconds=time.perf_counter() - started,
        )
    with staging_dir(target) as staging:
        source = resolve()
        manifest, parity, tokenizer_mode = _build(
            source,
            staging,
            random_weights=random_weights,
            opset=opset,
            max_length=max_length,
            atol=atol,
            onnx_hook=onnx_hook,
        )
        publish(staging, target)
    return ExportReport(
        status="exported",
        output_dir=target,
        manifest=manifest,
        parity=parity,
        tokenizer_json=tokenizer_mode,
        verified_max_abs_logit_diff=None,
        seconds=time.perf_counter() - started,
    )


def export_model(
    model: str = DEFAULT_MODEL,
    *,
    revision: Optional[str] = None,
    output: Optional[Path] = None,
    opset: Optional[int] = None,
    max_length: Optional[int] = None,
    atol: float = DEFAULT_ATOL,
    onnx_hook: Optional[OnnxHook] = None,
) -> ExportReport:
    """Export a three-label NLI cross-encoder to a verified ONNX model directory.

    Args:
        model: a hub id (downloaded at ``revision`` via huggingface_hub, which
            honours its cache, ``HF_HOME`` and ``HF_HUB_OFFLINE``) or a local
            Hugging Face model directory.
        revision: commit (preferably), tag or branch. Required with a hub id,
            except that :data:`~verifier.types.DEFAULT_MODEL` defaults to
            :data:`~verifier.types.DEFAULT_REVISION`. Optional for a local
            directory (recorded as given).
        output: target directory (default: :func:`default_output_dir`).
        opset: ONNX opset (default: optimum's for the architecture).
        max_length: truncation length in tokens, special tokens included
            (default: the tokenizer's ``model_max_length``; 512 for DeBERTa-v3).
        atol: the parity gate's max |Δlogit| (default 1e-4).
        onnx_hook: called with ``model.onnx`` right after export, before the gate.

    A source whose ``config.json`` carries
    :data:`export.testmodels.RANDOM_WEIGHTS_CONFIG_KEY` (every seeded test
    model does) is recorded with ``random_weights=True``.

    Returns:
        An :class:`ExportReport`: ``status="exported"`` after a new export, or
        ``"verified"`` when ``output`` already held a good export of the same
        model and revision (nothing is redone).

    Raises:
        ExportError: bad arguments, missing model directory, failed download
            (the message ends with :data:`OFFLINE_HINT`), unloadable model,
            unwritable output, or an output directory holding something else.
        LabelError: ``id2label`` is not exactly contradiction/entailment/neutral.
        ParityError: the exported model failed the golden gate (nothing written).
        ManifestError: ``output`` holds an export whose ``manifest.json`` is
            unreadable or invalid, whose files no longer match it, or whose
            golden outputs no longer reproduce (the message ends with
            :func:`redo_advice`).
        ImportError: the ``export`` extra (torch, transformers, optimum-onnx) is missing.

    Example:
        >>> report = export_model("path/to/hf-dir", output=Path("models/tiny"))  # doctest: +SKIP
        >>> report.manifest.labels  # doctest: +SKIP
        ('contradiction', 'entailment', 'neutral')
    """
    _check_arguments(opset, max_length, atol)
    local = Path(model).expanduser()
    if local.exists():
        source = resolve_source(model, revision, default_model=DEFAULT_MODEL, default_revision=DEFAULT_REVISION)
        target = Path(output) if output is not None else default_output_dir(model, revision, local=True)
        return _run(
            model=model,
            kind="local",
            revision=revision,
            target=target,
            resolve=lambda: source,
            random_weights=False,
            opset=opset,
            max_length=max_length,
            atol=atol,
            onnx_hook=onnx_hook,
        )
    if not looks_like_hub_id(model):
        raise ExportError(f"--model {model}: model directory not found")
    if revision is None:
        if model != DEFAULT_MODEL:
            raise ExportError(f"--model {model}: --revision is required with a hub id (pin a commit hash)")
        revision = DEFAULT_REVISION
    pinned = revision
    target = Path(output) if output is not None else default_output_dir(model, pinned, local=False)
    return _run(
        model=model,
        kind="hub",
        revision=pinned,
        target=target,
        resolve=lambda: _resolve_hub(model, pinned),
        random_weights=False,
        opset=opset,
        max_length=max_length,
        atol=atol,
        onnx_hook=onnx_hook,
    )


def export_smoke(
    output: Optional[Path] = None,
    *,
    seed: int = 0,
    opset: Optional[int] = None,
    atol: float = DEFAULT_ATOL,
) -> ExportReport:
    """Build the seeded tiny DeBERTa-v2 test model and export it (``--smoke``).

    The manifest records ``source="smoke"``, ``random_weights=True`` and
    ``model=SMOKE_MODEL``: the directory is for plumbing checks only, its
    outputs mean nothing.

    Args:
        output: target directory (default ``models/tiny-deberta-v2-smoke-seed<seed>``).
        seed: weight seed of :func:`export.testmodels.build_tiny_model`.
        opset: ONNX opset (default: optimum's).
        atol: the parity gate's max |Δlogit|.

    Returns:
        An :class:`ExportReport` (``"verified"`` when ``output`` already holds it).

    Raises:
        ExportError: as :func:`export_model`.
    """
    from .testmodels import build_tiny_model

    _check_arguments(opset, None, atol)
    revision = f"seed{seed}"
    target = Path(output) if output is not None else default_model_dir("tiny-deberta-v2-smoke", revision)
    with tempfile.TemporaryDirectory(prefix="claim-verifier-smoke-") as scratch:

        def resolve() -> ModelSource:
            path = build_tiny_model(Path(scratch) / "tiny-deberta-v2", seed=seed)
            return ModelSource(
                model=SMOKE_MODEL, path=path, kind="smoke", requested_revision=revision, resolved_revision=None
            )

        return _run(
            model=SMOKE_MODEL,
            kind="smoke",
            revision=revision,
            target=target,
            resolve=resolve,
            random_weights=True,
            opset=opset,
            max_length=None,
            atol=atol,
            onnx_hook=None,
        )

"""The export pipeline: ``python -m export`` as a library call.

:func:`export_model` (and :func:`export_smoke`) run, in order:

1. resolve ``--model`` (a local directory is checked at once; a hub id needs
   a revision, :func:`verifier_export.source.plan_source`) and the target directory
   (``--output`` or ``models/<name>-<revision[:12]>``);
2. if the target already holds an export: verify it
   (:func:`verifier_export.existing.check_target`: files against the manifest, golden
   outputs re-scored with onnxruntime) and return ``status="verified"``
   without redoing work, or refuse when it does not verify or holds another
   model -- never overwrite it;
3. in a staging directory beside the target: download a hub revision, check
   the labels, write ``tokenizer.json`` and ``config.json``, export
   ``model.onnx`` (stock or span-sliced attention), run the golden parity
   gate, write ``golden.json`` and, last, ``manifest.json``;
4. rename the staging directory into place. Any failure removes it.

The directory format is docs/model-directory.md.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Sequence

from verifier.engine.golden import GOLDEN_NAME, write_golden
from verifier.engine.manifest import (
    CONFIG_NAME,
    RANDOM_WEIGHTS_CONFIG_KEY,
    REQUIRED_FILES,
    TOKENIZER_NAME,
    Manifest,
)
from verifier.options import default_model_dir
from verifier.types import DEFAULT_MODEL, DEFAULT_REVISION

from .errors import DownloadError, ExportError
from .existing import check_target, redo_advice
from .graph import export_gated
from .grounding import SMOKE_GROUNDING_MODEL, GroundingPlan, build_grounding, plan_grounding, smoke_grounding_plan
from .identity import establish, unnamed_local
from .manifest import (
    collect_versions,
    file_records,
    publish,
    record_default,
    staging_dir,
    utc_now,
    write_manifest,
)
from .onnx import (
    MIN_EXPORT_MAX_LENGTH,
    Attention,
    check_attention,
    default_max_length,
    load_reference_tokenizer,
    load_torch_model,
    read_config,
    read_labels,
    resolve_max_length,
    write_tokenizer_json,
)
from .parity import DEFAULT_ATOL, ParityResult, run_parity
from .progress import Progress, or_silent
from .report import ExportReport
from .source import (
    ModelSource,
    SourceKind,
    hub_offline,
    looks_like_hub_id,
    plan_source,
    resolve_source,
)

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
MIN_MAX_LENGTH = MIN_EXPORT_MAX_LENGTH
#: Extra tokenizer files copied into the export when the source has them, so
#: ``AutoTokenizer.from_pretrained(<export dir>)`` works for independent checks.
_OPTIONAL_FILES: tuple[str, ...] = ("tokenizer_config.json", "special_tokens_map.json")

#: Appended to a failed hub download: the two ways to export without the network. It names options,
#: not a command line: the CLI's ``next:`` line gives the whole command with the interpreter in use.
OFFLINE_HINT = "(offline? export a local Hugging Face directory with --model DIR, or a random-weights plumbing model with --smoke)"
#: Called with each exported ``model.onnx`` before its parity gate (tests perturb it).
OnnxHook = Callable[[Path], None]


def default_output_dir(model: str, revision: Optional[str], *, local: bool) -> Path:
    """The default ``--output``.

    Hub ids: ``models/<name>-<revision[:12]>``
    (:func:`verifier.options.default_model_dir`). Local directories:
    ``models/<dirname>-<revision[:12]>`` with ``--revision``, else
    ``models/<dirname>-local``.

    Example:
        >>> default_output_dir("cross-encoder/nli-deberta-v3-base", "6c749ce3425cd33b46d187e45b92bbf96ee12ec7",
        ...                    local=False).as_posix()
        'models/nli-deberta-v3-base-6c749ce3425c'
    """
    if local:
        name = Path(model).expanduser().resolve().name or "model"
        return default_model_dir(name, revision) if revision else Path("models") / f"{name}-local"
    if revision is None:  # pragma: no cover - callers resolve the revision first
        raise ExportError(f"--model {model}: a revision is needed for the default output directory")
    return default_model_dir(model, revision)


def _resolve_hub(model: str, revision: str) -> ModelSource:
    """:func:`verifier_export.source.resolve_source` for a hub id; a failed download ends with :data:`OFFLINE_HINT`."""
    try:
        return resolve_source(model, revision, default_model=DEFAULT_MODEL, default_revision=DEFAULT_REVISION)
    except DownloadError as exc:
        raise DownloadError(f"{exc} {OFFLINE_HINT}") from exc


def _check_arguments(opset: Optional[int], max_length: Optional[int], atol: float, attention: str) -> Attention:
    if not (isinstance(atol, (int, float)) and 0.0 < float(atol) < float("inf")):
        raise ExportError(f"--atol {atol}: must be a positive finite number")
    if opset is not None and not 11 <= opset <= 30:
        raise ExportError(f"--opset {opset}: must be between 11 and 30")
    if max_length is not None and max_length < MIN_MAX_LENGTH:
        raise ExportError(f"--max-length {max_length}: must be at least {MIN_MAX_LENGTH}")
    return check_attention(attention)


def _build(
    source: ModelSource,
    staging: Path,
    *,
    random_weights: bool,
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
    attention: Attention,
    onnx_hook: Optional[OnnxHook],
    progress: Progress,
    grounding: Optional[GroundingPlan] = None,
) -> tuple[Manifest, ParityResult, Literal["copied", "converted"], str]:
    """Write a complete export (manifest last) into ``staging``; the last item says why span was not used."""
    if grounding is not None:  # the second model kind (docs/grounding.md)
        return build_grounding(source, staging, grounding, random_weights=random_weights, opset=opset,
                               max_length=max_length, atol=atol, attention=attention, onnx_hook=onnx_hook,
                               progress=progress)
    progress(f"reading config.json and the tokenizer of {source.path}")
    config_path = source.path / CONFIG_NAME
    config = read_config(source.path)
    labels = read_labels(config, where=str(config_path))
    random_weights = random_weights or config.get(RANDOM_WEIGHTS_CONFIG_KEY) is True

    reference_tokenizer = load_reference_tokenizer(source.path)
    tokenizer_mode = write_tokenizer_json(source.path, staging / TOKENIZER_NAME, reference_tokenizer)
    shutil.copyfile(config_path, staging / CONFIG_NAME)
    optional = [name for name in _OPTIONAL_FILES if (source.path / name).is_file()]
    for name in optional:
        shutil.copyfile(source.path / name, staging / name)

    resolved_max_length = resolve_max_length(max_length, default_max_length(reference_tokenizer, config), config, config_path)
    pad_token_id = reference_tokenizer.pad_token_id
    if pad_token_id is None:
        pad_token_id = config.get("pad_token_id")
    if not isinstance(pad_token_id, int) or pad_token_id < 0:
        raise ExportError(f"{source.path}: the tokenizer has no pad token and config.json no pad_token_id")

    progress("loading the PyTorch model")
    torch_model = load_torch_model(source.path)

    def gate(onnx_path: Path, inputs: Sequence[str]) -> ParityResult:
        progress(f"parity gate: PyTorch against onnxruntime on the golden pairs, alone and batched (atol {atol:g})")
        return run_parity(
            torch_model=torch_model, reference_tokenizer=reference_tokenizer, onnx_path=onnx_path,
            tokenizer_json=staging / TOKENIZER_NAME, labels=labels, inputs=inputs,
            max_length=resolved_max_length, pad_token_id=pad_token_id, atol=atol,
        )

    graph = export_gated(
        torch_model, staging / "model.onnx", config=config, attention=attention, opset=opset, gate=gate,
        onnx_hook=onnx_hook, progress=progress,
    )
    parity, inputs, graph_opset = graph.parity, graph.inputs, graph.opset
    progress("writing golden.json and manifest.json")
    write_golden(staging / GOLDEN_NAME, parity.golden)
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
        identity=source.identity,
        attention=graph.attention,
        created_at=utc_now(),
    )
    write_manifest(staging, manifest)
    return manifest, parity, tokenizer_mode, graph.note


def _run(
    *,
    model: str,
    kind: SourceKind,
    revision: Optional[str],
    target: Path,
    resolve: Callable[[], ModelSource],
    random_weights: bool,
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
    attention: Attention,
    onnx_hook: Optional[OnnxHook],
    progress: Progress,
    resolving: str,
    grounding: Optional[GroundingPlan] = None,
) -> ExportReport:
    started = time.perf_counter()
    if target.exists():
        progress(f"checking the export already in {target} (files against its manifest, golden outputs)")
    existing = check_target(
        target, model=model, kind=kind, revision=revision, opset=opset, max_length=max_length, atol=atol
    )
    if existing is not None:
        return ExportReport(
            status="verified",
            output_dir=target,
            manifest=existing.manifest,
            parity=None,
            tokenizer_json=None,
            verified_max_abs_logit_diff=existing.max_abs_logit_diff,
            seconds=time.perf_counter() - started,
        )
    with staging_dir(target) as staging:
        progress(resolving)
        source = resolve()
        manifest, parity, tokenizer_mode, note = _build(
            source,
            staging,
            random_weights=random_weights,
            opset=opset,
            max_length=max_length,
            atol=atol,
            attention=attention,
            onnx_hook=onnx_hook,
            progress=progress,
            grounding=grounding,
        )
        progress(f"moving the export into place: {target}")
        publish(staging, target)
    return ExportReport(
        status="exported",
        output_dir=target,
        manifest=manifest,
        parity=parity,
        tokenizer_json=tokenizer_mode,
        verified_max_abs_logit_diff=None,
        seconds=time.perf_counter() - started,
        attention_note=note,
    )


def export_model(
    model: str = DEFAULT_MODEL,
    *,
    revision: Optional[str] = None,
    output: Optional[Path] = None,
    opset: Optional[int] = None,
    max_length: Optional[int] = None,
    atol: float = DEFAULT_ATOL,
    attention: Attention = "span",
    onnx_hook: Optional[OnnxHook] = None,
    model_id: Optional[str] = None,
    progress: Optional[Progress] = None,
    kind: Optional[str] = None,
    template: Optional[str] = None,
    support_label: Optional[int] = None,
) -> ExportReport:
    """Export a three-label NLI cross-encoder, or a two-label grounding checker, to a verified ONNX model directory.

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
        attention: ``"span"`` (default: DeBERTa-v2/v3 with shared relative
            attention keys is traced with span-sliced relative attention,
            :func:`verifier_export.fast_attention.span_sliced_attention`; other
            models export stock; a span graph that misses the parity gate is
            replaced by the stock one, and the report says so) or ``"stock"``
            (transformers' own attention). The attention exported is recorded
            as ``Manifest.attention``; it is not compared when ``output``
            already holds an export.
        onnx_hook: called with ``model.onnx`` right after export, before the gate.
        model_id: with a local ``model`` folder: the hub id it is a copy of. The
            export then names that model (not the folder), defaults to its
            default location (``models/<name>-<revision[:12]>``), and records
            how the identity was established
            (:func:`verifier_export.identity.establish`: a cache snapshot's path,
            download metadata, or the user's word; ``revision`` is required for a
            plain folder).
        progress: called with one line as each stage starts (download,
            loading, ONNX export, parity gate, writing; default silent;
            ``python -m export`` prints them to stderr with the time elapsed,
            :func:`verifier_export.progress.stderr_progress`).
        kind: ``"nli"``, ``"grounding"`` or ``None`` (default: grounding for a hub id of
            :data:`verifier.engine.kinds.KNOWN_GROUNDING_MODELS`, else NLI; docs/grounding.md).
        template, support_label: for ``kind="grounding"`` of a model not in that table: the text it
            reads (``{document}``, ``{claim}``, optionally ``{eos}``) and the column of "supported" (0 or 1).

    A source whose ``config.json`` carries
    :data:`verifier.engine.manifest.RANDOM_WEIGHTS_CONFIG_KEY` (every seeded test
    model does) is recorded with ``random_weights=True``.

    Returns:
        An :class:`ExportReport`: ``status="exported"`` after a new export, or
        ``"verified"`` when ``output`` already held a good export of the same
        model and revision (nothing is redone).

    Raises:
        ExportError: bad arguments, missing model directory, unloadable model,
            unwritable output, or an output directory holding something else.
        DownloadError: the hub download failed (the message ends with
            :data:`OFFLINE_HINT`).
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
    attention = _check_arguments(opset, max_length, atol, attention)
    grounding = plan_grounding(model_id or model, kind=kind, template=template, support_label=support_label)
    kind, pinned = plan_source(model, revision, default_model=DEFAULT_MODEL, default_revision=DEFAULT_REVISION)
    local = kind == "local"
    if model_id is not None and not local:
        raise ExportError(f"--model-id {model_id}: names the hub id of a local copy; --model {model} is not a local folder")
    # A local directory is checked at once; a hub id is downloaded only when the target needs it.
    checked = resolve_source(model, pinned) if local else None
    if checked is not None and model_id is not None:
        if not looks_like_hub_id(model_id):
            raise ExportError(f"--model-id {model_id}: not a hub id (org/name)")
        established = establish(checked.path, model_id, pinned)
        checked = replace(
            checked, model=model_id, requested_revision=established.revision,
            resolved_revision=established.resolved, identity=established.record,
        )
        model, pinned = model_id, established.revision
    elif checked is not None:
        checked = replace(checked, identity=unnamed_local(checked.path, checked.model, checked.requested_revision, checked.resolved_revision))

    def resolve() -> ModelSource:
        return checked if checked is not None else _resolve_hub(model, str(pinned))

    named = model_id is not None
    target = Path(output) if output is not None else default_output_dir(model, pinned, local=local and not named)
    report = _run(
        model=model,
        kind=kind,
        revision=pinned,
        target=target,
        resolve=resolve,
        random_weights=False,
        opset=opset,
        max_length=max_length,
        atol=atol,
        attention=attention,
        onnx_hook=onnx_hook,
        progress=or_silent(progress),
        grounding=grounding,
        resolving=(f"using the local folder {checked.path}" if checked is not None
                   else f"reading {model}@{pinned} from the Hugging Face cache (HF_HUB_OFFLINE)" if hub_offline()
                   else f"downloading {model}@{pinned} from the Hugging Face hub (cached files are reused)"),
    )
    if output is None and (named or not local) and pinned is not None:
        return _record_default(report, model, pinned)
    return report


def _record_default(report: ExportReport, model: str, revision: str) -> ExportReport:
    """Record a default-location export for this user (:func:`verifier_export.manifest.record_default`).

    A data directory that cannot be written costs a note, never the export.
    """
    try:
        pointer = record_default(model, revision, report.output_dir)
    except OSError as exc:
        reason = exc.strerror or " ".join(str(exc).split())
        return replace(report, pointer_note=f"could not record it for this user ({reason}); "
                                            f"from other directories pass --model-dir {report.output_dir.resolve()}")
    return replace(report, pointer=pointer)


def export_smoke(
    output: Optional[Path] = None,
    *,
    seed: int = 0,
    opset: Optional[int] = None,
    atol: float = DEFAULT_ATOL,
    attention: Attention = "span",
    progress: Optional[Progress] = None,
    kind: str = "nli",
) -> ExportReport:
    """Build the seeded tiny DeBERTa-v2 test model and export it (``--smoke``; ``kind="grounding"``: a
    MiniCheck-DeBERTa-shaped two-label model read through MiniCheck's template, docs/grounding.md).

    The manifest records ``source="smoke"``, ``random_weights=True`` and
    ``model=SMOKE_MODEL``: the directory is for plumbing checks only, its
    outputs mean nothing.

    Args:
        output: target directory (default ``models/tiny-deberta-v2-smoke-seed<seed>``).
        seed: weight seed of :func:`verifier_export.testmodels.build_tiny_model`.
        opset: ONNX opset (default: optimum's).
        atol: the parity gate's max |Δlogit|.
        attention: as :func:`export_model`.
        progress: as :func:`export_model`.

    Returns:
        An :class:`ExportReport` (``"verified"`` when ``output`` already holds it).

    Raises:
        ExportError: as :func:`export_model`.
    """
    from .testmodels import build_tiny_grounding_model, build_tiny_model  # test support, only for --smoke

    attention = _check_arguments(opset, None, atol, attention)
    revision = f"seed{seed}"
    grounding = smoke_grounding_plan(kind)
    model, name = (SMOKE_GROUNDING_MODEL, "tiny-minicheck-smoke") if grounding else (SMOKE_MODEL, "tiny-deberta-v2-smoke")
    target = Path(output) if output is not None else default_model_dir(name, revision)
    with tempfile.TemporaryDirectory(prefix="claim-verifier-smoke-") as scratch:

        def resolve() -> ModelSource:
            path = (build_tiny_grounding_model(Path(scratch) / name, architecture="deberta-v2", seed=seed) if grounding
                    else build_tiny_model(Path(scratch) / name, seed=seed))
            return ModelSource(model=model, path=path, kind="smoke", requested_revision=revision, resolved_revision=None)

        return _run(
            model=model,
            kind="smoke",
            revision=revision,
            target=target,
            resolve=resolve,
            random_weights=True,
            opset=opset,
            max_length=None,
            atol=atol,
            attention=attention,
            onnx_hook=None,
            progress=or_silent(progress),
            resolving=f"building the seeded tiny random model (seed {seed})",
            grounding=grounding,
        )

"""Exporting a two-label grounding checker (MiniCheck, FactCG): the second model kind (docs/grounding.md).

:func:`plan_grounding` decides whether ``python -m export`` makes a grounding
directory: a hub id of :data:`verifier.engine.kinds.KNOWN_GROUNDING_MODELS`
always does (its template, maximum length and support label come from its
source); any other two-label model does with ``--kind grounding --template TEXT
--support-label N``. :func:`build_grounding` then writes the directory as the
NLI export does -- ``tokenizer.json``, ``config.json``, ``model.onnx``, the
golden parity gate against PyTorch ``transformers`` running the same template,
``golden.json`` and, last, ``manifest.json`` with ``kind="grounding"`` and the
:class:`~verifier.engine.kinds.GroundingRecord`.

Sequence classifiers (MiniCheck-DeBERTa/-RoBERTa, FactCG) export through
optimum-onnx exactly like the NLI model (span-sliced DeBERTa attention
included); MiniCheck-Flan-T5 exports as one graph of the encoder plus one
decoder step giving the two label-token logits
(:mod:`verifier_export.label_token_graph`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Sequence

import numpy as np

from verifier.engine.golden import GOLDEN_NAME, write_golden
from verifier.engine.kinds import (
    GROUNDING_LABELS,
    GroundingRecord,
    KnownGroundingModel,
    fill_eos,
    known_grounding_model,
)
from verifier.engine.manifest import CONFIG_NAME, RANDOM_WEIGHTS_CONFIG_KEY, REQUIRED_FILES, TOKENIZER_NAME, Manifest

from .errors import ExportError, LabelError, one_line
from .graph import export_gated
from .manifest import collect_versions, file_records, utc_now, write_manifest
from .onnx import (
    Attention,
    default_max_length,
    load_reference_tokenizer,
    onnx_graph_info,
    read_config,
    resolve_max_length,
    write_tokenizer_json,
)
from .parity import GOLDEN_PAIRS, GoldenPair, ParityResult, run_parity
from .progress import Progress
from .source import ModelSource

__all__ = ["GROUNDING_GOLDEN_PAIRS", "SMOKE_GROUNDING_MODEL", "GroundingPlan", "plan_grounding", "smoke_grounding_plan",
           "build_grounding"]

#: Model id recorded by ``python -m export --smoke --kind grounding`` (random weights, MiniCheck-DeBERTa's template).
SMOKE_GROUNDING_MODEL = "smoke/tiny-minicheck-deberta"

_OPTIONAL_FILES: tuple[str, ...] = ("tokenizer_config.json", "special_tokens_map.json")

_WICE_LIKE = (
    "The Kansas City Chiefs won Super Bowl LVII in February 2023, defeating the Philadelphia Eagles 38 to 35 "
    "at State Farm Stadium in Glendale, Arizona. Patrick Mahomes was named the game's most valuable player "
    "after throwing three touchdown passes, and Harrison Butker kicked the go-ahead field goal with eight "
    "seconds remaining.\n"
)
#: The golden set of a grounding export: the NLI golden pairs read as (document, claim), plus
#: documents past 2,048 tokens, so truncation of the rendered text is checked at every length.
GROUNDING_GOLDEN_PAIRS: tuple[GoldenPair, ...] = (
    *GOLDEN_PAIRS,
    GoldenPair("long-document", _WICE_LIKE * 40, "The Chiefs won Super Bowl LVII."),
    GoldenPair("long-document", "\n".join([_WICE_LIKE.strip()] * 12), "Mahomes was the most valuable player."),
)


@dataclass(frozen=True)
class GroundingPlan:
    """What a grounding export needs beyond the NLI one.

    Attributes:
        known: the table's row when the model id is a known checker, else ``None``.
        template: a stated template (``{document}``, ``{claim}``; ``{eos}`` allowed), else ``None``.
        support_label: a stated support column, else ``None``.
        architecture: ``"sequence-classification"`` (stated models) or the known row's.
    """

    known: Optional[KnownGroundingModel]
    template: Optional[str]
    support_label: Optional[int]
    architecture: Literal["sequence-classification", "label-tokens"]

    def record(self, eos_token: Optional[str]) -> GroundingRecord:
        """The manifest's grounding record (``{eos}`` replaced by the tokenizer's end-of-sequence token).

        Raises:
            ExportError: the template is invalid, or needs an eos token the tokenizer lacks.
        """
        try:
            if self.known is not None:
                return self.known.record(eos_token)
            return GroundingRecord(architecture="sequence-classification",
                                   template=fill_eos(str(self.template), eos_token, "{eos}"),
                                   support_column=int(self.support_label or 0), source="stated at export")
        except ValueError as exc:
            raise ExportError(f"--template: {one_line(exc)}") from exc


def plan_grounding(
    model_id: str, *, kind: Optional[str], template: Optional[str], support_label: Optional[int]
) -> Optional[GroundingPlan]:
    """Whether (and how) ``model_id`` exports as a grounding model; ``None``: the NLI export.

    Args:
        model_id: the hub id the export names (``--model``, or ``--model-id`` for a local copy).
        kind: ``--kind`` (``"nli"``, ``"grounding"`` or ``None``: decided by the id).
        template, support_label: ``--template`` and ``--support-label``.

    Raises:
        ExportError: a known checker asked to export as NLI or with its template restated; a
            grounding export of an unknown model without both ``--template`` and ``--support-label``;
            either flag without ``--kind grounding``.
    """
    if kind not in (None, "nli", "grounding"):
        raise ExportError(f"--kind {kind}: must be nli or grounding")
    if support_label is not None and support_label not in (0, 1):
        raise ExportError(f"--support-label {support_label}: must be 0 or 1 (a two-label model's columns)")
    known = known_grounding_model(model_id)
    stated = [flag for flag, value in (("--template", template), ("--support-label", support_label)) if value is not None]
    if known is not None:
        if kind == "nli":
            raise ExportError(f"--kind nli: {model_id} is a two-label grounding model ({known.source}); "
                              "leave out --kind, or give --kind grounding")
        if stated:
            raise ExportError(f"{' and '.join(stated)}: {model_id} is a known grounding model whose template and "
                              f"support label come from its source ({known.source}); leave them out")
        return GroundingPlan(known, None, None, known.architecture)
    if kind != "grounding":
        if stated:
            raise ExportError(f"{' and '.join(stated)} {'need' if len(stated) > 1 else 'needs'} --kind grounding "
                              "(a two-label grounding model)")
        return None
    missing = [flag for flag, value in (("--template", template), ("--support-label", support_label)) if value is None]
    if missing:
        raise ExportError(f"--kind grounding: {model_id} is not a known grounding model (docs/grounding.md lists them); "
                          f"state how it reads a pair with {' and '.join(missing)}")
    return GroundingPlan(None, template, support_label, "sequence-classification")


def smoke_grounding_plan(kind: str) -> Optional[GroundingPlan]:
    """``--smoke --kind grounding``: MiniCheck-DeBERTa's template and settings for the seeded tiny model; ``None`` for nli.

    Raises:
        ExportError: an unknown kind.
    """
    if kind not in ("nli", "grounding"):
        raise ExportError(f"--kind {kind}: must be nli or grounding")
    known = known_grounding_model("lytang/MiniCheck-DeBERTa-v3-Large")
    return GroundingPlan(known, None, None, "sequence-classification") if kind == "grounding" else None


def _two_labels(config: dict[str, Any], where: Path, architecture: str) -> None:
    """A sequence classifier must have exactly two labels (a three-label NLI model is refused, naming both kinds)."""
    if architecture != "sequence-classification":
        return
    id2label = config.get("id2label")
    # transformers leaves id2label out of config.json when it is its default, two labels LABEL_0 and LABEL_1
    count = len(id2label) if isinstance(id2label, dict) else config.get("num_labels", 2)
    if count != 2:
        raise LabelError(
            f"{where}: {count} labels ({list(id2label.values()) if isinstance(id2label, dict) else 'none'}); "
            "a two-label grounding model is expected here, not a three-label NLI model "
            "(an NLI model exports under its own id, without --kind grounding)"
        )


def _torch_model(path: Path, architecture: str) -> Any:
    import torch

    if architecture == "sequence-classification":
        from .onnx import load_torch_model

        return load_torch_model(path)
    from transformers import AutoModelForSeq2SeqLM

    try:
        model = AutoModelForSeq2SeqLM.from_pretrained(str(path), trust_remote_code=False)
    except Exception as exc:  # OSError, ValueError, ...
        raise ExportError(f"{path}: could not load the PyTorch seq2seq model: {one_line(exc)}") from exc
    return model.to(torch.float32).eval()


def _label_token_graph(
    torch_model: Any, path: Path, record: GroundingRecord, *, opset: Optional[int],
    gate: Callable[[Path, Sequence[str]], ParityResult], onnx_hook: Optional[Callable[[Path], None]], progress: Progress,
) -> tuple[ParityResult, tuple[str, ...], int]:
    from .label_token_graph import export_label_token_graph

    progress(f"exporting {path.name}: the encoder plus one decoder step, label tokens {record.label_token_ids}")
    export_label_token_graph(torch_model, path, label_token_ids=record.label_token_ids or (3, 209),
                             decoder_start_token_id=record.decoder_start_token_id or 0, opset=opset)
    if onnx_hook is not None:
        onnx_hook(path)
    inputs, outputs, graph_opset = onnx_graph_info(path)
    if "logits" not in outputs:
        raise ExportError(f"{path}: the graph has no 'logits' output (outputs: {list(outputs)})")
    parity = gate(path, inputs)
    parity.raise_if_failed()
    return parity, tuple(inputs), graph_opset


def build_grounding(
    source: ModelSource,
    staging: Path,
    plan: GroundingPlan,
    *,
    random_weights: bool,
    opset: Optional[int],
    max_length: Optional[int],
    atol: float,
    attention: Attention,
    onnx_hook: Optional[Callable[[Path], None]],
    progress: Progress,
) -> tuple[Manifest, ParityResult, Literal["copied", "converted"], str]:
    """Write a complete grounding export (manifest last) into ``staging``.

    Returns:
        The manifest, the passing parity result, how ``tokenizer.json`` was made, and why span
        attention was not used (empty when it was, or did not apply).

    Raises:
        LabelError: a sequence classifier without exactly two labels.
        ParityError: the graph missed the golden gate (nothing is written).
        ExportError: anything else (unloadable model, bad template, max length beyond positions).
    """
    progress(f"reading config.json and the tokenizer of {source.path} (a two-label grounding model)")
    config_path = source.path / CONFIG_NAME
    config = read_config(source.path)
    _two_labels(config, config_path, plan.architecture)
    random_weights = random_weights or config.get(RANDOM_WEIGHTS_CONFIG_KEY) is True
    reference_tokenizer = load_reference_tokenizer(source.path)
    record = plan.record(getattr(reference_tokenizer, "eos_token", None))
    if plan.known is not None and max_length is not None and max_length != plan.known.max_length:
        record = record.model_copy(update={"source": f"{record.source}; max length {max_length} stated at export "
                                                     f"(the source's is {plan.known.max_length})"})
    tokenizer_mode = write_tokenizer_json(source.path, staging / TOKENIZER_NAME, reference_tokenizer)
    shutil.copyfile(config_path, staging / CONFIG_NAME)
    optional = [name for name in _OPTIONAL_FILES if (source.path / name).is_file()]
    for name in optional:
        shutil.copyfile(source.path / name, staging / name)
    default = plan.known.max_length if plan.known is not None else default_max_length(reference_tokenizer, config)
    resolved_max_length = resolve_max_length(max_length, default, config, config_path)
    pad_token_id = reference_tokenizer.pad_token_id if reference_tokenizer.pad_token_id is not None else config.get("pad_token_id")
    if not isinstance(pad_token_id, int) or pad_token_id < 0:
        raise ExportError(f"{source.path}: the tokenizer has no pad token and config.json no pad_token_id")
    labels = GROUNDING_LABELS if record.support_column == 1 else GROUNDING_LABELS[::-1]

    progress("loading the PyTorch model")
    torch_model = _torch_model(source.path, record.architecture)
    reference = _reference_logits(torch_model, record)

    def gate(onnx_path: Path, inputs: Sequence[str]) -> ParityResult:
        progress(f"parity gate: PyTorch against onnxruntime on {len(GROUNDING_GOLDEN_PAIRS)} golden (document, claim) "
                 f"pairs read through the template, alone and batched (atol {atol:g})")
        return run_parity(
            torch_model=torch_model, reference_tokenizer=reference_tokenizer, onnx_path=onnx_path,
            tokenizer_json=staging / TOKENIZER_NAME, labels=labels, inputs=inputs, max_length=resolved_max_length,
            pad_token_id=pad_token_id, atol=atol, pairs=GROUNDING_GOLDEN_PAIRS, grounding=record, torch_logits=reference,
        )

    note = ""
    graph_attention: Optional[Attention] = None
    if record.architecture == "label-tokens":
        parity, inputs, graph_opset = _label_token_graph(torch_model, staging / "model.onnx", record, opset=opset,
                                                         gate=gate, onnx_hook=onnx_hook, progress=progress)
    else:
        graph = export_gated(torch_model, staging / "model.onnx", config=config, attention=attention, opset=opset,
                             gate=gate, onnx_hook=onnx_hook, progress=progress)
        parity, inputs, graph_opset, note, graph_attention = graph.parity, graph.inputs, graph.opset, graph.note, graph.attention
    progress("writing golden.json and manifest.json")
    write_golden(staging / GOLDEN_NAME, parity.golden)
    extra = [name for name in ("model.onnx.data",) if (staging / name).is_file()]
    manifest = Manifest(
        model=source.model, requested_revision=source.requested_revision, resolved_revision=source.resolved_revision,
        source=source.kind, random_weights=random_weights, model_file="model.onnx",
        files=file_records(staging, [*REQUIRED_FILES, *optional, *extra]), labels=labels,
        max_length=resolved_max_length, opset=graph_opset, inputs=inputs, pad_token_id=pad_token_id,
        versions=collect_versions(), parity=parity.report, identity=source.identity, attention=graph_attention,
        created_at=utc_now(), kind="grounding", grounding=record,
    )
    write_manifest(staging, manifest)
    return manifest, parity, tokenizer_mode, note


def _reference_logits(torch_model: Any, record: GroundingRecord) -> Optional[Callable[[dict[str, Any]], np.ndarray]]:
    """The parity gate's PyTorch reference for one row: the classifier's logits (``None``: run_parity's
    default), or for ``label-tokens`` the two label-token logits after one decoder step."""
    if record.architecture != "label-tokens":
        return None
    from .label_token_graph import reference_label_logits

    def logits(inputs: dict[str, Any]) -> np.ndarray:
        values: np.ndarray = reference_label_logits(
            torch_model, inputs["input_ids"], inputs["attention_mask"],
            label_token_ids=record.label_token_ids or (3, 209), decoder_start_token_id=record.decoder_start_token_id or 0,
        )[0]
        return values

    return logits

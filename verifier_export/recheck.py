"""The exporter's one re-check of an ONNX file against ``golden.json`` (onnxruntime only, no torch).

Used when the exporter is re-run on an existing directory
(:func:`verify_golden`, from :mod:`verifier_export.existing`) and for every variant
:func:`verifier_export.variants.build_variants` builds. Both go through
:func:`compare_golden`:

1. ``golden.json`` is parsed by :func:`verifier.engine.golden.read_golden` and its
   logits taken in the manifest's label order;
2. every pair is re-tokenized with the directory's ``tokenizer.json`` as the
   runtime configures it (:func:`verifier.engine.tokenization.load_tokenizer` at the
   manifest's ``max_length``);
3. the ONNX file, in a session from :func:`verifier.engine.session.create_session`,
   scores each pair alone, all pairs in one padded batch, and in three other
   padded layouts (the file's own run-to-run spread, ``run_prob_spread``);
4. :func:`verifier.engine.golden.compare_to_golden` compares both runs with the
   recorded PyTorch logits and the recorded token ids.

Nothing is decided there: callers ask the returned
:class:`~verifier.engine.golden.GoldenComparison` for *every* failure against their
gate (:meth:`~verifier.engine.golden.GoldenComparison.failures`) and decide once.
The format is described in docs/model-directory.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from verifier.engine.golden import (
    DEFAULT_GOLDEN_ATOL,
    GOLDEN_NAME,
    Golden,
    GoldenComparison,
    GoldenFormatError,
    compare_to_golden,
    read_golden,
)
from verifier.engine.manifest import TOKENIZER_NAME, Manifest
from verifier.engine.session import create_session, session_options
from verifier.engine.tokenization import encode_for_model, load_tokenizer, pad_encodings

from .errors import ExportError, ManifestError, one_line
from .manifest import verify_export_dir

__all__ = ["read_export_golden", "compare_golden", "verify_golden"]


def read_export_golden(model_dir: Path, manifest: Manifest) -> tuple[Golden, np.ndarray]:
    """``golden.json`` of ``model_dir`` and its reference logits in ``manifest.labels`` order.

    Raises:
        ManifestError: the file is missing, malformed, or its labels are not the manifest's.
    """
    path = Path(model_dir) / GOLDEN_NAME
    try:
        golden = read_golden(path)
        return golden, golden.logits(manifest.labels)
    except (OSError, GoldenFormatError) as exc:
        raise ManifestError(f"{path}: missing or malformed: {one_line(exc)}") from exc


def compare_golden(
    model_dir: Path, onnx_file: str, manifest: Manifest, *, error: type[ExportError] = ExportError,
    session: Optional[Any] = None,
) -> tuple[GoldenComparison, Golden]:
    """Score ``golden.json`` with ``onnx_file`` (each pair alone and all batched) and compare.

    Args:
        model_dir: an exported model directory (already verified by the caller).
        onnx_file: the ONNX file to score, relative to ``model_dir``.
        manifest: the directory's verified manifest (labels, max length, pad id).
        error: the error type for an ONNX file onnxruntime cannot load or run.
        session: an already built session over ``onnx_file`` with onnxruntime's
            ``run``/``get_inputs`` (an OpenVINO variant's
            :class:`~verifier.engine.ov_session.OpenVinoSession`); default: an
            onnxruntime session of the file.

    Returns:
        The comparison (nothing decided) and the parsed golden set.

    Raises:
        ManifestError: ``golden.json`` missing or malformed.
        error: onnxruntime cannot load or run the file, or its logits have the wrong shape.
    """
    model_dir = Path(model_dir)
    golden, reference = read_export_golden(model_dir, manifest)
    tokenizer = load_tokenizer(model_dir / TOKENIZER_NAME, max_length=manifest.max_length)
    encodings = encode_for_model(tokenizer, golden.pairs, manifest.grounding)
    path = model_dir / onnx_file
    if session is None:
        session = create_session(path, session_options(), where=str(path), error=error)
    names = [node.name for node in session.get_inputs()]
    with_types = "token_type_ids" in names

    def run(batch: Sequence[Any]) -> np.ndarray:
        arrays = pad_encodings(batch, pad_token_id=manifest.pad_token_id, with_token_type_ids=with_types)
        return np.asarray(session.run(["logits"], {name: arrays[name] for name in names})[0], dtype=np.float64)

    try:
        batched = run(encodings)
        single = np.concatenate([run([encoding]) for encoding in encodings], axis=0)
        layouts = [_in_layout(run, encodings, batches) for batches in _other_layouts(encodings)]
    except Exception as exc:  # onnxruntime raises its own Exception subclasses
        raise error(f"{path}: the runtime failed on the golden pairs: {one_line(exc)}") from exc
    try:
        comparison = compare_to_golden(
            reference,
            [single, batched, *layouts],
            token_ids=[encoding.ids for encoding in encodings],
            recorded_ids=golden.recorded_ids,
        )
    except ValueError as exc:  # logits of another shape than golden.json's
        raise error(f"{path}: {exc}") from exc
    return comparison, golden


def _other_layouts(encodings: Sequence[Any]) -> list[list[list[int]]]:
    """Padded batch layouts beyond "alone" and "all at once", each a list of batches of pair indices: pairs
    in twos, in threes from the end, and each pair beside the longest. Their spread from "alone" is the
    graph's own run-to-run spread (``run_prob_spread``; a dynamic-int8 graph quantises per batch)."""
    count = len(encodings)
    longest = max(range(count), key=lambda index: len(encodings[index].ids)) if count else 0
    backwards = list(range(count))[::-1]
    return [
        [list(range(start, min(start + 2, count))) for start in range(0, count, 2)],
        [backwards[start:start + 3] for start in range(0, count, 3)],
        [[index, longest] if index != longest else [index] for index in range(count)],
    ]


def _in_layout(run: Any, encodings: Sequence[Any], batches: list[list[int]]) -> np.ndarray:
    """Logits (n, k) of every pair, each taken from its own row of the batch it was run in."""
    rows: dict[int, np.ndarray] = {}
    for batch in batches:
        logits = run([encodings[index] for index in batch])
        for position, index in enumerate(batch):
            rows.setdefault(index, logits[position])
    return np.stack([rows[index] for index in range(len(encodings))])


def verify_golden(
    model_dir: Path,
    *,
    onnx_file: str = "model.onnx",
    atol: Optional[float] = None,
    manifest: Optional[Manifest] = None,
) -> float:
    """Re-score ``golden.json`` with onnxruntime alone (no torch) and refuse any disagreement.

    The pairs are scored alone and batched (:func:`compare_golden`); every
    failure is collected before deciding: changed token ids, non-finite
    logits, max |Δlogit| above ``atol``, and any argmax that differs.

    Args:
        model_dir: an exported model directory.
        onnx_file: the ONNX file to score (a variant may be checked too).
        atol: max |Δlogit| allowed (default: the ``atol`` recorded in
            ``golden.json``, else 1e-4).
        manifest: the directory's already verified manifest (default: verify
            the directory with :func:`verifier_export.manifest.verify_export_dir`).

    Returns:
        The largest |Δlogit| found.

    Raises:
        ManifestError: the directory does not verify, ``golden.json`` is missing
            or malformed, onnxruntime cannot load or run the model, or the
            model disagrees with ``golden.json`` (the message lists every failure).
    """
    model_dir = Path(model_dir)
    manifest = manifest if manifest is not None else verify_export_dir(model_dir)
    comparison, golden = compare_golden(model_dir, onnx_file, manifest, error=ManifestError)
    tolerance = atol if atol is not None else (golden.atol if golden.atol is not None else DEFAULT_GOLDEN_ATOL)
    failures = comparison.failures(atol=tolerance)
    if failures:
        raise ManifestError(f"{model_dir / onnx_file} disagrees with its {GOLDEN_NAME}: " + "; ".join(failures))
    return comparison.max_abs_logit_diff

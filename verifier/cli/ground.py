"""``ground``: document-level grounding checks with an exported grounding model (docs/grounding.md).

Usage::

    python -m verifier ground ROWS.jsonl --model-dir DIR [-o OUT.jsonl] [--no-chunking | --chunk-size N]

Each input line is ``{"id": ..., "document": "...", "claim": "..."}`` (``id``
optional: a string, an integer or null; no other key). Every row is checked
before any model work: a bad row is ``INPUT line N: ...`` and exit 2, nothing
written. Each output line (in input order) is::

    {"id": ..., "claim": "...", "support_probability": 0.93, "supported": true, "label": 1,
     "truncated": false, "chunks": [{"start": 0, "end": 812, "support_probability": 0.93, "truncated": false}],
     "chunking": {"unit": "tokens", "size": 400, "splitter": "nltk-punkt"}, "engine": {...}}

``chunks`` give each chunk's span in the document (``document[start:end]``) and
its P(support); ``supported`` (and ``label``, MiniCheck's 0/1) is
``support_probability > 0.5``; ``truncated`` says the model read only the start
of some chunk (or, with ``--no-chunking``, of the document); ``engine`` is the
engine identity (docs/audit.md), naming the grounding kind, template and
maximum length. ``-o`` is written atomically. Exit status as ``verify``.

WiCE's test file (``--input-format wice``, or recognised by its keys) is scored
as PRME's registered oracle-retrieval protocol (:mod:`verifier.cli.ground_wice`):
one output line per claim with ``variant_support_probabilities``,
``support_probability`` (their maximum) and ``predicted_supported``, and the
confusion counts, precision, recall and balanced accuracy on stderr.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence, TypeVar

from .common import SUMMARIES, Context, threads
from .errors import EXIT_OK, UsageError, err
from .ground_wice import WiceCase, binary_metrics, check_text, describe_metrics, is_wice_row, wice_cases
from .inputs import open_lines
from .output import check_output_paths, commit_all, open_outputs
from .reads import model_dir_reads
from ..argtypes import int_range
from ..strictjson import loads as strict_loads

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..grounding import GroundingChecker

__all__ = ["add_parser", "run", "MAX_LINE_BYTES", "ROWS_PER_CALL"]

#: The longest input line, in bytes (a document of a few million characters fits).
MAX_LINE_BYTES = 32 << 20
#: Rows checked per engine call: their chunks go through the model in one batched pass.
ROWS_PER_CALL = 64
#: At most this many characters of documents per engine call, so that tokenizing a call's documents stays
#: bounded in memory (a 4 M-character document alone took ~860 MB to tokenize).
CHARS_PER_CALL = 4_000_000
_KEYS = {"id", "document", "claim"}


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> argparse.ArgumentParser:
    """Register ``ground``."""
    parser = subparsers.add_parser(
        "ground", help=SUMMARIES["ground"],
        description="Score JSON Lines rows {id, document, claim} with an exported grounding checker (MiniCheck, "
        "FactCG): P(support) as the maximum over MiniCheck's chunks, supported when > 0.5.",
    )
    parser.add_argument("input", metavar="INPUT", help="JSON Lines rows {\"id\", \"document\", \"claim\"} (- for stdin)")
    parser.add_argument("--model-dir", type=Path, required=True, metavar="DIR",
                        help="an exported grounding model directory (python -m export --model lytang/MiniCheck-...)")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="OUT",
                        help="write results here, atomically (default: stdout)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--no-chunking", action="store_true",
                     help="score each whole document, cut at the model's maximum length (PRME's WiCE protocol)")
    how.add_argument("--chunk-size", type=int_range(1, 100_000), default=None, metavar="N",
                     help="units per chunk (default: the model's, 400 tokens or 500 words for Flan-T5; a WiCE file is "
                     "scored whole unless this is given)")
    parser.add_argument("--splitter", choices=("auto", "nltk-punkt", "nltk-punkt-untrained"), default="auto",
                        help="sentence splitter for chunking (default auto: NLTK's trained Punkt when its punkt_tab "
                        "data is installed, else its untrained Punkt; docs/grounding.md)")
    parser.add_argument("--variant", default=None, help="a variant recorded in the manifest (default: float32 model.onnx)")
    parser.add_argument("--threads", type=threads, default=None, metavar="N", help="onnxruntime intra-op threads")
    parser.add_argument("--input-format", choices=("auto", "rows", "wice"), default="auto",
                        help="rows ({id, document, claim}) or wice (WiCE's test file: one line per oracle variant, "
                        "scored as PRME's registered protocol; docs/grounding.md); default auto, by the first row's keys")
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    parser.set_defaults(func=run)
    return parser


def _parse(number: int, text: str, source: str) -> Any:
    try:
        return strict_loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"error: {source} line {number}: not JSON: {' '.join(str(exc).split())}") from None


def _row(number: int, row: Any, source: str) -> dict[str, Any]:
    where = f"{source} line {number}"
    if not isinstance(row, dict):
        raise UsageError(f"error: {where}: must be a JSON object with document and claim")
    unknown = sorted(set(row) - _KEYS)
    if unknown:
        raise UsageError(f"error: {where}: field {unknown[0]}: unknown (rows hold id, document and claim)")
    for field in ("document", "claim"):
        value = row.get(field)
        if not isinstance(value, str):
            raise UsageError(f"error: {where}: field {field}: must be a string, got {type(value).__name__}")
        if not value.strip():
            raise UsageError(f"error: {where}: field {field}: empty; a {field} needs a visible character")
        check_text(value, f"{where}: field {field}")
    ident = row.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, (str, int))):
        raise UsageError(f"error: {where}: field id: must be a string, an integer or null")
    if isinstance(ident, str):
        check_text(ident, f"{where}: field id")
    return row


def run(args: argparse.Namespace, context: Optional[Context] = None) -> int:
    """Run ``ground`` (``context`` is unused)."""
    from ..grounding import GroundingChecker

    check_output_paths(args.input, args.output, None, reads=model_dir_reads(args.model_dir))
    from ..engine.model_directory import ModelDirectory

    ModelDirectory.open(args.model_dir, args.variant, kind="grounding")  # a missing or NLI directory, before any row
    source = "<stdin>" if args.input == "-" else args.input
    parsed = [(number, _parse(number, text, source)) for number, text in open_lines(args.input, MAX_LINE_BYTES) if text.strip()]
    wice = args.input_format == "wice" or (args.input_format == "auto" and bool(parsed) and is_wice_row(parsed[0][1]))
    checker = GroundingChecker(args.model_dir, splitter=args.splitter, variant=args.variant,
                               intra_op_num_threads=args.threads)
    # PRME's WiCE protocol scores whole documents: a WiCE file is chunked only when --chunk-size asks for it
    chunk_size = 0 if args.no_chunking or (wice and args.chunk_size is None) else args.chunk_size
    if wice:
        lines, summary = _wice_lines(checker, wice_cases(parsed, source), chunk_size)
    else:
        lines, summary = _row_lines(checker, [_row(number, row, source) for number, row in parsed], chunk_size)
    writers = open_outputs(args.output if args.output is not None else Path("-"), None)
    try:
        for line in lines:
            writers[0].write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
        commit_all(writers)
    except BaseException:
        for writer in writers:
            writer.discard()
        raise
    if not args.quiet:
        err(summary)
    return EXIT_OK


_T = TypeVar("_T")


def _calls(items: Sequence[_T], size: Callable[[_T], int]) -> Iterator[list[_T]]:
    """``items`` in runs of at most :data:`ROWS_PER_CALL` and (but for a single larger item) :data:`CHARS_PER_CALL`."""
    part: list[_T] = []
    total = 0
    for item in items:
        if part and (len(part) == ROWS_PER_CALL or total + size(item) > CHARS_PER_CALL):
            yield part
            part, total = [], 0
        part.append(item)
        total += size(item)
    if part:
        yield part


def _row_lines(checker: "GroundingChecker", rows: list[dict[str, Any]], chunk_size: Optional[int]) -> tuple[list[dict[str, Any]], str]:
    """One output line per ``{id, document, claim}`` row, in input order, and the summary line."""
    lines: list[dict[str, Any]] = []
    for part in _calls(rows, lambda row: len(row["document"])):
        results = checker.check_many([row["document"] for row in part], [row["claim"] for row in part], chunk_size=chunk_size)
        for row, result in zip(part, results):
            lines.append({
                "id": row.get("id"), "claim": result.claim, "support_probability": result.support_probability,
                "supported": result.supported, "label": int(result.supported), "truncated": result.truncated,
                "chunks": [chunk.model_dump(mode="json", exclude={"text"}) for chunk in result.chunks],
                "chunking": None if result.chunking is None else result.chunking.model_dump(mode="json"),
                "engine": result.engine.model_dump(mode="json"),
            })
    supported = sum(line["supported"] for line in lines)
    return lines, f"grounded {len(lines)} rows: {supported} supported, {len(lines) - supported} not"


def _wice_lines(checker: "GroundingChecker", cases: list[WiceCase], chunk_size: Optional[int]) -> tuple[list[dict[str, Any]], str]:
    """One output line per WiCE claim (PRME's recorded fields, plus ``truncated`` and the engine), and the summary."""
    lines: list[dict[str, Any]] = []
    for part in _calls(cases, lambda case: sum(len(document) for document in case.documents)):
        results = checker.check_many([document for case in part for document in case.documents],
                                     [case.claim for case in part for _ in case.documents], chunk_size=chunk_size)
        at = 0
        for case in part:
            variants = results[at:at + len(case.documents)]
            at += len(case.documents)
            best = max(result.support_probability for result in variants)
            lines.append({
                "id": case.id, "label": case.label, "oracle_variants": len(variants),
                "variant_support_probabilities": [result.support_probability for result in variants],
                "support_probability": best, "predicted_supported": best > 0.5,
                "truncated": any(result.truncated for result in variants),
                "chunking": None if variants[0].chunking is None else variants[0].chunking.model_dump(mode="json"),
                "engine": variants[0].engine.model_dump(mode="json"),
            })
    metrics = binary_metrics([line["label"] for line in lines], [line["predicted_supported"] for line in lines])
    truncated = sum(line["truncated"] for line in lines)
    how = "whole documents" if chunk_size == 0 else f"chunked to {lines[0]['chunking']['size']} units" if lines else "-"
    return lines, (f"grounded {len(lines)} WiCE claims ({sum(len(case.documents) for case in cases)} oracle variants, "
                   f"{how}, {truncated} claims with a variant cut at the maximum length): {describe_metrics(metrics)}")

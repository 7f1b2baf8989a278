"""The export's golden-output parity gate (PyTorch against onnxruntime) and the ``golden.json`` it yields.

At export, every pair of :data:`GOLDEN_PAIRS` is scored

* by PyTorch (float32, one pair at a time, transformers fast-tokenizer ids) --
  the reference;
* by onnxruntime on ids from the exported ``tokenizer.json`` configured by
  :func:`verifier.engine.tokenization.load_tokenizer` (exactly what the runtime
  feeds it), each pair alone *and* all pairs in one padded batch.

The gate collects every failure, then decides once: it passes only when, for
every pair, max |Δlogit| <= ``atol`` (default 1e-4) singly and batched, the
argmax is identical in all three, and the runtime token ids (and token type
ids, when the graph takes them) equal the transformers fast tokenizer's. A
failure raises :class:`~verifier_export.errors.ParityError` carrying a table of the
worst pairs; no manifest is written.

The result carries the :class:`verifier.engine.golden.Golden` to write as
``golden.json`` (format 1, docs/model-directory.md), which lets the torch-free
runtime re-score the model; the exporter's own re-check of an existing
directory is :mod:`verifier_export.recheck`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from verifier.engine.golden import Golden, GoldenRecord, softmax
from verifier.engine.manifest import ParityReport
from verifier.engine.session import create_session, session_options
from verifier.engine.kinds import GroundingRecord, render
from verifier.engine.tokenization import encode_for_model, load_tokenizer, pad_encodings

from .errors import ParityError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "DEFAULT_ATOL",
    "GoldenPair",
    "GOLDEN_PAIRS",
    "PairParity",
    "ParityResult",
    "run_parity",
]

#: Default gate: max |Δlogit| between PyTorch and onnxruntime (float32).
DEFAULT_ATOL = 1e-4
_ALLOWED_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class GoldenPair:
    """One fixed (premise, hypothesis) pair of the golden set, with a category for reports."""

    category: str
    premise: str
    hypothesis: str


_LONG_PARAGRAPH = (
    "The quarterly infrastructure review covered the migration of the billing service to the new "
    "cluster, the retirement of the legacy message queue, and the rollout of passkeys for every "
    "internal dashboard. Engineers reported that latency at the 95th percentile dropped from 480 "
    "milliseconds to 210 milliseconds after the database connection pool was resized, while error "
    "rates stayed below one tenth of a percent during the whole window. "
)
_LONG_QUESTIONS = (
    "Several attendees asked whether the on-call rotation should change before the holiday freeze, "
    "and the platform team agreed to revisit staffing once the incident backlog is cleared. "
)

#: The golden set (>= 24 pairs): short NLI-like pairs, examples of docs/decision.md §8,
#: long pairs past 512 tokens on either or both sides (truncation), pairs near
#: the limit, non-ASCII scripts, combining accents, emoji (ZWJ sequences,
#: skin tones), control and zero-width characters, and empty-looking
#: whitespace-heavy text.
GOLDEN_PAIRS: tuple[GoldenPair, ...] = (
    GoldenPair("short", "The deployment date is May 4.", "The deployment date is May 4."),
    GoldenPair("short", "Topically related only.", "The deployment date is May 4."),
    GoldenPair("short", "The launch is Tuesday.", "The launch is not Tuesday; it is Wednesday."),
    GoldenPair("short", "Ravi no longer owns ingestion; Tessa owns it.", "Ravi owns the ingestion pipeline."),
    GoldenPair("short", "A man is playing a guitar on stage.", "A person is performing music."),
    GoldenPair("short", "A soccer game with multiple males playing.", "Some men are playing a sport."),
    GoldenPair("short", "The cat sat on the mat.", "The dog is asleep in the garden."),
    GoldenPair("short", "Alice does not use Jira.", "Alice does not use Jira."),
    GoldenPair("short", "I want to enable passkeys after the security review.", "The user enabled passkeys."),
    GoldenPair("short", "The service listens on port 8080.", "The service listens on port 8443."),
    GoldenPair("minimal", "Yes.", "No."),
    GoldenPair("minimal", "a", "b"),
    GoldenPair(
        "group",
        "[E1] The trip starts in Austin.\n[E2] The next stop after Austin is Tulsa.",
        "Tulsa follows Austin on the trip.",
    ),
    GoldenPair(
        "punctuation",
        "Version 4.2.1 costs $1,299.99 (≈ €1.2k) — 50% off! See https://example.com/a?b=c&d=e.",
        "The product is discounted by half.",
    ),
    GoldenPair("non-ascii", "Der Zug nach München fährt um 9:15 Uhr ab.", "Der Zug fährt am Morgen."),
    GoldenPair("non-ascii", "Le café est fermé le lundi, d'après l'équipe.", "Le café est ouvert tous les jours."),
    GoldenPair("non-ascii", "東京は日本の首都です。人口は約千四百万人です。", "The capital of Japan is Tokyo."),
    GoldenPair("non-ascii", "Ελληνικά και русский текст в одном предложении.", "Mixed scripts appear here."),
    GoldenPair("non-ascii", "مرحبا بالعالم، هذا نص عربي.", "שלום עולם, זה טקסט בעברית."),
    GoldenPair("combining", "Cafe\u0301 na\u0308ive re\u0301sume\u0301 \u212b \ufb01le", "Café naïve résumé Å file"),
    GoldenPair("emoji", "The release shipped 🚀🎉 on Tuesday!", "The release shipped on Tuesday."),
    GoldenPair("emoji", "👍", "👎🏽 family: 👨\u200d👩\u200d👧 flag: 🇳🇿"),
    GoldenPair(
        "control",
        "Zero\u200bwidth\u200d joiner, soft\u00adhyphen, bell\u0007 and tab\tend.",
        "Text with\u0000 a NUL and \u202eRTL override.",
    ),
    GoldenPair("whitespace", "   \t  The   meeting \n\n is   at   noon.   ", "The meeting is at noon."),
    GoldenPair("whitespace", "\n\n\t  \u00a0 \u2003 \u3000 ", "   "),
    GoldenPair("whitespace", "\r\n".join(["Line one.", "", "   Line three.  ", "\t"]), " . "),
    GoldenPair("long-premise", _LONG_PARAGRAPH * 8, "Latency improved after the pool was resized."),
    GoldenPair("long-hypothesis", "The billing service moved.", (_LONG_PARAGRAPH + _LONG_QUESTIONS) * 6),
    GoldenPair("long-both", _LONG_PARAGRAPH * 6, _LONG_QUESTIONS * 14),
    GoldenPair("near-limit", _LONG_PARAGRAPH * 2, _LONG_QUESTIONS * 3),
)


@dataclass(frozen=True)
class PairParity:
    """Parity of one golden pair.

    Attributes:
        index: position in the golden set.
        category: the pair's category (``short``, ``long-both``, ...).
        tokens: token count after truncation (special tokens included).
        single_diff: max |Δlogit| of onnxruntime (pair alone) vs PyTorch.
        batch_diff: max |Δlogit| of onnxruntime (in the padded batch) vs PyTorch.
        prob_diff: max |Δprobability| after softmax over both runs.
        torch_argmax: argmax column of the PyTorch logits.
        single_argmax: argmax column of onnxruntime, pair alone.
        batch_argmax: argmax column of onnxruntime, in the batch.
        ids_identical: runtime token ids (and type ids when used) equal the
            transformers fast tokenizer's.
        finite: all logits finite.
    """

    index: int
    category: str
    tokens: int
    single_diff: float
    batch_diff: float
    prob_diff: float
    torch_argmax: int
    single_argmax: int
    batch_argmax: int
    ids_identical: bool
    finite: bool

    @property
    def max_diff(self) -> float:
        """The larger of :attr:`single_diff` and :attr:`batch_diff`."""
        return max(self.single_diff, self.batch_diff)

    @property
    def argmax_agrees(self) -> bool:
        """Whether PyTorch, onnxruntime single and onnxruntime batch pick the same column."""
        return self.torch_argmax == self.single_argmax == self.batch_argmax

    def problems(self, atol: float) -> list[str]:
        """Every reason this pair fails the gate at ``atol`` (empty when it passes)."""
        where = f"pair {self.index} ({self.category})"
        found: list[str] = []
        if not self.finite:
            found.append(f"{where}: non-finite logits")
        if not self.ids_identical:
            found.append(f"{where}: token ids differ from the transformers fast tokenizer")
        if not self.single_diff <= atol:
            found.append(f"{where}: single max |Δlogit| {self.single_diff:.3g} > atol {atol:g}")
        if not self.batch_diff <= atol:
            found.append(f"{where}: batched max |Δlogit| {self.batch_diff:.3g} > atol {atol:g}")
        if not self.argmax_agrees:
            found.append(
                f"{where}: argmax torch {self.torch_argmax}, onnx single {self.single_argmax}, "
                f"onnx batch {self.batch_argmax}"
            )
        return found


@dataclass(frozen=True)
class ParityResult:
    """Outcome of :func:`run_parity`: one row per golden pair, every failure, and ``golden.json``.

    Attributes:
        rows: one :class:`PairParity` per golden pair, in golden order.
        atol: the gate's max |Δlogit|.
        failures: every problem found, in pair order (empty when passed).
        golden: what to write as ``golden.json`` (:func:`verifier.engine.golden.write_golden`).
    """

    rows: tuple[PairParity, ...]
    atol: float
    failures: tuple[str, ...]
    golden: Golden = field(repr=False)

    @property
    def passed(self) -> bool:
        """True when no pair failed."""
        return not self.failures

    @property
    def report(self) -> ParityReport:
        """The manifest's summary of this run."""
        return ParityReport(
            passed=self.passed,
            pairs=len(self.rows),
            atol=self.atol,
            max_abs_logit_diff=max(row.max_diff for row in self.rows),
            max_abs_prob_diff=max(row.prob_diff for row in self.rows),
            argmax_agreement=sum(row.argmax_agrees for row in self.rows) / len(self.rows),
            token_ids_identical=all(row.ids_identical for row in self.rows),
        )

    def worst(self, count: int = 5) -> tuple[PairParity, ...]:
        """The ``count`` worst pairs: failing ones first, then by max |Δlogit|."""
        ranked = sorted(
            self.rows,
            key=lambda row: (not row.problems(self.atol), -_nan_high(row.max_diff), row.index),
        )
        return tuple(ranked[:count])

    def table(self, count: int = 5) -> str:
        """A readable table of the :meth:`worst` pairs."""
        lines = ["pair  category          tokens  single|Δ|   batch|Δ|    argmax t/s/b  ids"]
        for row in self.worst(count):
            lines.append(
                f"{row.index:>4}  {row.category:<16}  {row.tokens:>6}  {row.single_diff:<10.3g}  "
                f"{row.batch_diff:<10.3g}  {row.torch_argmax}/{row.single_argmax}/{row.batch_argmax}"
                f"         {'same' if row.ids_identical else 'DIFFER'}"
            )
        return "\n".join(lines)

    def raise_if_failed(self) -> None:
        """Decide once.

        Raises:
            ParityError: any pair failed; the message counts the failures and
                names the first, ``report`` holds the worst-pairs table.
        """
        if self.passed:
            return
        summary = self.report
        failing = sum(1 for row in self.rows if row.problems(self.atol))
        raise ParityError(
            f"golden parity failed for {failing} of {len(self.rows)} pairs "
            f"(max |Δlogit| {summary.max_abs_logit_diff:.3g}, atol {self.atol:g}, "
            f"argmax agreement {summary.argmax_agreement:.0%}, "
            f"token ids identical: {summary.token_ids_identical}); first: {self.failures[0]}",
            report=self.table() + "\n" + "\n".join(self.failures),
        )


def _nan_high(value: float) -> float:
    return float("inf") if value != value else value


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("nan")
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))


def _probabilities(logits: np.ndarray) -> np.ndarray:
    """:func:`verifier.engine.golden.softmax` of one row of logits."""
    row: np.ndarray = softmax(np.asarray(logits)[None, :])[0]
    return row


def _ort_run(session: Any, arrays: dict[str, np.ndarray], inputs: Sequence[str]) -> np.ndarray:
    feed = {name: arrays[name] for name in inputs}
    try:
        logits = session.run(["logits"], feed)[0]
    except Exception as exc:  # onnxruntime raises its own types
        raise ParityError(f"onnxruntime inference failed: {' '.join(str(exc).split())}") from exc
    return np.asarray(logits, dtype=np.float32)


def run_parity(
    *,
    torch_model: "PreTrainedModel",
    reference_tokenizer: "PreTrainedTokenizerBase",
    onnx_path: Path,
    tokenizer_json: Path,
    labels: Sequence[str],
    inputs: Sequence[str],
    max_length: int,
    pad_token_id: int,
    atol: float = DEFAULT_ATOL,
    pairs: Sequence[GoldenPair] = GOLDEN_PAIRS,
    grounding: Optional[GroundingRecord] = None,
    torch_logits: Optional[Callable[[dict[str, "torch.Tensor"]], np.ndarray]] = None,
) -> ParityResult:
    """Score the golden pairs with PyTorch and onnxruntime and compare them.

    PyTorch gets the transformers fast tokenizer's ids (``truncation=True``,
    i.e. ``longest_first``, at ``max_length``), one pair at a time, restricted
    to the graph's ``inputs``. onnxruntime gets ids from ``tokenizer_json`` via
    :func:`verifier.engine.tokenization.load_tokenizer` and
    :func:`~verifier.engine.tokenization.pad_encodings` (int64, shape (batch, length)),
    each pair alone and all pairs in one batch padded to the longest.

    Args:
        torch_model: the float32 PyTorch classifier in eval mode.
        reference_tokenizer: the transformers fast tokenizer of the source.
        onnx_path: the exported ``model.onnx``.
        tokenizer_json: the exported ``tokenizer.json``.
        labels: ``id2label`` in index order (recorded in ``golden.json``).
        inputs: the ONNX graph's input names.
        max_length: truncation length in tokens, special tokens included.
        pad_token_id: the pad id used for batching.
        atol: the gate's max |Δlogit|.
        pairs: the golden pairs (tests may pass fewer).
        grounding: for a grounding model (docs/grounding.md): each pair is a (document, claim)
            rendered by the record's template into one text, which transformers tokenizes as
            MiniCheck does (``tokenizer(text, truncation=True, max_length=max_length)``) and the
            runtime as it always will (:func:`verifier.engine.tokenization.encode_for_model`).
        torch_logits: the PyTorch reference for one unpadded row, given its int64 tensors of
            shape (1, length) by input name (default: ``torch_model(**inputs).logits[0]``; the
            MiniCheck-Flan-T5 graph's reference reads two label-token logits instead).

    Returns:
        A :class:`ParityResult`; call :meth:`ParityResult.raise_if_failed` to
        apply the gate. This function itself never raises for a mismatch.

    Raises:
        ParityError: the graph has inputs the runtime cannot feed, there are
            no pairs, or onnxruntime cannot load or run the file.
    """
    import torch

    if not pairs:
        raise ParityError("the golden set is empty")
    unknown = [name for name in inputs if name not in _ALLOWED_INPUTS]
    if unknown or "input_ids" not in inputs or "attention_mask" not in inputs:
        raise ParityError(f"{onnx_path}: unsupported graph inputs {list(inputs)}")
    with_types = "token_type_ids" in inputs

    runtime_tokenizer = load_tokenizer(tokenizer_json, max_length=max_length)
    texts = [(pair.premise, pair.hypothesis) for pair in pairs]
    encodings = encode_for_model(runtime_tokenizer, texts, grounding)

    session = create_session(onnx_path, session_options(), where=str(onnx_path), error=ParityError)
    batch_arrays = pad_encodings(encodings, pad_token_id=pad_token_id, with_token_type_ids=with_types)
    batch_logits = _ort_run(session, batch_arrays, inputs)

    rows: list[PairParity] = []
    records: list[GoldenRecord] = []
    failures: list[str] = []
    for index, (pair, encoding) in enumerate(zip(pairs, encodings)):
        if grounding is not None:
            rendered = render(grounding.template, pair.premise, pair.hypothesis)
            reference = reference_tokenizer(rendered, truncation=True, max_length=max_length)
        else:
            reference = reference_tokenizer(pair.premise, pair.hypothesis, truncation=True, max_length=max_length)
        ref_ids = list(reference["input_ids"])
        ref_types = list(reference.get("token_type_ids") or [0] * len(ref_ids))
        ids_identical = list(encoding.ids) == ref_ids
        if with_types:
            ids_identical = ids_identical and list(encoding.type_ids) == ref_types

        feed = {"input_ids": ref_ids, "attention_mask": [1] * len(ref_ids), "token_type_ids": ref_types}
        with torch.no_grad():
            torch_inputs = {name: torch.tensor([feed[name]], dtype=torch.long) for name in inputs}
            if torch_logits is not None:
                reference_logits = np.asarray(torch_logits(torch_inputs), dtype=np.float32).reshape(-1)
            else:
                reference_logits = torch_model(**torch_inputs).logits[0].float().cpu().numpy()

        single_arrays = pad_encodings([encoding], pad_token_id=pad_token_id, with_token_type_ids=with_types)
        single_logits = _ort_run(session, single_arrays, inputs)[0]
        in_batch = batch_logits[index]

        finite = bool(np.all(np.isfinite(reference_logits)) and np.all(np.isfinite(single_logits)))
        finite = finite and bool(np.all(np.isfinite(in_batch)))
        prob_diff = max(
            _max_abs(_probabilities(single_logits), _probabilities(reference_logits)),
            _max_abs(_probabilities(in_batch), _probabilities(reference_logits)),
        )
        row = PairParity(
            index=index,
            category=pair.category,
            tokens=len(encoding.ids),
            single_diff=_max_abs(single_logits, reference_logits),
            batch_diff=_max_abs(in_batch, reference_logits),
            prob_diff=prob_diff,
            torch_argmax=int(np.argmax(reference_logits)),
            single_argmax=int(np.argmax(single_logits)),
            batch_argmax=int(np.argmax(in_batch)),
            ids_identical=ids_identical,
            finite=finite,
        )
        rows.append(row)
        failures.extend(row.problems(atol))
        records.append(
            GoldenRecord(
                premise=pair.premise,
                hypothesis=pair.hypothesis,
                logits=tuple(float(value) for value in reference_logits.astype(np.float32)),
                input_ids=tuple(int(value) for value in encoding.ids),
                token_type_ids=tuple(int(value) for value in encoding.type_ids),
                category=pair.category,
            )
        )

    golden = Golden(
        labels=tuple(labels),
        records=tuple(records),
        atol=atol,
        max_length=max_length,
        pad_token_id=pad_token_id,
        inputs=tuple(inputs),
        grounding=None if grounding is None else grounding.model_dump(mode="json"),
    )
    return ParityResult(rows=tuple(rows), atol=atol, failures=tuple(failures), golden=golden)

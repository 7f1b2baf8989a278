"""One model directory, loaded: verified files, tokenizer, onnxruntime session, graph I/O.

:meth:`LoadedModel.load` opens the directory with
:meth:`verifier.engine.model_directory.ModelDirectory.open`, loads the tokenizer,
builds the session through :mod:`verifier.engine.session` (or a caller's session
factory) and checks the graph; :meth:`LoadedModel.run` tokenizes pairs once
and runs them in planned, padded batches (:mod:`verifier.engine.batching`);
:meth:`LoadedModel.check_golden` re-scores ``golden.json``
(:mod:`verifier.engine.golden`). :class:`verifier.engine.scorer.OnnxScorer` holds one of
these behind its load lock; everything here is read-only once built.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, cast

import numpy as np

from .batching import BATCH_OVERHEAD_TOKENS, DEFAULT_MAX_BATCH_TOKENS, BatchedLogits, run_batches
from .golden import DEFAULT_GOLDEN_ATOL, GOLDEN_NAME, GoldenFormatError, compare_to_golden, quote_indices
from .manifest import Manifest, resolve_inside, sha256_file
from .model_directory import ModelDirectory
from .ov_session import OPENVINO_PROVIDER
from .session import DEFAULT_PROVIDERS, create_session, graph_io, release_free_heap, session_options
from .tokenization import encode_for_model
from ..types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from onnxruntime import InferenceSession  # type: ignore[import-untyped,unused-ignore]
    from tokenizers import Encoding, Tokenizer  # type: ignore[import-untyped,unused-ignore]

__all__ = ["SessionFactory", "SessionSettings", "BatchSettings", "LoadedModel", "engine_settings", "EXTERNAL_DATA_FOLDER_KEY",
           "external_data_entries"]

#: onnxruntime's session config key naming the folder of a graph's external data when the graph itself is
#: loaded from a descriptor or bytes (the runtime's verified load; docs/model-directory.md).
EXTERNAL_DATA_FOLDER_KEY = "session.model_external_initializers_file_folder_path"


def external_data_entries(directory: ModelDirectory) -> dict[str, str]:
    """For a graph whose weights are ONNX external data (``<model file>.data``, recorded in the manifest: a
    model over protobuf's 2 GB, such as MiniCheck-Flan-T5-Large in float32): hash that file against the
    manifest, then name its folder to onnxruntime. Empty for every other graph.

    onnxruntime opens the data file by name after this check, so a file swapped in between goes unnoticed
    until the next load or ``info --verify-files`` (docs/security.md); the graph file itself is hashed as read.

    Raises:
        ClaimVerificationError: the data file is missing, resolves outside the directory, or differs from
            its record.
    """
    name = f"{directory.model_file}.data"
    record = directory.manifest.files.get(name)
    if record is None:
        return {}
    try:
        path = resolve_inside(directory.path, name)
        digest, size = (sha256_file(path), path.stat().st_size) if path.is_file() else (None, None)
    except (ValueError, OSError) as exc:
        raise ClaimVerificationError(f"model directory {directory.path}: {name}: {exc}") from exc
    if (digest, size) != (record.sha256, record.size):
        raise ClaimVerificationError(
            f"model directory {directory.path} does not match its manifest (tampered or incomplete; re-export it): "
            f"{name}: " + ("missing" if digest is None else f"sha256 {digest} size {size} != manifest {record.sha256} size {record.size}"))
    return {EXTERNAL_DATA_FOLDER_KEY: str(path.parent)}

_LOG = logging.getLogger("verifier.engine")

#: Makes the inference session: ``factory(model, options, providers=..., where=...)`` where
#: ``model`` is the verified ONNX model (a ``/proc/self/fd/N`` name of the hashed file, or its
#: verified bytes; :meth:`ModelDirectory.verified_model`), ``where`` its path for messages,
#: and ``options`` come from
#: :func:`verifier.engine.session.session_options`. The result needs ``run``,
#: ``get_inputs``, ``get_outputs`` and ``get_providers`` as onnxruntime's
#: ``InferenceSession`` has them. Default: :func:`verifier.engine.session.create_session`.
SessionFactory = Callable[..., Any]


@dataclass(frozen=True)
class SessionSettings:
    """How the session is built (see :func:`verifier.engine.session.session_options`)."""

    providers: tuple[str, ...] = DEFAULT_PROVIDERS
    intra_op_num_threads: Optional[int] = None
    inter_op_num_threads: Optional[int] = None
    graph_optimization_level: str = "all"
    enable_cpu_mem_arena: bool = True
    enable_mem_pattern: bool = False
    config_entries: Mapping[str, str] = field(default_factory=dict)
    factory: SessionFactory = create_session
    #: Hand the heap memory onnxruntime freed while loading back to the OS once the session
    #: exists (:func:`verifier.engine.session.release_free_heap`; docs/performance.md).
    release_free_heap: bool = True


@dataclass(frozen=True)
class BatchSettings:
    """How pairs are cut into padded batches (see :func:`verifier.engine.batching.plan_batches`)."""

    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_batch_size: Optional[int] = None
    batch_overhead_tokens: float = BATCH_OVERHEAD_TOKENS


def engine_settings(
    *,
    providers: Optional[Sequence[str]],
    intra_op_num_threads: Optional[int],
    inter_op_num_threads: Optional[int],
    graph_optimization_level: str,
    session_config_entries: Optional[Mapping[str, str]],
    max_batch_tokens: int,
    max_batch_size: Optional[int],
    padding: str,
    batch_overhead_tokens: float,
    enable_cpu_mem_arena: bool = True,
    enable_mem_pattern: bool = False,
    session_factory: Optional[SessionFactory] = None,
) -> tuple[SessionSettings, BatchSettings]:
    """A scorer's constructor arguments as session and batch settings (``padding="none"``: one pair a batch)."""
    session = SessionSettings(
        providers=tuple(providers) if providers is not None else DEFAULT_PROVIDERS,
        intra_op_num_threads=intra_op_num_threads,
        inter_op_num_threads=inter_op_num_threads,
        graph_optimization_level=graph_optimization_level,
        enable_cpu_mem_arena=bool(enable_cpu_mem_arena),
        enable_mem_pattern=bool(enable_mem_pattern),
        config_entries=dict(session_config_entries or {}),
        factory=session_factory if session_factory is not None else create_session,
    )
    batching = BatchSettings(
        max_batch_tokens=int(max_batch_tokens),
        max_batch_size=1 if padding == "none" else int(max_batch_size) if max_batch_size is not None else None,
        batch_overhead_tokens=float(batch_overhead_tokens),
    )
    return session, batching


@dataclass(frozen=True)
class LoadedModel:
    """A verified model directory with its tokenizer and session; read-only."""

    directory: ModelDirectory
    session: "InferenceSession"
    tokenizer: "Tokenizer"
    input_names: tuple[str, ...]
    output_name: str
    with_token_type_ids: bool
    providers: tuple[str, ...]

    @property
    def manifest(self) -> Manifest:
        """The verified manifest."""
        return self.directory.manifest

    @property
    def runtime(self) -> str:
        """The kernel library that runs the model: ``"onnxruntime"`` or ``"openvino"`` (the variant's record)."""
        record = self.directory.variant_record
        return record.runtime if record is not None and self.providers == (OPENVINO_PROVIDER,) else "onnxruntime"

    @classmethod
    def load(
        cls,
        model_dir: Path,
        variant: Optional[str],
        *,
        expected_model: Optional[str],
        expected_revision: Optional[str],
        settings: SessionSettings,
        kind: str = "nli",
    ) -> "LoadedModel":
        """Open, verify and load ``model_dir`` (variant ``variant``) holding a model of ``kind``.

        Raises:
            ClaimVerificationError: any check of
                :meth:`~verifier.engine.model_directory.ModelDirectory.open`, an unloadable
                tokenizer, an unavailable provider, an unloadable model, or a graph
                the engine cannot feed (:func:`verifier.engine.session.graph_io`).
        """
        directory = ModelDirectory.open(
            model_dir, variant, expected_model=expected_model, expected_revision=expected_revision, kind=kind
        )
        if directory.random_weights:
            _LOG.warning("%s holds a random-weights model: its probabilities mean nothing", model_dir)
        options = session_options(
            intra_op_num_threads=settings.intra_op_num_threads,
            inter_op_num_threads=settings.inter_op_num_threads,
            graph_optimization_level=settings.graph_optimization_level,
            config_entries={**settings.config_entries, **external_data_entries(directory)},
            enable_cpu_mem_arena=settings.enable_cpu_mem_arena,
            enable_mem_pattern=settings.enable_mem_pattern,
        )
        # The tokenizer loads in a thread beside onnxruntime's session creation, which releases the
        # GIL; the pool waits for it either way (OpenVINO's order differs: see open_openvino).
        record = directory.variant_record
        # an OpenVINO variant runs on OpenVINO unless the caller brought their own session factory
        openvino = record if record is not None and record.runtime == "openvino" and settings.factory is create_session else None
        if openvino is not None and tuple(settings.providers) != DEFAULT_PROVIDERS:
            raise ClaimVerificationError(
                f"variant {variant!r} runs on OpenVINO's CPU plugin; execution providers "
                f"{list(settings.providers)} apply to onnxruntime variants only"
            )
        if openvino is not None:
            from .ov_load import open_openvino  # the openvino extra, imported only for its variants

            # the tokenizer parses while OpenVINO imports, after the file's read (docs/performance.md)
            session, loaded_tokenizer = open_openvino(
                directory, openvino, threads=settings.intra_op_num_threads, alongside=directory.load_tokenizer
            )
            tokenizer = cast("Tokenizer", loaded_tokenizer)  # given alongside, never None
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="verifier-tokenizer") as pool:
                pending = pool.submit(directory.load_tokenizer)
                with directory.verified_model() as model:
                    session = settings.factory(model, options, providers=settings.providers, where=str(directory.model_path))
                tokenizer = pending.result()
        if settings.release_free_heap:
            release_free_heap()
        input_names, output_name, with_token_type_ids = graph_io(session, directory.manifest, directory.model_path)
        loaded = cls(
            directory=directory,
            session=session,
            tokenizer=tokenizer,
            input_names=input_names,
            output_name=output_name,
            with_token_type_ids=with_token_type_ids,
            providers=tuple(session.get_providers()),
        )
        _LOG.debug(
            "loaded %s (%s @ %s) from %s with %s",
            directory.model_file, directory.manifest.model, directory.manifest.resolved_revision,
            model_dir, ", ".join(loaded.providers),
        )
        return loaded

    def run(self, pairs: Sequence[tuple[str, str]], batching: BatchSettings) -> BatchedLogits:
        """Tokenize ``pairs`` once and run them in planned batches; logits in caller order.

        Raises:
            ClaimVerificationError: tokenization or onnxruntime failed, or the model
                returned logits of the wrong shape or dtype, or non-finite logits
                (the message names the batch and the pair indices).
        """
        return self.run_encoded(self.encode(pairs), batching)

    def encode(self, pairs: Sequence[tuple[str, str]]) -> list["Encoding"]:
        """Tokenize ``pairs`` in one Rust call (:func:`verifier.engine.tokenization.encode_for_model`).

        A grounding model's (document, claim) pairs are first rendered into one text each by the
        manifest's template (:func:`verifier.engine.kinds.render`) and tokenized as single sequences
        (:func:`verifier.engine.tokenization.encode_texts`).

        Raises:
            ClaimVerificationError: the tokenizer failed.
        """
        try:
            return encode_for_model(self.tokenizer, pairs, self.manifest.grounding)
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise ClaimVerificationError(f"tokenization of {len(pairs)} pairs failed: {exc}") from exc

    def run_encoded(self, encodings: Sequence["Encoding"], batching: BatchSettings) -> BatchedLogits:
        """Run already-tokenized pairs in planned batches; logits in the order of ``encodings``.

        Raises:
            ClaimVerificationError: as :meth:`run`, tokenization aside.
        """
        width = len(self.manifest.labels)

        def run_batch(feed: Mapping[str, np.ndarray], indices: np.ndarray, number: int, total: int) -> np.ndarray:
            rows = len(indices)
            where = f"batch {number + 1}/{total} (pair indices {quote_indices(indices.tolist())})"
            inputs = {name: feed[name] for name in self.input_names}
            try:
                outputs = self.session.run([self.output_name], inputs)
            except Exception as exc:  # onnxruntime and OpenVINO raise their own Exception subclasses
                raise ClaimVerificationError(f"{self.runtime} failed on {where}: {exc}") from exc
            logits = np.asarray(outputs[0])
            if logits.shape != (rows, width):
                raise ClaimVerificationError(
                    f"model returned logits of shape {logits.shape} for {where}; expected ({rows}, {width})"
                )
            if not np.issubdtype(logits.dtype, np.floating):
                raise ClaimVerificationError(f"model returned {logits.dtype} logits for {where}; expected float")
            finite = np.isfinite(logits).all(axis=1)
            if not finite.all():
                bad = indices[~finite].tolist()
                raise ClaimVerificationError(f"model returned non-finite logits in {where} for pairs {quote_indices(bad)}")
            return logits.astype(np.float32, copy=False)

        return run_batches(
            encodings,
            run_batch,
            width=width,
            pad_token_id=self.manifest.pad_token_id,
            with_token_type_ids=self.with_token_type_ids,
            max_batch_tokens=batching.max_batch_tokens,
            max_batch_size=batching.max_batch_size,
            batch_overhead_tokens=batching.batch_overhead_tokens,
        )

    def check_golden(self, batching: BatchSettings) -> None:
        """Re-score ``golden.json``; refuse the model beyond the parity tolerance.

        Checks, collecting every failure before deciding: the runtime token
        ids equal the recorded ones; every argmax agrees; and the gates of the
        parity report (the variant's own for a variant) hold: max |Δlogit|
        against the PyTorch reference ≤ ``atol`` and max |Δprobability| ≤
        ``max_prob_diff_gate``, each when recorded. A report with neither falls
        back to golden.json's ``atol`` (else 1e-4).

        Raises:
            ClaimVerificationError: golden.json unrecorded, unreadable or
                malformed, or any of the checks above failed (all are listed).
        """
        directory = self.directory
        manifest = directory.manifest
        path = directory.path / GOLDEN_NAME
        if GOLDEN_NAME not in manifest.files:
            raise ClaimVerificationError(f"verify_golden: {GOLDEN_NAME} is not recorded in the manifest of {directory.path}")
        try:
            golden = directory.read_golden()
            reference = golden.logits(manifest.labels)
        except GoldenFormatError as exc:
            raise ClaimVerificationError(f"verify_golden: {path}: {exc}") from exc
        except ClaimVerificationError as exc:
            raise ClaimVerificationError(f"verify_golden: {exc}") from exc
        parity = directory.parity
        atol, gate = parity.atol, parity.max_prob_diff_gate
        if atol is None and gate is None:  # an ungated report: golden.json's own tolerance
            atol = golden.atol if golden.atol is not None else DEFAULT_GOLDEN_ATOL
        encodings = self.encode(golden.pairs)
        actual = self.run(golden.pairs, batching).logits
        comparison = compare_to_golden(
            reference, [actual], token_ids=[encoding.ids for encoding in encodings], recorded_ids=golden.recorded_ids
        )
        failures = comparison.failures(atol=atol, max_prob_diff=gate)
        if failures:
            raise ClaimVerificationError(
                f"verify_golden: {directory.model_path} disagrees with its golden.json: " + "; ".join(failures)
            )

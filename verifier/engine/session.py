"""The one place onnxruntime sessions are configured and created.

The engine, the exporter's parity gate and variant builder, and the
benchmarks all build their ``InferenceSession`` here, so a session's
threads, optimisation level, execution mode, logging and config entries are
set the same way everywhere.

onnxruntime is imported inside the functions: importing this module is cheap.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Union

from ..types import ClaimVerificationError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from onnxruntime import InferenceSession, SessionOptions  # type: ignore[import-untyped,unused-ignore]

    from .manifest import Manifest

__all__ = [
    "KNOWN_INPUTS",
    "DEFAULT_CONFIG_ENTRIES",
    "effective_config_entries",
    "GRAPH_OPTIMIZATION_LEVELS",
    "DEFAULT_PROVIDERS",
    "session_options",
    "check_providers",
    "create_session",
    "graph_io",
    "release_free_heap",
]

#: Accepted ``graph_optimization_level`` names (onnxruntime ``GraphOptimizationLevel``:
#: ORT_DISABLE_ALL, ORT_ENABLE_BASIC, ORT_ENABLE_EXTENDED, ORT_ENABLE_ALL).
GRAPH_OPTIMIZATION_LEVELS: tuple[str, ...] = ("disable", "basic", "extended", "all")
#: Execution providers used when none are requested: CPU only.
DEFAULT_PROVIDERS: tuple[str, ...] = ("CPUExecutionProvider",)
#: Graph inputs the engine knows how to feed (all int64, shape (batch, length)).
KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})
#: Session config entries set unless the caller gives the same key (measurements: docs/performance.md).
#: Spinning off: the intra-op threads block instead of busy-waiting between parallel sections, which was
#: faster on a shared machine and leaves cores to the host application; the scores are bit-identical
#: either way, and ``{"session.intra_op.allow_spinning": "1"}`` (``RuntimeOptions.session_config_entries``)
#: restores onnxruntime's default on a dedicated machine.
#:
#: ``optimization.disable_specified_optimizers=SkipLayerNormFusion``: onnxruntime fuses each int8 layer's
#: residual ``Add`` + ``LayerNormalization`` into ``SkipLayerNormalization``, whose CPU kernel ran slower
#: than the pair it replaces. The float32 graphs are not fused either way (same bits); the int8 logits
#: move slightly (the LayerNorm is summed in another order), so variant gates and the score store's key
#: use this setting. A caller's own value replaces it (``""`` re-enables every fusion; names separated by ``;``).
#:
#: ``session.x64quantprecision=1``: on x86 CPUs without VNNI (AVX2, or AVX-512 without VNNI) onnxruntime's
#: u8s8 int8 matmul sums pairs of products in int16, which saturates; with this entry it converts int8
#: weights to u8 there (u8u8 kernels, exact int32 sums), so an int8 variant scores what its gate measured
#: on any CPU. On a CPU with VNNI or AMX it changes nothing; float32 graphs are unaffected
#: (docs/performance.md, "int8 on CPUs without VNNI").
DEFAULT_CONFIG_ENTRIES: Mapping[str, str] = {
    "session.intra_op.allow_spinning": "0",
    "optimization.disable_specified_optimizers": "SkipLayerNormFusion",
    "session.x64quantprecision": "1",
}


def effective_config_entries(config_entries: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The session config entries a session gets: :data:`DEFAULT_CONFIG_ENTRIES` with ``config_entries``
    on top (a key given there wins), sorted by key."""
    return dict(sorted({**DEFAULT_CONFIG_ENTRIES, **(config_entries or {})}.items()))


def session_options(
    *,
    intra_op_num_threads: Optional[int] = None,
    inter_op_num_threads: Optional[int] = None,
    graph_optimization_level: str = "all",
    config_entries: Optional[Mapping[str, str]] = None,
    optimized_model_filepath: Optional["str | os.PathLike[str]"] = None,
    enable_cpu_mem_arena: bool = True,
    enable_mem_pattern: bool = False,
) -> "SessionOptions":
    """onnxruntime ``SessionOptions`` as the project uses them.

    Sequential execution (one model, one request at a time: the parallelism
    is intra-op), onnxruntime's own thread defaults unless threads are given,
    errors-only logging (severity 3).

    Args:
        intra_op_num_threads: intra-op threads (``None``: onnxruntime's default,
            one per physical core).
        inter_op_num_threads: inter-op threads (``None``: default).
        graph_optimization_level: one of :data:`GRAPH_OPTIMIZATION_LEVELS`.
        config_entries: session config entries, e.g.
            ``{"session.intra_op.allow_spinning": "1"}`` (names: onnxruntime's
            ``onnxruntime_session_options_config_keys.h``), on top of
            :data:`DEFAULT_CONFIG_ENTRIES` (a key given here wins).
        optimized_model_filepath: where onnxruntime writes the optimised graph
            at session creation (used to build the ``optimized`` variant).
        enable_cpu_mem_arena: onnxruntime's CPU memory arena (default on). Off, every
            tensor goes to malloc: over 120 varied engine calls the RSS rose to
            1,154 MiB instead of plateauing at 1,033 MiB (span-sliced float32,
            ``python -m bench.rss_curve``), and on bare batches of up to 4,096
            tokens it peaked at 2.1-2.6 GiB instead of 0.95 GiB, 1.6x slower
            (docs/performance.md).
        enable_mem_pattern: onnxruntime's memory-pattern planning (default **off**,
            unlike onnxruntime's). A pattern is only reused for an identical input
            shape, and the engine's batches change shape with nearly every call:
            in the engine run above it made no difference (1,032 vs 1,033 MiB, same
            speed); on bare batches off was 23 MiB lower.

    Raises:
        ValueError: an unknown optimisation level, or a config entry that is not
            a pair of strings.
    """
    import onnxruntime as ort

    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    if graph_optimization_level not in levels:
        raise ValueError(
            f"graph_optimization_level must be one of {list(GRAPH_OPTIMIZATION_LEVELS)}, "
            f"got {graph_optimization_level!r}"
        )
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[graph_optimization_level]
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only; onnxruntime warnings are noise here
    options.enable_cpu_mem_arena = bool(enable_cpu_mem_arena)
    options.enable_mem_pattern = bool(enable_mem_pattern)
    if intra_op_num_threads is not None:
        options.intra_op_num_threads = intra_op_num_threads
    if inter_op_num_threads is not None:
        options.inter_op_num_threads = inter_op_num_threads
    for key, value in (config_entries or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"session config entries must map str to str, got {key!r}: {value!r}")
    for key, value in effective_config_entries(config_entries).items():
        options.add_session_config_entry(key, value)
    if optimized_model_filepath is not None:
        options.optimized_model_filepath = os.fspath(optimized_model_filepath)
    return options


def check_providers(providers: Sequence[str]) -> tuple[str, ...]:
    """Return ``providers`` as a tuple after checking each is in this onnxruntime build.

    Raises:
        ClaimVerificationError: a provider is not available (the message lists
            the available ones).
    """
    import onnxruntime as ort

    available = ort.get_available_providers()
    missing = [provider for provider in providers if provider not in available]
    if missing:
        raise ClaimVerificationError(
            f"execution provider(s) {missing} not available in this onnxruntime build; available: {available}"
        )
    return tuple(providers)


def create_session(
    model: Union[bytes, "str | os.PathLike[str]"],
    options: Optional["SessionOptions"] = None,
    *,
    providers: Sequence[str] = DEFAULT_PROVIDERS,
    where: Optional[str] = None,
    error: type[Exception] = ClaimVerificationError,
) -> "InferenceSession":
    """Create an onnxruntime ``InferenceSession`` from a path or the model's bytes.

    Args:
        model: an ONNX file path, or the serialised model (``bytes``; use this
            after verifying the bytes, so the verified bytes are what runs).
        options: from :func:`session_options` (default: its defaults).
        providers: execution providers in priority order; each is checked with
            :func:`check_providers`.
        where: how to name the model in messages (default: the path, or
            ``"<model bytes>"``).
        error: the exception type raised on failure (the exporter passes its own).

    Raises:
        ClaimVerificationError: an unavailable provider.
        error: onnxruntime cannot load the model; the message is
            ``onnxruntime cannot load <where>: <reason on one line>``.
    """
    import onnxruntime as ort

    if os.environ.get("ORT_DISABLE_TELEMETRY") == "1":  # onnxruntime imported before verifier: at least no session events
        ort.disable_telemetry_events()
    check_providers(providers)
    source: Union[bytes, str] = model if isinstance(model, bytes) else os.fspath(model)
    name = where if where is not None else (source if isinstance(source, str) else "<model bytes>")
    try:
        return ort.InferenceSession(
            source, sess_options=options if options is not None else session_options(), providers=list(providers)
        )
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph/... types
        raise error(f"onnxruntime cannot load {name}: {' '.join(str(exc).split())}") from exc


def graph_io(session: "InferenceSession", manifest: "Manifest", where: "str | os.PathLike[str]") -> tuple[tuple[str, ...], str, bool]:
    """Check a session's graph against the manifest; return its input names, logits output name and
    whether ``token_type_ids`` is fed.

    The engine feeds int64 (batch, length) ``input_ids`` plus optionally
    ``attention_mask`` and ``token_type_ids``; the output must be named
    ``logits`` (or be the only one) with shape (batch, number of labels).

    Raises:
        ClaimVerificationError: an input the engine cannot feed, a non-int64
            input, inputs that differ from the manifest's, or an unusable output.
    """
    inputs = session.get_inputs()
    names = tuple(node.name for node in inputs)
    unknown = [name for name in names if name not in KNOWN_INPUTS]
    if unknown or "input_ids" not in names:
        raise ClaimVerificationError(
            f"{where} has inputs {list(names)}; the engine feeds input_ids plus optionally "
            f"{sorted(KNOWN_INPUTS - {'input_ids'})}"
        )
    for node in inputs:
        if node.type != "tensor(int64)":
            raise ClaimVerificationError(f"{where} input {node.name} has type {node.type}; expected tensor(int64)")
    if set(names) != set(manifest.inputs):
        raise ClaimVerificationError(f"{where} has inputs {list(names)} but the manifest records {list(manifest.inputs)}")
    outputs = session.get_outputs()
    output_names = [node.name for node in outputs]
    if "logits" in output_names:
        output = outputs[output_names.index("logits")]
    elif len(outputs) == 1:
        output = outputs[0]
    else:
        raise ClaimVerificationError(f"{where} has outputs {output_names} and none is named 'logits'")
    shape = list(output.shape)
    width = len(manifest.labels)
    if len(shape) != 2 or (isinstance(shape[1], int) and shape[1] != width):
        raise ClaimVerificationError(f"{where} output {output.name} has shape {shape}; expected (batch, {width})")
    return names, output.name, "token_type_ids" in names


def release_free_heap() -> bool:
    """Return the C heap's free memory to the operating system (glibc ``malloc_trim(0)``).

    Building a session parses the whole ONNX protobuf and copies its
    initializers into tensors; the parse buffers are freed afterwards, but
    glibc keeps freed heap pages mapped, so resident memory after load stays
    a few hundred MiB above what the session holds. Trimming once after the
    load returns them: measured on the 757 MiB DeBERTa-v3-base graph, in a
    process holding only onnxruntime and the session, RSS after load
    965 MiB → 807 MiB (1.27× → 1.07× the file); for the whole engine
    1,238 → 947 MiB (docs/performance.md). It only releases memory that is
    already free and takes a few tens of milliseconds.

    Returns:
        ``True`` when ``malloc_trim`` exists (glibc) and was called, ``False``
        elsewhere (musl, macOS, Windows), where it does nothing.
    """
    import ctypes

    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - platforms without a process symbol table
        return False
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
    return True

"""Runtime settings: how the model runs, never what it decides.

Nothing here enters an audit digest (docs/audit.md): the same claim, evidence,
decision configuration and scores give the same result whatever the model
directory, threads, execution providers or schedule.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


__all__ = [
    "RuntimeOptions", "InputLimits", "Schedule", "Padding", "PADDING_LAYOUTS", "default_model_dir", "available_cpus",
    "MODEL_DIR_ENV", "DATA_DIR_ENV", "DATA_DIR_APP", "POINTER_FORMAT", "BATCH_OVERHEAD_TOKENS",
    "INT8_BATCH_OVERHEAD_TOKENS", "OPENVINO_BATCH_OVERHEAD_TOKENS", "OPENVINO_VARIANTS", "default_batch_overhead_tokens",
    "DEFAULT_MAX_BATCH_TOKENS", "user_data_dir", "pointer_path", "recorded_model_dir", "describe_lookup",
    "DEFAULT_SCORE_CACHE_MAX_ROWS",
]

#: Cost of one onnxruntime ``run`` call in padded-token units, for :func:`verifier.engine.batching.plan_batches`:
#: a run's fixed cost (dispatch, relative-position projections) in tokens of work, measured for the
#: DeBERTa-v3-base configuration with ``python -m bench tune`` (bench/RESULTS.md).
BATCH_OVERHEAD_TOKENS = 16.0
#: The same cost for the dynamic-int8 variant, whose tokens are ~3-4x cheaper while a run's fixed cost is
#: not, so fewer, fuller batches win (measured: docs/performance.md, ``default_batch_overhead_tokens``). Used when
#: ``batch_overhead_tokens`` is not given and the variant is ``"int8"``.
INT8_BATCH_OVERHEAD_TOKENS = 64.0
#: The variants ``python -m export`` builds for OpenVINO (docs/model-directory.md).
OPENVINO_VARIANTS: tuple[str, ...] = ("bf16", "ov-int8")
#: The same cost for the OpenVINO variants: an OpenVINO call has a larger fixed cost than onnxruntime's
#: (and re-plans when the shape changes) while its bf16 tokens are cheaper, so fewer, fuller batches
#: win by more (measured: docs/performance.md, ``OPENVINO_BATCH_OVERHEAD_TOKENS``).
OPENVINO_BATCH_OVERHEAD_TOKENS = 200.0


def default_batch_overhead_tokens(variant: Optional[str]) -> float:
    """The planner's per-run cost for ``variant`` when none is given: :data:`INT8_BATCH_OVERHEAD_TOKENS`
    for ``"int8"``, :data:`OPENVINO_BATCH_OVERHEAD_TOKENS` for :data:`OPENVINO_VARIANTS`, else
    :data:`BATCH_OVERHEAD_TOKENS`."""
    if variant == "int8":
        return INT8_BATCH_OVERHEAD_TOKENS
    return OPENVINO_BATCH_OVERHEAD_TOKENS if variant in OPENVINO_VARIANTS else BATCH_OVERHEAD_TOKENS


#: Default token budget of one padded batch (rows x padded length). Measured on the
#: DeBERTa-v3-base graphs with onnxruntime 1.32 on 2 cores (docs/performance.md):
#: batches of 1-2k tokens run 1.1-1.35x faster per sequence than 8k-token batches at
#: 32-192 tokens (their activations stay in the caches), and the arena grows less.
DEFAULT_MAX_BATCH_TOKENS = 2048
#: Default bound of the persistent score store in rows (docs/score-store.md).
DEFAULT_SCORE_CACHE_MAX_ROWS = 1_000_000

#: Environment variable naming the exported model directory to load by default.
MODEL_DIR_ENV = "CLAIM_VERIFIER_MODEL_DIR"
#: Environment variable overriding the per-user data directory (:func:`user_data_dir`); tests set it.
DATA_DIR_ENV = "CLAIM_VERIFIER_DATA_DIR"
#: The application name of the per-user data directory (``platformdirs.user_data_dir``).
DATA_DIR_APP = "onnx-claim-verifier"
#: ``format`` of a per-user pointer file (:func:`pointer_path`).
POINTER_FORMAT = "onnx-claim-verifier-model-pointer/1"

Schedule = Literal["staged", "eager"]
#: How pairs are laid out for onnxruntime: ``batched`` (length-sorted, padded, token-budgeted
#: batches) or ``none`` (each pair its own run, unpadded).
Padding = Literal["batched", "none"]
PADDING_LAYOUTS: tuple[str, ...] = ("batched", "none")


def default_model_dir(model: str, revision: str, root: Optional[Path] = None) -> Path:
    """Default export location: ``<root or ./models>/<name>-<revision[:12]>``.

    ``name`` is the last path component of the hub id (``nli-deberta-v3-base``).
    """
    name = model.rstrip("/").split("/")[-1]
    return Path(root if root is not None else "models") / f"{name}-{revision[:12]}"


def user_data_dir() -> Path:
    """The per-user data directory: ``$CLAIM_VERIFIER_DATA_DIR``, else ``platformdirs.user_data_dir("onnx-claim-verifier")``.

    On Linux that is ``~/.local/share/onnx-claim-verifier`` (``$XDG_DATA_HOME`` honoured). It holds
    only small pointer files (:func:`pointer_path`); the exported directories stay where the exporter wrote them.
    """
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(DATA_DIR_APP, appauthor=False))


def pointer_path(model: str, revision: str) -> Path:
    """Where the exporter records the default export of ``model`` at ``revision`` for this user.

    ``<user_data_dir>/models/<name>-<revision[:12]>.json``, a JSON object
    ``{"format", "model", "revision", "model_dir", "recorded_at"}`` whose
    ``model_dir`` is the absolute path of the exported directory.
    """
    return user_data_dir() / "models" / f"{default_model_dir(model, revision).name}.json"


def recorded_model_dir(model: str, revision: str) -> Optional[Path]:
    """The directory the exporter recorded for ``model`` at ``revision`` (:func:`pointer_path`), if any.

    ``None`` when there is no pointer, when it cannot be read or parsed, or when
    it names another model or revision (two models may share a name). The
    directory itself is not checked here.
    """
    from .small_files import read_small_file
    from .strictjson import loads

    try:  # bounded, never blocking: a pointer replaced by /dev/zero or a FIFO is no pointer
        data = loads(read_small_file(pointer_path(model, revision), "model pointer").decode("utf-8"))
    except ValueError:  # SmallFileError, UnicodeDecodeError and bad JSON are ValueErrors
        return None
    if not isinstance(data, dict) or data.get("format") != POINTER_FORMAT:
        return None
    if data.get("model") != model or data.get("revision") != revision or not isinstance(data.get("model_dir"), str):
        return None
    path = Path(data["model_dir"])
    return path if path.is_absolute() else None


def describe_lookup(model: str, revision: str) -> str:
    """Where the default lookup (:meth:`RuntimeOptions.resolve_model_dir` without ``model_dir``) looked,
    as absolute paths, for a 'model directory missing' message: ``"; looked in $CLAIM_VERIFIER_MODEL_DIR
    (not set), <cwd>/models/<name>-<revision[:12]> (absent) and this user's record <pointer> (absent)"``."""
    named = os.environ.get(MODEL_DIR_ENV)
    if named:
        return f"; ${MODEL_DIR_ENV} names it (unset ${MODEL_DIR_ENV} to use the default lookup)"
    local = Path.cwd() / default_model_dir(model, revision)
    recorded = recorded_model_dir(model, revision)
    state = "absent" if recorded is None else f"names {recorded}, which is not a directory"
    return (
        f"; looked in ${MODEL_DIR_ENV} (not set), {local} (absent) and this "
        f"user's record {pointer_path(model, revision)} ({state})"
    )


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


class InputLimits(BaseModel):
    """Size limits on one request, enforced before any tokenization (docs/decision.md §2).

    They bound the time and memory one hostile request can cost: the guards are
    linear in text length, and so is tokenization (it materialises every token of a
    passage before truncating it to the model's window; long pairs are cut first so
    the truncation windows of the two sides never multiply,
    :mod:`verifier.engine.long_pairs`). None of them is
    digested (a limit refuses a request; it never changes a decision).

    Attributes:
        max_claim_chars: characters in the stripped claim (default 10,000).
        max_passage_chars: characters in one evidence text (default 100,000; the
            model reads the first ~512 tokens of a pair, a localized recheck may
            use any sentence).
        max_reference_chars: characters in one evidence reference (default 1,000).
        max_request_bytes: bytes of one input line or request body, for the
            command line and the server (default 16 MiB).
        max_bundle_candidates: candidates read from one bundle, cited or not (default
            10,000): a library caller's ``MemoryBundle`` may hold generators, read only up
            to this (``max_evidence`` bounds the passages among them).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_claim_chars: Annotated[int, Field(ge=1, le=1 << 30, strict=True)] = 10_000
    max_passage_chars: Annotated[int, Field(ge=1, le=1 << 30, strict=True)] = 100_000
    max_reference_chars: Annotated[int, Field(ge=1, le=1 << 30, strict=True)] = 1_000
    max_request_bytes: Annotated[int, Field(ge=1024, le=1 << 34, strict=True)] = 16 << 20
    max_bundle_candidates: Annotated[int, Field(ge=1, le=1 << 30, strict=True)] = 10_000


class RuntimeOptions(BaseModel):
    """How the ONNX engine is loaded and how model work is scheduled.

    Attributes:
        model_dir: exported model directory; ``None`` means ``$CLAIM_VERIFIER_MODEL_DIR``, else
            :func:`default_model_dir` for the configured model and revision when it exists, else the
            directory the exporter recorded for this user (:func:`recorded_model_dir`), see
            :meth:`resolve_model_dir`.
        variant: ONNX variant recorded in the manifest (``None`` = the float32 ``model.onnx``).
        providers: onnxruntime execution providers in priority order (default CPU only).
        intra_op_num_threads: onnxruntime intra-op threads (``None`` = onnxruntime's default);
            at most :func:`available_cpus` (more only oversubscribes the cores).
        inter_op_num_threads: onnxruntime inter-op threads (same bound).
        graph_optimization_level: onnxruntime graph optimisation level at session creation.
        max_batch_tokens: token budget of one padded batch (batch rows x padded length).
        batch_overhead_tokens: cost of one onnxruntime run in padded-token units, used
            by the batch planner (``None``, the default: :func:`default_batch_overhead_tokens` of
            ``variant``: :data:`BATCH_OVERHEAD_TOKENS`, :data:`INT8_BATCH_OVERHEAD_TOKENS` for ``int8``,
            :data:`OPENVINO_BATCH_OVERHEAD_TOKENS` for ``bf16`` and ``ov-int8``).
        session_config_entries: onnxruntime session config entries set at load,
            e.g. ``{"session.intra_op.allow_spinning": "0"}``.
        verify_golden: re-score ``golden.json`` at load and refuse a disagreeing model.
        enable_cpu_mem_arena: onnxruntime's CPU memory arena (default on).
        enable_mem_pattern: onnxruntime's memory-pattern planning (default off; both:
            :func:`verifier.engine.session.session_options`, docs/performance.md).
        limits: size limits on each request (:class:`InputLimits`).
        score_timeout_s: deadline of one scorer call in seconds (``None``: none). A
            call past it raises ``ClaimVerificationError``; the scorer's thread
            cannot be stopped and finishes in the background.
        schedule: ``"staged"`` scores exactly what the procedure (docs/decision.md §3) needs when it needs it;
            ``"eager"`` scores singles and every candidate combination in one padded
            pass when that is possible. Both give identical results.
        padding: ``"batched"`` (default) runs length-sorted padded batches; ``"none"``
            runs each pair alone, unpadded. A pair's float32 probabilities are
            bit-identical either way (tests/test_coalesce.py); a dynamic-int8 graph
            quantizes activations per batch, so only ``"none"`` makes its results
            independent of the other pairs of a call (docs/serving.md).
        score_cache: a persistent score store file (SQLite; docs/score-store.md): a pair this
            engine configuration already scored is not run again, with identical results.
            ``None`` (default): no store. Bypassed, with a logged warning, for a graph whose
            scores depend on the batch (dynamic int8 with ``padding="batched"``).
        score_cache_max_rows: the store's bound in rows; the least recently used go first.
        score_cache_key: the file holding the store's secret key (rows are authenticated with
            HMAC-SHA256 under it; it must exist). ``None`` (default): ``score_cache`` + ``.key``
            beside the store, created with mode 0600 when missing.
        sign_key: an Ed25519 private key file (PEM, ``python -m verifier keygen``; the
            ``sign`` extra): every result is signed (its ``signature`` field,
            :mod:`verifier.decision.signing`; docs/audit.md "Signatures"). ``None`` (default):
            unsigned, and results are byte-identical to those of a build without signing. The
            key is read when a ``ClaimVerifier`` is made with these options (a missing or wrong
            key is a ``ValueError`` then; ``ImportError`` without the ``sign`` extra).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model_dir: Optional[Path] = None
    variant: Optional[str] = None
    providers: Optional[tuple[str, ...]] = None
    intra_op_num_threads: Optional[Annotated[int, Field(ge=1, strict=True)]] = None
    inter_op_num_threads: Optional[Annotated[int, Field(ge=1, strict=True)]] = None
    graph_optimization_level: Literal["disable", "basic", "extended", "all"] = "all"
    max_batch_tokens: Annotated[int, Field(ge=64, le=1 << 22, strict=True)] = DEFAULT_MAX_BATCH_TOKENS
    batch_overhead_tokens: Optional[Annotated[float, Field(ge=0.0, le=1e6, allow_inf_nan=False)]] = None
    session_config_entries: Optional[dict[str, str]] = None
    verify_golden: Annotated[bool, Field(strict=True)] = False  # strict: "yes" or 1 is refused, not read as True
    enable_cpu_mem_arena: Annotated[bool, Field(strict=True)] = True
    enable_mem_pattern: Annotated[bool, Field(strict=True)] = False
    limits: InputLimits = InputLimits()
    score_timeout_s: Optional[Annotated[float, Field(gt=0.0, le=86_400.0, allow_inf_nan=False)]] = None
    schedule: Schedule = "staged"
    padding: Padding = "batched"
    score_cache: Optional[Path] = None
    score_cache_max_rows: Annotated[int, Field(ge=1, le=1 << 40, strict=True)] = DEFAULT_SCORE_CACHE_MAX_ROWS
    score_cache_key: Optional[Path] = None
    sign_key: Optional[Path] = None

    @field_validator("intra_op_num_threads", "inter_op_num_threads")
    @classmethod
    def _at_most_the_cpus(cls, value: Optional[int]) -> Optional[int]:
        cpus = available_cpus()
        if value is not None and value > cpus:
            raise ValueError(f"must be at most the {cpus} CPUs available to this process, got {value}")
        return value

    @model_validator(mode="after")
    def _key_needs_a_store(self) -> "RuntimeOptions":
        if self.score_cache_key is not None and self.score_cache is None:
            raise ValueError("score_cache_key needs score_cache (the key authenticates that store's rows)")
        return self

    def resolve_model_dir(self, model: str, revision: str) -> Path:
        """The directory to load.

        1. :attr:`model_dir` when set;
        2. else ``$CLAIM_VERIFIER_MODEL_DIR`` when set and non-empty;
        3. else ``models/<name>-<revision[:12]>`` (:func:`default_model_dir`,
           relative to the working directory) when it exists;
        4. else the directory the exporter recorded for this user
           (:func:`recorded_model_dir`) when it exists;
        5. else ``models/<name>-<revision[:12]>`` (missing: the first model
           call says how to create it).
        """
        if self.model_dir is not None:
            return Path(self.model_dir)
        env = os.environ.get(MODEL_DIR_ENV)
        if env:
            return Path(env)
        local = default_model_dir(model, revision)
        if os.path.lexists(local):
            return local
        recorded = recorded_model_dir(model, revision)
        if recorded is not None and recorded.is_dir():
            return recorded
        return local

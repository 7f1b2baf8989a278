"""One exported model directory behind a load-once lock: what it is, whether it loaded, its counters.

:class:`ModelHandle` is the loading half of :class:`verifier.engine.scorer.OnnxScorer`
(which adds scoring): construction touches no file; the directory is opened,
verified and loaded on first need (:meth:`ModelHandle.load`), once, under a
lock (:class:`verifier.engine.loaded.LoadedModel`). A failed load is not cached.
A configured score store (:mod:`verifier.engine.score_store`) is opened at load too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional, TypeVar

from .batching import ScorerStats
from .engine_identity import engine_identity
from .loaded import BatchSettings, LoadedModel, SessionSettings
from .manifest import Manifest
from .score_store import StoredLogits, StoreSettings, attach_store
from ..engine_identity import EngineIdentity
from ..types import ClaimVerificationError

__all__ = ["ModelHandle"]

_H = TypeVar("_H", bound="ModelHandle")


class ModelHandle:
    """A model directory loaded lazily, once, under a lock; read-only once loaded.

    Args:
        model_dir: exported model directory.
        variant: ONNX variant recorded in the manifest (``None``: the float32 ``model_file``).
        session_settings: how the onnxruntime session is built.
        batching: how pairs are cut into padded batches.
        verify_golden: at load, re-score ``golden.json`` against the PyTorch reference.
        expected_model: when given, the manifest's ``model`` must equal it.
        expected_revision: when given (and the manifest records a revision), it must match.
        padding: the batch layout (``"batched"`` or ``"none"``; part of the score store's key).
        score_cache: the persistent score store to open at load (``None``: none).
        missing_hint: appended to the load error when ``model_dir`` does not exist (where a default
            lookup looked: :func:`verifier.options.describe_lookup`).
        kind: the model kind scored (:mod:`verifier.engine.kinds`); a directory of another kind is refused.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        variant: Optional[str],
        session_settings: SessionSettings,
        batching: BatchSettings,
        verify_golden: bool,
        expected_model: Optional[str],
        expected_revision: Optional[str],
        padding: str = "batched",
        score_cache: Optional[StoreSettings] = None,
        missing_hint: str = "",
        kind: str = "nli",
    ) -> None:
        self._kind = kind
        self._model_dir = model_dir
        self._missing_hint = missing_hint
        self._variant = variant
        self._session_settings = session_settings
        self._batching = batching
        self._verify_golden = verify_golden
        self._expected_model = expected_model
        self._expected_revision = expected_revision
        self._load_lock = threading.Lock()
        self._loaded: Optional[LoadedModel] = None
        self._identity: Optional[EngineIdentity] = None
        self._stats_lock = threading.Lock()
        self._stats = ScorerStats()
        self._padding = padding
        self._store_settings = score_cache
        self._store: Optional[StoredLogits] = None
        self._store_status: Optional[str] = None

    # ------------------------------------------------------------------ properties

    @property
    def model_dir(self) -> Path:
        """The exported model directory (no loading)."""
        return self._model_dir

    @property
    def session_settings(self) -> SessionSettings:
        """How the onnxruntime session is (or will be) built: providers, threads, memory options (no loading)."""
        return self._session_settings

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (no loading)."""
        return self._loaded is not None

    @property
    def manifest(self) -> Manifest:
        """The verified manifest (loads the model)."""
        return self._ensure_loaded().manifest

    @property
    def model(self) -> str:
        """Model id recorded in the manifest (loads the model)."""
        return self.manifest.model

    @property
    def requested_revision(self) -> Optional[str]:
        """Revision the export asked for (loads the model)."""
        return self.manifest.requested_revision

    @property
    def resolved_revision(self) -> Optional[str]:
        """Commit the export actually downloaded (loads the model)."""
        return self.manifest.resolved_revision

    @property
    def engine_identity(self) -> EngineIdentity:
        """Which engine this is (docs/audit.md, "Engine identity"): computed once at load (loads the model).

        Every result this engine scores names it (``ClaimVerification.engine``).
        """
        self._ensure_loaded()
        assert self._identity is not None  # set with the loaded state, under the lock
        return self._identity

    @property
    def variant(self) -> Optional[str]:
        """The manifest variant this engine runs (``None``: the float32 ``model_file``; no loading)."""
        return self._variant

    @property
    def labels(self) -> tuple[str, ...]:
        """The model's own label order: logit column ``i`` of :meth:`score_logits` is ``labels[i]``."""
        return self.manifest.labels

    @property
    def model_file(self) -> str:
        """The ONNX file of the chosen variant, relative to :attr:`model_dir` (loads the model)."""
        return self._ensure_loaded().directory.model_file

    @property
    def input_names(self) -> tuple[str, ...]:
        """Graph input names in graph order (loads the model)."""
        return self._ensure_loaded().input_names

    @property
    def providers(self) -> tuple[str, ...]:
        """Execution providers the session actually uses (loads the model)."""
        return self._ensure_loaded().providers

    @property
    def stats(self) -> ScorerStats:
        """Snapshot of the cumulative counters (debug hook; see :class:`ScorerStats`)."""
        with self._stats_lock:
            return self._stats

    @property
    def score_cache_status(self) -> Optional[str]:
        """The score store (docs/score-store.md): ``None`` without one; once loaded its path, or
        ``"bypassed (why)"`` when this engine's scores may not be reused (no loading)."""
        if self._store_settings is None:
            return None
        return self._store_status or f"{self._store_settings.path} (not opened yet)"

    def reset_stats(self) -> ScorerStats:
        """Zero the counters; return the snapshot they had."""
        with self._stats_lock:
            previous, self._stats = self._stats, ScorerStats()
        return previous

    def close(self) -> None:
        """Close the score store's connection, if this engine has one; idempotent.

        The store's WAL is checkpointed into its file before this returns, so the file is final
        (docs/score-store.md). The engine stays usable: a later call reopens the store.
        """
        store = self._store
        if store is not None:
            store.close()

    def __repr__(self) -> str:
        state = "loaded" if self._loaded is not None else "not loaded"
        variant = f", variant={self._variant!r}" if self._variant else ""
        return f"{type(self).__name__}({str(self._model_dir)!r}{variant}, {state})"

    def load(self: "_H") -> "_H":
        """Load now instead of on first use; return ``self``.

        Raises:
            ClaimVerificationError: the model cannot be loaded (see :meth:`score`).
        """
        self._ensure_loaded()
        return self

    # ------------------------------------------------------------------ loading

    def _ensure_loaded(self) -> LoadedModel:
        """Load once under the lock; later calls return the same read-only state.

        A failed load is not cached: the next call tries again (after the
        directory has been fixed, say) and raises again if it is still broken.
        """
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> LoadedModel:
        try:
            loaded = LoadedModel.load(
                self._model_dir,
                self._variant,
                expected_model=self._expected_model,
                expected_revision=self._expected_revision,
                settings=self._session_settings,
                kind=self._kind,
            )
        except ClaimVerificationError as exc:
            hint = self._missing_hint if self._missing_hint and not self._model_dir.exists() else ""
            if self._model_dir.is_absolute() and not hint:
                raise
            # A relative directory is resolved against the working directory: say which, and the result.
            where = Path.cwd()
            relative = (  # the lookup's note already names the absolute path
                "" if self._model_dir.is_absolute() or hint
                else f" (model directory {self._model_dir} is relative to the working directory {where}: "
                f"{where / self._model_dir})"
            )
            raise ClaimVerificationError(f"{exc}{hint}{relative}") from exc
        from .session import create_session

        self._identity = engine_identity(
            loaded.directory,
            padding=self._padding,
            providers=self._session_settings.providers,
            graph_optimization_level=self._session_settings.graph_optimization_level,
            own_factory=self._session_settings.factory is not create_session,
        )
        if self._verify_golden:
            loaded.check_golden(self._batching)
        if self._store_settings is not None:
            self._store, self._store_status = attach_store(
                self._store_settings, loaded, variant=self._variant, padding=self._padding, session=self._session_settings
            )
        return loaded

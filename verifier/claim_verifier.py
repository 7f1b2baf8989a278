"""The public facade :class:`ClaimVerifier`: it owns the configuration and the scorer.

The procedure (docs/decision.md §3) is :mod:`verifier.decision.procedure`, a
generator that yields the premises it needs scored; how that model work is
batched (one claim or many, sync or async, staged or eager) is
:mod:`verifier.decision.driver`. Whatever the driver, the result is exactly
what the staged procedure yields for the same scores. Every request is
validated once, by :func:`verifier.validation.validate_request`. This module
never imports onnxruntime: the default ONNX engine
(:class:`verifier.engine.scorer.OnnxScorer`) is imported on first need.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Iterable,
    Mapping,
    Optional,
    Sequence,
    TypeVar,
    Union,
)

import numpy as np

from .engine.identity import read_manifest_if_present, resolve, where
from .engine_identity import EngineIdentity
from .decision.driver import ClaimDriver, RequestInput
from .options import RuntimeOptions
from .scoring import Scorer, engine_of, validate_scores
from .types import (
    ClaimEvidence,
    ClaimVerification,
    ClaimVerificationConfig,
    ClaimVerificationError,
)
from .validation import (
    InputError,
    as_config,
    ValidRequest,
    as_of_input,
    validate_claim,
    validate_evidence,
)

if TYPE_CHECKING:  # pragma: no cover
    from .decision.bundle import ContextBundle

#: A packed bundle: a :class:`~verifier.decision.bundle.ContextBundle`, a mapping or JSON text of
#: one, PRME's ``MemoryBundle`` (duck-typed) or its dump (:func:`verifier.decision.bundle.bundle_evidence`).
BundleInput = Union["ContextBundle", Mapping[str, Any], str, Any]

__all__ = ["ClaimVerifier", "EvidenceInput", "RequestInput", "BundleInput"]

EvidenceInput = Union[ClaimEvidence, Mapping[str, Any]]


#: PRME 0.15.0 reorders a cross-encoder's rows by its ``id2label``; the pinned model's
#: (cross-encoder/nli-deberta-v3-base config.json) is the order used when a PRME-style test sets
#: ``_model`` to a fake without setting ``_label_indexes``.
_PINNED_LABEL_INDEXES = {"contradiction": 0, "entailment": 1, "neutral": 2}


class _PrmeSeams:
    """PRME 0.15.0's private model seams, which PRME users' own tests patch (docs/compatibility.md).

    * ``_model``: ``None`` until :meth:`_ensure_model` (here: this verifier's scorer); a test may set
      it to a fake CrossEncoder whose ``predict(pairs, batch_size=..., apply_softmax=True,
      show_progress_bar=False)`` returns ``(n, 3)`` rows in ``_label_indexes`` order.
    * ``_ensure_model()``: loads the model once (a test may replace it with a no-op).
    * ``_predict_sync(pairs)``: a ``list`` of ``(entailment, contradiction, neutral)`` float tuples,
      ``[]`` for no pairs, exactly PRME's shape; every verification's model call goes through it.
    * ``_resolved_revision``: the commit a result names after a model call (PRME's tests set it
      beside a replaced ``_predict_sync``); unset, the scorer's ``resolved_revision``.
    """

    config: ClaimVerificationConfig
    _scorer: Optional[Scorer]

    def _init_seams(self) -> None:
        self._model: Any = None
        self._label_indexes: Optional[dict[str, int]] = None
        self._prediction_lock = threading.Lock()
        self._revision_set: tuple[Optional[str], ...] = ()  # (value,) once a test sets _resolved_revision

    @property
    def scorer(self) -> Scorer:  # pragma: no cover - ClaimVerifier defines it
        raise NotImplementedError

    @property
    def has_scorer(self) -> bool:  # pragma: no cover - ClaimVerifier defines it
        raise NotImplementedError

    @property
    def _resolved_revision(self) -> Optional[str]:
        """PRME's seam: the commit the loaded model reports, or the value a test set. ``None`` when no
        scorer was built or it knows none (a smoke export, a scripted scorer): a result never names
        a revision nobody resolved."""
        if self._revision_set:
            return self._revision_set[0]
        if not self.has_scorer:
            return None
        try:
            revision = getattr(self.scorer, "resolved_revision", None)
        except ClaimVerificationError:
            raise
        except Exception as exc:  # a scorer's property failing is a model failure, never a status
            raise ClaimVerificationError(f"scorer's resolved_revision failed: {type(exc).__name__}: {exc}") from exc
        if not revision:
            return None
        text = str(revision)
        if not text.isprintable() or not text.strip() or len(text) > 200:  # a result must stay writable JSON
            raise ClaimVerificationError(f"scorer's resolved_revision is not a printable revision: {text[:80]!r}")
        return text

    @_resolved_revision.setter
    def _resolved_revision(self, value: Optional[str]) -> None:
        self._revision_set = (value,)

    def engine_identity(self) -> Optional[EngineIdentity]:
        """Which engine scores this verifier's model calls (docs/audit.md, "Engine identity"), or ``None``: the
        scorer's ``engine_identity`` when the scores come from it; ``None`` for a scorer without one (scripted,
        recorded) or when a PRME-style test replaced ``_predict_sync``, ``predict`` or ``_model``.

        Raises:
            ClaimVerificationError: the scorer's ``engine_identity`` failed (the model did not load).
        """
        own = vars(self)
        if not self.has_scorer or "_predict_sync" in own or "predict" in own or self._model not in (None, self._scorer):
            return None
        return engine_of(self.scorer)

    def _ensure_model(self) -> None:
        """PRME's seam: make ``_model`` ready once (here the scorer: the ONNX engine, or the injected one)."""
        if self._model is None:
            self._model = self.scorer

    def _predict_sync(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[float, float, float]]:
        """PRME's seam: score ``(premise, hypothesis)`` pairs; ``[(entailment, contradiction, neutral), ...]``.

        Raises:
            ClaimVerificationError: the model failed or returned invalid scores (as PRME).
        """
        if not pairs:
            return []
        self._ensure_model()
        model = self._model
        if model is None:
            raise ClaimVerificationError("no claim verification model: _ensure_model() left _model unset")
        # This verifier's scorer (or another Scorer with no predict): rows already (entailment, contradiction,
        # neutral). Anything else with predict is a fake cross-encoder, a unittest.mock.Mock included.
        if model is self._scorer or (callable(getattr(model, "score", None)) and not callable(getattr(model, "predict", None))):
            rows = validate_scores(model.score(list(pairs)), len(pairs))
            return [(float(e), float(c), float(n)) for e, c, n in rows.tolist()]
        with self._prediction_lock:  # a PRME-style model object: one predict at a time, as PRME
            try:
                raw = model.predict(list(pairs), batch_size=self.config.batch_size, apply_softmax=True,
                                    show_progress_bar=False)
            except Exception as exc:
                raise ClaimVerificationError("Claim verification inference failed") from exc
        indexes = self._label_indexes if self._label_indexes is not None else _PINNED_LABEL_INDEXES
        values = validate_scores(raw, len(pairs), columns=indexes)  # PRME's checks, each in PRME's column order
        return [(float(row[indexes["entailment"]]), float(row[indexes["contradiction"]]), float(row[indexes["neutral"]]))
                for row in values]


_C = TypeVar("_C", bound="_Closing")


class _Closing:
    """``close()`` and the context manager: what a verifier's own engine holds open is released."""

    _scorer: Optional[Scorer]
    _owns_scorer: bool

    def close(self) -> None:
        """Release what the engine this verifier built holds open: its score store's connection
        (``RuntimeOptions.score_cache``), whose file is final when this returns (docs/score-store.md).

        Idempotent; an injected scorer is its owner's to close. The verifier stays usable: a later
        call reopens the store.
        """
        scorer = self._scorer
        close = getattr(scorer, "close", None) if self._owns_scorer else None
        if callable(close):
            close()

    def __enter__(self: "_C") -> "_C":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ClaimVerifier(_PrmeSeams, _Closing):
    """Verify one declarative claim against exact evidence passages (docs/decision.md §1–§7).

    Args:
        config: the decision configuration (digested); defaults to
            :class:`ClaimVerificationConfig` ``()``.
        scorer: any :class:`verifier.scoring.Scorer`. Without one, the ONNX
            engine (:class:`verifier.engine.scorer.OnnxScorer`) for ``runtime`` is
            created lazily, once, on the first verification that needs the model;
            its directory and the identity results name are resolved at
            construction (:mod:`verifier.engine.identity`): a manifest in the directory
            supplies ``model`` and ``revision`` unless ``config`` sets them, in
            which case they must match it.
        runtime: runtime settings (model directory, threads, providers,
            schedule, limits); never part of a digest.

    Attributes:
        config: the configuration results are made with (``model`` and ``revision`` from the
            manifest where ``config`` left them unset): check records against it (docs/audit.md).

    Raises:
        ClaimVerificationError: at construction, the directory's manifest is
            unreadable or names another model or revision than ``config``; from
            the verify methods, the model could not be loaded or scored, or a
            scorer returned invalid scores. Never a status.

    Example:
        >>> from uuid import UUID
        >>> from verifier import ClaimEvidence, ClaimVerifier, ScriptedScorer
        >>> scorer = ScriptedScorer({"The deployment date is May 4.": (0.98, 0.01)}, default=(0.02, 0.01))
        >>> verifier = ClaimVerifier(scorer=scorer)
        >>> result = verifier.verify_sync(
        ...     "The deployment is on May 4.",
        ...     [ClaimEvidence(reference="m1", memory_id=UUID(int=1), text="The deployment date is May 4.")],
        ... )
        >>> result.status.value, result.supporting_basis
        ('supported', 'model_entailment')
    """

    def __init__(
        self,
        config: Optional[Union[ClaimVerificationConfig, Mapping[str, Any]]] = None,
        *,
        scorer: Optional[Scorer] = None,
        runtime: Optional[RuntimeOptions] = None,
    ) -> None:
        runtime = runtime if runtime is not None else RuntimeOptions()
        config = as_config(config)
        if scorer is None:  # the ONNX engine: resolve its directory and identity now (verifier.engine.identity)
            resolved = resolve(config, runtime)
            self.config, self.runtime = resolved.config, resolved.runtime
            self._missing_hint = resolved.lookup
        else:
            self.config = config if config is not None else ClaimVerificationConfig()
            self.runtime = runtime
            self._missing_hint = ""
        self._scorer: Optional[Scorer] = scorer
        self._owns_scorer = scorer is None  # close() closes only the engine this verifier built
        self._scorer_lock = threading.Lock()
        self._init_seams()
        self._driver = ClaimDriver(self)

    @classmethod
    def from_model_dir(
        cls,
        model_dir: Union[str, "os.PathLike[str]"],
        config: Optional[ClaimVerificationConfig] = None,
        *,
        runtime: Optional[RuntimeOptions] = None,
    ) -> "ClaimVerifier":
        """A verifier for an exported model directory, named as its manifest names it.

        The configuration's ``model`` and ``revision`` are taken from the
        directory's ``manifest.json`` (:attr:`verifier.engine.manifest.Manifest.revision`:
        requested revision, else resolved commit, else ``sha256:<model file>``);
        every other decision field comes from ``config``. Nothing heavy is loaded
        until the first verification that needs the model.

        Args:
            model_dir: a directory written by ``python -m export``.
            config: decision settings to keep (thresholds, policies, ...).
            runtime: runtime settings; its ``model_dir`` is replaced by ``model_dir``.

        Raises:
            ClaimVerificationError: the directory has no readable manifest (the
                message says how to create one).

        Example:
            >>> verifier = ClaimVerifier.from_model_dir("models/tiny-deberta-v2-smoke-seed0")  # doctest: +SKIP
        """
        from pathlib import Path

        from .engine.manifest import MANIFEST_NAME

        directory = Path(model_dir)
        if read_manifest_if_present(directory) is None:
            from .messages import export_command

            export = export_command()
            raise ClaimVerificationError(
                f"{where(directory / MANIFEST_NAME)} not found: export a model there first "
                f"(`{export} --model <hub id or local dir> --output <dir>`, or `{export} --smoke`)"
            )
        base = config if config is not None else ClaimVerificationConfig()
        unnamed = ClaimVerificationConfig.model_validate(base.model_dump(exclude={"model", "revision"}))
        options = (runtime if runtime is not None else RuntimeOptions()).model_copy(update={"model_dir": directory})
        return cls(unnamed, runtime=options)

    # ----------------------------------------------------------------- engine

    @property
    def scorer(self) -> Scorer:
        """The injected scorer, or the ONNX engine (created on first access, once)."""
        if self._scorer is None:
            with self._scorer_lock:
                if self._scorer is None:
                    self._scorer = self._build_engine()
        return self._scorer

    @property
    def has_scorer(self) -> bool:
        """Whether a scorer exists yet: injected, or the ONNX engine once built (never builds one)."""
        return self._scorer is not None

    def _build_engine(self) -> Scorer:
        """The ONNX engine for this configuration; it loads (and checks that its manifest
        names the configured model and revision) on first use."""
        from .engine.scorer import (
            OnnxScorer,  # lazy: keeps `import verifier` free of onnxruntime
        )

        return OnnxScorer.from_options(
            self.runtime, self.config.model, self.config.revision, max_batch_size=self.config.batch_size,
            missing_hint=self._missing_hint,
        )

    @property
    def stats(self) -> dict[str, int]:
        """Counters: ``model_calls`` (scorer invocations) and ``pairs_scored``; with a score store
        (``RuntimeOptions.score_cache``, once the engine exists) also ``store_hits`` (distinct pairs whose
        scores came from the store, not the model), ``store_misses`` and ``store_rejected``
        (rows refused: bad MAC, size or finiteness; docs/score-store.md)."""
        counters = dict(self._driver.stats)
        scorer = self._scorer
        if scorer is not None and isinstance(getattr(scorer, "score_cache_status", None), str):
            engine = getattr(scorer, "stats", None)
            for name in ("store_hits", "store_misses", "store_rejected"):
                counters[name] = int(getattr(engine, name, 0))
        return counters

    def predict(self, pairs: list[tuple[str, str]]) -> Any:
        """Score ``(premise, hypothesis)`` pairs for the procedure: ``self._predict_sync(pairs)``.

        Every model call of every verify method goes through here (so PRME-style tests that
        replace ``_predict_sync``, ``_ensure_model`` or ``_model`` drive it, :class:`_PrmeSeams`);
        the result is checked by :func:`verifier.scoring.validate_scores` (shape ``(n, 3)``,
        rows (entailment, contradiction, neutral), normalized).
        """
        if not pairs:
            return np.zeros((0, 3), dtype=np.float64)
        return self._predict_sync(pairs)

    # ----------------------------------------------------------------- planning

    def _one(
        self,
        claim: str,
        evidence: Iterable[EvidenceInput],
        requires_complete_set: bool,
        as_of: Optional[datetime] = None,
    ) -> ValidRequest:
        """One claim's arguments, validated once (its errors are not prefixed with a request index)."""
        if not isinstance(requires_complete_set, bool):
            raise InputError(
                f"requires_complete_set must be True or False, got {requires_complete_set!r}",
                field="requires_complete_set",
            )
        limits = self.runtime.limits
        return ValidRequest(
            claim=validate_claim(claim, limits),
            evidence=validate_evidence(evidence, self.config, limits),
            requires_complete_set=requires_complete_set,
            max_evidence=self.config.max_evidence,
            limits=limits,
            as_of=as_of_input(as_of),
        )

    # ----------------------------------------------------------------- sync API

    def verify_many_sync(
        self,
        requests: Iterable[RequestInput],
        *,
        progress: Optional[Callable[[int], None]] = None,
    ) -> list[ClaimVerification]:
        """Verify many claims, batching model work across them; results in input order.

        All requests are validated before any model call. Every claim's singles
        go to the scorer in one call, then pairs for the undecided claims, then
        rechecks. Each result equals :meth:`verify_sync` on that claim alone.

        Args:
            requests: :class:`ClaimRequest` objects, mappings with its fields, or
                :class:`~verifier.validation.ValidRequest` objects (not checked again).
            progress: called with the number of finished claims after each round.

        Raises:
            ValueError: an invalid request (the message names its index).
            ClaimVerificationError: model load or inference failed.
        """
        return self._driver.run_sync(requests, progress)

    def verify_sync(
        self,
        claim: str,
        evidence: Iterable[EvidenceInput] = (),
        *,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Verify one claim against evidence passages (docs/decision.md §3), synchronously.

        Args:
            claim: the declarative claim (the NLI hypothesis); stripped.
            evidence: passages in caller order (:class:`ClaimEvidence` or mappings).
            requires_complete_set: an exhaustive count/list claim: returns
                ``incomplete`` without a model call.
            as_of: the timezone-aware date the claim is verified at; read by the
                strict policy's validity rules (docs/policy.md). When set, the
                result is schema 4 and ``as_of`` enters ``evaluation_id``.

        Raises:
            ValueError: invalid input (docs/decision.md §2), before any model call.
            ClaimVerificationError: model load or inference failed, or invalid scores.
        """
        return self.verify_many_sync([self._one(claim, evidence, requires_complete_set, as_of)])[0]

    def verify_bundle_sync(
        self,
        claim: str,
        bundle: "BundleInput",
        *,
        evidence_refs: Optional[Sequence[str]] = None,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Verify a claim against the cited candidates of a packed context bundle (docs/decision.md §7).

        Raises:
            ValueError: the bundle was rendered without citations, or an unknown
                ``evidence_refs`` entry; plus everything :meth:`verify_sync` raises.
        """
        evidence = self._bundle_evidence(bundle, evidence_refs)
        return self.verify_sync(claim, evidence, requires_complete_set=requires_complete_set, as_of=as_of)

    def _bundle_evidence(self, bundle: "BundleInput", evidence_refs: Optional[Sequence[str]]) -> tuple[ClaimEvidence, ...]:
        from .decision.bundle import bundle_evidence

        return bundle_evidence(bundle, evidence_refs, max_evidence=self.config.max_evidence,
                               max_candidates=self.runtime.limits.max_bundle_candidates)

    @staticmethod
    def bundle_evidence(
        bundle: "BundleInput", evidence_refs: Optional[Sequence[str]] = None
    ) -> tuple[ClaimEvidence, ...]:
        """The evidence a bundle yields under the citation rules of docs/decision.md §7 (see :mod:`verifier.decision.bundle`)."""
        from .decision.bundle import bundle_evidence

        return bundle_evidence(bundle, evidence_refs)

    # ----------------------------------------------------------------- async API

    async def verify_many(self, requests: Iterable[RequestInput]) -> list[ClaimVerification]:
        """Async twin of :meth:`verify_many_sync`: model work runs in a worker thread."""
        return await self._driver.run_async(requests)

    async def verify(
        self,
        claim: str,
        evidence: Iterable[EvidenceInput] = (),
        *,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Async twin of :meth:`verify_sync` (same arguments, errors and result)."""
        return (await self.verify_many([self._one(claim, evidence, requires_complete_set, as_of)]))[0]

    async def verify_bundle(
        self,
        claim: str,
        bundle: "BundleInput",
        *,
        evidence_refs: Optional[Sequence[str]] = None,
        requires_complete_set: bool = False,
        as_of: Optional[datetime] = None,
    ) -> ClaimVerification:
        """Async twin of :meth:`verify_bundle_sync`."""
        evidence = self._bundle_evidence(bundle, evidence_refs)
        return await self.verify(claim, evidence, requires_complete_set=requires_complete_set, as_of=as_of)

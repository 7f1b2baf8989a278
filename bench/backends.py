"""The backends bench measures, and what a backend must offer (:class:`Backend`).

* :class:`TorchBackend` -- sentence-transformers ``CrossEncoder`` on PyTorch (the
  reference implementation's runtime), with padding counters;
* :class:`OnnxBackend` -- this project's :class:`verifier.engine.OnnxScorer`
  (float32 or a manifest variant), with the time spent inside onnxruntime's
  ``InferenceSession.run`` accounted separately through the scorer's public
  ``session_factory`` (:class:`TimedSession`).

Backend keys (:data:`BACKEND_KEYS`, :func:`load_backend`): ``torch``, ``onnx``
(``model.onnx``), ``onnx-<variant>``, and ``span`` / ``span-int8`` (the
export made with ``python -m export --attention span``).

Only the backend's own module is imported when it loads (torch for the
CrossEncoder, onnxruntime for the OnnxScorer), so a worker's import time is
its backend's.
"""

from __future__ import annotations

import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Sequence

import numpy as np

from .workloads import Pair

__all__ = [
    "BACKEND_KEYS",
    "Backend",
    "TorchBackend",
    "OnnxBackend",
    "TimedSession",
    "load_backend",
    "distribution_version",
]

#: Backend keys: ``torch`` (CrossEncoder), ``onnx`` (float32 model.onnx), ``onnx-<variant>``;
#: ``span`` / ``span-int8``: the same, exported with span-sliced relative attention.
BACKEND_KEYS = ("torch", "onnx", "onnx-optimized", "onnx-int8", "span", "span-int8")


class Backend(Protocol):
    """What a backend measured by bench offers.

    Attributes:
        name: its key (:data:`BACKEND_KEYS`).
        versions: distribution versions of its runtime, for the report.
    """

    name: str
    versions: Mapping[str, str]

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """(n, 3) (entailment, contradiction, neutral) probabilities, rows in caller order."""
        ...

    def reset(self) -> None:
        """Zero the counters."""
        ...

    def counters(self) -> dict[str, float]:
        """Counters since the last :meth:`reset`: batches, real and padded tokens, padding overhead, ..."""
        ...


def distribution_version(distribution: str) -> str:
    """The installed version of ``distribution``, or ``"absent"``."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "absent"


class TorchBackend:
    """sentence-transformers ``CrossEncoder(hf_dir, max_length=512)`` on PyTorch, ``torch.set_num_threads(threads)``.

    ``predict(pairs, batch_size, apply_softmax=True)``; columns reordered to
    (entailment, contradiction, neutral) from the model's ``id2label``. Padding
    counters come from wrapping the CrossEncoder's own ``preprocess`` (the
    batches it builds).
    """

    def __init__(self, model_dir: Path, threads: int, batch_size: int) -> None:
        import torch
        from sentence_transformers import CrossEncoder

        torch.set_num_threads(threads)
        self.name = "torch"
        self.batch_size = batch_size
        self.model = CrossEncoder(str(model_dir), device="cpu", max_length=512)
        id2label = {int(k): str(v).lower() for k, v in self.model.model.config.id2label.items()}
        labels = [id2label[i] for i in range(len(id2label))]
        self.permutation = [labels.index(name) for name in ("entailment", "contradiction", "neutral")]
        self._real = 0
        self._padded = 0
        self._batches = 0
        original = self.model.preprocess

        def counting(*args: Any, **kwargs: Any) -> Any:
            features = original(*args, **kwargs)
            self._padded += int(features["input_ids"].numel())
            self._real += int(features["attention_mask"].sum())
            self._batches += 1
            return features

        self.model.preprocess = counting  # type: ignore[method-assign]
        self.versions: Mapping[str, str] = {
            "torch": torch.__version__,
            "sentence_transformers": distribution_version("sentence-transformers"),
        }

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        probs = self.model.predict(
            [list(pair) for pair in pairs],
            batch_size=self.batch_size,
            apply_softmax=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(probs, dtype=np.float64)[:, self.permutation]

    def reset(self) -> None:
        self._real = self._padded = self._batches = 0

    def counters(self) -> dict[str, float]:
        return {
            "batches": self._batches,
            "real_tokens": self._real,
            "padded_tokens": self._padded,
            "padding_overhead": self._padded / self._real if self._real else 1.0,
        }


class TimedSession:
    """An onnxruntime session whose ``run`` calls are timed (``run_seconds``, wall clock).

    ``get_inputs``, ``get_outputs`` and ``get_providers`` are forwarded as they are.
    """

    def __init__(self, session: Any) -> None:
        self._session = session
        self.run_seconds = 0.0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._session.run(*args, **kwargs)
        finally:
            self.run_seconds += time.perf_counter() - started

    def get_inputs(self) -> Any:
        return self._session.get_inputs()

    def get_outputs(self) -> Any:
        return self._session.get_outputs()

    def get_providers(self) -> Any:
        return self._session.get_providers()


class _TimedSessionFactory:
    """``OnnxScorer(session_factory=...)``: :func:`verifier.session.create_session`, wrapped in :class:`TimedSession`.

    Other keyword arguments the engine passes (e.g. ``where``, how to name the
    model in messages) go to ``create_session`` unchanged.
    """

    def __init__(self) -> None:
        self.session: Optional[TimedSession] = None

    def __call__(self, model: Any, options: Any, *, providers: Sequence[str], **kwargs: Any) -> TimedSession:
        from verifier.session import create_session

        self.session = TimedSession(create_session(model, options, providers=providers, **kwargs))
        return self.session


class OnnxBackend:
    """:class:`verifier.engine.OnnxScorer` (``intra_op_num_threads=threads``, ``inter_op_num_threads=1``), loaded.

    Args:
        model_dir: the exported model directory.
        variant: a variant recorded in its manifest (``None``: ``model.onnx``).
        threads: onnxruntime intra-op threads.
        max_batch_tokens, max_batch_size, graph_optimization_level,
            session_config_entries, batch_overhead_tokens: the scorer's options
            of the same names (``None``: the scorer's default).
        name: the backend key (default ``onnx`` / ``onnx-<variant>``).
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        variant: Optional[str],
        threads: int,
        max_batch_tokens: int,
        max_batch_size: Optional[int],
        graph_optimization_level: str = "all",
        session_config_entries: Optional[Mapping[str, str]] = None,
        batch_overhead_tokens: Optional[float] = None,
        name: Optional[str] = None,
    ) -> None:
        import onnxruntime

        from verifier.engine import BATCH_OVERHEAD_TOKENS, OnnxScorer

        self.name = name or ("onnx" if variant is None else f"onnx-{variant}")
        self._factory = _TimedSessionFactory()
        self.scorer = OnnxScorer(
            model_dir,
            variant=variant,
            intra_op_num_threads=threads,
            inter_op_num_threads=1,
            graph_optimization_level=graph_optimization_level,
            max_batch_tokens=max_batch_tokens,
            max_batch_size=max_batch_size,
            session_config_entries=session_config_entries,
            batch_overhead_tokens=BATCH_OVERHEAD_TOKENS if batch_overhead_tokens is None else batch_overhead_tokens,
            session_factory=self._factory,
        ).load()
        self.versions: Mapping[str, str] = {"onnxruntime": onnxruntime.__version__}

    @property
    def run_seconds(self) -> float:
        """Seconds inside ``InferenceSession.run`` since the last :meth:`reset`."""
        return self._factory.session.run_seconds if self._factory.session is not None else 0.0

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        return self.scorer.score(pairs)

    def reset(self) -> None:
        self.scorer.reset_stats()
        if self._factory.session is not None:
            self._factory.session.run_seconds = 0.0

    def counters(self) -> dict[str, float]:
        stats = self.scorer.stats.as_dict()
        stats["onnxruntime_run_seconds"] = self.run_seconds
        return stats


def load_backend(
    key: str,
    *,
    onnx_dir: Path,
    hf_dir: Optional[Path] = None,
    span_dir: Optional[Path] = None,
    threads: int,
    max_batch_tokens: int = 8192,
    max_batch_size: Optional[int] = None,
    torch_batch_size: int = 32,
) -> Backend:
    """Load the backend ``key`` (:data:`BACKEND_KEYS`).

    Raises:
        ValueError: an unknown key, or a directory the key needs is not given.
    """
    if key not in BACKEND_KEYS:
        raise ValueError(f"unknown backend {key!r}; choose from {list(BACKEND_KEYS)}")
    if key == "torch":
        if hf_dir is None:
            raise ValueError("backend torch needs the Hugging Face directory")
        return TorchBackend(Path(hf_dir), threads, torch_batch_size)
    family, _, variant_name = key.partition("-")
    directory = span_dir if family == "span" else onnx_dir
    if directory is None:
        raise ValueError(f"backend {key} needs --span-dir")
    return OnnxBackend(
        Path(directory),
        variant=variant_name or None,
        threads=threads,
        max_batch_tokens=max_batch_tokens,
        max_batch_size=max_batch_size,
        name=None if family == "onnx" else key,
    )

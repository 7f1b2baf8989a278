"""The backends bench measures, and what a backend must offer (:class:`Backend`).

* :class:`TorchBackend` -- sentence-transformers ``CrossEncoder`` on PyTorch (the
  reference implementation's runtime), with padding counters;
* :class:`OnnxBackend` -- this project's :class:`verifier.engine.scorer.OnnxScorer`
  (float32 or a manifest variant), with the time spent inside onnxruntime's
  ``InferenceSession.run`` accounted separately through the scorer's public
  ``session_factory`` (:class:`TimedSession`).

* :class:`StOnnxBackend` -- the peers: sentence-transformers ``CrossEncoder(...,
  backend="onnx")`` on the ONNX file sentence-transformers itself exports with
  optimum (``st-onnx``), and on its own dynamic-int8 export,
  ``export_dynamic_quantized_onnx_model`` (``st-onnx-int8``), so int8 is
  compared with int8. :func:`prepare_st_onnx` writes both once, under the
  git-ignored ``models/bench-deberta-v3-base-random/st-onnx/``
  (``python -m bench.backends prepare-st-onnx HF_DIR OUT_DIR``).

Backend keys (:data:`BACKEND_KEYS`, :func:`load_backend`): ``torch``, ``onnx``
(``model.onnx``), ``onnx-<variant>``, ``span`` / ``span-int8`` (the
export made with ``python -m export --attention span``), and the peers
``st-onnx`` / ``st-onnx-int8`` (:data:`PEER_KEYS`: ``torch`` and these two).

Only the backend's own module is imported when it loads (torch for the
CrossEncoder, onnxruntime for the OnnxScorer), so a worker's import time is
its backend's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Optional, Protocol, Sequence

import numpy as np

from verifier.engine.batching import DEFAULT_MAX_BATCH_TOKENS
from .workloads import Pair

__all__ = [
    "BACKEND_KEYS",
    "Backend",
    "PEER_KEYS",
    "ST_KEYS",
    "TorchBackend",
    "StOnnxBackend",
    "OnnxBackend",
    "TimedSession",
    "load_backend",
    "distribution_version",
    "st_quantization_config",
    "st_onnx_ready",
    "prepare_st_onnx",
    "ST_FP32_FILE",
    "st_int8_file",
]

#: Backend keys: ``torch`` (CrossEncoder), ``onnx`` (float32 model.onnx), ``onnx-<variant>``;
#: ``span`` / ``span-int8``: the same, exported with span-sliced relative attention.
BACKEND_KEYS = ("torch", "onnx", "onnx-optimized", "onnx-int8", "span", "span-int8", "st-onnx", "st-onnx-int8")
#: The sentence-transformers ONNX peers (``CrossEncoder(..., backend="onnx")``).
ST_KEYS = ("st-onnx", "st-onnx-int8")
#: Every peer (someone else's runtime) our backends are reported against.
PEER_KEYS = ("torch", *ST_KEYS)
#: The float32 ONNX file sentence-transformers exports, relative to the peer directory.
ST_FP32_FILE = "onnx/model.onnx"


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


class _CrossEncoderBackend:
    """A loaded sentence-transformers ``CrossEncoder``, scored the reference implementation's way.

    ``predict(pairs, batch_size, apply_softmax=True)``; columns reordered to
    (entailment, contradiction, neutral) from the model's ``id2label``. Padding
    counters come from wrapping the CrossEncoder's own ``preprocess`` (the
    batches it builds).
    """

    name: str
    versions: Mapping[str, str]

    def _attach(self, model: Any, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        id2label = {int(k): str(v).lower() for k, v in model.model.config.id2label.items()}
        labels = [id2label[i] for i in range(len(id2label))]
        self.permutation = [labels.index(name) for name in ("entailment", "contradiction", "neutral")]
        self._real = 0
        self._padded = 0
        self._batches = 0
        original = model.preprocess

        def counting(*args: Any, **kwargs: Any) -> Any:
            features = original(*args, **kwargs)
            self._padded += int(features["input_ids"].numel())
            self._real += int(features["attention_mask"].sum())
            self._batches += 1
            return features

        model.preprocess = counting

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        probs = self.model.predict(
            [list(pair) for pair in pairs],
            batch_size=self.batch_size,
            apply_softmax=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(probs, dtype=np.float64).reshape(len(pairs), -1)[:, self.permutation]

    def reset(self) -> None:
        self._real = self._padded = self._batches = 0

    def counters(self) -> dict[str, float]:
        return {
            "batches": self._batches,
            "real_tokens": self._real,
            "padded_tokens": self._padded,
            "padding_overhead": self._padded / self._real if self._real else 1.0,
        }


class TorchBackend(_CrossEncoderBackend):
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
        self._attach(CrossEncoder(str(model_dir), device="cpu", max_length=512), batch_size)
        self.versions = {
            "torch": torch.__version__,
            "sentence_transformers": distribution_version("sentence-transformers"),
        }


def st_quantization_config() -> str:
    """The ``export_dynamic_quantized_onnx_model`` preset this CPU supports best.

    ``avx512_vnni`` where ``/proc/cpuinfo`` lists ``avx512_vnni``, else ``avx512``
    (``avx512f``), else ``avx2``; ``arm64`` on ARM.
    """
    import platform

    if platform.machine().lower() in ("arm64", "aarch64"):
        return "arm64"
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "avx2"
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
            break
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    if "avx512f" in flags:
        return "avx512"
    return "avx2"


def st_int8_file(quantization_config: Optional[str] = None) -> str:
    """The int8 file ``export_dynamic_quantized_onnx_model`` writes for the preset, relative to the peer directory."""
    return f"onnx/model_qint8_{quantization_config or st_quantization_config()}.onnx"


def st_onnx_ready(st_dir: Path, quantization_config: Optional[str] = None) -> bool:
    """Whether :func:`prepare_st_onnx` finished in ``st_dir`` (both ONNX files and the config are there)."""
    st_dir = Path(st_dir)
    return all((st_dir / name).is_file() for name in ("config.json", ST_FP32_FILE, st_int8_file(quantization_config)))


def prepare_st_onnx(
    hf_dir: Path,
    st_dir: Path,
    *,
    quantization_config: Optional[str] = None,
    log: Any = lambda line: print(line, file=sys.stderr, flush=True),
) -> Path:
    """Write the peers' ONNX files with sentence-transformers' own tools (once; kept when present).

    1. ``CrossEncoder(hf_dir, backend="onnx", model_kwargs={"export": True})``
       (sentence-transformers exports the Hugging Face directory with optimum),
       then ``save_pretrained`` into ``st_dir`` -> ``onnx/model.onnx`` plus the
       config and tokenizer files (no PyTorch weights);
    2. ``export_dynamic_quantized_onnx_model(model, quantization_config,
       model_name_or_path=st_dir, file_suffix="qint8_<config>")`` ->
       ``onnx/model_qint8_<config>.onnx`` (:func:`st_quantization_config` picks
       the preset this CPU supports).

    Step 1 is built in a scratch directory next to ``st_dir`` and moved into
    place when complete, so an interrupted run leaves no half directory.

    Returns:
        ``st_dir``.
    """
    from sentence_transformers import CrossEncoder
    from sentence_transformers.backend import export_dynamic_quantized_onnx_model

    hf_dir, st_dir = Path(hf_dir), Path(st_dir)
    preset = quantization_config or st_quantization_config()
    if not (st_dir / ST_FP32_FILE).is_file() or not (st_dir / "config.json").is_file():
        st_dir.parent.mkdir(parents=True, exist_ok=True)
        log(f"sentence-transformers ONNX export of {hf_dir} -> {st_dir / ST_FP32_FILE} (optimum, once)")
        started = time.perf_counter()
        scratch = Path(tempfile.mkdtemp(prefix=f".{st_dir.name}.partial-", dir=st_dir.parent))
        try:
            model = CrossEncoder(
                str(hf_dir), device="cpu", max_length=512, backend="onnx",
                model_kwargs={"export": True, "provider": "CPUExecutionProvider"},
            )
            model.save_pretrained(str(scratch))
            # optimum exported into a TemporaryDirectory the model keeps alive; remove it now, not at exit
            holder = getattr(model.model, "_model_save_dir_tempdirectory_instance", None)
            del model
            if holder is not None:
                holder.cleanup()
            if st_dir.exists():
                shutil.rmtree(st_dir)
            os.replace(scratch, st_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        log(f"  exported in {time.perf_counter() - started:.1f} s")
    if not (st_dir / st_int8_file(preset)).is_file():
        log(f"sentence-transformers dynamic int8 ({preset}) -> {st_dir / st_int8_file(preset)} (once)")
        started = time.perf_counter()
        model = CrossEncoder(
            str(st_dir), device="cpu", max_length=512, backend="onnx",
            model_kwargs={"file_name": ST_FP32_FILE, "provider": "CPUExecutionProvider"},
        )
        export_dynamic_quantized_onnx_model(
            model, quantization_config=preset, model_name_or_path=str(st_dir), file_suffix=f"qint8_{preset}"
        )
        log(f"  quantized in {time.perf_counter() - started:.1f} s")
    return st_dir


class StOnnxBackend(_CrossEncoderBackend):
    """The peer: sentence-transformers ``CrossEncoder(st_dir, backend="onnx", max_length=512)``.

    The ONNX file is sentence-transformers' own (:func:`prepare_st_onnx`):
    ``onnx/model.onnx`` (``st-onnx``) or its dynamic-int8 export
    ``onnx/model_qint8_<preset>.onnx`` (``st-onnx-int8``), loaded through
    ``model_kwargs={"file_name": ..., "provider": "CPUExecutionProvider",
    "session_options": ...}`` with ``intra_op_num_threads=threads``,
    ``inter_op_num_threads=1`` (the same threads as every other backend), and
    scored exactly as :class:`TorchBackend` (``predict``, ``batch_size``,
    softmax, length-sorted batches of its own).

    Args:
        st_dir: the directory :func:`prepare_st_onnx` wrote.
        int8: load the dynamic-int8 file.
        threads: onnxruntime intra-op threads (torch too, for its tokenizer-side tensors).
        batch_size: ``predict`` batch size.
        quantization_config: the int8 preset (default: :func:`st_quantization_config`).
    """

    def __init__(
        self, st_dir: Path, *, int8: bool, threads: int, batch_size: int, quantization_config: Optional[str] = None
    ) -> None:
        import onnxruntime
        import torch
        from sentence_transformers import CrossEncoder

        torch.set_num_threads(threads)
        self.name = "st-onnx-int8" if int8 else "st-onnx"
        self.file_name = st_int8_file(quantization_config) if int8 else ST_FP32_FILE
        path = Path(st_dir) / self.file_name
        if not path.is_file():
            raise ValueError(f"backend {self.name} needs {path}: run python -m bench.backends prepare-st-onnx first")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        model = CrossEncoder(
            str(st_dir), device="cpu", max_length=512, backend="onnx",
            model_kwargs={"file_name": self.file_name, "provider": "CPUExecutionProvider", "session_options": options},
        )
        self._attach(model, batch_size)
        self.versions = {
            "onnxruntime": onnxruntime.__version__,
            "torch": torch.__version__,
            "sentence_transformers": distribution_version("sentence-transformers"),
            "optimum": distribution_version("optimum"),
            "optimum_onnx": distribution_version("optimum-onnx"),
            "file": self.file_name,
        }

    @property
    def session(self) -> Any:
        """The onnxruntime ``InferenceSession`` optimum holds (to check its options)."""
        return self.model.model.model


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
    """``OnnxScorer(session_factory=...)``: :func:`verifier.engine.session.create_session`, wrapped in :class:`TimedSession`.

    Other keyword arguments the engine passes (e.g. ``where``, how to name the
    model in messages) go to ``create_session`` unchanged.
    """

    def __init__(self) -> None:
        self.session: Optional[TimedSession] = None

    def __call__(self, model: Any, options: Any, *, providers: Sequence[str], **kwargs: Any) -> TimedSession:
        from verifier.engine.session import create_session

        self.session = TimedSession(create_session(model, options, providers=providers, **kwargs))
        return self.session


class OnnxBackend:
    """:class:`verifier.engine.scorer.OnnxScorer` (``intra_op_num_threads=threads``, ``inter_op_num_threads=1``), loaded.

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

        from verifier.engine.scorer import OnnxScorer

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
            batch_overhead_tokens=batch_overhead_tokens,  # None: the engine's default for the variant
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
    st_dir: Optional[Path] = None,
    threads: int,
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_size: Optional[int] = None,
    torch_batch_size: int = 32,
) -> Backend:
    """Load the backend ``key`` (:data:`BACKEND_KEYS`); ``st-onnx*`` load from ``st_dir``
    (:func:`prepare_st_onnx`) with ``torch_batch_size`` like the CrossEncoder.

    Raises:
        ValueError: an unknown key, or a directory the key needs is not given.
    """
    if key not in BACKEND_KEYS:
        raise ValueError(f"unknown backend {key!r}; choose from {list(BACKEND_KEYS)}")
    if key == "torch":
        if hf_dir is None:
            raise ValueError("backend torch needs the Hugging Face directory")
        return TorchBackend(Path(hf_dir), threads, torch_batch_size)
    if key in ST_KEYS:
        if st_dir is None:
            raise ValueError(f"backend {key} needs --st-dir (python -m bench.backends prepare-st-onnx)")
        return StOnnxBackend(Path(st_dir), int8=key == "st-onnx-int8", threads=threads, batch_size=torch_batch_size)
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


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m bench.backends`` argument parser."""
    parser = argparse.ArgumentParser(prog="python -m bench.backends", description="Prepare the sentence-transformers ONNX peers.")
    sub = parser.add_subparsers(dest="command", required=True)
    prepare = sub.add_parser("prepare-st-onnx", help="export onnx/model.onnx and its dynamic int8 with sentence-transformers")
    prepare.add_argument("hf_dir", type=Path)
    prepare.add_argument("out_dir", type=Path)
    prepare.add_argument("--quantization-config", default=None, choices=("arm64", "avx2", "avx512", "avx512_vnni"))
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m bench.backends prepare-st-onnx HF_DIR OUT_DIR [--quantization-config C]``: write the peers' files."""
    args = build_parser().parse_args(argv)
    out = prepare_st_onnx(args.hf_dir, args.out_dir, quantization_config=args.quantization_config)
    print(json.dumps({"st_dir": str(out), "fp32": ST_FP32_FILE, "int8": st_int8_file(args.quantization_config)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark model: random-init DeBERTa-v3-base, exported with ``python -m export``, cached.

Layout under ``models/`` (git-ignored)::

    models/bench-deberta-v3-base-random/
        hf/      Hugging Face directory from verifier_export.testmodels.build_deberta_v3_base_random
                 (exact DeBERTa-v3-base config, seeded random weights, real DeBERTa-v3
                 tokenizer); the PyTorch CrossEncoder loads this
        onnx/    ``python -m export --model .../hf --output .../onnx`` (golden parity gate,
                 manifest), plus the ``optimized`` and ``int8`` variants
                 (``python -m export.variants``); OnnxScorer loads this

Each step runs only when its output is missing (or ``rebuild=True``), so the
first ``python -m bench build`` takes a few minutes (build ~15 s, export with
its PyTorch parity gate ~1-3 min, variants ~1-2 min on 2 cores) and later runs
reuse it. Export and variants run as subprocesses (:func:`bench.proc.run_python`)
so torch's memory never stays in the benchmark process.

Its weights are random: its speed is the real model's speed (same shapes, same
FLOPs), its outputs mean nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from .proc import REPO_ROOT, run_python

__all__ = ["BENCH_MODEL_NAME", "BenchModel", "bench_model", "build_bench_model", "REPO_ROOT"]

#: Directory name of the benchmark model under ``models/``.
BENCH_MODEL_NAME = "bench-deberta-v3-base-random"


@dataclass(frozen=True)
class BenchModel:
    """Paths of the cached benchmark model.

    Attributes:
        root: ``models/bench-deberta-v3-base-random``.
        hf_dir: the Hugging Face directory (PyTorch CrossEncoder side).
        onnx_dir: the exported directory (OnnxScorer side).
    """

    root: Path

    @property
    def hf_dir(self) -> Path:
        """The Hugging Face model directory."""
        return self.root / "hf"

    @property
    def onnx_dir(self) -> Path:
        """The exported model directory."""
        return self.root / "onnx"

    @property
    def span_dir(self) -> Path:
        """The export made with span-sliced relative attention (``python -m bench build --span``)."""
        return self.root / "onnx-span"

    def span_ready(self) -> bool:
        """Whether the span-sliced export finished."""
        return (self.span_dir / "manifest.json").is_file()

    def hf_ready(self) -> bool:
        """Whether the Hugging Face directory is complete."""
        return (self.hf_dir / "config.json").is_file() and (self.hf_dir / "model.safetensors").is_file()

    def onnx_ready(self) -> bool:
        """Whether the export finished (its manifest is written last)."""
        return (self.onnx_dir / "manifest.json").is_file()

    def variants(self) -> tuple[str, ...]:
        """Variant names recorded in the export's manifest (empty before export)."""
        if not self.onnx_ready():
            return ()
        data = json.loads((self.onnx_dir / "manifest.json").read_text(encoding="utf-8"))
        return tuple(sorted(data.get("variants", {})))


def bench_model(models_root: Optional[Path] = None) -> BenchModel:
    """The benchmark model's paths (nothing is built)."""
    root = Path(models_root) if models_root is not None else REPO_ROOT / "models"
    return BenchModel(root / BENCH_MODEL_NAME)


def _run(args: Sequence[str], log: Callable[[str], None]) -> None:
    """``python ARGS`` (export or variants), its output logged; ``RuntimeError`` when it fails."""
    log("$ python " + " ".join(args))
    run_python(args, log=log)


_RANDOM_INT8_GATE = (
    # Random weights: logits near zero, so the int8 argmax/probability gates are
    # meaningless here; record the report, gate only on the logit bound.
    "--int8-min-argmax-agreement", "0", "--int8-max-prob-diff", "1.0",
)


def build_bench_model(
    models_root: Optional[Path] = None,
    *,
    seed: int = 0,
    variants: Sequence[str] = ("optimized", "int8"),
    span: bool = False,
    rebuild: bool = False,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> BenchModel:
    """Build (or reuse) the benchmark model and its ONNX variants.

    Args:
        models_root: where ``bench-deberta-v3-base-random/`` lives (default ``<repo>/models``).
        seed: weight seed of :func:`verifier_export.testmodels.build_deberta_v3_base_random`.
        variants: ONNX variants to add (``python -m export.variants``). The int8
            gate is relaxed to argmax agreement 0 and |Δprob| 1.0 because a random
            model's logits sit near zero; its parity report is recorded but
            means nothing about quality.
        span: also export ``onnx-span/`` with span-sliced relative attention
            (``python -m export --attention span``, behind the export's own parity
            gate) plus its int8 variant, to measure that export side by side.
        rebuild: delete and rebuild everything.
        log: progress sink (default: stderr).

    Returns:
        The :class:`BenchModel`.

    Raises:
        RuntimeError: a build, export or variant step failed (its output is logged).
        FileNotFoundError: the real DeBERTa-v3 tokenizer files are absent.
    """
    model = bench_model(models_root)
    if rebuild and model.root.exists():
        shutil.rmtree(model.root)
    model.root.mkdir(parents=True, exist_ok=True)
    if not model.hf_ready():
        from verifier_export.testmodels import build_deberta_v3_base_random

        log(f"building random DeBERTa-v3-base (seed {seed}) in {model.hf_dir}")
        scratch = Path(tempfile.mkdtemp(prefix=".hf.partial-", dir=model.root))
        try:
            build_deberta_v3_base_random(scratch, seed=seed)
            if model.hf_dir.exists():
                shutil.rmtree(model.hf_dir)
            os.replace(scratch, model.hf_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        (model.root / "seed.txt").write_text(f"{seed}\n", encoding="utf-8")
    if not model.onnx_ready():
        if model.onnx_dir.exists():  # a stale, unfinished directory
            shutil.rmtree(model.onnx_dir)
        log(f"exporting {model.hf_dir} -> {model.onnx_dir} with python -m export")
        # the stock-attention baseline (the exporter's default is span-sliced attention, timed as onnx-span/)
        _run(["-m", "verifier_export", "--model", str(model.hf_dir), "--output", str(model.onnx_dir), "--attention", "stock"], log)
    missing = [name for name in variants if name not in model.variants()]
    if missing:
        log(f"building variants {missing} with python -m export.variants")
        _run(["-m", "verifier_export.variants", str(model.onnx_dir), "--variants", *missing, *_RANDOM_INT8_GATE], log)
    if span:
        _build_span(model, log)
    return model


def _build_span(model: BenchModel, log: Callable[[str], None]) -> None:
    """Export ``onnx-span/`` (span-sliced attention) and its int8 variant, when missing."""
    if not model.span_ready():
        if model.span_dir.exists():
            shutil.rmtree(model.span_dir)
        log(f"exporting {model.hf_dir} -> {model.span_dir} with span-sliced attention")
        _run(
            ["-m", "verifier_export", "--model", str(model.hf_dir), "--output", str(model.span_dir), "--attention", "span"],
            log,
        )
    data = json.loads((model.span_dir / "manifest.json").read_text(encoding="utf-8"))
    if "int8" not in data.get("variants", {}):
        _run(["-m", "verifier_export.variants", str(model.span_dir), "--variants", "int8", *_RANDOM_INT8_GATE], log)

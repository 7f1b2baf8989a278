"""Up-front check of ``python -m bench build|compare|tune``: is everything the command needs installed?

Run before any work, so a missing package or tokenizer is one clear line and
exit status 2 instead of a traceback minutes into a run:

* ``compare``: the bench extra -- psutil (every worker reads its RSS) and
  sentence-transformers (the PyTorch side; not with ``--no-torch``);
* ``tune``: psutil;
* every command, while the benchmark model still has to be built or
  exported: the export extra (torch, transformers, optimum-onnx, onnx) and,
  while its Hugging Face directory is missing, the real DeBERTa-v3 tokenizer
  files (:func:`verifier_export.testmodels.real_tokenizer_dir`).

Packages are looked up with :func:`importlib.util.find_spec` (nothing heavy is imported).
"""

from __future__ import annotations

import importlib.util
from typing import Optional, Sequence

from .model import BenchModel

__all__ = ["BENCH_INSTALL", "EXPORT_INSTALL", "missing_modules", "preflight"]

#: How to install the bench extra (the set-up script installs the pinned CPU torch first, quietly).
BENCH_INSTALL = "bash scripts/setup.sh export,test,bench (torch 2.13.0 first, then the export, test and bench extras)"
#: How to install the export extra (torch pinned first).
EXPORT_INSTALL = "bash scripts/setup.sh (installs torch==2.13.0, then the export and test extras)"

# (import name, distribution name)
_BENCH_PSUTIL = ("psutil", "psutil")
_BENCH_TORCH = ("sentence_transformers", "sentence-transformers")
_EXPORT = (("torch", "torch"), ("transformers", "transformers"), ("optimum.exporters.onnx", "optimum-onnx"), ("onnx", "onnx"))


def missing_modules(modules: Sequence[tuple[str, str]]) -> list[str]:
    """Distribution names of the ``(import name, distribution)`` pairs that cannot be imported."""
    missing = []
    for module, distribution in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package is missing or broken
            found = False
        if not found:
            missing.append(distribution)
    return missing


def _model_needs_build(model: BenchModel, variants: Sequence[str], span: bool, rebuild: bool) -> bool:
    if rebuild or not model.hf_ready() or not model.onnx_ready():
        return True
    if any(name not in model.variants() for name in variants):
        return True
    return span and not model.span_ready()


def preflight(
    command: str,
    model: BenchModel,
    *,
    variants: Sequence[str] = (),
    span: bool = False,
    rebuild: bool = False,
    torch_side: bool = True,
) -> Optional[str]:
    """The one line saying what ``python -m bench COMMAND`` lacks and how to install it; ``None`` when ready.

    Args:
        command: ``"build"``, ``"compare"`` or ``"tune"``.
        model: the benchmark model's paths (to see what must still be built).
        variants: variants the command builds when missing.
        span: the command builds the span-sliced export when missing.
        rebuild: everything is rebuilt.
        torch_side: ``compare`` runs the PyTorch CrossEncoder (not ``--no-torch``).
    """
    problems: list[str] = []
    bench: list[tuple[str, str]] = []
    if command in ("compare", "tune"):
        bench.append(_BENCH_PSUTIL)
    if command == "compare" and torch_side:
        bench.append(_BENCH_TORCH)
    missing = missing_modules(bench)
    if missing:
        problems.append(f"missing {', '.join(missing)} (the bench extra): install with {BENCH_INSTALL}")
    if _model_needs_build(model, variants, span, rebuild):
        missing = missing_modules(_EXPORT)
        if missing:
            problems.append(
                f"cannot build the benchmark model: missing {', '.join(missing)} (the export extra): "
                f"install with {EXPORT_INSTALL}"
            )
        if rebuild or not model.hf_ready():
            from verifier_export.testmodels import real_tokenizer_dir

            try:
                real_tokenizer_dir()
            except FileNotFoundError as exc:
                problems.append(f"cannot build the benchmark model: {exc}")
    if not problems:
        return None
    return f"python -m bench {command}: " + "; ".join(problems)

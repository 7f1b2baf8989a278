"""Fixtures of the pytest-benchmark hot-path suite (``pytest bench/ --benchmark-only``).

This directory is outside the main suite's ``testpaths`` (``tests/``), so
these benchmarks never run with the tests and never assert on speed.

* ``real_tokenizer`` -- the real DeBERTa-v3 ``tokenizer.json`` configured by
  :func:`verifier.engine.tokenization.load_tokenizer`.
* ``tiny_onnx_dir`` -- the seeded tiny model exported once per session with
  the project's export (skips without torch).
* ``bench_onnx_dir`` -- the cached random DeBERTa-v3-base export
  (``python -m bench build``); skips when it has not been built.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from tokenizers import Tokenizer


@pytest.fixture(scope="session")
def real_tokenizer() -> "Tokenizer":
    """The real DeBERTa-v3 fast tokenizer with the runtime's settings (max length 512)."""
    from verifier_export.testmodels import real_tokenizer_dir
    from verifier.engine.tokenization import load_tokenizer

    try:
        directory = real_tokenizer_dir()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    return load_tokenizer(directory / "tokenizer.json", max_length=512)


@pytest.fixture(scope="session")
def tiny_onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded tiny DeBERTa-v2 model, exported with ``verifier_export.pipeline.export_smoke``."""
    pytest.importorskip("torch")
    from verifier_export.pipeline import export_smoke

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = export_smoke(tmp_path_factory.mktemp("tiny") / "onnx")
    return report.output_dir


@pytest.fixture(scope="session")
def bench_onnx_dir() -> Path:
    """The cached benchmark model export, or skip when ``python -m bench build`` has not run."""
    from bench.model import bench_model

    model = bench_model()
    if not model.onnx_ready():
        pytest.skip("benchmark model not built (run `python -m bench build`)")
    return model.onnx_dir

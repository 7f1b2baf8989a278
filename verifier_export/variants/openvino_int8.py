"""The ``ov-int8`` variant: NNCF post-training int8 quantisation of ``model.onnx`` for OpenVINO's CPU plugin.

``nncf.quantize`` (NNCF's "basic" post-training quantisation, ``ModelType.TRANSFORMER``
preset: MatMul/FullyConnected weights and inputs to int8, per-channel weight scales,
SmoothQuant and fast bias correction; NNCF docs, "Post-training Quantization") is
calibrated on the golden pairs (``golden.json``: the same pairs the gate scores,
tokenized as the runtime tokenizes them). The quantized model is compiled at
inference precision bf16 (the ops left in floating point run in bf16) and saved
as OpenVINO's compiled model, like ``bf16``. Measured on the base-shape bench
model (AMD EPYC, AVX512-BF16 and VNNI, no AMX): 1.46-1.57x the bf16 variant per
batch, max |Δprob| 8.5e-3 against PyTorch on the golden pairs (docs/performance.md).

The quantized graph exists only inside the compiled file, so this variant records
no ``source_file``: on another CPU or OpenVINO it is refused (build it again there).
NNCF is imported only here (the ``openvino`` extra).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np

from verifier.engine.manifest import TOKENIZER_NAME, Manifest
from verifier.engine.ov_session import OpenVinoSession, check_precision, cpu_capabilities
from verifier.engine.tokenization import encode_for_model, load_tokenizer, pad_encodings

from ..errors import ExportError
from ..recheck import read_export_golden

__all__ = ["calibration_feeds", "quantize_int8"]


def calibration_feeds(model_dir: Path, manifest: Manifest) -> list[dict[str, np.ndarray]]:
    """One feed (int64 arrays of shape (1, tokens)) per golden pair, as the runtime tokenizes it."""
    golden, _ = read_export_golden(model_dir, manifest)
    tokenizer = load_tokenizer(model_dir / TOKENIZER_NAME, max_length=manifest.max_length)
    with_types = "token_type_ids" in manifest.inputs
    feeds = []
    for encoding in encode_for_model(tokenizer, golden.pairs, manifest.grounding):
        arrays = pad_encodings([encoding], pad_token_id=manifest.pad_token_id, with_token_type_ids=with_types)
        feeds.append({name: arrays[name] for name in manifest.inputs})
    return feeds


def quantize_int8(source: Path, model_dir: Path, manifest: Manifest) -> OpenVinoSession:
    """``source`` (the verified ``model.onnx``) quantized by NNCF on the golden pairs, compiled at bf16.

    Raises:
        ExportError: NNCF or OpenVINO is not installed, the CPU has no bf16, or quantisation failed.
    """
    try:
        import nncf
        import openvino
    except ImportError as exc:
        raise ExportError(
            f"the ov-int8 variant needs NNCF and OpenVINO (the openvino extra): {exc}"
        ) from exc
    check_precision("bf16", cpu_capabilities())
    feeds = calibration_feeds(model_dir, manifest)
    core = openvino.Core()
    graph = core.read_model(str(source))
    logger = logging.getLogger("nncf")
    level = logger.level
    logger.setLevel(logging.ERROR)  # NNCF logs every step at INFO
    try:
        with contextlib.redirect_stdout(sys.stderr):  # NNCF's progress bars: messages on stderr, as everywhere
            quantized: Any = nncf.quantize(
                graph, nncf.Dataset(feeds), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(feeds),
            )
    finally:
        logger.setLevel(level)
    compiled = core.compile_model(quantized, "CPU", {"INFERENCE_PRECISION_HINT": "bf16", "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    return OpenVinoSession(compiled, precision="bf16", origin="onnx")

"""Extra ONNX variants of an exported model directory, each behind its own parity gate.

Usage::

    python -m export --output DIR --variants optimized int8      # into an existing export of any model
    python -m export --output DIR --variants int8 --int8-max-prob-diff 0.02
    python -m export.variants DIR                                 # the same command, optimized + int8 by default
    python -m export.variants DIR --variants bf16                 # OpenVINO bf16 (the openvino extra; AMX/AVX512-BF16)
    python -m export.variants DIR --variants int8 --int8-min-argmax-agreement 0.9  # (random models only)

Library: :func:`build_variants` (``from verifier_export import build_variants``).

Variants (written beside ``model.onnx``, recorded in ``manifest.variants`` and
``manifest.files``; the runtime picks one by name, ``OnnxScorer(dir,
variant="int8")`` or ``RuntimeOptions(variant="int8")``):

* ``optimized`` -> ``model.optimized.onnx``: the float32 graph after
  onnxruntime's offline graph optimisation (level ``extended`` by default:
  constant folding -- including DeBERTa's relative-position projections --
  and the transformer fusions: LayerNorm, SkipLayerNorm, Gelu, BiasGelu, ...),
  saved so a session skips that work at load. ``extended`` is the portable
  level; ``all`` adds hardware-specific layout changes and is only safe on the
  CPU that wrote the file.
* ``int8`` -> ``model.int8.onnx``: dynamic int8 quantisation
  (``onnxruntime.quantization.quantize_dynamic``): MatMul weights to signed
  int8 (per output channel by default), activations quantised at run time,
  only MatMuls with a constant weight (``MatMulConstBOnly``: the attention
  score and context matmuls stay float32), after onnxruntime's ``basic``
  optimisation has folded the graph's constant subgraphs in float32 (a
  quantised constant subgraph would be folded through int8 kernels at every
  load, and those saturate on CPUs without VNNI), and by default the word-embedding
  Gather too (``quantize_embeddings="auto"``: the file is ~2.5x smaller at the
  same speed; built again without it only if that file misses the gate).
* ``bf16`` -> ``model.bf16.blob``: ``model.onnx`` compiled by OpenVINO's CPU
  plugin at inference precision bf16 (MatMuls on AMX or AVX512-BF16, float32
  accumulation), saved with ``CompiledModel.export_model`` so a process imports
  it in a fraction of a second. Recorded with ``runtime="openvino"``, the
  OpenVINO version and CPU capabilities it was compiled for, and ``model.onnx``
  as its ``source_file``: on another CPU or OpenVINO the runtime compiles
  ``model.onnx`` instead (:mod:`verifier.engine.ov_load`). Needs the
  ``openvino`` extra and a CPU with AMX-BF16 or AVX512-BF16.

Each variant's parity report compares it with the **PyTorch float32 logits**
recorded in ``golden.json`` at export (no torch needed here), through the
exporter's one golden re-check (:func:`verifier_export.recheck.compare_golden`): every
golden pair alone and all pairs in one padded batch, giving max |Δlogit|, max
|Δprobability| after softmax and argmax agreement. A :class:`VariantGate`
(user-settable) decides, listing every failure; the gate is recorded in the
report (``atol``, ``max_prob_diff_gate``). The whole call collects every
variant's result and decides once: if any requested variant fails its gate
nothing is recorded and :class:`~verifier_export.errors.ParityError` lists every
failure.

int8 agreement is a property of the *real* model's weights: judge it on the
real model's golden report. A random-weights model (``bench/``) has logits
near zero, so its argmax flips under any perturbation and its int8 report
says nothing about quality.

Writes are atomic (:mod:`verifier_export.variants.build`): nothing is recorded unless
every requested variant passed, and ``manifest.json`` is rewritten last.

Rooms: :mod:`~verifier_export.variants.gates` (names, gates, options, reports),
:mod:`~verifier_export.variants.build` (building and recording),
:mod:`~verifier_export.variants.cli` (the shared flags and the command).

Exceptions::

    ExportError      unknown variant name, bad gate, onnxruntime or quantisation failure (exit 1)
    ├── ParityError  a variant failed its gate; nothing recorded (exit 3)
    └── ManifestError the directory does not verify against its manifest (exit 4)
"""

from __future__ import annotations

from .build import build_variants, variant_parity
from .cli import (
    add_variant_arguments,
    build_parser,
    main,
    run_variants,
    variant_settings,
)
from .gates import (
    DEFAULT_GATES,
    DEFAULT_VARIANT_NAMES,
    VARIANT_FILES,
    VARIANT_NAMES,
    VARIANT_RUNTIMES,
    VariantGate,
    VariantName,
    VariantOptions,
    VariantResult,
    VariantsReport,
)

__all__ = [
    "VARIANT_NAMES",
    "DEFAULT_VARIANT_NAMES",
    "VARIANT_FILES",
    "VARIANT_RUNTIMES",
    "VariantName",
    "VariantGate",
    "DEFAULT_GATES",
    "VariantOptions",
    "VariantResult",
    "VariantsReport",
    "build_variants",
    "variant_parity",
    "add_variant_arguments",
    "variant_settings",
    "run_variants",
    "build_parser",
    "main",
]

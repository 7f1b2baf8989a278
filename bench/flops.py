"""Analytic FLOPs of DeBERTa-v3-base and numpy's float32 matmul rate (the practical ceiling).

FLOP count of one sequence of ``L`` real tokens (a multiply-add counts as 2
FLOPs), DeBERTa-v3-base: hidden ``d`` = 768, ``N`` = 12 layers, feed-forward
``f`` = 3072, ``k`` = 256 position buckets (2k = 512 relative-position
embeddings), three labels::

    per layer:
        Q, K, V and output projections          8 · L · d²
        feed-forward (two matmuls)              4 · L · d · f
        content→content scores and context      4 · L² · d       (Q·Kᵀ and P·V)
        c2p and p2c relative scores             4 · L · R · d    (Q·K_rᵀ and K·Q_rᵀ)
    head: pooler 2 · d² + classifier 2 · d · 3

    flops(L) = N · (8·L·d² + 4·L·d·f + 4·L²·d + 4·L·R·d) + 2·d² + 6·d

``R`` is the number of relative positions the scores are computed against.
The *minimal* count (:data:`MINIMAL`, used for every "effective GFLOP/s"
figure) takes ``R = min(2L, 2k)``: a sequence of ``L`` tokens can only use
``2L - 1`` relative distances, and below 128 tokens every distance has its own
bucket. The *implemented* count (:data:`IMPLEMENTED`) follows what the
Hugging Face implementation (and so the exported graph) actually multiplies:
``R = 2k = 512`` whatever ``L``; it is reported alongside for transparency.

Not counted (they are not matmul work, or do not depend on the input):
embedding lookup, LayerNorms, softmax, GELU, the gathers that pick relative
scores, and the projection of the 512 relative embeddings through W_q and W_k
(``2 · 2 · 2k · d²`` per layer per forward call; the same for every input, so
onnxruntime folds it into a constant).

For L = 32: 170 MFLOP per token of linear work plus ~0.3 MFLOP attention
terms (minimal); for L = 512: +3.1 MFLOP/token/layer of attention (≈ 22 %).

Command line (used by ``python -m bench compare`` in a subprocess, so the
thread count is set before numpy loads)::

    python -m bench.flops --threads 2      # prints JSON: GFLOP/s per shape and the ceiling
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Iterable, Literal, Optional, Sequence

__all__ = [
    "HIDDEN",
    "LAYERS",
    "INTERMEDIATE",
    "POSITION_BUCKETS",
    "MINIMAL",
    "IMPLEMENTED",
    "RelativeCount",
    "flops_per_sequence",
    "total_flops",
    "MATMUL_SHAPES",
    "measure_matmul",
    "measure_onnxruntime_matmul",
    "main",
]

#: DeBERTa-v3-base hidden size (config.json ``hidden_size``).
HIDDEN = 768
#: Encoder layers (``num_hidden_layers``).
LAYERS = 12
#: Feed-forward width (``intermediate_size``).
INTERMEDIATE = 3072
#: Relative position buckets k (``position_buckets``); 2k relative embeddings.
POSITION_BUCKETS = 256
#: Output labels.
LABELS = 3

RelativeCount = Literal["minimal", "implemented"]
MINIMAL: RelativeCount = "minimal"
IMPLEMENTED: RelativeCount = "implemented"

#: (M, K, N) float32 matmul shapes timed for the ceiling: the FFN matmuls at
#: 4096 tokens, a QKV-sized one, and a square 2048 one.
MATMUL_SHAPES: tuple[tuple[int, int, int], ...] = (
    (4096, 768, 3072),
    (4096, 3072, 768),
    (4096, 768, 768),
    (2048, 2048, 2048),
)


def flops_per_sequence(length: int, relative: RelativeCount = MINIMAL) -> float:
    """FLOPs of one DeBERTa-v3-base forward pass over ``length`` tokens (formula in the module docstring).

    Args:
        length: real tokens of the sequence (special tokens included), ≥ 0.
        relative: ``"minimal"`` (R = min(2L, 512)) or ``"implemented"`` (R = 512).

    Returns:
        FLOPs (float); 0 for an empty sequence.

    Example:
        >>> round(flops_per_sequence(32) / 32 / 1e6)
        170
    """
    if length <= 0:
        return 0.0
    d, f, L = HIDDEN, INTERMEDIATE, float(length)
    span = 2 * POSITION_BUCKETS
    rel = min(2 * L, span) if relative == MINIMAL else span
    per_layer = 8 * L * d * d + 4 * L * d * f + 4 * L * L * d + 4 * L * rel * d
    return LAYERS * per_layer + 2 * d * d + 2 * d * LABELS


def total_flops(lengths: Iterable[int], relative: RelativeCount = MINIMAL) -> float:
    """Sum of :func:`flops_per_sequence` over sequence lengths."""
    return float(sum(flops_per_sequence(int(length), relative) for length in lengths))


def measure_matmul(
    shapes: Sequence[tuple[int, int, int]] = MATMUL_SHAPES,
    *,
    repeats: int = 7,
    seed: int = 0,
) -> dict[str, object]:
    """Time numpy float32 matmuls; return GFLOP/s per shape (median and best) and the ceiling.

    The ceiling is the largest median over the shapes (2·M·K·N FLOPs per
    matmul). Threads are whatever numpy's BLAS was given (set
    ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` before numpy is imported,
    as :func:`main` does).

    Returns:
        ``{"shapes": [{"m", "k", "n", "median_gflops", "best_gflops"}], "ceiling_gflops",
        "blas": threadpoolctl info or None}``
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    for m, k, n in shapes:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), dtype=np.float32)
        np.matmul(a, b, out=out)  # warm-up
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            np.matmul(a, b, out=out)
            times.append(time.perf_counter() - started)
        flops = 2.0 * m * k * n
        rows.append(
            {
                "m": m,
                "k": k,
                "n": n,
                "median_gflops": flops / float(np.median(times)) / 1e9,
                "best_gflops": flops / min(times) / 1e9,
            }
        )
    blas: Optional[list[dict[str, object]]]
    try:
        import threadpoolctl

        blas = [
            {key: info.get(key) for key in ("internal_api", "version", "num_threads", "architecture", "threading_layer")}
            for info in threadpoolctl.threadpool_info()
        ]
    except ImportError:  # pragma: no cover - threadpoolctl is optional
        blas = None
    return {
        "shapes": rows,
        "ceiling_gflops": max(float(row["median_gflops"]) for row in rows),  # type: ignore[arg-type]
        "blas": blas,
    }


def measure_onnxruntime_matmul(
    m: int = 4096, k: int = 768, n: int = 3072, *, threads: int = 2, repeats: int = 7, seed: int = 0
) -> float:
    """GFLOP/s (median) of one float32 MatMul (constant weight, like the model's) in onnxruntime.

    A stricter ceiling than numpy's where numpy's BLAS does not use the CPU's
    widest vectors (OpenBLAS picks AVX2 "Haswell" kernels on some AVX-512 CPUs,
    while onnxruntime's MLAS uses AVX-512).
    """
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    weight = rng.standard_normal((k, n), dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["m", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])],
        [numpy_helper.from_array(weight, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    x = rng.standard_normal((m, k), dtype=np.float32)
    session.run(None, {"x": x})
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        session.run(None, {"x": x})
        times.append(time.perf_counter() - started)
    return 2.0 * m * k * n / float(np.median(times)) / 1e9


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m bench.flops --threads N``: print :func:`measure_matmul` as JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.flops", description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="BLAS threads (default 2)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repetitions per shape")
    args = parser.parse_args(argv)
    if "numpy" in sys.modules:  # pragma: no cover - only when imported oddly
        print("numpy already imported: thread settings may not apply", file=sys.stderr)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)
    result = measure_matmul(repeats=args.repeats)
    result["threads"] = args.threads
    try:
        result["onnxruntime_matmul_gflops"] = measure_onnxruntime_matmul(threads=args.threads, repeats=args.repeats)
    except ImportError:  # pragma: no cover - onnx is part of the export extra
        result["onnxruntime_matmul_gflops"] = None
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

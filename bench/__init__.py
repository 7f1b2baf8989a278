"""Speed measurements of the claim-verification engine (STYLE §16: speed lives here, never in tests).

Usage::

    python -m bench build      # build + export the random DeBERTa-v3-base bench model (cached)
    python -m bench compare    # side by side: CrossEncoder (PyTorch) vs OnnxScorer (+ variants)
    python -m bench tune       # token budget, threads, schedules, optimisation levels
    pytest bench/ --benchmark-only   # pytest-benchmark hot paths (not part of the main suite)

Modules:

* :mod:`bench.model` -- builds and caches the benchmark model directory.
* :mod:`bench.workloads` -- realistic memory-style claims and passages, workloads (a)-(d).
* :mod:`bench.flops` -- the analytic FLOP count of DeBERTa-v3-base and numpy's matmul ceiling.
* :mod:`bench.worker` -- one backend measured in its own process (honest RSS and cold start).
* :mod:`bench.report` -- ratios, JSON and the markdown table.

The benchmark model has random weights: its speed is the real model's speed,
its outputs mean nothing. Never read a decision or agreement figure from it
as a quality figure.
"""

from __future__ import annotations

__all__: list[str] = []

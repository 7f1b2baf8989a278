"""Speed measurements of the claim-verification engine (speed lives here, never in test assertions).

Usage::

    python -m bench build      # build + export the random DeBERTa-v3-base bench model (cached)
    python -m bench compare    # side by side: CrossEncoder (PyTorch) vs OnnxScorer (+ variants)
    python -m bench tune       # token budget, threads, schedules, optimisation levels
    pytest bench/ --benchmark-only   # pytest-benchmark hot paths (not part of the main suite)

Modules (one job each; bench/README.md has the method):

* :mod:`bench.preflight` -- the up-front check that the command's extras and files are there.
* :mod:`bench.model` -- builds and caches the benchmark model directory.
* :mod:`bench.texts` / :mod:`bench.workloads` -- memory-style passages and claims, workloads (a)-(d).
* :mod:`bench.flops` -- the analytic FLOP count of DeBERTa-v3-base and numpy's matmul ceiling.
* :mod:`bench.backends` -- the backend protocol, CrossEncoder (PyTorch) and OnnxScorer.
* :mod:`bench.measure` -- timing primitives: staged calls, rotated latency, staged vs eager.
* :mod:`bench.results` -- the typed results passed between processes (JSON).
* :mod:`bench.proc` -- the one helper that starts Python subprocesses.
* :mod:`bench.worker` -- one backend in its own process (honest RSS and cold start; tuning).
* :mod:`bench.tune` -- the engine settings sweep.
* :mod:`bench.interleave` -- every backend in one process, taking turns (the timings).
* :mod:`bench.facts` / :mod:`bench.agreement` -- host facts, token profile; agreement on (c).
* :mod:`bench.runner` -- ``compare`` and ``tune``: orchestrates the children, merges results.
* :mod:`bench.report` -- ratios, targets and the markdown tables.

The benchmark model has random weights: its speed is the real model's speed,
its outputs mean nothing. Never read a decision or agreement figure from it
as a quality figure.
"""

from __future__ import annotations

__all__: list[str] = []

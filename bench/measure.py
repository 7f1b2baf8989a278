"""Timing primitives shared by the worker and the interleaved runner.

* :func:`time_stages` -- one claim's (or one chunk's) staged scorer calls, timed;
* :func:`latency` -- warm-up, then timed repetitions of one claim on every
  backend, in an order rotated per repetition (:class:`bench.results.LatencyResult`);
* :func:`schedules` -- the real :class:`verifier.ClaimVerifier`, ``staged`` vs
  ``eager``, on workloads (a) and (b) over a :class:`CostedScriptedScorer`
  (:class:`bench.results.ScheduleResult`).

Timings are wall-clock (``time.perf_counter``).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .backends import Backend
from .results import LatencyResult, ScheduleResult
from .workloads import NEUTRAL, ClaimCase, Pair, Workload

__all__ = ["ScoreFn", "CostedScriptedScorer", "percentile", "time_stages", "latency", "schedules"]

ScoreFn = Callable[[Sequence[Pair]], np.ndarray]


class CostedScriptedScorer:
    """Does the real model work for every pair it is sent, then answers with scripted probabilities.

    With a random-weights model the decision layer would otherwise always go
    to pairs; this keeps each claim on its designed path (see
    :mod:`bench.workloads`) while the time spent is the engine's real time.

    Args:
        engine: the real scorer (an :class:`verifier.OnnxScorer`).
        scripted: (premise, claim) -> (entailment, contradiction, neutral).
        default: probabilities of every other pair.
    """

    def __init__(
        self,
        engine: Any,
        scripted: Mapping[Pair, tuple[float, float, float]],
        default: tuple[float, float, float] = NEUTRAL,
    ) -> None:
        self.engine = engine
        self.scripted = dict(scripted)
        self.default = default
        self.pairs_sent = 0
        self.calls = 0

    def score(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Run the engine on ``pairs`` (result discarded); return the scripted (n, 3) rows."""
        self.engine.score(pairs)
        self.pairs_sent += len(pairs)
        self.calls += 1
        return np.asarray([self.scripted.get((pair[0], pair[1]), self.default) for pair in pairs], dtype=np.float64).reshape(
            len(pairs), 3
        )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (numpy's linear interpolation; NaN when empty)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def time_stages(score: ScoreFn, stages: Sequence[Sequence[Pair]]) -> tuple[float, list[float], list[np.ndarray]]:
    """Run the scorer calls of one claim (or one chunk); total and per-stage seconds, and the outputs."""
    stage_seconds: list[float] = []
    outputs: list[np.ndarray] = []
    for stage in stages:
        started = time.perf_counter()
        outputs.append(score(stage))
        stage_seconds.append(time.perf_counter() - started)
    return sum(stage_seconds), stage_seconds, outputs


def _rotate(items: Sequence[str], by: int) -> list[str]:
    shift = by % len(items)
    return list(items[shift:]) + list(items[:shift])


def latency(backends: Mapping[str, Backend], workload: Workload, reps: int, warmup: int) -> dict[str, LatencyResult]:
    """Every backend on the first claim of ``workload``: ``warmup`` untimed runs each, then ``reps``
    repetitions, each running every backend once in an order rotated by the repetition number."""
    stages = workload.cases[0].stages()
    keys = list(backends)
    for key in keys:
        for _ in range(warmup):
            time_stages(backends[key].score, stages)
        backends[key].reset()
    seconds: dict[str, list[float]] = {key: [] for key in keys}
    loads: list[float] = []
    outputs: dict[str, list[np.ndarray]] = {}
    for rep in range(reps):
        loads.append(os.getloadavg()[0])
        for key in _rotate(keys, rep):
            total, _, outputs[key] = time_stages(backends[key].score, stages)
            seconds[key].append(total)
    return {
        key: LatencyResult(
            reps=reps,
            warmup=warmup,
            seconds=seconds[key],
            p50=percentile(seconds[key], 50),
            p95=percentile(seconds[key], 95),
            mean=float(np.mean(seconds[key])),
            counters=backends[key].counters(),
            probabilities=np.concatenate(outputs[key], axis=0).tolist(),
            load_1m=loads,
        )
        for key in keys
    }


def schedules(engine: Any, workloads: Mapping[str, Workload], *, reps: int) -> dict[str, ScheduleResult]:
    """``ClaimVerifier`` staged vs eager on (a) and (b): ``engine`` (an OnnxScorer) does the model
    work, the workload's scripted probabilities make the decisions; keys ``"a/staged"`` etc."""
    from verifier import ClaimVerifier, RuntimeOptions

    results: dict[str, ScheduleResult] = {}
    for key in ("a", "b"):
        case: ClaimCase = workloads[key].cases[0]
        for schedule in ("staged", "eager"):
            scorer = CostedScriptedScorer(engine, case.scripted_scores())
            verifier = ClaimVerifier(scorer=scorer, runtime=RuntimeOptions(schedule=schedule))
            verifier.verify_sync(case.claim, case.evidence())  # warm-up
            scorer.pairs_sent = scorer.calls = 0
            seconds = []
            status = ""
            for _ in range(reps):
                started = time.perf_counter()
                result = verifier.verify_sync(case.claim, case.evidence())
                seconds.append(time.perf_counter() - started)
                status = result.status.value
            results[f"{key}/{schedule}"] = ScheduleResult(
                reps=reps,
                seconds=seconds,
                p50=percentile(seconds, 50),
                p95=percentile(seconds, 95),
                pairs_per_claim=scorer.pairs_sent / reps,
                calls_per_claim=scorer.calls / reps,
                status=status,
                expected_status=case.expected_status,
            )
    return results

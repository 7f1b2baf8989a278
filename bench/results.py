"""Typed results passed between the measuring processes, the runner and the report.

Each is a frozen dataclass with ``to_json()`` (the JSON object written to the
scratch files and, merged by :mod:`bench.runner`, to ``bench/results/<name>.json``)
and ``from_json()``. Field names and order are the JSON keys; an optional field
that is ``None`` is left out of the JSON (as the keys a process never measured
always were). The run's report dict stays a dict at the JSON boundary
(:mod:`bench.report` renders it from the JSON alone).

* :class:`LatencyResult` -- one backend's timed repetitions of one claim (a, b, d);
* :class:`ThroughputResult` -- one backend's pass over workload (c);
* :class:`ScheduleResult` -- ``ClaimVerifier`` staged or eager on one claim;
* :class:`TuneRow` / :class:`TuneResult` -- the engine settings sweep;
* :class:`ColdStart`, :class:`RssResult`, :class:`WorkerResult` -- one ``bench.worker`` process;
* :class:`InterleaveResult` -- the one ``bench.interleave`` process.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, TypeVar

__all__ = [
    "JsonRecord",
    "LatencyResult",
    "ThroughputResult",
    "ScheduleResult",
    "TuneRow",
    "TuneResult",
    "ColdStart",
    "RssResult",
    "WorkerResult",
    "InterleaveResult",
]

Counters = Mapping[str, float]
_R = TypeVar("_R", bound="JsonRecord")


def _optional() -> Any:
    """A field that defaults to ``None`` and is left out of the JSON while ``None``."""
    return field(default=None, metadata={"omit_none": True})


def _plain(value: Any) -> Any:
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


class JsonRecord:
    """Mixin of the result dataclasses: ``to_json`` / ``from_json`` for flat fields."""

    def to_json(self) -> dict[str, Any]:
        """The JSON object (nested records as objects, tuples as lists, unset optionals left out)."""
        out: dict[str, Any] = {}
        for item in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if value is None and item.metadata.get("omit_none"):
                continue
            out[item.name] = _plain(value)
        return out

    @classmethod
    def from_json(cls: type[_R], data: Mapping[str, Any]) -> _R:
        """Rebuild from :meth:`to_json`'s object (keys it does not know are ignored)."""
        names = {item.name for item in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{key: value for key, value in data.items() if key in names})


@dataclass(frozen=True)
class LatencyResult(JsonRecord):
    """One backend, one claim's staged scorer calls, ``reps`` timed repetitions (seconds)."""

    reps: int
    warmup: int
    seconds: list[float]
    p50: float
    p95: float
    mean: float
    counters: Counters
    probabilities: list[list[float]]
    load_1m: list[float]


@dataclass(frozen=True)
class ThroughputResult(JsonRecord):
    """One backend's pass over workload (c), in interleaved chunks (seconds)."""

    reps: int
    seconds: list[float]
    stage_seconds: list[list[float]]
    chunk_seconds: list[float]
    median: float
    counters: Counters
    probs_file: Optional[str]
    claims_per_chunk: int
    load_1m: list[float]
    numpy_gflops_samples: list[float]


@dataclass(frozen=True)
class ScheduleResult(JsonRecord):
    """``ClaimVerifier`` with one schedule on one claim (seconds per claim)."""

    reps: int
    seconds: list[float]
    p50: float
    p95: float
    pairs_per_claim: float
    calls_per_claim: float
    status: str
    expected_status: str


@dataclass(frozen=True)
class TuneRow(JsonRecord):
    """One engine setting: load time, one pass over the (c) subset, and (b) latency."""

    setting: Mapping[str, Any]
    load_seconds: float
    seconds: float
    stage_seconds: list[float]
    counters: Counters
    b_p50: float
    b_p95: float


@dataclass(frozen=True)
class TuneResult(JsonRecord):
    """The settings sweep over the first ``claims`` claims of (c)."""

    claims: int
    pairs: int
    rows: list[TuneRow]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "TuneResult":
        return cls(claims=data["claims"], pairs=data["pairs"], rows=[TuneRow.from_json(row) for row in data["rows"]])


@dataclass(frozen=True)
class ColdStart(JsonRecord):
    """Import, load and first pair of one backend in a fresh process (seconds; wall clock for ``*_wall``)."""

    import_seconds: float
    load_seconds: float
    first_pair_seconds: float
    import_load_first_seconds: float
    ready_wall: float
    #: Set by the parent: from its spawn of the process to ``ready_wall``.
    process_to_ready_seconds: Optional[float] = _optional()


@dataclass(frozen=True)
class RssResult(JsonRecord):
    """Resident set size after load, and peak (``ru_maxrss``) after load and at the end (bytes)."""

    after_load_bytes: int
    peak_after_load_bytes: int
    peak_bytes: int


@dataclass(frozen=True)
class WorkerResult(JsonRecord):
    """What one ``python -m bench.worker`` process measured (the parent adds its spawn and load facts)."""

    backend: str
    variant: Optional[str]
    threads: int
    pid: int
    digest: str
    process_started_wall: float
    numpy_and_workloads_seconds: float
    cold_start: Optional[ColdStart] = _optional()
    rss: Optional[RssResult] = _optional()
    versions: Optional[Mapping[str, str]] = _optional()
    rss_probe: Optional[Mapping[str, float]] = _optional()
    schedules: Optional[Mapping[str, ScheduleResult]] = _optional()
    tune: Optional[TuneResult] = _optional()
    spawn_wall: Optional[float] = _optional()
    wall_seconds: Optional[float] = _optional()
    load_before: Optional[list[float]] = _optional()
    load_after: Optional[list[float]] = _optional()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "WorkerResult":
        nested: dict[str, Any] = {
            "cold_start": ColdStart.from_json(data["cold_start"]) if "cold_start" in data else None,
            "rss": RssResult.from_json(data["rss"]) if "rss" in data else None,
            "schedules": {k: ScheduleResult.from_json(v) for k, v in data["schedules"].items()}
            if "schedules" in data
            else None,
            "tune": TuneResult.from_json(data["tune"]) if "tune" in data else None,
        }
        names = {item.name for item in dataclasses.fields(cls)}
        flat = {key: value for key, value in data.items() if key in names and key not in nested}
        return cls(**flat, **nested)


@dataclass(frozen=True)
class InterleaveResult(JsonRecord):
    """What the one ``python -m bench.interleave`` process measured.

    Attributes:
        latency: workload key (``a``, ``b``, ``d``) -> backend key -> result.
        throughput: ``{"c": backend key -> result}``, plus ``"e"`` when workload (e)
            ran (absent when skipped).
        schedules: ``"a/staged"``-style name -> result (OnnxScorer fp32; absent when skipped).
        digest_e: workload (e)'s own digest (absent when (e) did not run).
        load_seconds: backend key -> seconds to load it in this process.
        versions: backend key -> its runtime's versions (the peers' ONNX file too).
    """

    backends: list[str]
    digest: str
    threads: int
    latency: Mapping[str, Mapping[str, LatencyResult]]
    throughput: Optional[Mapping[str, Mapping[str, ThroughputResult]]] = _optional()
    schedules: Optional[Mapping[str, ScheduleResult]] = _optional()
    digest_e: Optional[str] = _optional()
    load_seconds: Optional[Mapping[str, float]] = _optional()
    versions: Optional[Mapping[str, Mapping[str, str]]] = _optional()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "InterleaveResult":
        return cls(
            backends=list(data["backends"]),
            digest=data["digest"],
            threads=data["threads"],
            latency={
                work: {key: LatencyResult.from_json(row) for key, row in rows.items()}
                for work, rows in data["latency"].items()
            },
            throughput={
                work: {key: ThroughputResult.from_json(row) for key, row in rows.items()}
                for work, rows in data["throughput"].items()
            }
            if "throughput" in data
            else None,
            schedules={k: ScheduleResult.from_json(v) for k, v in data["schedules"].items()}
            if "schedules" in data
            else None,
            digest_e=data.get("digest_e"),
            load_seconds=data.get("load_seconds"),
            versions=data.get("versions"),
        )

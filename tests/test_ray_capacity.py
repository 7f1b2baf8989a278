"""The pool check and the stall timeout of ``verify --engine ray`` (issue 36), without Ray.

:func:`verifier.cli.ray_cluster.check_capacity` gets the cluster's CPUs as Ray reports them
(a :class:`Capacity`), and :func:`drain` any iterable: both are plain Python.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Iterator

import pytest

from verifier import cli
from verifier.cli.errors import UsageError
from verifier.cli.ray_cluster import SETTLE_SECONDS, Capacity, Stalled, await_capacity, check_capacity, drain


def test_a_pool_of_every_cpu_fits_and_one_more_is_refused_naming_the_cpus() -> None:
    """Regression (issue 36): --workers 2 on two 1-CPU nodes was accepted with a read task wanting a
    third CPU, and a pool above the cluster's CPUs was accepted too: both waited forever."""
    two = Capacity(total=2.0, free=2.0, nodes=(0.0, 1.0, 1.0))
    check_capacity(two, 2, 1, "at 127.0.0.1:6379")  # every CPU: runs
    with pytest.raises(UsageError) as caught:
        check_capacity(two, 3, 1, "at 127.0.0.1:6379")
    assert str(caught.value) == (
        "error: --workers 3 x --threads-per-worker 1 needs 3 CPUs (one actor of 1 on a node), but the Ray cluster "
        "at 127.0.0.1:6379 has 2 CPUs (2 free) on 3 nodes (0 + 1 + 1); use --workers 2 or fewer "
        "(a pool that does not fit would wait for CPUs forever); nothing was written"
    )


def test_an_actor_larger_than_every_node_and_cpus_taken_by_other_jobs_are_refused() -> None:
    with pytest.raises(UsageError, match=r"use --threads-per-worker 1 or fewer"):
        check_capacity(Capacity(2.0, 2.0, (1.0, 1.0)), 1, 2, "here")  # 2 CPUs in all, but not on one node
    with pytest.raises(UsageError, match=r"has 4 CPUs \(1 free\) on 1 node \(4\); use --workers 1 or fewer"):
        check_capacity(Capacity(4.0, 1.0, (4.0,)), 2, 1, "here")
    with pytest.raises(UsageError, match=r"wait for the cluster's other jobs to free a CPU, or add a node"):
        check_capacity(Capacity(4.0, 0.0, (4.0,)), 1, 1, "here")


class _Cluster:
    """Capacities read one after another (the last one repeated), on a clock that only sleeping moves."""

    def __init__(self, *found: Capacity) -> None:
        self.found, self.reads, self.now = list(found), 0, 0.0

    def read(self) -> Capacity:
        self.reads += 1
        return self.found[min(self.reads, len(self.found)) - 1]

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_cpus_a_finished_job_still_holds_are_waited_for_then_the_pool_runs() -> None:
    """Regression (CI, stop 42): a failed job's actor held its CPU until its traceback was collected, and the
    next --engine ray run in the process was refused with "2 CPUs (0 free)" at once."""
    held, freed = Capacity(2.0, 0.0, (2.0,)), Capacity(2.0, 2.0, (2.0,))
    cluster = _Cluster(held, held, held, freed)
    assert await_capacity(cluster.read, 2, 1, "here", clock=lambda: cluster.now, sleep=cluster.sleep) == freed
    assert cluster.reads == 4 and abs(cluster.now - 0.3) < 1e-9  # three retries of 0.1 s


def test_cpus_that_stay_taken_are_refused_after_the_settle_time_and_an_impossible_pool_at_once() -> None:
    cluster = _Cluster(Capacity(4.0, 1.0, (4.0,)))
    with pytest.raises(UsageError, match=r"has 4 CPUs \(1 free\) on 1 node \(4\); use --workers 1 or fewer"):
        await_capacity(cluster.read, 2, 1, "here", clock=lambda: cluster.now, sleep=cluster.sleep)
    assert SETTLE_SECONDS <= cluster.now < SETTLE_SECONDS + 0.2
    never = _Cluster(Capacity(2.0, 2.0, (1.0, 1.0)))  # an actor of 2 CPUs fits on no node: no wait
    with pytest.raises(UsageError, match=r"use --threads-per-worker 1 or fewer"):
        await_capacity(never.read, 1, 2, "here", clock=lambda: never.now, sleep=never.sleep)
    assert never.reads == 1 and never.now == 0.0


def test_drain_hands_over_every_batch_in_order_and_raises_an_error_of_the_iteration() -> None:
    got: list[int] = []
    drain(iter(range(7)), 5.0, got.append)
    assert got == list(range(7))

    def failing() -> Iterator[int]:
        yield 1
        raise ValueError("worker lost")

    got.clear()
    with pytest.raises(ValueError, match="worker lost"):
        drain(failing(), 5.0, got.append)
    assert got == [1]


def test_drain_gives_up_when_no_batch_comes_back() -> None:
    """Regression (issue 36): a job that made no progress waited forever, saying nothing."""
    release = threading.Event()

    def stuck() -> Iterator[int]:
        yield 1
        release.wait()  # a batch that never comes (until the test ends)
        yield 2

    got: list[int] = []
    try:
        with pytest.raises(Stalled) as caught:
            drain(stuck(), 0.2, got.append)
    finally:
        release.set()
    assert got == [1] and caught.value.seconds == 0.2


def test_ctrl_c_ends_the_iteration_on_this_thread_before_drain_raises() -> None:
    """Regression (stop 41's new-user trial): Ray Data was iterated on a helper thread, so after Ctrl-C the
    iteration outlived the driver's ray.shutdown(), printed Ray's tracebacks after "interrupted" and started
    a second local Ray instance. Now the iterator runs, and cleans up, on the calling thread."""
    events: list[object] = []

    def batches() -> Iterator[int]:
        try:
            yield 1
            events.append(threading.current_thread() is threading.main_thread())
            signal.raise_signal(signal.SIGINT)  # Ctrl-C while Ray Data waits for the next batch
            yield 2
        finally:
            events.append("cleaned up")

    got: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        drain(batches(), 5.0, got.append)
    assert got == [1] and events == [True, "cleaned up"]
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_stall_timeout_holds_off_the_main_thread_too() -> None:
    """On another thread (no SIGALRM there) drain iterates on a helper thread and still gives up."""
    release = threading.Event()
    outcome: list[object] = []

    def stuck() -> Iterator[int]:
        yield 1
        release.wait()
        yield 2

    def run() -> None:
        try:
            drain(stuck(), 0.2, outcome.append)
        except Stalled as exc:
            outcome.append(exc.seconds)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    release.set()
    assert outcome == [1, 0.2]


def test_stall_timeout_and_json_inputs_are_refused_where_they_do_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "claims.jsonl"
    source.write_text("", encoding="utf-8")
    assert cli.main(["verify", str(source), "-o", str(tmp_path / "o.jsonl"), "--stall-timeout", "5"]) == 2
    assert "--stall-timeout need --engine ray" in capsys.readouterr().err
    whole = tmp_path / "claims.json"
    whole.write_text("[]", encoding="utf-8")
    assert cli.main(["verify", str(whole), "-o", str(tmp_path / "out"), "--engine", "ray"]) == 2
    assert "--engine ray reads JSON Lines" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        cli.main(["verify", str(source), "-o", str(tmp_path / "o"), "--engine", "ray", "--stall-timeout", "-1"])
    assert caught.value.code == 2
    assert "must be a finite number at or above zero" in capsys.readouterr().err

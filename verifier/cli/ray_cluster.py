"""``verify --engine ray`` on a cluster: the actor pool checked against the cluster's CPUs, results drained
by the driver with a stall timeout (docs/bulk.md, "Ray on an existing cluster").

Why the pool is checked before the job starts: Ray Data reserves ``--threads-per-worker``
CPUs per actor for the whole job. A pool that does not fit never becomes ready, and Ray
waits for it without a word (issue 36: ``--workers 2`` on a cluster of two 1-CPU nodes,
where the read task also wanted a CPU, waited 8 minutes and wrote nothing). So
:func:`check_capacity` refuses such a request at once, naming the cluster's CPUs; the read
tasks reserve no CPU (they only split lines, see :func:`verifier.cli.ray_run.run_ray`) and the
driver, not a Ray task, writes the output, so a pool of exactly the cluster's CPUs runs.

Why a stall timeout: a pool that fitted at the start can stop fitting (a node lost for
good: Ray restarts its actor and retries its batch, and both wait for a CPU that may never
come). :func:`drain` fails with :class:`Stalled` when no batch of results came back for
``--stall-timeout`` seconds, instead of waiting forever. It iterates Ray Data on the calling
thread where it can (the main thread, with ``SIGALRM`` free), timing each wait with
``setitimer``: Ctrl-C then reaches Ray Data's iterator, which shuts its execution down
before the driver's ``ray.shutdown()``. Iterated on a helper thread instead, the iteration
outlived the shutdown, printed Ray's tracebacks ("Ray is not initialized") after
``interrupted`` and started a second local Ray instance through Ray's automatic ``ray.init``.

Why the check waits a moment for CPUs that are held but not by a running pool: a job that
just ended still holds its actors' CPUs for a while, and a failed Ray Data job keeps its
actors alive until its exception's traceback, a reference cycle, is garbage collected (a
library caller's ``verify_dataset(...).take_all()`` that raised, then ``verify --engine ray``
in the same process). :func:`await_capacity` collects garbage and re-reads the cluster for
up to :data:`SETTLE_SECONDS` before it refuses a pool the nodes could hold.
"""

from __future__ import annotations

import gc
import os
import queue
import signal
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from .errors import UsageError

__all__ = [
    "Capacity", "Stalled", "await_capacity", "capacity", "check_capacity", "drain", "DEFAULT_STALL_TIMEOUT", "SETTLE_SECONDS",
    "HEAD_LOST_AFTER", "HeadWatch", "head_lost_after",
]

#: Seconds without a batch of results before a job is given up (``--stall-timeout``): well above the
#: time one actor needs to start (load and hash the model) and verify one ``--rows-per-batch`` batch
#: on a CPU core (about 60 s for 1,024 claims on a DeBERTa-v3-base export, docs/performance.md).
DEFAULT_STALL_TIMEOUT = 600.0

#: Seconds the head's GCS may refuse connections before the driver gives the job up
#: (``$CLAIM_VERIFIER_RAY_HEAD_LOST_AFTER`` sets others): under the 60 s after which Ray's core ends a driver
#: that lost it, with its own words and none on what -o keeps; a job whose actors can finish without the
#: head gets until then.
HEAD_LOST_AFTER = 45.0


def head_lost_after() -> float:
    """:data:`HEAD_LOST_AFTER`, or ``$CLAIM_VERIFIER_RAY_HEAD_LOST_AFTER`` seconds (above 0)."""
    text = os.environ.get("CLAIM_VERIFIER_RAY_HEAD_LOST_AFTER", "")
    try:
        value = float(text)
    except ValueError:
        return HEAD_LOST_AFTER
    return value if 0 < value < float("inf") else HEAD_LOST_AFTER

#: Seconds :func:`await_capacity` waits for held CPUs to come free before it refuses a pool the
#: nodes could hold: a finished local job's actor went in well under a second once its
#: references were collected (docs/bulk.md, "The pool must fit").
SETTLE_SECONDS = 5.0


@dataclass(frozen=True)
class Capacity:
    """CPUs of the Ray cluster the driver is connected to: in all, free now, and per alive node."""

    total: float
    free: float
    #: CPUs of each alive node, in ascending order
    nodes: tuple[float, ...]

    def holds(self, workers: int, threads: int) -> bool:
        """Whether ``workers`` actors of ``threads`` CPUs fit now: enough CPUs free, and each on one node."""
        return workers * threads <= self.free and workers <= self.fits(threads)

    def fits(self, threads: int) -> int:
        """How many actors of ``threads`` CPUs the alive nodes can hold at most (an actor lives on one node)."""
        return sum(int(cpus // threads) for cpus in self.nodes)

    def describe(self) -> str:
        per_node = " + ".join(f"{cpus:g}" for cpus in self.nodes)
        count = len(self.nodes)
        return f"{self.total:g} CPUs ({self.free:g} free) on {count} node{'s' if count != 1 else ''} ({per_node})"


def capacity(ray: Any) -> Capacity:
    """The connected cluster's :class:`Capacity` (``ray.nodes()`` and ``ray.available_resources()``)."""
    nodes = tuple(sorted(float(node.get("Resources", {}).get("CPU", 0.0)) for node in ray.nodes() if node.get("Alive")))
    return Capacity(sum(nodes), float(ray.available_resources().get("CPU", 0.0)), nodes)


def check_capacity(found: Capacity, workers: int, threads: int, where: str) -> None:
    """Refuse a pool of ``workers`` actors of ``threads`` CPUs that ``found`` cannot hold all at once.

    Raises:
        UsageError: more CPUs than are free, or actors larger than any node.
    """
    need = workers * threads
    fits = min(found.fits(threads), int(found.free // threads))
    if found.holds(workers, threads):
        return
    advice = (
        f"use --workers {fits} or fewer" if fits >= 1
        else f"use --threads-per-worker {max(1, int(max(found.nodes, default=0)))} or fewer" if threads > 1
        else "wait for the cluster's other jobs to free a CPU, or add a node"
    )
    raise UsageError(
        f"error: --workers {workers} x --threads-per-worker {threads} needs {need} CPU{'s' if need != 1 else ''} "
        f"(one actor of {threads} on a node), but the Ray cluster {where} has {found.describe()}; {advice} "
        "(a pool that does not fit would wait for CPUs forever); nothing was written"
    )


def await_capacity(
    read: Callable[[], Capacity], workers: int, threads: int, where: str, *, settle: float = SETTLE_SECONDS,
    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
) -> Capacity:
    """:func:`check_capacity` on ``read()``, re-read for up to ``settle`` seconds while CPUs are short.

    Only a shortage of free CPUs is waited for (the nodes could hold the pool): an actor
    larger than every node, or more actors than the nodes hold, is refused at once. Each
    retry first runs :func:`gc.collect`, which ends the actors of this process's failed jobs
    (module docstring), then sleeps 0.1 s.

    Returns:
        The :class:`Capacity` that holds the pool.

    Raises:
        UsageError: the pool still does not fit after ``settle`` seconds, or can never fit.
    """
    found = read()
    deadline = clock() + settle
    while not found.holds(workers, threads) and workers <= found.fits(threads) and clock() < deadline:
        gc.collect()
        sleep(0.1)
        found = read()
    check_capacity(found, workers, threads, where)
    return found


class Stalled(Exception):
    """No batch of results came back for ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no results came back for {seconds:g} s")
        self.seconds = seconds


_END = object()


class _Alarm(BaseException):
    """Raised by the ``SIGALRM`` handler: a ``BaseException``, as ``KeyboardInterrupt``, so that no
    ``except Exception`` inside Ray Data takes it for an error of its own."""


def _raise_alarm(signum: int, frame: Any) -> None:
    raise _Alarm()


def _alarm_is_free() -> bool:
    """``setitimer`` exists, this is the main thread, and nobody else uses ``SIGALRM`` or the real-time timer."""
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )


def drain(batches: Iterable[Any], stall_timeout: float, sink: Callable[[Any], None]) -> None:
    """Pass every batch of ``batches`` to ``sink`` (on this thread), in the order they come.

    ``stall_timeout`` seconds (``0``: never) without a batch raise :class:`Stalled`. On the
    main thread with ``SIGALRM`` free, ``batches`` is iterated here, each wait timed by
    ``setitimer`` (so Ctrl-C and the timeout end Ray Data's iteration on this thread; module
    docstring); elsewhere on a daemon thread, at most two batches ahead. An error of the
    iteration is raised here.

    Raises:
        Stalled: no batch for ``stall_timeout`` seconds.
    """
    if not stall_timeout:
        for batch in batches:
            sink(batch)
        return
    if _alarm_is_free():
        _drain_timed(iter(batches), stall_timeout, sink)
    else:
        _drain_on_a_thread(batches, stall_timeout, sink)


def _drain_timed(batches: Iterator[Any], stall_timeout: float, sink: Callable[[Any], None]) -> None:
    previous = signal.signal(signal.SIGALRM, _raise_alarm)
    try:
        while True:
            signal.setitimer(signal.ITIMER_REAL, stall_timeout)
            try:
                batch = next(batches)
            except StopIteration:
                return
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)  # not while the sink writes
            sink(batch)
    except _Alarm:
        raise Stalled(stall_timeout) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        close = getattr(batches, "close", None)
        if close is not None:
            close()  # a generator left mid-way (the sink failed): its clean-up runs now, here


def _drain_on_a_thread(batches: Iterable[Any], stall_timeout: float, sink: Callable[[Any], None]) -> None:
    handoff: "queue.Queue[Any]" = queue.Queue(maxsize=2)
    stop = threading.Event()

    def produce() -> None:
        try:
            for batch in batches:
                while not stop.is_set():
                    try:
                        handoff.put(batch, timeout=0.5)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            handoff.put(_END)
        except BaseException as exc:  # handed to the driver thread, which raises it
            handoff.put(exc)

    thread = threading.Thread(target=produce, name="ray-results", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = handoff.get(timeout=stall_timeout)
            except queue.Empty:
                raise Stalled(stall_timeout) from None
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            sink(item)
    finally:
        stop.set()


class HeadWatch:
    """While a job runs on a cluster, a daemon thread tries the head's GCS port every ``every`` seconds;
    when it has accepted no connection for ``after`` seconds, ``give_up(seconds)`` runs on that thread.

    ``give_up`` must end the process: once the head is gone, Ray's own threads end it within a minute
    (``Failed to connect to GCS within 60 seconds``), and its main thread may be blocked in Ray.
    """

    def __init__(self, address: str, give_up: Callable[[float], None], after: float = HEAD_LOST_AFTER, every: float = 1.0) -> None:
        host, _, port = address.rpartition(":")
        self._where, self._give_up, self._after, self._every = (host.strip("[]"), int(port)), give_up, after, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ray-head-watch", daemon=True)

    def __enter__(self) -> "HeadWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _answers(self) -> bool:
        try:
            with socket.create_connection(self._where, timeout=max(self._every, 1.0)):
                return True
        except OSError:
            return False

    def _watch(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self._every):
            if self._answers():
                last = time.monotonic()
            elif time.monotonic() - last >= self._after and not self._stop.is_set():
                self._give_up(time.monotonic() - last)
                return

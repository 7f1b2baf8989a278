"""Progress of the long commands on stderr: a bar on a terminal, plain timestamped lines in logs.

``verify`` (local and ``--engine ray``), ``check`` and ``assay`` show their
progress whatever stderr is (new-user trial: with stderr to a file, a
20,000-claim ``verify`` printed nothing for 65 s):

* stderr a terminal with a width: a tqdm bar, redrawn in place;
* otherwise (a file, a pipe, nohup, CI, a pseudo-terminal of 0 columns): a
  plain line once the command has run ``$CLAIM_VERIFIER_PROGRESS_AFTER``
  seconds (default 5), then one every ``$CLAIM_VERIFIER_PROGRESS_EVERY``
  seconds (default 10), each with the rows done, the rate and, when the total
  is known, about how long is left, and a last line when the step ends::

      verify [  5.0s] 1,024 of 20,000 claims (5%), 301 claims/s, about 63 s left
      verify [ 15.0s] 4,096 of 20,000 claims (20%), 330 claims/s, about 48 s left
      verify [ 61.2s] 20,000 of 20,000 claims in 61.2 s, 327 claims/s

  A step that ends before its first line prints none, so short runs keep their
  summary alone;
* ``-q``: neither.

The lines come from a background thread, so a step whose counter moves
rarely (a model loading, one long round of pairs) still prints on time.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Optional, TextIO, TypeVar

T = TypeVar("T")

__all__ = ["PROGRESS_AFTER_ENV", "PROGRESS_EVERY_ENV", "Bar", "Progress", "counted", "progress_for", "use_bar"]

#: Seconds before the first plain progress line (``0``: at once). The exporter reads the same variable.
PROGRESS_AFTER_ENV = "CLAIM_VERIFIER_PROGRESS_AFTER"
#: Seconds between plain progress lines.
PROGRESS_EVERY_ENV = "CLAIM_VERIFIER_PROGRESS_EVERY"
DEFAULT_AFTER_S = 5.0
DEFAULT_EVERY_S = 10.0
#: Lines are stamped with the time since the command started (this module is imported as it starts), so the
#: steps of one command (verify reads and validates its input, then verifies it) read as one timeline.
_COMMAND_STARTED = time.monotonic()


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= 0 else default


def use_bar(stream: Optional[TextIO] = None) -> bool:
    """Whether ``stream`` (default stderr) is a terminal a bar can be drawn on (a width of at least one column)."""
    stream = stream if stream is not None else sys.stderr
    try:
        if not stream.isatty():
            return False
    except (AttributeError, OSError, ValueError):
        return False
    try:
        return os.get_terminal_size(stream.fileno()).columns > 0
    except (AttributeError, OSError, ValueError):  # a terminal whose width cannot be read: tqdm's default width
        return True


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """A counter shown as plain lines (see the module docstring); :func:`progress_for` picks it or a bar.

    Call :meth:`update` with the number done so far (it may be called from any thread), set
    :attr:`total` when it becomes known, and :meth:`close` when the step ends.

    Args:
        label: first word of every line (``verify``).
        unit: what is counted, plural (``claims``).
        total: how many in all, if known.
        stream: where the lines go (default: ``sys.stderr`` when printing).
        after: seconds before the first line (default ``$CLAIM_VERIFIER_PROGRESS_AFTER`` or 5).
        every: seconds between lines (default ``$CLAIM_VERIFIER_PROGRESS_EVERY`` or 10).
        doing: the step, when the command has more than one (``reading and validating the input``).
    """

    def __init__(
        self, label: str, unit: str, total: Optional[int] = None, *, stream: Optional[TextIO] = None,
        after: Optional[float] = None, every: Optional[float] = None, doing: str = "",
    ) -> None:
        self.label, self.unit, self.total = label, unit, total
        self._doing = f"{doing}: " if doing else ""
        self._stream = stream
        self._after = _seconds(PROGRESS_AFTER_ENV, DEFAULT_AFTER_S) if after is None else after
        self._every = _seconds(PROGRESS_EVERY_ENV, DEFAULT_EVERY_S) if every is None else every
        self._started = time.monotonic()
        self._done = 0
        self._printed = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._due = self._started + self._after
        if self._after <= 0:
            self._tick(self._started)
        self._thread = threading.Thread(target=self._run, name=f"{label}-progress", daemon=True)
        self._thread.start()

    @property
    def n(self) -> int:
        """How many are done (tqdm's name, so either can be updated the same way)."""
        return self._done

    def update(self, done: int) -> None:
        """``done`` so far (an absolute count, not an increment)."""
        with self._lock:
            self._done = done
            self._tick(time.monotonic())

    def close(self) -> None:
        """Stop; when a line was printed, one more says where the step ended."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        with self._lock:
            if self._printed:
                now = time.monotonic()
                elapsed = now - self._started
                of = f" of {_count(self.total)}" if self.total is not None else ""
                rate = f", {self._done / elapsed:,.0f} {self.unit}/s" if elapsed > 0 else ""
                self._print(now, f"{self._doing}{_count(self._done)}{of} {self.unit} in {elapsed:.1f} s{rate}")
            self._printed = False

    # ------------------------------------------------------------------ internals (under the lock)

    def _print(self, now: float, text: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        try:
            print(f"{self.label} [{now - _COMMAND_STARTED:5.1f}s] {text}", file=stream, flush=True)
        except (OSError, ValueError):  # a closed or broken stderr never stops the work
            return
        self._printed = True

    def _tick(self, now: float) -> None:
        if now < self._due:
            return
        self._due = now + self._every
        elapsed = now - self._started
        text = self._doing + _count(self._done)
        if self.total is not None:
            text += f" of {_count(self.total)} {self.unit}"
            if self.total:
                text += f" ({100 * self._done / self.total:.0f}%)"
        else:
            text += f" {self.unit}"
        if self._done and elapsed > 0:
            rate = self._done / elapsed
            text += f", {rate:,.0f} {self.unit}/s"
            if self.total is not None and self.total >= self._done:
                text += f", about {_duration((self.total - self._done) / rate)} left"
        self._print(now, text)

    def _run(self) -> None:
        while not self._stop.wait(min(0.2, max(self._every, 0.01))):
            with self._lock:
                self._tick(time.monotonic())


class Bar:
    """A tqdm bar with :class:`Progress`'s interface (``update`` takes the absolute count)."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    @property
    def n(self) -> int:
        return int(self.bar.n)

    @property
    def total(self) -> Optional[int]:
        return self.bar.total  # type: ignore[no-any-return]

    @total.setter
    def total(self, value: Optional[int]) -> None:
        self.bar.total = value

    def update(self, done: int) -> None:
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def progress_for(
    label: str, unit: str, total: Optional[int], quiet: bool, *, bar: bool = True, doing: str = "",
) -> "Optional[Progress | Bar]":
    """The progress display for a step: ``None`` with ``quiet``; a tqdm bar when stderr is a terminal
    (and ``bar``: ``--engine ray`` leaves the terminal to Ray Data's own bars); plain lines otherwise."""
    if quiet:
        return None
    if use_bar():
        if not bar:
            return None
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]
        except ImportError:  # pragma: no cover - tqdm is a runtime dependency
            return None
        unit_one = unit[:-1] if unit.endswith("s") else unit
        return Bar(tqdm(total=total, unit=unit_one, file=sys.stderr, dynamic_ncols=True, leave=False,
                        desc=f"{label}: {doing}" if doing else label))
    return Progress(label, unit, total, doing=doing)


def counted(
    items: Iterable[T], progress: "Optional[Progress | Bar]", size: Callable[[T], int] = lambda item: 1,
) -> Iterator[T]:
    """``items``, counting each (``size(item)``: how many rows it holds) into ``progress`` once the loop has
    handled it. When the loop ends, however it ends, ``progress`` is closed and so is ``items`` (an
    iterator's ``close``: Ray Data's batches end their iteration so)."""
    done = 0
    try:
        for item in items:
            yield item
            done += size(item)
            if progress is not None:
                progress.update(done)
    finally:
        if progress is not None:
            progress.close()
        close = getattr(items, "close", None)
        if close is not None:
            close()

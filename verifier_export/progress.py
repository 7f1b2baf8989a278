"""Progress of the long export steps on stderr: the first line within a second, then every stage as it starts.

A base-size export spends ~1.5 minutes in stages of 5-40 s each (download,
loading PyTorch, the ONNX export, the parity gate, each variant), and used to
print nothing until it was done. Now the stage running when the command has
been silent for :data:`DEFAULT_AFTER_S` second prints its line, and from then
on every stage prints one line as it starts, a "still ..." line every
:data:`DEFAULT_EVERY_S` seconds while it runs, and "done in N s" when it ends;
every line starts with the time since the command started and is flushed at
once, so a terminal and a log file show the same thing, and each "done in"
is the difference of its stage's two stamps::

    export [  0.0s] importing torch and transformers ...
    export [  3.1s] importing torch and transformers: done in 3.1 s
    export [  3.1s] loading the PyTorch model ...
    export [ 12.8s] loading the PyTorch model: done in 9.7 s
    export [ 12.8s] exporting model.onnx with span attention (optimum-onnx, opset default) ...
    export [ 22.8s] still exporting model.onnx with span attention (optimum-onnx, opset default) (10 s)

A stage announced late (the first one, after the first second) names when it
started: ``export [  1.0s] importing torch ... (started at 0.0s)``. A command
that ends within the first second (an offline export's one error line and one
``next:`` line) prints no stage line (new-user trial, issue 50: the first line
came after ~5 s, stages shorter than 5 s were silent, and "done in" figures
disagreed with the stamps around them). ``$CLAIM_VERIFIER_PROGRESS_AFTER``
sets the first line's delay in seconds (``0``: at once). The summary goes to
stderr too (stdout is for results).

The library functions take ``progress=`` (any :data:`Progress`, default
silent); ``python -m export`` and ``python -m export.variants`` pass a
:class:`StageReporter`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, Optional, TextIO

__all__ = ["Progress", "StageReporter", "silent", "or_silent", "PROGRESS_AFTER_ENV", "DEFAULT_AFTER_S", "DEFAULT_EVERY_S"]

#: Called with one short line as each stage starts.
Progress = Callable[[str], None]
#: Environment variable: seconds of silence before the first line (default :data:`DEFAULT_AFTER_S`).
PROGRESS_AFTER_ENV = "CLAIM_VERIFIER_PROGRESS_AFTER"
#: The first line comes once the command has been silent this long; then every stage as it starts.
DEFAULT_AFTER_S = 1.0
#: An announced stage still running prints a "still ..." line this often.
DEFAULT_EVERY_S = 10.0


def silent(message: str) -> None:
    """A :data:`Progress` that says nothing (the library default)."""


def or_silent(progress: Optional[Progress]) -> Progress:
    """``progress``, or :func:`silent` when it is ``None``."""
    return progress if progress is not None else silent


def _after_from_env() -> float:
    text = os.environ.get(PROGRESS_AFTER_ENV, "")
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_AFTER_S
    return value if value >= 0 else DEFAULT_AFTER_S


class StageReporter:
    """A :data:`Progress` that prints the stages once the command has run ``after`` seconds (module docstring).

    Call it with each stage's description as the stage starts; :meth:`close`
    when the command ends (it also ends the last stage). A background thread
    prints while a stage runs.

    Args:
        prefix: first word of every line (``export``).
        stream: where the lines go (default: ``sys.stderr`` at the time of printing).
        after: seconds of silence before the first line (default ``$CLAIM_VERIFIER_PROGRESS_AFTER`` or 1).
        every: seconds between "still ..." lines of an announced stage.
    """

    def __init__(
        self, prefix: str = "export", stream: Optional[TextIO] = None, *, after: Optional[float] = None,
        every: float = DEFAULT_EVERY_S,
    ) -> None:
        self._prefix = prefix
        self._stream = stream
        self._after = _after_from_env() if after is None else after
        self._every = every
        self._started = time.monotonic()
        self._lock = threading.Lock()
        self._stage: Optional[str] = None
        self._stage_started = 0.0
        self._next_line: Optional[float] = None  # when the running stage's next line is due
        self._announced = False
        self._printed = False  # after the first line, every stage is announced as it starts
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __call__(self, message: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._end_stage(now)
            self._stage, self._stage_started, self._announced = message, now, False
            self._next_line = now if self._printed else self._started + self._after
            self._tick(now)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="export-progress", daemon=True)
            self._thread.start()

    def close(self, *, completed: bool = True) -> None:
        """End the last stage and stop the thread; a completed, announced stage gets its "done" line
        (not after a failure: the error line says what happened)."""
        with self._lock:
            if completed:
                self._end_stage(time.monotonic())
            self._stage = None
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)

    def __enter__(self) -> "StageReporter":
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self.close(completed=kind is None)

    # ------------------------------------------------------------------ internals (under the lock)

    def _print(self, now: float, text: str) -> None:
        stream = self._stream if self._stream is not None else sys.stderr
        print(f"{self._prefix} [{now - self._started:5.1f}s] {text}", file=stream, flush=True)
        self._printed = True

    def _end_stage(self, now: float) -> None:
        if self._stage is not None and self._announced:
            self._print(now, f"{self._stage}: done in {now - self._stage_started:.1f} s")

    def _tick(self, now: float) -> None:
        if self._stage is None or self._next_line is None or now < self._next_line:
            return
        if not self._announced:
            late = now - self._stage_started >= 0.05  # so its "done in" agrees with the stamps
            self._print(now, f"{self._stage} ..." + (f" (started at {self._stage_started - self._started:.1f}s)" if late else ""))
            self._announced = True
        else:
            self._print(now, f"still {self._stage} ({now - self._stage_started:.0f} s)")
        self._next_line = now + self._every

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with self._lock:
                self._tick(time.monotonic())

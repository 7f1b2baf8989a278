"""Log flood control of the server: at most ``limit`` identical records per ``window_s``, then one summary line.

A server under attack or out of file descriptors can log the same error
thousands of times a second (asyncio's ``socket.accept() out of system
resource`` with its traceback, uvicorn's ``Invalid HTTP request received.``).
:class:`RepeatFilter` lets the first ``limit`` records of one kind through in
each window, turns the next one into a single summary line (without its
traceback), drops the rest and, with the first record of that kind after the
window, says how many were dropped.

Records are identical when they come from the same logger, at the same
level, with the same message (formatted, first 200 characters) and the same
exception type. uvicorn's access log is left alone (every line names its
client's port, and its formatter needs the record's own arguments).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Callable, Iterable, Optional

__all__ = ["RepeatFilter", "install_repeat_filter", "DEFAULT_LOG_REPEAT_LIMIT", "DEFAULT_LOG_REPEAT_WINDOW_S"]

#: Default records of one kind let through per window.
DEFAULT_LOG_REPEAT_LIMIT = 10
#: Default window, in seconds.
DEFAULT_LOG_REPEAT_WINDOW_S = 60.0
#: Kinds remembered at once (the oldest is forgotten first).
_MAX_KINDS = 1024

_Key = tuple[str, int, str, str]


class _Window:
    __slots__ = ("started", "passed", "dropped")

    def __init__(self, started: float) -> None:
        self.started = started
        self.passed = 0
        self.dropped = 0


class RepeatFilter(logging.Filter):
    """A :class:`logging.Filter` that lets through at most ``limit`` records of one kind per ``window_s``.

    Args:
        limit: records of one kind passed unchanged in a window (>= 1).
        window_s: the window, in seconds (> 0); it starts with the first record of its kind.
        clock: monotonic seconds (``time.monotonic``).

    Raises:
        ValueError: ``limit`` < 1 or ``window_s`` <= 0.
    """

    def __init__(self, limit: int = DEFAULT_LOG_REPEAT_LIMIT, window_s: float = DEFAULT_LOG_REPEAT_WINDOW_S,
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        if isinstance(limit, bool) or int(limit) < 1:
            raise ValueError(f"limit must be >= 1, got {limit!r}")
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s!r}")
        self.limit = int(limit)
        self.window_s = float(window_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: "OrderedDict[_Key, _Window]" = OrderedDict()

    @staticmethod
    def _key(record: logging.LogRecord) -> _Key:
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] is not None else ""
        return (record.name, record.levelno, _message(record)[:200], error)

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is emitted (it may be rewritten into the summary line)."""
        key, now = self._key(record), self._clock()
        with self._lock:
            window = self._windows.get(key)
            dropped_before = 0
            if window is None or now - window.started >= self.window_s:
                dropped_before = window.dropped if window is not None else 0
                window = _Window(now)
                self._windows[key] = window
                while len(self._windows) > _MAX_KINDS:
                    self._windows.popitem(last=False)
            self._windows.move_to_end(key)
            window.passed += 1
            count = window.passed
            if count > self.limit + 1:
                window.dropped += 1
                return False
        if count == self.limit + 1:
            lines = _message(record).splitlines()
            record.msg = (f"{lines[0] if lines else ''} [repeated {self.limit} times; identical records "
                          f"suppressed for up to {self.window_s:g} s]")
            record.args = None
            record.exc_info = record.exc_text = record.stack_info = None
        elif dropped_before:
            record.msg = f"{_message(record)} [{dropped_before} identical records were suppressed]"
            record.args = None
        return True


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # a malformed record: its template, as logging itself would fall back to
        return str(record.msg)


def install_repeat_filter(repeat_filter: logging.Filter,
                          logger_names: Iterable[Optional[str]] = (None, "uvicorn", "uvicorn.error")) -> None:
    """Add ``repeat_filter`` to every handler of the named loggers (``None``: the root logger).

    A filter on a handler sees every record the handler emits, those propagated
    from child loggers (``asyncio``, ``verifier.serve``) included.
    """
    for name in logger_names:
        for handler in logging.getLogger(name).handlers:
            if repeat_filter not in handler.filters:
                handler.addFilter(repeat_filter)

"""argparse value types shared by every command line of the project (``verifier``, ``export``, ``bench``).

Each returns a parser for ``type=``; a bad value becomes argparse's usual
``argument --flag: <message>`` line and exit status 2. Messages name the
accepted range, e.g. ``must be within [1, 256], got 300``.

Numbers are plain ASCII: Python's ``int`` and ``float`` also accept
surrounding whitespace (``" 3"``), digit-group underscores (``1_0``) and
non-ASCII digits (``"٣"``, Arabic-Indic three), which these parsers refuse.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Callable

__all__ = ["ascii_int", "int_range", "float_range", "positive_float", "non_negative_float"]

_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def ascii_int(text: str) -> int:
    """An integer written with plain ASCII digits (an optional leading ``-``), for ``type=`` with ``choices=``.

    Example:
        >>> ascii_int("2")
        2
    """
    if _INTEGER.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(text)


def _number(text: str) -> float:
    if _NUMBER.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    return float(text)


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An integer within ``[low, high]`` (plain ASCII digits: :func:`ascii_int`).

    Example:
        >>> int_range(1, 4)("3")
        3
    """

    def parse(text: str) -> int:
        value = ascii_int(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be within [{low}, {high}], got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def float_range(low: float, high: float) -> Callable[[str], float]:
    """A finite number within ``[low, high]`` (NaN is refused).

    Example:
        >>> float_range(0.5, 1.0)("0.8")
        0.8
    """

    def parse(text: str) -> float:
        value = _number(text)
        if not low <= value <= high:  # also refuses NaN
            raise argparse.ArgumentTypeError(f"must be within [{low}, {high}], got {text}")
        return value

    parse.__name__ = "number"
    return parse


def positive_float(text: str) -> float:
    """A finite number above zero.

    Example:
        >>> positive_float("1e-4")
        0.0001
    """
    value = _number(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number at or above zero (``--stall-timeout``: ``0`` turns it off).

    Example:
        >>> non_negative_float("0")
        0.0
    """
    value = _number(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number at or above zero, got {text}")
    return value

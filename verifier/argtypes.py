"""argparse value types shared by every command line of the project (``verifier``, ``export``, ``bench``).

Each returns a parser for ``type=``; a bad value becomes argparse's usual
``argument --flag: <message>`` line and exit status 2. Messages name the
accepted range, e.g. ``must be within [1, 256], got 300``.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

__all__ = ["int_range", "float_range", "positive_float"]


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An integer within ``[low, high]``.

    Example:
        >>> int_range(1, 4)("3")
        3
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
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
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
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
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value

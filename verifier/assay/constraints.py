"""``METRIC OP VALUE`` expressions: sweep targets (``--target``) and registration gates (``--gate``).

``METRIC`` is a rate of :data:`verifier.assay.metrics.METRICS`, or
``<rate>_low`` / ``<rate>_high`` (its 95 % bootstrap bound), or a count:
``unsafe_supports``, ``claims``, ``tp``, ``fp``, ``fn``, ``tn``. ``OP`` is one
of ``>=``, ``<=``, ``==``, ``!=``, ``>``, ``<``. An undefined metric
(``None``) never satisfies a constraint.

Example:
    >>> c = parse_constraint("precision >= 0.9")
    >>> c.text, c.holds({"precision": 0.95}), c.holds({"precision": None})
    ('precision>=0.9', True, False)
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from .metrics import METRICS

__all__ = ["Constraint", "parse_constraint", "METRIC_NAMES", "flat_metrics"]

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_COUNTS = ("unsafe_supports", "claims", "tp", "fp", "fn", "tn")
#: Every name a constraint may use.
METRIC_NAMES: tuple[str, ...] = (
    *METRICS,
    *(f"{name}_{side}" for name in METRICS for side in ("low", "high")),
    *_COUNTS,
)
_PATTERN = re.compile(r"^\s*([a-z_0-9]+)\s*(>=|<=|==|!=|>|<)\s*([-+0-9.eE]+)\s*$")


@dataclass(frozen=True)
class Constraint:
    """One parsed ``METRIC OP VALUE``."""

    metric: str
    op: str
    value: float

    @property
    def text(self) -> str:
        """The canonical spelling (no spaces, shortest number)."""
        number = int(self.value) if self.value.is_integer() else self.value
        return f"{self.metric}{self.op}{number}"

    def actual(self, metrics: Mapping[str, Any]) -> Optional[float]:
        """The metric's value in ``metrics`` (a list counts as its length), ``None`` when undefined."""
        value = metrics.get(self.metric)
        if isinstance(value, (list, tuple)):
            return float(len(value))
        return None if value is None else float(value)

    def holds(self, metrics: Mapping[str, Any]) -> bool:
        """Whether the constraint holds for ``metrics`` (never when the metric is undefined)."""
        value = self.actual(metrics)
        return value is not None and _OPERATORS[self.op](value, self.value)


def parse_constraint(text: str) -> Constraint:
    """Parse ``"precision>=0.9"``.

    Raises:
        ValueError: not ``METRIC OP NUMBER``, an unknown metric, or a non-finite number.
    """
    match = _PATTERN.match(text)
    if not match:
        raise ValueError(f"{text!r} is not METRIC OP NUMBER (e.g. precision>=0.9; OP one of {' '.join(_OPERATORS)})")
    metric, op, number = match.groups()
    if metric not in METRIC_NAMES:
        raise ValueError(f"{text!r}: unknown metric {metric!r}; one of {', '.join(METRIC_NAMES)}")
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r}: {number!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r}: the number must be finite")
    return Constraint(metric, op, value)


def flat_metrics(metrics: Mapping[str, Any], bounds: Optional[Mapping[str, Mapping[str, Any]]] = None) -> dict[str, Any]:
    """``metrics`` plus ``<rate>_low``/``<rate>_high`` from bootstrap ``bounds``, as constraints read them."""
    flat = dict(metrics)
    for name, interval in (bounds or {}).items():
        flat[f"{name}_low"] = interval.get("low")
        flat[f"{name}_high"] = interval.get("high")
    return flat

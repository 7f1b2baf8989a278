"""95 % percentile bootstrap intervals of the assay metrics, with a fixed seed (docs/assay.md §Bootstrap).

For a cohort of n claims: ``rng = numpy.random.default_rng(seed)``, then
``index = rng.integers(0, n, size=(resamples, n))`` — each row one resample of
the claims with replacement. Every metric of
:data:`verifier.assay.metrics.METRICS` is computed on each resample; the
interval is ``numpy.percentile(values, [2.5, 97.5])`` over the resamples where
the metric is defined (linear interpolation, numpy's default). Each cohort
(the whole cohort, each category) draws from its own fresh generator seeded
with ``seed``, so an interval does not depend on which other categories exist.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .metrics import METRICS, Outcomes, counts, rates

__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "intervals"]

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20260501
#: Percentiles of the 95 % interval.
LEVELS = (2.5, 97.5)


def intervals(values: Outcomes, *, seed: int, resamples: int = DEFAULT_RESAMPLES) -> dict[str, dict[str, Any]]:
    """``{metric: {"low", "high", "defined"}}``: the 95 % interval and how many resamples defined the metric.

    ``low``/``high`` are ``None`` when no resample (or an empty cohort) defines the metric.
    """
    n = len(values)
    if n == 0 or resamples <= 0:
        return {name: {"low": None, "high": None, "defined": 0} for name in METRICS}
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n, size=(resamples, n))
    rate = rates(counts(values.take(index)))
    result: dict[str, dict[str, Any]] = {}
    for name in METRICS:
        column = rate[name]
        defined = column[~np.isnan(column)]
        low: Optional[float] = None
        high: Optional[float] = None
        if defined.size:
            low, high = (float(x) for x in np.percentile(defined, LEVELS))
        result[name] = {"low": low, "high": high, "defined": int(defined.size)}
    return result

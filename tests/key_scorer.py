"""Shared by the strict prose tests (test_prose_corpus, test_strict_rulings_recorded): a scorer keyed on a substring."""

from __future__ import annotations

from typing import Sequence

import numpy as np


class KeyScorer:
    """Entailment 0.95 when the premise contains ``key``, else 0.03; contradiction 0.02."""

    def __init__(self, key: str) -> None:
        self.key = key

    def score(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        rows = [(0.95, 0.02, 0.03) if self.key in premise else (0.03, 0.02, 0.95) for premise, _ in pairs]
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), 3)

"""``python -m export`` in a checkout of this repository: a shim over the exporter package ``verifier_export``.

The exporter is installed as :mod:`verifier_export` (also the console script
``onnx-claim-verifier-export``); this directory is not installed, so ``pip install``
adds no top-level ``export`` module that other packages could clash with. Run
``python -m export ...`` from the repository root, or ``python -m
verifier_export ...`` anywhere. Library code imports :mod:`verifier_export`.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """Names of :mod:`verifier_export`, for code in the checkout that still says ``export``."""
    import verifier_export

    return getattr(verifier_export, name)

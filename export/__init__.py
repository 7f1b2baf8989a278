"""``python -m export`` in a checkout of this repository: a shim over the exporter package ``verifier_export``.

The exporter is the package :mod:`verifier_export` (also the console script
``onnx-claim-verifier-export``). This shim is installed with the distribution, so
``python -m export ...`` (the documented once-per-revision command) works after
``pip install`` as in a checkout; ``python -m verifier_export ...`` is the same
command. Library code imports :mod:`verifier_export`.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """Names of :mod:`verifier_export`, for code in the checkout that still says ``export``."""
    import verifier_export

    return getattr(verifier_export, name)

"""Export a three-label NLI cross-encoder to a self-describing ONNX model directory.

Command::

    python -m export --model cross-encoder/nli-deberta-v3-base \\
        --revision 6c749ce3425cd33b46d187e45b92bbf96ee12ec7
    python -m export --model path/to/local/hf-dir --output models/my-model
    python -m export --smoke        # seeded tiny random model, plumbing checks only
    python -m export --output models/my-model --variants optimized int8   # gated extra ONNX files

Library (the same code paths)::

    from verifier_export import build_variants, export_model

    report = export_model("path/to/hf-dir", output=Path("models/my-model"))   # -> ExportReport
    variants = build_variants(report.output_dir, ["int8"])                    # -> VariantsReport

The public API, importable from ``export``:

* :func:`export_model` -- export a hub id or local directory behind the golden
  parity gate (``attention="stock"`` or ``"span"``), or verify an existing
  export of it; returns an :class:`ExportReport`.
* :func:`export_smoke` -- the same for the seeded tiny random model (``--smoke``).
* :func:`build_variants` -- add gated ``optimized`` / ``int8`` variants to an
  exported directory (:class:`VariantGate`, :class:`VariantOptions`); returns
  a :class:`VariantsReport`.
* Errors: :class:`ExportError` (exit 1) and its subclasses
  :class:`DownloadError` (exit 1), :class:`ParityError` (3),
  :class:`ManifestError` (4), :class:`LabelError` (5).

The directory format is docs/model-directory.md. Everything else under
``export/`` is implementation; :mod:`verifier_export.testmodels` is internal test
support, not part of this API.

torch, transformers and optimum-onnx (the ``export`` extra) are imported inside
functions, and the names above are imported on first use: importing this
package is cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Optional


def _require_our_verifier() -> None:
    """Raise ``ImportError`` when ``import verifier`` finds another project's package (issue 34).

    PyPI's unrelated ``verifier`` may come first on ``sys.path``; an editable install can then
    still serve this project's submodules under that foreign package, so the test is that
    ``verifier/__init__.py`` sits in the same folder as this project's ``verifier/messages.py``.
    """
    import os
    import sys

    mine: Optional[str]
    try:
        import verifier.messages

        mine = verifier.messages.__file__
    except ImportError:
        mine = None
    found = getattr(sys.modules.get("verifier"), "__file__", None)
    if found is None or mine is None or os.path.dirname(found) != os.path.dirname(mine):
        raise ImportError(
            f"`import verifier` found {found or 'no package of that name'}, which is not onnx-claim-verifier's "
            "package: the unrelated PyPI project 'verifier' (or another package of that name) comes first on "
            "sys.path. Uninstall both (`python -m pip uninstall verifier onnx-claim-verifier`) and reinstall "
            "onnx-claim-verifier (in a checkout: bash scripts/setup.sh); use a separate venv for the other"
        )


_require_our_verifier()

if TYPE_CHECKING:  # pragma: no cover - typing only
    from .errors import (
        DownloadError,
        ExportError,
        LabelError,
        ManifestError,
        ParityError,
    )
    from .pipeline import ExportReport, export_model, export_smoke
    from .variants import VariantGate, VariantOptions, VariantsReport, build_variants

#: Public name -> the module (under ``export``) that defines it.
_API: dict[str, str] = {
    "export_model": "pipeline",
    "export_smoke": "pipeline",
    "ExportReport": "pipeline",
    "build_variants": "variants",
    "VariantsReport": "variants",
    "VariantGate": "variants",
    "VariantOptions": "variants",
    "ExportError": "errors",
    "DownloadError": "errors",
    "ParityError": "errors",
    "ManifestError": "errors",
    "LabelError": "errors",
}

__all__ = [
    "export_model",
    "export_smoke",
    "ExportReport",
    "build_variants",
    "VariantsReport",
    "VariantGate",
    "VariantOptions",
    "ExportError",
    "DownloadError",
    "ParityError",
    "ManifestError",
    "LabelError",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

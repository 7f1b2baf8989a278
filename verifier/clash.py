"""The import name ``verifier`` is shared with an unrelated PyPI project, ``verifier`` (issue 34).

Installed into one environment, the two distributions write the same ``verifier/``
package: whichever was installed last owns ``verifier/__init__.py`` and the other is
broken. This module says so plainly, at import, instead of leaving the user an
``AttributeError`` or ``No module named verifier.__main__``:

* :func:`warn_if_shared` runs from ``verifier/__init__.py``: when a ``verifier-*``
  distribution record (``.dist-info``) sits beside this package, it warns
  (``RuntimeWarning``). One ``os.listdir`` of the parent directory: ``import
  verifier`` stays a few milliseconds.
* ``verifier_export`` (a name the other project does not use) checks, when it is
  imported, that ``verifier/__init__.py`` is this project's (beside its ``messages.py``), and
  raises ``ImportError`` naming the file ``import verifier`` found otherwise (the other
  package then comes first on ``sys.path``, and this module never runs).
"""

from __future__ import annotations

import os
from typing import Optional

#: The distribution (verifier.messages.DISTRIBUTION, not imported: that module loads pydantic, and
#: ``import verifier`` must stay a few milliseconds).
DISTRIBUTION = "onnx-claim-verifier"
#: The distribution record the other project's installer writes (``verifier-1.0.0.dist-info``).
_FOREIGN_PREFIX = "verifier-"

FIX = (
    f"uninstall both (`python -m pip uninstall verifier {DISTRIBUTION}`) and reinstall {DISTRIBUTION} "
    "(in a checkout: bash scripts/setup.sh); the two cannot share one environment, use a separate venv for the other"
)


def foreign_record(package_dir: str) -> Optional[str]:
    """The other ``verifier`` distribution's record beside ``package_dir`` (a path), or ``None``."""
    parent = os.path.dirname(os.path.abspath(package_dir))
    try:
        names = os.listdir(parent)
    except OSError:
        return None
    for name in names:
        if name.startswith(_FOREIGN_PREFIX) and name.endswith((".dist-info", ".egg-info")):
            return os.path.join(parent, name)
    return None


def warn_if_shared(package_dir: str) -> None:
    """Warn (``RuntimeWarning``) when the unrelated PyPI ``verifier`` is installed beside this package."""
    record = foreign_record(package_dir)
    if record is not None:
        import warnings

        warnings.warn(
            f"the unrelated PyPI project 'verifier' is installed in the same place as {DISTRIBUTION} ({record}); "
            f"both install a package named 'verifier', so one has overwritten the other's files: {FIX}",
            RuntimeWarning,
            stacklevel=3,
        )


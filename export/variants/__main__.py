"""``python -m export.variants DIR``: runs :func:`verifier_export.variants.cli.main`."""

from __future__ import annotations

import sys

from verifier_export.variants.cli import main

if __name__ == "__main__":
    sys.exit(main())
